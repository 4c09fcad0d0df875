"""The real-scale Hub layouts of remote_layouts.py: they are what they claim, and `check` reads them over
the stand-in with the LFS redirect on, with its cost accounted as the server saw it."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import gguf
import pytest
from hubstub import HubStub
from remote_layouts import LAYOUTS, Layout

import mtpinspect
from mtpinspect.formats.gguf import read_gguf_header
from mtpinspect.sources.reader import LocalFileReader


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Layout]:
    workdir = tmp_path_factory.mktemp("layouts")
    return {name: build(workdir) for name, build in LAYOUTS.items()}


@pytest.fixture(scope="module")
def hub(layouts: dict[str, Layout]):
    with HubStub(lfs_redirect=True) as stub:
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
def test_check_over_the_redirecting_hub(name: str, layouts: dict[str, Layout], hub: HubStub) -> None:
    layout = layouts[name]
    hub.reset_counters()
    report = mtpinspect.check(layout.source, endpoint=hub.url)
    assert (report.usable, report.mtp_layers) == (True, 1)
    records = hub.requests(layout.repo_id)
    assert {r.origin for r in records} == {"hub", "cdn"}  # the weight files came through the CDN
    assert all(r.status == 302 for r in records if r.origin == "hub" and r.path and r.path.endswith((".gguf", ".safetensors")))
    assert report.bytes_read == hub.bytes_served(layout.repo_id)


# Each read of a safetensors header is one request of the one reader (the second read of a header
# over 100,000 bytes was not counted when huggingface_hub made it).
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_reported_requests_are_those_the_hub_answered(name: str, layouts: dict[str, Layout], hub: HubStub) -> None:
    layout = layouts[name]
    hub.reset_counters()
    report = mtpinspect.check(layout.source, endpoint=hub.url)
    # A redirected read is one request for the reader: compare with the Hub's side, not the CDN's.
    assert report.requests == len([r for r in hub.requests(layout.repo_id) if r.origin == "hub"])
