"""Benchmark of the GGUF header parser on a big sparse GGUF (150k-token vocabulary, ~1,000 tensors).

Measures, in one run:
  (a) the remote read pattern: bytes fetched against the header size, and the number of reads, through
      each reader in READERS (a counting local reader here; an HTTP reader can be added beside it);
  (b) local parse time of read_gguf_header against gguf.GGUFReader on the same file (best of N), and
      the peak memory of both, each in a fresh subprocess; ours also on a file 8x bigger, to show
      memory does not grow with the file;
  (c) optionally, the read pattern on other vocabulary layouts (--layouts) and on real vocabularies
      (--vocab-dir DIR of tensor-less GGUFs, e.g. llama.cpp's models/ggml-vocab-*.gguf).

    python bench/bench_gguf_header.py [--size-gib 8] [--repeat 5] [--json out.json] [--layouts] [--vocab-dir D]
"""

from __future__ import annotations

import argparse
import atexit
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import gguf  # noqa: E402
from gguf.constants import Keys  # noqa: E402
from gguf_factory import (  # noqa: E402
    BIG_TYPES,
    BigGGUF,
    big_dims,
    bpe_vocab,
    glm4moe_tensors,
    graft_tensors,
    write_big_gguf,
    write_gguf,
)

from mtpinspect.formats.gguf import read_gguf_header  # noqa: E402
from mtpinspect.sources.reader import ByteMeter, LocalFileReader, RangeReader  # noqa: E402

MiB = 1024 * 1024
BUDGET_BYTES = 2 * MiB  # fetched may exceed the header by this much
BUDGET_READS = 3

# name -> function that opens a reader on the file and returns it with the meter that counts its reads.
ReaderFactory = Callable[[Path], tuple[RangeReader, ByteMeter]]


def _local_counting(path: Path) -> tuple[RangeReader, ByteMeter]:
    meter = ByteMeter()
    return LocalFileReader(path, meter=meter), meter


def _hub_http(path: Path) -> tuple[RangeReader, ByteMeter]:
    """Real HTTP Range requests through huggingface_hub against the loopback Hub stand-in."""
    from hubstub import HubStub

    from mtpinspect.sources.hub import open_repo
    from mtpinspect.sources.policy import FetchPolicy

    stub = HubStub().start()
    atexit.register(stub.stop)
    stub.add_repo("bench/big-GGUF", {path.name: path})
    repo = open_repo("bench/big-GGUF", endpoint=stub.url, policy=FetchPolicy(cache=False))  # every read over HTTP
    repo.meter = ByteMeter()  # count the GGUF reads only, not the listing
    return repo.open(path.name), repo.meter


READERS: dict[str, ReaderFactory] = {"local-counting": _local_counting, "hub-http": _hub_http}


def remote_pattern(path: Path, open_reader: ReaderFactory) -> dict[str, Any]:
    reader, meter = open_reader(path)
    header = read_gguf_header(reader)
    over = meter.bytes_read - header.header_size
    return {
        "file_size": header.file_size,
        "header_size": header.header_size,
        "bytes_fetched": meter.bytes_read,
        "bytes_over_header": over,
        "reads": meter.requests,
        "within_bounds": meter.requests <= BUDGET_READS and over <= BUDGET_BYTES,
    }


def best_time(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# Runs in a fresh interpreter: imports first, so only the parse shows in the figures. Peak RSS is
# VmHWM (per process image; ru_maxrss would carry over the bench's own RSS across fork+exec).
_MEMORY_PROBE = """
import json, resource, sys, tracemalloc
import gguf
from mtpinspect.formats.gguf import read_gguf_header
from mtpinspect.sources.reader import LocalFileReader

def peak_rss_kib():
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

parser, path = sys.argv[1:3]
parse = {
    "ours": lambda: read_gguf_header(LocalFileReader(path)),
    "gguf.GGUFReader": lambda: gguf.GGUFReader(path),
}[parser]
rss_before = peak_rss_kib()
tracemalloc.start()
result = parse()
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
rss_after = peak_rss_kib()
print(json.dumps({"tracemalloc_peak": peak, "max_rss_kib": rss_after, "rss_growth_kib": rss_after - rss_before}))
"""


def peak_memory(parser: str, path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, parser, str(path)], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return json.loads(out.stdout)


SYNTHETIC_LAYOUTS = (
    ("tokens", "token_type", "merges"),  # byte-level BPE, as convert_hf_to_gguf writes it
    ("tokens", "scores", "token_type"),  # SentencePiece
    ("tokens", "scores", "token_type", "merges"),
)


def layout_files(workdir: Path, synthetic: bool, vocab_dir: Path | None) -> list[tuple[str, Path]]:
    """Headers of ~1,000 tensors with synthetic vocabularies in several layouts, and any real ones given."""
    tensors = glm4moe_tensors(big_dims(1.0), BIG_TYPES)
    files = []
    for n_vocab in (32_000, 150_000, 262_144) if synthetic else ():
        tokens, types, merges = bpe_vocab(n_vocab)
        scores = [float(-i) for i in range(n_vocab)]
        arrays = {"tokens": tokens, "scores": scores, "token_type": types, "merges": merges}
        for layout in SYNTHETIC_LAYOUTS:
            label = f"synthetic {n_vocab}: {'+'.join(layout)}"
            # As llama.cpp's converters write them: BPE ("gpt2") with merges, SentencePiece ("llama") without.
            model = "gpt2" if "merges" in layout else "llama"
            metadata = {Keys.Tokenizer.MODEL: model, **{f"tokenizer.ggml.{k}": arrays[k] for k in layout}}
            path = workdir / f"synthetic-{n_vocab}-{'+'.join(layout)}.gguf"
            files.append((label, write_gguf(path, arch="glm4moe", metadata=metadata, tensors=tensors)))
    for source in sorted(vocab_dir.glob("*.gguf")) if vocab_dir else []:
        try:
            files.append((source.name, graft_tensors(source, workdir / f"real-{source.name}", tensors)))
        except ValueError:
            continue  # has tensors of its own
    return files


def _mib(nbytes: float) -> str:
    return f"{nbytes / MiB:.2f}"


def print_remote(big: BigGGUF, remote: dict[str, dict[str, Any]]) -> None:
    print(f"\n(a) remote read pattern: {big.file_size / 2**30:.1f} GiB file, {big.n_tensors} tensors, "
          f"{big.dims.n_vocab}-token vocabulary")  # fmt: skip
    rows = [
        [name, _mib(r["header_size"]), _mib(r["bytes_fetched"]), _mib(r["bytes_over_header"]), r["reads"], r["within_bounds"]]
        for name, r in remote.items()
    ]
    headers = ["reader", "header MiB", "fetched MiB", "over header MiB", "reads", "<= +2 MiB and <= 3 reads"]
    print(tabulate(rows, headers))


def print_local(local: dict[str, Any], repeat: int, ref_repeat: int) -> None:
    print(f"\n(b) local parse, best of {repeat} (ours) and {ref_repeat} (gguf.GGUFReader): "
          f"{local['speedup']:.0f}x faster")  # fmt: skip
    times = {"ours": local["ours_s"], "gguf.GGUFReader": local["gguf_reader_s"]}
    rows = [
        [
            name,
            f"{times[name]:.3f}" if name in times else "",
            _mib(m["tracemalloc_peak"]),
            f"{m['max_rss_kib'] / 1024:.0f}",
            f"{m['rss_growth_kib'] / 1024:.0f}",
        ]
        for name, m in local["memory"].items()
    ]
    print(tabulate(rows, ["parser", "seconds", "tracemalloc peak MiB", "peak RSS MiB", "RSS growth MiB"]))


def print_layouts(layouts: dict[str, dict[str, Any]]) -> None:
    print("\n(c) read pattern by vocabulary, ~1,000 tensors each")
    rows = [
        [name, _mib(r["header_size"]), _mib(r["bytes_over_header"]), r["reads"], r["within_bounds"]]
        for name, r in layouts.items()
    ]
    print(tabulate(rows, ["vocabulary", "header MiB", "over header MiB", "reads", "within bounds"]))


def measure_local(big: Path, bigger: Path, repeat: int, ref_repeat: int) -> dict[str, Any]:
    ours = best_time(lambda: read_gguf_header(LocalFileReader(big)), repeat)
    theirs = best_time(lambda: gguf.GGUFReader(big), ref_repeat)
    memory = {
        "ours": peak_memory("ours", big),
        "gguf.GGUFReader": peak_memory("gguf.GGUFReader", big),
        f"ours, {bigger.stat().st_size / 2**30:.0f} GiB file": peak_memory("ours", bigger),
    }
    return {"ours_s": ours, "gguf_reader_s": theirs, "speedup": theirs / ours, "memory": memory}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gib", type=float, default=8.0, help="claimed size of the big sparse GGUF")
    ap.add_argument("--repeat", type=int, default=5, help="timing runs of our parser (best is kept)")
    ap.add_argument("--ref-repeat", type=int, default=2, help="timing runs of gguf.GGUFReader (slow)")
    ap.add_argument("--json", type=Path, help="write all figures here")
    ap.add_argument("--layouts", action="store_true", help="also measure reads on other vocabulary layouts")
    ap.add_argument("--vocab-dir", type=Path, help="also measure real tensor-less vocab GGUFs found here")
    args = ap.parse_args()

    report: dict[str, Any] = {"size_gib": args.size_gib}
    with tempfile.TemporaryDirectory(prefix="bench-gguf-") as tmp:
        workdir = Path(tmp)
        big = write_big_gguf(workdir / "big.gguf", size_gib=args.size_gib)
        bigger = write_big_gguf(workdir / "bigger.gguf", size_gib=args.size_gib * 8)
        report["file"] = {"file_size": big.file_size, "n_tensors": big.n_tensors, "n_vocab": big.dims.n_vocab}

        report["remote"] = {name: remote_pattern(big.path, factory) for name, factory in READERS.items()}
        print_remote(big, report["remote"])
        report["local"] = measure_local(big.path, bigger.path, args.repeat, args.ref_repeat)
        print_local(report["local"], args.repeat, args.ref_repeat)
        if args.layouts or args.vocab_dir:
            files = layout_files(workdir, args.layouts, args.vocab_dir)
            report["layouts"] = {name: remote_pattern(path, _local_counting) for name, path in files}
            print_layouts(report["layouts"])

    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
