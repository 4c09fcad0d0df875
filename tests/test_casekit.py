"""Every case in cases/ materialises into a repo whose stand-in files carry true, readable headers.

Safetensors stand-ins are read through the Hub stand-in with huggingface_hub's own header parser;
GGUF stand-ins with a small independent reader here (every file) and with gguf.GGUFReader (a sample:
it spends seconds on each real-size vocabulary array). Index files must agree with shard headers.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import BinaryIO

import pytest
from casekit import (
    CASES_ROOT,
    Case,
    expand_name,
    expand_tensors,
    gguf_tensor_nbytes,
    load_cases,
    materialize,
    safetensors_header,
    serve_cases,
)
from gguf import GGMLQuantizationType, GGUFReader
from hubstub import HubStub
from huggingface_hub import HfApi

CASES = load_cases()
# sha256 of every published JSON file of the reference corpus the cases were built from (cases/README.md).
PUBLISHED = {line.split()[0] for line in (CASES_ROOT / "PUBLISHED.sha256").read_text().splitlines() if line.strip()}
GGUF_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
GGUF_STRING, GGUF_ARRAY = 8, 9
# GGUFReader parses every vocabulary entry in Python (seconds each), so it reads a sample only.
# Its first shard has a real-size (151,552-entry) vocabulary, the second none.
GGUF_READER_SAMPLE = ["glm-4.7-gguf-split"]


@pytest.fixture(scope="session")
def cases_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One materialised tree per session; materialize() reuses it when a stamp says it is current."""
    root = tmp_path_factory.getbasetemp() / "casekit"
    for case in CASES:
        materialize(case, root / case.id)
    return root


@pytest.fixture(scope="module")
def hub(cases_dir: Path):
    with HubStub() as stub:
        serve_cases(stub, CASES, cases_dir)
        yield stub


def _prefix(path: Path, size: int) -> bytes:
    """The first `size` bytes: stand-ins are multi-GiB sparse files, never read whole."""
    with open(path, "rb") as handle:
        return handle.read(size)


def _files_of(kind: str) -> list[tuple[Case, str]]:
    return [(case, name) for case in CASES for name, spec in case.files.items() if kind in spec]


def _ids(pairs: list[tuple[Case, str]]) -> list[str]:
    return [f"{case.id}/{name}" for case, name in pairs]


# -- the corpus itself ---------------------------------------------------------------------------------


def test_corpus_is_large_and_varied() -> None:
    assert len(CASES) >= 24
    layouts = {case.expect.get("layout") for case in CASES}
    assert layouts == {"bundled", "sidecar", "separate-checkpoint", "checkpoint", "none"}
    exits = {case.expect.get("exit") for case in CASES}
    assert exits == {0, 1}
    codes = {code for case in CASES for code in case.expect.get("codes", [])}
    assert codes >= {
        "MTP_PRESENT", "NO_MTP", "MTP_WEIGHTS_MISSING", "MTP_QUANTIZED", "MTP_PARTIALLY_EXCLUDED", "MTP_EXCLUDED",
        "MTP_SIDECAR", "SIDECAR_MISMATCH", "LOW_BIT_MTP_HEAD", "ARCH_NO_MTP_GRAPH", "SEPARATE_DRAFTER",
        "MTP_DROPPED_IN_CONVERSION", "MTP_FROM_TENSORS_ONLY",
    }  # fmt: skip


def test_derived_cases_say_so() -> None:
    for case in CASES:
        derived = case.repo_id.startswith("derived/") or any("derived" in s for s in case.files.values())
        assert derived == case.provenance.startswith("DERIVED"), case.id


def test_copies_are_byte_identical_to_published_files() -> None:
    copies = _files_of("copy")
    assert len(copies) >= 20
    for case, name in copies:
        spec = case.files[name]
        digest = hashlib.sha256((case.folder / spec["copy"]).read_bytes()).hexdigest()
        assert (digest in PUBLISHED) != ("derived" in spec), f"{case.id}/{name}"


def test_load_cases_rejects_bad_specs(tmp_path: Path) -> None:
    folder = tmp_path / "bad-case"
    folder.mkdir()
    spec = {
        "id": "other-id",
        "repo_id": "no-namespace",
        "description": "d",
        "provenance": "p",
        "files": {"config.json": {"copy": "missing.json"}, "x.bin": {"copy": "a", "gguf": {}}},
        "expect": {"exit": 3, "layout": "sideways", "codes": ["NOT_A_CODE"], "runtimes": {"vllm": "maybe"}},
    }
    (folder / "case.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError) as error:
        load_cases(tmp_path)
    for fragment in ("other-id", "no-namespace", "missing.json", "x.bin", "exit", "layout", "NOT_A_CODE", "vllm"):
        assert fragment in str(error.value)


def test_brace_expansion() -> None:
    assert expand_name("a.{0..2}.{x,y}") == ["a.0.x", "a.0.y", "a.1.x", "a.1.y", "a.2.x", "a.2.y"]
    assert expand_name("plain.weight") == ["plain.weight"]


# -- materialising -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_materialises(case: Case, cases_dir: Path) -> None:
    folder = cases_dir / case.id
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == sorted(case.files)
    for name, spec in case.files.items():
        if "copy" in spec:
            assert (folder / name).read_bytes() == (case.folder / spec["copy"]).read_bytes()
        if "safetensors" in spec:
            header, data_size = safetensors_header(spec["safetensors"])
            assert (folder / name).stat().st_size == len(header) + data_size  # true size, sparse data
            assert _prefix(folder / name, len(header)) == header


def test_materialize_reuses_a_current_tree_and_can_cut_data(cases_dir: Path, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "glm-4.7-gguf-split")
    before = {p.name: p.stat().st_mtime_ns for p in (cases_dir / case.id).iterdir()}
    materialize(case, cases_dir / case.id)
    assert {p.name: p.stat().st_mtime_ns for p in (cases_dir / case.id).iterdir()} == before
    cut = materialize(case, tmp_path / case.id, sparse=False)
    for name in case.files:
        assert (cut / name).stat().st_size < (cases_dir / case.id / name).stat().st_size
        assert (cut / name).read_bytes() == _prefix(cases_dir / case.id / name, (cut / name).stat().st_size)


# -- safetensors and index -----------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "name"), _files_of("safetensors"), ids=_ids(_files_of("safetensors")))
def test_safetensors_header_parses_through_the_hub(case: Case, name: str, hub: HubStub) -> None:
    hub.reset_counters()
    meta = HfApi(endpoint=hub.url, token=False).parse_safetensors_file_metadata(case.repo_id, name)
    expected = list(expand_tensors(case.files[name]["safetensors"]["tensors"]))
    assert [(n, t.dtype, t.shape) for n, t in meta.tensors.items()] == expected
    header_bytes = len(safetensors_header(case.files[name]["safetensors"])[0])
    assert hub.bytes_served(case.repo_id, name) <= max(header_bytes, 100_001) + header_bytes


@pytest.mark.parametrize(("case", "name"), _files_of("index"), ids=_ids(_files_of("index")))
def test_index_matches_shard_headers(case: Case, name: str, cases_dir: Path) -> None:
    folder = cases_dir / case.id
    index = json.loads((folder / name).read_text())
    from_headers: dict[str, str] = {}
    total = 0
    for shard in sorted({*index["weight_map"].values()}):
        with open(folder / shard, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(length))
        header.pop("__metadata__", None)
        from_headers.update((tensor, shard) for tensor in header)
        total += max(info["data_offsets"][1] for info in header.values())
    assert index["weight_map"] == from_headers
    assert index["metadata"]["total_size"] == total
    unindexed = {n for n, s in case.files.items() if "safetensors" in s} - set(index["weight_map"].values())
    assert unindexed == ({"mtp.safetensors"} if case.id == "glm-4.7-fp8-mtp-safetensors" else set())


# -- GGUF ----------------------------------------------------------------------------------------------


def _read(handle: BinaryIO, fmt: str):
    return struct.unpack(fmt, handle.read(struct.calcsize(fmt)))[0]


def _string(handle: BinaryIO) -> str:
    return handle.read(_read(handle, "<Q")).decode()


def _value(handle: BinaryIO, vtype: int):
    if vtype == GGUF_STRING:
        return _string(handle)
    if vtype == GGUF_ARRAY:
        item_type, count = _read(handle, "<I"), _read(handle, "<Q")
        return [_value(handle, item_type) for _ in range(count)]
    return _read(handle, GGUF_SCALAR[vtype])


def _gguf_header(path: Path) -> tuple[dict, list[tuple[str, str, list[int], int]], int]:
    """kv, tensor infos (name, type, ne, offset) and the data section start, read independently of gguf-py."""
    with open(path, "rb") as handle:
        assert handle.read(4) == b"GGUF" and _read(handle, "<I") == 3
        n_tensors, n_kv = _read(handle, "<Q"), _read(handle, "<Q")
        kv = {}
        for _ in range(n_kv):
            key = _string(handle)
            kv[key] = _value(handle, _read(handle, "<I"))
        tensors = []
        for _ in range(n_tensors):
            name = _string(handle)
            ne = [_read(handle, "<Q") for _ in range(_read(handle, "<I"))]
            ggml_type = GGMLQuantizationType(_read(handle, "<I")).name
            tensors.append((name, ggml_type, ne, _read(handle, "<Q")))
        alignment = kv.get("general.alignment", 32)
        return kv, tensors, -(-handle.tell() // alignment) * alignment


@pytest.mark.parametrize(("case", "name"), _files_of("gguf"), ids=_ids(_files_of("gguf")))
def test_gguf_header_is_true_and_data_section_complete(case: Case, name: str, cases_dir: Path) -> None:
    spec = case.files[name]["gguf"]
    path = cases_dir / case.id / name
    kv, tensors, data_start = _gguf_header(path)
    assert kv.get("general.architecture") == spec["arch"]
    for key, value in spec.get("kv", {}).items():
        assert kv[key] == (value["value"] if isinstance(value, dict) else value), key
    if spec.get("vocab_size"):
        assert len(kv["tokenizer.ggml.tokens"]) == spec["vocab_size"]
    assert [(n, t, ne) for n, t, ne, _ in tensors] == list(expand_tensors(spec["tensors"]))
    name_, ggml_type, ne, offset = tensors[-1]
    assert path.stat().st_size == data_start + offset + -(-gguf_tensor_nbytes(ggml_type, ne) // 32) * 32


def test_gguf_block_count_counts_the_nextn_blocks(cases_dir: Path) -> None:
    """llama.cpp's rule: nextn tensors live in the last block, blk.{block_count - 1}."""
    checked = 0
    for case, name in _files_of("gguf"):
        kv, tensors, _ = _gguf_header(cases_dir / case.id / name)
        arch = kv.get("general.architecture")
        nextn_blocks = {int(n.split(".")[1]) for n, _, _, _ in tensors if ".nextn." in n}
        if arch and nextn_blocks:
            assert nextn_blocks == {kv[f"{arch}.block_count"] - 1}, f"{case.id}/{name}"
            assert kv[f"{arch}.nextn_predict_layers"] == 1
            checked += 1
    assert checked >= 5


@pytest.mark.parametrize("case_id", GGUF_READER_SAMPLE)
def test_gguf_reader_reads_the_stand_ins(case_id: str, cases_dir: Path) -> None:
    case = next(c for c in CASES if c.id == case_id)
    for name, spec in case.files.items():
        reader = GGUFReader(cases_dir / case.id / name)
        expected = list(expand_tensors(spec["gguf"]["tensors"]))
        assert [(t.name, t.tensor_type.name, [int(d) for d in t.shape]) for t in reader.tensors] == expected
        if spec["gguf"].get("vocab_size"):
            tokens = reader.fields["tokenizer.ggml.tokens"]
            assert len(tokens.data) == spec["gguf"]["vocab_size"]
