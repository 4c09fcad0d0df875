"""The real-scale Hub layouts of remote_layouts.py: they are what they claim, and `check` reads them over the
stand-in in three sequential waves (four with the Hub's redirect to its CDN, which costs a round trip of
its own), with right-sized reads, its cost accounted exactly as the server's own request log has it."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import gguf
import pytest
from hubstub import HubStub, max_in_flight, waves
from remote_layouts import LAYOUTS, Layout

import mtpinspect
from mtpinspect.formats.gguf import SMALL_FIRST_READ, read_gguf_header
from mtpinspect.sources.reader import LocalFileReader
from mtpinspect.sources.waves import CONCURRENCY

# A latency at which the requests a reader sends together are in flight together at the server, so its
# log shows them as one wave (at 0 ms a loaded machine may answer them one after the other).
LATENCY = 0.03
KIB = 1024

# (requests, waves) as the server counts them, without and with the LFS redirect. Without it: the
# listing; then config.json, the index, README.md and the first read of every GGUF header; then what
# those need next (the rest of the first GGUF shard's header, the MTP shards' headers). With it, every
# first read of a weight file is a 302 and then the bytes from the CDN; a later read of the same file
# goes to the CDN directly.
EXPECTED = {
    "gguf-single": {False: (4, 3), True: (5, 4)},  # listing; README + GGUF 2 MiB; the rest of its header
    "gguf-split-5": {False: (8, 3), True: (13, 4)},  # listing; README + 5 shards; the rest of shard 1's header
    # listing; README, trunk, sidecar; the rest of both headers; 3 embedding rows and the output norm of each
    # file (straight to the CDN the headers' reads were sent on to)
    "gguf-sidecar": {False: (14, 4), True: (16, 5)},
    "safetensors-163": {False: (5, 3), True: (6, 4)},  # listing; README, config, index; the MTP shard's header
    "safetensors-163-mtp4": {False: (8, 3), True: (12, 4)},  # the same, 4 MTP shard headers together
}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Layout]:
    workdir = tmp_path_factory.mktemp("layouts")
    return {name: build(workdir) for name, build in LAYOUTS.items()}


@pytest.fixture(scope="module", params=[False, True], ids=["direct", "lfs-redirect"])
def hub(request: pytest.FixtureRequest, layouts: dict[str, Layout]):
    with HubStub(lfs_redirect=request.param, latency=LATENCY) as stub:
        for layout in layouts.values():
            stub.add_repo(layout.repo_id, layout.files)
        yield stub


def _safetensors_header_size(path: Path) -> int:
    with path.open("rb") as handle:
        return 8 + struct.unpack("<Q", handle.read(8))[0]


def test_checkpoints_have_deepseek_v3_scale(layouts: dict[str, Layout]) -> None:
    for name, mtp_shards in (("safetensors-163", 1), ("safetensors-163-mtp4", 4)):
        files = layouts[name].files
        shards = sorted(p for p in files if p.endswith(".safetensors"))
        assert len(shards) == 163 and shards[-1] == "model-00163-of-000163.safetensors"
        index = files["model.safetensors.index.json"]
        assert isinstance(index, bytes) and 8_000_000 < len(index) < 10_000_000  # the real one is 8.9 MB
        weight_map = json.loads(index)["weight_map"]
        assert len(weight_map) == 91_991
        mtp_homes = sorted({shard for tensor, shard in weight_map.items() if tensor.startswith("model.layers.61.")})
        assert mtp_homes == shards[-mtp_shards:]
    last = layouts["safetensors-163"].files["model-00163-of-000163.safetensors"]
    assert isinstance(last, Path) and _safetensors_header_size(last) > 100_000  # more than huggingface_hub's first read


def test_split_gguf_keeps_keys_in_the_first_shard(layouts: dict[str, Layout]) -> None:
    shards = [src for path, src in sorted(layouts["gguf-split-5"].files.items()) if path.endswith(".gguf")]
    assert len(shards) == 5
    # gguf.GGUFReader takes ~20 s on the 151k-token vocabulary of shard 1 (bench/README.md): our parser
    # reads that one; gguf-py reads the others.
    first = read_gguf_header(LocalFileReader(shards[0]))
    assert (first.architecture, first.get("split.no"), first.get("split.count")) == ("glm4moe", 0, 5)
    assert first.array_length("tokenizer.ggml.tokens") == 151_552 and first.header_size > 5 * 1024 * 1024
    n_tensors = len(first.tensors)
    for index, shard in enumerate(shards[1:], start=1):
        reader = gguf.GGUFReader(shard)
        assert {key for key in reader.fields if not key.startswith("GGUF.")} == {
            "split.no",
            "split.count",
            "split.tensors.count",
        }
        assert reader.fields["split.no"].contents() == index and reader.data_offset < 32 * 1024
        n_tensors += len(reader.tensors)
    assert n_tensors == first.get("split.tensors.count") == 1573


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_check_reads_in_waves_accounted_as_the_server_saw_them(name: str, layouts: dict[str, Layout], hub: HubStub) -> None:
    layout = layouts[name]
    hub.reset_counters()
    report = mtpinspect.check(layout.source, endpoint=hub.url, verify=False)
    assert (report.usable, report.mtp_layers) == (True, 1)
    records = hub.requests(layout.repo_id)
    if hub.lfs_redirect:
        assert {r.origin for r in records} == {"hub", "cdn"}  # the weight files came through the CDN
        weight_reads = [r for r in records if r.origin == "hub" and r.path and r.path.endswith((".gguf", ".safetensors"))]
        assert weight_reads and all(r.status == 302 for r in weight_reads)
    seen = [len(wave) for wave in waves(records)]
    assert (len(records), len(seen)) == EXPECTED[name][hub.lfs_redirect], seen
    # The report says what the server saw: every request (redirect hops included), every byte, every wave.
    assert (report.requests, report.waves, report.bytes_read) == (len(records), len(seen), hub.bytes_served(layout.repo_id))
    assert report.bytes_cached == 0  # each test has its own, empty header cache (conftest.py)
    assert 2 <= max_in_flight(records) <= CONCURRENCY  # reads went out together, never more than the bound


def test_split_gguf_reads_are_right_sized(layouts: dict[str, Layout], hub: HubStub) -> None:
    layout = layouts["gguf-split-5"]
    shards = {path: src for path, src in layout.files.items() if path.endswith(".gguf")}
    headers = {path: read_gguf_header(LocalFileReader(src)).header_size for path, src in shards.items()}
    hub.reset_counters()
    mtpinspect.check(layout.source, endpoint=hub.url, verify=False)
    sent = {path: hub.requests(layout.repo_id, path) for path in shards}
    assert sum(r.nbytes for reads in sent.values() for r in reads) <= sum(headers.values()) + 256 * KIB * len(shards)
    for path in sorted(shards)[1:]:  # 19.7 KB headers: one small read each
        assert [r.nbytes for r in sent[path] if r.nbytes] == [SMALL_FIRST_READ], path
