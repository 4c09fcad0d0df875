"""The header of a GGUF file (metadata and tensor infos), parsed fast and safely through a RangeReader.

A check needs the keys and tensor names of files that may be hundreds of GB on the Hub, so the parser:

- reads in few, large requests: 2 MiB first (less for a file whose header is expected small: a split
  shard after the first); when that runs out, one read sized from what is still to
  come (the rest of the array being walked, estimated from its item count and the average item size
  so far; the per-token arrays and the merges the tokenizer model has; the tensor infos) plus slack;
  a 150k-token vocabulary with merges takes 2 reads and fetches well under 2 MiB past the header
  (bench/README.md);
- never reads tensor data, and keeps big arrays (vocabularies, merges) as a count and a digest only;
- checks every length, count and id the file claims against the bytes the file can still hold
  before it reads or allocates anything, so a corrupt or hostile file fails with one FormatError line.

Constants (magic, value and ggml type ids, block sizes, the alignment key) come from gguf-py, through the
table generated from it (gguf_constants.py): importing gguf-py itself would import numpy.
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass, field
from functools import cached_property
from itertools import repeat
from typing import Any

from mtpinspect.errors import FormatError
from mtpinspect.formats.gguf_constants import (
    GGML_QUANT_SIZES,
    GGUF_DEFAULT_ALIGNMENT,
    GGUF_MAGIC,
    GGUF_VERSION,
    GGMLQuantizationType,
    GGUFValueType,
    Keys,
    LlamaFileType,
)
from mtpinspect.sources.reader import RangeReader

FIRST_READ = 2 * 1024 * 1024
# The first read of a file whose header is expected small: a split shard after the first holds only the
# split keys and its tensor infos (about 20 KB for 300 tensors). A longer header grows from there.
SMALL_FIRST_READ = 64 * 1024
# Later reads add slack for what the estimate gets wrong: a fixed part, and a share of the estimated
# string bytes (string lengths drift along an array: BPE merges grow longer with rank), capped. Tuned on
# the 19 real vocabularies llama.cpp ships (models/ggml-vocab-*.gguf, 30k to 262k tokens) given 1,000
# tensors: 2 reads (3 for Llama-3's merges) and at most 1.4 MiB read past the header; a 10% share needs
# a third read on some, and without the cap Gemma 4's 9 MB of merges read 2.3 MiB past its header.
REFILL_SLACK = 256 * 1024
REFILL_SLACK_SHARE = 0.2
REFILL_SLACK_CAP = 1024 * 1024
# The largest real headers (256k-token vocabularies with merges) are about 10 MiB; anything claiming
# more is corrupt, and refusing it bounds memory on multi-GB files.
MAX_HEADER_BYTES = 64 * 1024 * 1024
# Arrays up to this many items are kept as lists; longer ones are summarised.
MAX_LISTED_ITEMS = 64
# ggml.h GGML_MAX_DIMS (gguf-py does not export it).
GGML_MAX_DIMS = 4
# llama-hparams.h LLAMA_MAX_LAYERS: llama.cpp asserts 0 < block_count <= this when it loads a model.
LLAMA_MAX_LAYERS = 512
_UINT32_MAX = 2**32 - 1
# Version 1 used 32-bit counts; 2 and 3 share today's layout.
SUPPORTED_VERSIONS = (2, GGUF_VERSION)

_SCALAR_FORMATS: dict[int, str] = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}
# Smallest encodings, for checking claimed counts against the bytes left: a key/value is an empty key
# (u64 length), a u32 type and a 1-byte value; a tensor info is an empty name, u32 n_dims, u32 type,
# u64 offset; a string is its u64 length.
_MIN_KV_BYTES = 8 + 4 + 1
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8
_STRING_LEN_BYTES = 8
# Refill estimates for what has not been seen yet.
_GUESS_TENSOR_INFO_BYTES = 128
_GUESS_KV_BYTES = 64
_GUESS_STRING_ITEM_BYTES = 16
# llama.cpp's converters write the per-token arrays (4 bytes per token each) right after the token
# list, before the merges: a read that runs out inside these should also cover those still to come.
_PER_TOKEN_ARRAYS = (Keys.Tokenizer.SCORES, Keys.Tokenizer.TOKEN_TYPE)
_VOCAB_KEYS = (Keys.Tokenizer.LIST, *_PER_TOKEN_ARRAYS)
# Then the merges, for the tokenizer models that have them: their bytes per byte of the token list, as
# llama.cpp's vocabularies have them (models/ggml-vocab-*.gguf): 1.03-1.06 for BPE ("gpt2") vocabularies
# whose merges make the tokens, 2.1 for gemma4. Llama-3-style BPE vocabularies hold 2.2 merges per token
# (2.5x the bytes): the estimate falls short and their header takes a third read.
_MERGES_PER_TOKEN_BYTE = {"gpt2": 1.0, "gemma4": 2.1}

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
# Items of a string array walked between two window checks: at most this many are walked twice per window.
_WALK_BLOCK = 1024
_HEAD = struct.Struct("<IIQQ")


@dataclass(frozen=True)
class ArraySummary:
    """A metadata array too long to keep: its item type, length and SHA-256 over its raw item bytes
    (for string arrays, each item's u64 length prefix and UTF-8 bytes, as stored)."""

    item_type: str  # gguf.GGUFValueType name, e.g. "STRING", "FLOAT32"
    count: int
    sha256: str


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    shape: tuple[int, ...]  # ggml ne order, as stored (numpy order is reversed)
    ggml_type: str  # gguf.GGMLQuantizationType name, e.g. "Q4_K", "F32", "IQ3_S"
    offset: int  # relative to GGUFHeader.data_offset
    n_elements: int
    nbytes: int


@dataclass(frozen=True)
class GGUFHeader:
    name: str
    version: int
    file_size: int
    metadata: dict[str, Any] = field(repr=False)  # lists for arrays <= 64 items, ArraySummary beyond
    tensors: tuple[GGUFTensor, ...] = field(repr=False)
    header_size: int  # bytes up to the end of the tensor-info section
    alignment: int
    data_offset: int
    value_types: dict[str, str] = field(default_factory=dict, repr=False)  # key -> gguf.GGUFValueType name

    @property
    def architecture(self) -> str | None:
        return self.string(Keys.General.ARCHITECTURE)

    @property
    def file_type(self) -> str | None:
        """`general.file_type` as the converter and llama-quantize name it (Q8_0, Q4_K_M, F16); None when absent
        or not an integer. Only said, never judged: llama.cpp itself treats the key as optional."""
        value = self.metadata.get(Keys.General.FILE_TYPE)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        try:
            name = LlamaFileType(value).name
        except ValueError:
            return f"file type {value}"
        return name.removeprefix("MOSTLY_").removeprefix("ALL_")

    def get(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(key, default)

    def string(self, key: str) -> str | None:
        """A STRING key; None when absent. Another type is a FormatError: llama.cpp refuses the file."""
        if key not in self.metadata:
            return None
        self._require_type(key, GGUFValueType.STRING)
        value: str = self.metadata[key]
        return value

    def uint32(self, key: str, *, lowest: int = 0, highest: int = _UINT32_MAX, limit: str = "") -> int | None:
        """A UINT32 key (counts and widths) as llama.cpp reads it; None when absent. Another type, or a value
        outside [lowest, highest] (``limit`` says whose limit), is a FormatError naming the key and the value."""
        if key not in self.metadata:
            return None
        self._require_type(key, GGUFValueType.UINT32)
        value: int = self.metadata[key]
        if not lowest <= value <= highest:
            raise FormatError(f"{self.name}: {key} = {value}: {limit or f'expected {lowest} to {highest}'}")
        return value

    def _require_type(self, key: str, expected: GGUFValueType) -> None:
        # llama.cpp's loader compares the stored type with the one it reads and throws "key ... has wrong type".
        found = self.value_types.get(key)
        if found != expected.name:
            raise FormatError(f"{self.name}: {key} = {value_text(self.metadata[key])} ({found}): llama.cpp reads it as "
                              f"{expected.name} and refuses the file")

    def array_length(self, key: str) -> int | None:
        value = self.metadata.get(key)
        if isinstance(value, ArraySummary):
            return value.count
        if isinstance(value, list):
            return len(value)
        return None

    def tensor(self, name: str) -> GGUFTensor | None:
        return self._tensors_by_name.get(name)

    @property
    def data_end(self) -> int:
        """Where the tensor data claims to end; beyond file_size when the data was cut short."""
        return self.data_offset + max((t.offset + t.nbytes for t in self.tensors), default=0)

    def require_data(self) -> GGUFHeader:
        """This header, or a FormatError when the file is shorter than the tensor data it declares (an
        interrupted download): llama.cpp would stop at load. ``file_size`` is the listed size for a remote file."""
        if self.tensors and self.data_end > self.file_size:
            raise FormatError(f"{self.name}: truncated: {self.file_size} bytes, header declares {self.data_end}")
        return self

    @cached_property
    def _tensors_by_name(self) -> dict[str, GGUFTensor]:
        return {t.name: t for t in self.tensors}


def read_gguf_header(reader: RangeReader, first_read: int = FIRST_READ) -> GGUFHeader:
    """Parse the metadata and tensor infos of the GGUF behind ``reader``; raise FormatError if it is not one.

    ``first_read`` is the size of the first request (SMALL_FIRST_READ for a header expected small)."""
    return _Parser(reader, first_read).parse()


def _short(text: str, limit: int = 80) -> str:
    """A name from the file, quoted and cut, safe inside a one-line message."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def value_text(value: Any, limit: int = 80) -> str:
    """A metadata value as a one-line message shows it: strings quoted and cut, long arrays by their length."""
    if isinstance(value, ArraySummary):
        return f"[{value.count} {value.item_type} items]"
    if isinstance(value, str):
        return _short(value, limit)
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class _Parser:
    """One pass over the header through a sliding window of fetched bytes.

    ``buf`` holds file bytes from offset ``base``; ``pos`` indexes into it. The counters of what is
    left (keys, tensors, array items) only feed the size of the next read.
    """

    def __init__(self, reader: RangeReader, first_read: int) -> None:
        self.reader = reader
        self.first_read = first_read
        self.size = reader.size
        self.limit = min(self.size, MAX_HEADER_BYTES)
        self.buf = b""
        self.base = 0
        self.pos = 0
        self.where = "file header"
        self.metadata: dict[str, Any] = {}
        self.value_types: dict[str, str] = {}
        self.key = ""
        self.kv_left = 0
        self.n_tokens = 0
        self.token_bytes = 0.0  # the token list's bytes: counted once it is walked, estimated while it is
        self.tensors_left = 0
        self.tensor_info_bytes = 0
        self.tensors_seen = 0
        self.items_left = 0
        self.item_avg = float(_GUESS_STRING_ITEM_BYTES)

    # -- errors -------------------------------------------------------------------------------

    def _error(self, problem: str) -> FormatError:
        return FormatError(f"{self.reader.name}: {problem}")

    def _past_end(self, what: str, offset: int, nbytes: int) -> FormatError:
        if offset + nbytes > self.size:
            return self._error(
                f"{self.where}: {what} at offset {offset} runs past the end of the file "
                f"({self.size} bytes; truncated or corrupt)"
            )
        return self._error(
            f"{self.where}: {what} at offset {offset} runs past {MAX_HEADER_BYTES // 2**20} MiB; "
            "no real GGUF header is that large (corrupt?)"
        )

    def _check_fits(self, what: str, nbytes: int) -> None:
        offset = self.base + self.pos
        if offset + nbytes > self.limit:
            raise self._past_end(what, offset, nbytes)

    # -- buffering ----------------------------------------------------------------------------

    def _need(self, nbytes: int, what: str | None = None) -> None:
        if self.pos + nbytes > len(self.buf):
            self._refill(nbytes, what)

    def _refill(self, nbytes: int, what: str | None) -> None:
        start = self.base + self.pos
        if start + nbytes > self.limit:
            raise self._past_end(what or f"{nbytes} bytes", start, nbytes)
        if self.base == 0 and not self.buf:
            want = max(nbytes, self.first_read)
        else:
            strings, other = self._estimate_rest()
            want = nbytes + int(strings + min(strings * REFILL_SLACK_SHARE, REFILL_SLACK_CAP) + other) + REFILL_SLACK
        want = min(want, self.limit - start)
        have = len(self.buf) - self.pos
        fetch_at, fetch_len = start + have, want - have
        data = self.reader.read_at(fetch_at, fetch_len)
        if len(data) != fetch_len:
            raise self._error(
                f"short read at offset {fetch_at}: got {len(data)} of {fetch_len} bytes (file changed while reading?)"
            )
        self.buf = self.buf[self.pos :] + data
        self.base = start
        self.pos = 0

    def _estimate_rest(self) -> tuple[float, float]:
        """Bytes still to parse after the current item: (strings: the rest of the string array being walked
        and the merges still to come, everything else)."""
        strings = self.items_left * self.item_avg
        ti_avg = self.tensor_info_bytes / self.tensors_seen if self.tensors_seen else _GUESS_TENSOR_INFO_BYTES
        other = self.kv_left * _GUESS_KV_BYTES + self.tensors_left * ti_avg
        if self.key in _VOCAB_KEYS:
            model = self.metadata.get(Keys.Tokenizer.MODEL)
            ratio = _MERGES_PER_TOKEN_BYTE.get(model, 0.0) if isinstance(model, str) else 0.0
            # The vocabulary arrays that may follow, in the order converters write them, as far as the keys
            # still to come reach (with too few left, a BPE vocabulary is the one without scores).
            followers = [k for k in (*_PER_TOKEN_ARRAYS, Keys.Tokenizer.MERGES)
                         if k != self.key and k not in self.metadata and (k != Keys.Tokenizer.MERGES or ratio)]
            if len(followers) > self.kv_left and ratio and Keys.Tokenizer.SCORES in followers:
                followers.remove(Keys.Tokenizer.SCORES)
            followers = followers[: self.kv_left]
            other += 4 * self.n_tokens * sum(1 for k in followers if k in _PER_TOKEN_ARRAYS)
            if Keys.Tokenizer.MERGES in followers:
                strings += self.token_bytes * ratio
        return strings, other

    # -- primitives ---------------------------------------------------------------------------

    def _u32(self) -> int:
        self._need(4)
        (value,) = _U32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return value

    def _u64(self) -> int:
        self._need(8)
        (value,) = _U64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return value

    def _string(self) -> str:
        n = self._u64()
        self._check_fits(f"string of {n} bytes", n)
        self._need(n)
        text = self.buf[self.pos : self.pos + n].decode("utf-8", errors="replace")
        self.pos += n
        return text

    # -- metadata -----------------------------------------------------------------------------

    def _value(self, vtype: int) -> Any:
        fmt = _SCALAR_FORMATS.get(vtype)
        if fmt is not None:
            size = struct.calcsize(fmt)
            self._need(size)
            (value,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
            self.pos += size
            return value
        if vtype == GGUFValueType.STRING:
            return self._string()
        if vtype == GGUFValueType.ARRAY:
            return self._array()
        raise self._error(f"{self.where}: unknown value type {vtype}")

    def _array(self) -> list[Any] | ArraySummary:
        item_type = self._u32()
        count = self._u64()
        if self.key == Keys.Tokenizer.LIST:
            self.n_tokens = count
        if item_type == GGUFValueType.STRING:
            min_bytes = count * _STRING_LEN_BYTES
            self._check_fits(f"array of {count} strings (>= {min_bytes} bytes)", min_bytes)
            if count <= MAX_LISTED_ITEMS:
                return [self._string() for _ in range(count)]
            return self._string_array_summary(count)
        fmt = _SCALAR_FORMATS.get(item_type)
        if fmt is None:
            if item_type == GGUFValueType.ARRAY:
                raise self._error(f"{self.where}: array of {count} items: nested arrays are not supported")
            raise self._error(f"{self.where}: array of {count} items: unknown item type {item_type}")
        nbytes = count * struct.calcsize(fmt)
        self._check_fits(f"array of {count} {GGUFValueType(item_type).name} items ({nbytes} bytes)", nbytes)
        self._need(nbytes)
        start = self.pos
        self.pos += nbytes
        if count <= MAX_LISTED_ITEMS:
            return list(struct.unpack_from(f"<{count}{fmt}", self.buf, start))
        digest = hashlib.sha256(memoryview(self.buf)[start : self.pos]).hexdigest()
        return ArraySummary(GGUFValueType(item_type).name, count, digest)

    def _string_array_summary(self, count: int) -> ArraySummary:
        """Walk ``count`` length-prefixed strings without decoding them, hashing their raw bytes."""
        digest = hashlib.sha256()
        unpack = _U64.unpack_from
        array_start = self.base + self.pos
        segment = self.pos
        done = 0
        while True:
            buf, pos, end = self.buf, self.pos, len(self.buf)
            # Hot loops: whole items inside the window need no checks, the window is within the file. Blocks
            # of _WALK_BLOCK items are walked with no comparison at all (a quarter faster: a vocabulary is
            # most of a header's time), and a block that leaves the window is walked again item by item.
            while (block := min(_WALK_BLOCK, count - done)) > 0:
                block_start = pos
                try:
                    for _ in repeat(None, block):
                        pos += 8 + unpack(buf, pos)[0]
                except (struct.error, OverflowError):
                    # A length prefix past the window, or past any offset (a corrupt length near 2**64): the
                    # block does not fit, and the walk item by item says where.
                    pos = end + 1
                if pos > end:
                    pos = block_start
                    break
                done += block
            # A for loop, with the length prefix that runs past the window left to unpack_from (struct.error:
            # it reads only inside the buffer), is a third faster than counting and comparing by hand.
            walked = done  # the whole items walked: the index of the one that stops the loop
            try:
                for walked in range(done, count):  # noqa: B007 - read after the loop
                    item_end = pos + 8 + unpack(buf, pos)[0]
                    if item_end > end:
                        break
                    pos = item_end
                else:
                    walked = count
            except struct.error:
                pass  # the next length prefix is not whole in the window
            self.pos, done = pos, walked
            digest.update(memoryview(buf)[segment:pos])
            if done == count:
                break
            if done:
                self.item_avg = (self.base + pos - array_start) / done
                if self.key == Keys.Tokenizer.LIST:
                    self.token_bytes = self.item_avg * count
            self.items_left = count - done - 1
            need = 8 if pos + 8 > end else 8 + unpack(buf, pos)[0]
            self._need(need, f"string #{done} of {count} ({need - 8} bytes)")
            segment = self.pos
        self.items_left = 0
        if self.key == Keys.Tokenizer.LIST:
            self.token_bytes = self.base + self.pos - array_start
        return ArraySummary(GGUFValueType.STRING.name, count, digest.hexdigest())

    def _metadata(self, kv_count: int) -> int:
        """Fill ``self.metadata``; return the data alignment."""
        alignment = GGUF_DEFAULT_ALIGNMENT
        for i in range(kv_count):
            self.kv_left = kv_count - i - 1
            self.where = f"metadata key #{i}"
            self.key = key = self._string()
            self.where = f"metadata key {_short(key)}"
            vtype = self._u32()
            value = self._value(vtype)
            if key in self.metadata:
                raise self._error(f"{self.where}: duplicate key")
            if key == Keys.General.ALIGNMENT:
                if vtype != GGUFValueType.UINT32 or value == 0 or value & (value - 1):
                    raise self._error(f"{self.where}: alignment must be a power-of-two UINT32, got {value!r}")
                alignment = value
            self.metadata[key] = value
            self.value_types[key] = GGUFValueType(vtype).name
        self.kv_left = 0
        self.key = ""
        return alignment

    # -- tensor infos -------------------------------------------------------------------------

    def _tensor_info(self, index: int, alignment: int) -> GGUFTensor:
        self.where = f"tensor info #{index}"
        name = self._string()
        self.where = f"tensor {_short(name)}"
        n_dims = self._u32()
        if n_dims > GGML_MAX_DIMS:
            raise self._error(f"{self.where}: {n_dims} dimensions (ggml allows at most {GGML_MAX_DIMS})")
        self._need(8 * n_dims + 12)
        shape = struct.unpack_from(f"<{n_dims}Q", self.buf, self.pos)
        type_id, offset = struct.unpack_from("<IQ", self.buf, self.pos + 8 * n_dims)
        self.pos += 8 * n_dims + 12
        try:
            qtype = GGMLQuantizationType(type_id)
        except ValueError:
            raise self._error(f"{self.where}: unknown ggml type id {type_id}") from None
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        n_elements = math.prod(shape)
        if n_elements >= 2**63:
            raise self._error(f"{self.where}: shape {list(shape)} has more than 2^63 elements")
        if shape and shape[0] % block_size:
            raise self._error(
                f"{self.where}: row of {shape[0]} elements is not a multiple of the {qtype.name} block size {block_size}"
            )
        if offset % alignment:
            raise self._error(f"{self.where}: data offset {offset} is not a multiple of the alignment {alignment}")
        return GGUFTensor(name, tuple(shape), qtype.name, offset, n_elements, n_elements // block_size * type_size)

    def _tensor_infos(self, tensor_count: int, alignment: int) -> tuple[GGUFTensor, ...]:
        tensors: list[GGUFTensor] = []
        names: set[str] = set()
        for i in range(tensor_count):
            self.tensors_left = tensor_count - i
            start = self.base + self.pos
            tensor = self._tensor_info(i, alignment)
            if tensor.name in names:
                raise self._error(f"{self.where}: duplicate tensor name")
            names.add(tensor.name)
            tensors.append(tensor)
            self.tensor_info_bytes += self.base + self.pos - start
            self.tensors_seen += 1
        self.tensors_left = 0
        return tuple(tensors)

    # -- whole header -------------------------------------------------------------------------

    def parse(self) -> GGUFHeader:
        if self.size < 4:
            raise self._error(f"not a GGUF file ({self.size} bytes)")
        self._need(min(self.size, _HEAD.size))
        magic = self.buf[:4]
        if _U32.unpack_from(magic)[0] != GGUF_MAGIC:
            raise self._error(f"not a GGUF file (magic {magic!r}{_looks_like(self.buf)})")
        self._need(_HEAD.size, f"{_HEAD.size}-byte fixed header")
        _, version, tensor_count, kv_count = _HEAD.unpack_from(self.buf, 0)
        self.pos = _HEAD.size
        if version not in SUPPORTED_VERSIONS:
            if version and version & 0xFFFF == 0:
                raise self._error("big-endian GGUF files are not supported")
            raise self._error(f"unsupported GGUF version {version} (supported: {', '.join(map(str, SUPPORTED_VERSIONS))})")
        min_bytes = kv_count * _MIN_KV_BYTES + tensor_count * _MIN_TENSOR_INFO_BYTES
        self._check_fits(f"{kv_count} metadata keys and {tensor_count} tensors (>= {min_bytes} bytes)", min_bytes)
        self.tensors_left = tensor_count
        alignment = self._metadata(kv_count)
        tensors = self._tensor_infos(tensor_count, alignment)
        header_size = self.base + self.pos
        data_offset = -(-header_size // alignment) * alignment
        return GGUFHeader(
            name=self.reader.name,
            version=version,
            file_size=self.size,
            metadata=self.metadata,
            tensors=tensors,
            header_size=header_size,
            alignment=alignment,
            data_offset=data_offset,
            value_types=self.value_types,
        )


def _looks_like(head: bytes) -> str:
    """A hint for the files people most often pass by mistake."""
    if head.startswith(b"PK\x03\x04"):
        return "; looks like a zip archive, e.g. a PyTorch checkpoint"
    if len(head) > 8 and head[8:9] == b"{":
        return "; looks like a safetensors file"
    return ""
