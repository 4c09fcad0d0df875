"""The GGUF header parser: same answers as gguf-py's GGUFReader, bounded remote reads, clean refusals."""

from __future__ import annotations

import hashlib
import random
import struct
import tracemalloc
from pathlib import Path
from typing import Any

import gguf
import pytest
from gguf.constants import GGUFValueType, Keys
from gguf_factory import (
    BAD_GGUF_PROBLEMS,
    BigGGUF,
    Glm4MoeDims,
    TensorSpec,
    bpe_vocab,
    raw_gguf,
    write_bad_gguf,
    write_big_gguf,
    write_gguf,
    write_nextn_gguf,
)

from mtpinspect.errors import FormatError, SourceError
from mtpinspect.formats.gguf import (
    FIRST_READ,
    MAX_HEADER_BYTES,
    MAX_LISTED_ITEMS,
    SMALL_FIRST_READ,
    ArraySummary,
    GGUFHeader,
    read_gguf_header,
)
from mtpinspect.sources.reader import ByteMeter, LocalFileReader

MiB = 1024 * 1024


class RecordingReader:
    """A RangeReader over a local file that keeps every (offset, length, bytes returned) it served."""

    def __init__(self, path: Path) -> None:
        self.inner = LocalFileReader(path)
        self.name = self.inner.name
        self.calls: list[tuple[int, int, int]] = []

    @property
    def size(self) -> int:
        return self.inner.size

    def read_at(self, offset: int, length: int) -> bytes:
        data = self.inner.read_at(offset, length)
        self.calls.append((offset, length, len(data)))
        return data

    @property
    def bytes_read(self) -> int:
        return sum(got for _, _, got in self.calls)


def parse(path: Path) -> GGUFHeader:
    return read_gguf_header(LocalFileReader(path))


# -- agreement with gguf.GGUFReader --------------------------------------------------------------


def reference_view(path: Path) -> tuple[dict[str, Any], list[tuple[str, tuple[int, ...], str, int, int, int]]]:
    """What GGUFReader sees, in our representation (big arrays digested over their raw item bytes)."""
    reader = gguf.GGUFReader(path)
    metadata: dict[str, Any] = {}
    for name, fld in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        if fld.types[0] == GGUFValueType.ARRAY:
            count = int(fld.parts[4][0])
            if count > MAX_LISTED_ITEMS:
                raw = b"".join(part.tobytes() for part in fld.parts[5:])
                metadata[name] = ArraySummary(fld.types[-1].name, count, hashlib.sha256(raw).hexdigest())
                continue
        metadata[name] = fld.contents()
    tensors = [
        (t.name, tuple(int(d) for d in t.shape), t.tensor_type.name, t.data_offset, t.n_elements, t.n_bytes)
        for t in reader.tensors
    ]
    return metadata, tensors


def assert_matches_reference(path: Path) -> GGUFHeader:
    header = parse(path)
    metadata, tensors = reference_view(path)
    assert header.metadata == metadata
    assert list(header.metadata) == list(metadata)  # key order as stored
    ours = [(t.name, t.shape, t.ggml_type, header.data_offset + t.offset, t.n_elements, t.nbytes) for t in header.tensors]
    assert ours == tensors
    assert header.data_offset == gguf.GGUFReader(path).data_offset
    return header


ALL_SCALARS: dict[str, Any] = {
    "test.u8": gguf.GGUFValue(200, GGUFValueType.UINT8),
    "test.i8": gguf.GGUFValue(-100, GGUFValueType.INT8),
    "test.u16": gguf.GGUFValue(60000, GGUFValueType.UINT16),
    "test.i16": gguf.GGUFValue(-30000, GGUFValueType.INT16),
    "test.u32": 4_000_000_000,
    "test.i32": -2_000_000_000,
    "test.f32": 0.1,
    "test.bool": True,
    "test.u64": 2**63 + 5,
    "test.i64": gguf.GGUFValue(-(2**62), GGUFValueType.INT64),
    "test.f64": gguf.GGUFValue(1 / 3, GGUFValueType.FLOAT64),
    "test.str": "héllo wörld ✓ 模型",
    "test.empty_str": "",
    "test.bools": [True, False, True],
    "test.floats": [0.5, -1.25, 3.0],
    "test.u64s": gguf.GGUFValue([1, 2**40], GGUFValueType.ARRAY, GGUFValueType.UINT64),
    "test.strs": ["a", "", "ü", "<|im_start|>"],
    "test.listed_max": list(range(MAX_LISTED_ITEMS)),
    "test.summarised_min": list(range(MAX_LISTED_ITEMS + 1)),
    "test.strs_summarised": [f"s{i}" for i in range(MAX_LISTED_ITEMS + 1)],
}


def test_every_value_type_matches_gguf_reader(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "types.gguf", arch="llama", metadata=ALL_SCALARS)
    header = assert_matches_reference(path)
    assert header.get("test.u64") == 2**63 + 5
    assert header.get("test.str") == "héllo wörld ✓ 模型"
    assert header.get("test.listed_max") == list(range(MAX_LISTED_ITEMS))
    summary = header.get("test.summarised_min")
    assert summary == ArraySummary("INT32", MAX_LISTED_ITEMS + 1, summary.sha256)
    assert header.array_length("test.summarised_min") == MAX_LISTED_ITEMS + 1
    assert header.array_length("test.strs") == 4
    assert header.array_length("test.str") is None
    assert header.get("missing", "default") == "default"
    assert header.tensors == () and header.data_end == header.data_offset


@pytest.mark.parametrize("sidecar", [False, True], ids=["bundled", "sidecar"])
def test_nextn_model_matches_gguf_reader(tmp_path: Path, sidecar: bool) -> None:
    path = write_nextn_gguf(tmp_path / "tiny.gguf", sidecar=sidecar)
    header = assert_matches_reference(path)
    assert header.architecture == "glm4moe"
    assert header.get("glm4moe.nextn_predict_layers") == 1
    assert header.get("glm4moe.block_count") == 3
    eh_proj = header.tensor("blk.2.nextn.eh_proj.weight")
    assert eh_proj is not None and eh_proj.shape == (128, 64) and eh_proj.ggml_type == "F32"
    assert eh_proj.nbytes == 128 * 64 * 4
    assert {t.name for t in header.tensors if ".nextn." in t.name} == {
        f"blk.2.nextn.{n}.weight" for n in ("eh_proj", "enorm", "hnorm", "shared_head_norm")
    }
    assert (header.tensor("blk.0.attn_norm.weight") is None) == sidecar
    assert header.data_end == header.file_size


def test_quantized_types_custom_alignment_and_vocab_match_gguf_reader(tmp_path: Path) -> None:
    tokens, token_types, merges = bpe_vocab(5000, seed=3)
    metadata = {
        Keys.Tokenizer.MODEL: "gpt2",
        Keys.Tokenizer.LIST: tokens,
        Keys.Tokenizer.SCORES: [float(-i) for i in range(5000)],
        Keys.Tokenizer.TOKEN_TYPE: token_types,
        Keys.Tokenizer.MERGES: merges,
    }
    tensors = [
        TensorSpec("token_embd.weight", (512, 5000), "Q4_K"),
        TensorSpec("blk.0.attn_q.weight", (512, 512), "IQ3_S"),
        TensorSpec("blk.0.ffn_down_exps.weight", (256, 512, 8), "Q6_K"),
        TensorSpec("blk.0.attn_norm.weight", (512,), "F32"),
        TensorSpec("blk.1.nextn.eh_proj.weight", (1024, 512), "Q8_0"),
        TensorSpec("blk.1.nextn.enorm.weight", (512,), "BF16"),
        TensorSpec("output.weight", (512, 5000), "MXFP4"),
    ]
    path = write_gguf(tmp_path / "quant.gguf", arch="qwen35", metadata=metadata, tensors=tensors, alignment=64)
    header = assert_matches_reference(path)
    assert header.alignment == 64 and header.data_offset % 64 == 0
    assert [t.ggml_type for t in header.tensors] == [t.ggml_type for t in tensors]
    assert [t.shape for t in header.tensors] == [t.shape for t in tensors]
    assert header.get(Keys.Tokenizer.TOKEN_TYPE).count == 5000


def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    name_kv = struct.pack("<Q", 12) + b"general.name" + struct.pack("<I", GGUFValueType.STRING)
    path = tmp_path / "latin1.gguf"
    path.write_bytes(raw_gguf([name_kv + struct.pack("<Q", 4) + b"caf\xe9"]))
    assert parse(path).get("general.name") == "caf\ufffd"


# -- the big realistic file: remote cost -----------------------------------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> BigGGUF:
    return write_big_gguf(tmp_path_factory.mktemp("big") / "big.gguf", size_gib=4)


def test_big_file_remote_pattern_stays_within_bounds(big: BigGGUF) -> None:
    reader = RecordingReader(big.path)
    header = read_gguf_header(reader)
    # 2 MiB, then the rest in one read sized from the token count (the merges still to come included).
    assert len(reader.calls) == 2, reader.calls
    assert reader.bytes_read <= header.header_size + 2 * MiB, (reader.bytes_read, header.header_size)
    assert header.header_size > FIRST_READ  # the bound is exercised, not met by one read
    assert max(offset + got for offset, _, got in reader.calls) <= header.header_size + 2 * MiB
    # Reads are contiguous and never overlap: every byte is fetched once.
    assert [offset for offset, _, _ in reader.calls] == [0, *(o + g for o, _, g in reader.calls[:-1])]


def test_big_file_content(big: BigGGUF) -> None:
    meter = ByteMeter()
    header = read_gguf_header(LocalFileReader(big.path, meter=meter))
    assert meter.requests <= 3 and meter.bytes_read <= header.header_size + 2 * MiB
    assert header.file_size == big.file_size > 3 * 1024**3
    assert header.data_end == header.file_size  # the tensor infos claim the whole (sparse) file
    assert len(header.tensors) == big.n_tensors and 950 <= big.n_tensors <= 1100
    n_vocab = big.dims.n_vocab
    tokens, token_types, merges = bpe_vocab(n_vocab)
    strings = lambda items: b"".join(struct.pack("<Q", len(b)) + b for b in (s.encode() for s in items))  # noqa: E731
    scores = struct.pack(f"<{n_vocab}f", *(float(-i) for i in range(n_vocab)))
    types = struct.pack(f"<{n_vocab}i", *token_types)
    expected = {
        Keys.Tokenizer.LIST: ("STRING", n_vocab, strings(tokens)),
        Keys.Tokenizer.SCORES: ("FLOAT32", n_vocab, scores),
        Keys.Tokenizer.TOKEN_TYPE: ("INT32", n_vocab, types),
        Keys.Tokenizer.MERGES: ("STRING", len(merges), strings(merges)),
    }
    for key, (item_type, count, raw) in expected.items():
        assert header.get(key) == ArraySummary(item_type, count, hashlib.sha256(raw).hexdigest()), key
    mtp = big.nextn_block
    assert header.get("glm4moe.block_count") == mtp + 1 and header.get("glm4moe.nextn_predict_layers") == 1
    eh_proj = header.tensor(f"blk.{mtp}.nextn.eh_proj.weight")
    assert eh_proj is not None and eh_proj.ggml_type == "Q8_0" and eh_proj.shape == (2 * big.dims.n_embd, big.dims.n_embd)
    assert {t.ggml_type for t in header.tensors} >= {"F32", "Q4_K", "Q6_K", "Q8_0"}


def test_small_file_is_read_in_one_request(tmp_path: Path) -> None:
    reader = RecordingReader(write_nextn_gguf(tmp_path / "tiny.gguf"))
    read_gguf_header(reader)
    assert reader.calls == [(0, min(FIRST_READ, reader.size), min(FIRST_READ, reader.size))]


def test_a_small_first_read_grows_in_one_more(big: BigGGUF) -> None:
    # A split shard after the first is read from 64 KiB; a long header still takes one read more, not two.
    reader = RecordingReader(big.path)
    header = read_gguf_header(reader, first_read=SMALL_FIRST_READ)
    assert reader.calls[0] == (0, SMALL_FIRST_READ, SMALL_FIRST_READ) and len(reader.calls) == 2, reader.calls
    assert reader.bytes_read <= header.header_size + MiB


# -- refusals --------------------------------------------------------------------------------------

EXPECTED_PROBLEM = {
    "truncated-header": "truncated",
    "empty": "not a GGUF file (0 bytes)",
    "zip": "looks like a zip archive",
    "safetensors": "looks like a safetensors file",
    "version-1": "unsupported GGUF version 1 ",
    "version-99": "unsupported GGUF version 99 ",
    "big-endian": "big-endian",
    "huge-array": f"array of {2**60} UINT8 items",
    "huge-string-array": f"array of {2**60} strings",
    "huge-string": f"string of {2**40} bytes",
    "huge-key": f"metadata key #0: string of {2**40} bytes",
    "unknown-value-type": "unknown value type 99",
    "nested-array": "nested arrays are not supported",
    "unknown-ggml-type": "unknown ggml type id 4",
    "absurd-n-dims": f"{2**31} dimensions",
    "huge-tensor-count": f"1 metadata keys and {2**40} tensors",
    "huge-kv-count": f"{2**40} metadata keys",
    "bad-alignment": "alignment must be a power-of-two UINT32, got 3",
    "duplicate-key": "duplicate key",
    "duplicate-tensor": "duplicate tensor name",
}


def test_every_bad_problem_has_an_expectation() -> None:
    assert set(EXPECTED_PROBLEM) == set(BAD_GGUF_PROBLEMS)


@pytest.mark.parametrize("problem", BAD_GGUF_PROBLEMS)
def test_bad_file_is_refused_in_one_line_with_bounded_memory(tmp_path: Path, problem: str) -> None:
    path = write_bad_gguf(tmp_path / f"{problem}.gguf", problem)
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as excinfo:
            parse(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(excinfo.value)
    assert message.startswith(f"{path}: ")
    assert "\n" not in message
    assert EXPECTED_PROBLEM[problem] in message
    assert peak < 8 * MiB


def test_every_truncation_of_the_header_is_refused(tmp_path: Path) -> None:
    tokens, token_types, merges = bpe_vocab(300, seed=1)
    metadata = {**ALL_SCALARS, Keys.Tokenizer.LIST: tokens, Keys.Tokenizer.MERGES: merges}
    tensors = [TensorSpec(f"blk.{i}.attn_q.weight", (256, 256), "Q4_K") for i in range(20)]
    full = write_gguf(tmp_path / "full.gguf", metadata=metadata, tensors=tensors).read_bytes()
    header_size = parse(tmp_path / "full.gguf").header_size
    cut = tmp_path / "cut.gguf"
    for size in [*range(0, 64), *range(64, header_size, 37), header_size - 1]:
        cut.write_bytes(full[:size])
        with pytest.raises(FormatError):
            parse(cut)
    # Cut after the tensor infos: the header is whole, only the data is short, and that is reported.
    cut.write_bytes(full[:header_size])
    header = parse(cut)
    assert len(header.tensors) == 20 and header.data_end > header.file_size


def test_random_corruption_never_escapes_as_another_exception(tmp_path: Path) -> None:
    good = write_nextn_gguf(tmp_path / "good.gguf", dims=Glm4MoeDims(n_vocab=100)).read_bytes()
    header_size = parse(tmp_path / "good.gguf").header_size
    rng = random.Random(7)
    bad = tmp_path / "bad.gguf"
    refused = 0
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(header_size)
            data[pos : pos + 8] = rng.randbytes(8)
        bad.write_bytes(bytes(data))
        try:
            parse(bad)
        except FormatError as exc:
            refused += 1
            assert "\n" not in str(exc)
    assert refused > 100  # the corruption does hit lengths, types and counts


def test_header_larger_than_the_limit_is_refused_on_a_big_file(tmp_path: Path) -> None:
    # The string fits in the file but not under the header limit: refused before anything is read.
    claim = MAX_HEADER_BYTES + 1
    kv = struct.pack("<Q", 12) + b"general.name" + struct.pack("<IQ", GGUFValueType.STRING, claim)
    path = tmp_path / "huge.gguf"
    path.write_bytes(raw_gguf([kv]))
    with open(path, "r+b") as f:
        f.truncate(2 * MAX_HEADER_BYTES)
    reader = RecordingReader(path)
    with pytest.raises(FormatError, match=f"string of {claim} bytes .* runs past 64 MiB"):
        read_gguf_header(reader)
    assert reader.bytes_read <= FIRST_READ


# -- LocalFileReader ------------------------------------------------------------------------------


def test_local_reader_counts_and_reads_short_at_eof(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(100)))
    meter = ByteMeter()
    reader = LocalFileReader(path, meter=meter)
    assert reader.size == 100 and reader.name == str(path)
    assert reader.read_at(90, 20) == bytes(range(90, 100))
    assert reader.read_at(100, 5) == b""
    assert (meter.requests, meter.bytes_read) == (2, 10)


def test_local_reader_refuses_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        LocalFileReader(tmp_path / "missing.gguf")
    with pytest.raises(SourceError, match="not a regular file"):
        LocalFileReader(tmp_path)


@pytest.mark.parametrize("length", [2**64 - 1, 2**62, 2**40])
def test_a_corrupt_length_inside_a_long_string_array_is_refused_where_it_is(tmp_path: Path, length: int) -> None:
    # The walk of a long string array checks the window once per block of items: a length past the file, or
    # past any offset Python can index (2**64 - 1), must still stop it at that item with one FormatError.
    tokens = [f"t{i}" for i in range(100)]
    tokens[50] = "MARKER"
    good = write_gguf(tmp_path / "good.gguf", metadata={Keys.Tokenizer.LIST: tokens}, tensors=[]).read_bytes()
    item = struct.pack("<Q", len("MARKER")) + b"MARKER"
    assert good.count(item) == 1
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(good.replace(item, struct.pack("<Q", length) + b"MARKER"))
    with pytest.raises(FormatError) as excinfo:
        parse(bad)
    message = str(excinfo.value)
    assert "\n" not in message and "string #50 of 100" in message, message
