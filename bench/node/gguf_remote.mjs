// Read a remote GGUF's header with @huggingface/gguf, the reference remote GGUF reader, and print
// how long it took (bench/bench_remote_layouts.py counts the requests from the Hub stand-in's log).
//
//   node bench/node/gguf_remote.mjs URL
//
// URL is a `resolve` URL; a split set's first shard (`-00001-of-0000N.gguf`) reads every shard, as
// the Hub's own GGUF viewer does (ggufAllShards, up to 20 shards in parallel).
import { ggufAllShards } from "@huggingface/gguf";

const url = process.argv[2];
if (!url) {
	console.error("usage: node gguf_remote.mjs URL");
	process.exit(2);
}
const start = performance.now();
const { shards, parameterCount, urls } = await ggufAllShards(url);
const seconds = (performance.now() - start) / 1000;
const tensors = shards.reduce((sum, shard) => sum + shard.tensorInfos.length, 0);
const arch = shards[0].metadata["general.architecture"];
console.log(JSON.stringify({ seconds, shards: urls.length, tensors, parameterCount, arch }));
