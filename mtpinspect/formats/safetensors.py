"""safetensors headers: an 8-byte little-endian length, then a JSON object of tensors, read by range.

Local and Hub files are read the same way, through a RangeReader: one read of the first 100,000 bytes
(huggingface_hub's choice: 97% of headers fit), a second only for a longer header. Nothing trusts the
file: the declared length must fit huggingface_hub's SAFETENSORS_MAX_HEADER_LENGTH and the file, the
JSON is parsed within the limits of a safetensors header (sources.reader), and every tensor entry must
be what the format allows, or the file is a FormatError naming the tensor, the key and the value: a
dtype name, a name of reasonable length, and what the safetensors library itself refuses on load
(tensor_extent): offsets that are not two integers in order, a shape whose elements do not fill
exactly the bytes between them. The result is
huggingface_hub's own SafetensorsFileMetadata.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mtpinspect.errors import FormatError, shown
from mtpinspect.sources.reader import JsonKind, RangeReader, parse_json

if TYPE_CHECKING:
    from huggingface_hub.utils._safetensors import SafetensorsFileMetadata, TensorInfo

FIRST_READ = 100_000
MAX_HEADER_BYTES = 25_000_000  # huggingface_hub's constants.SAFETENSORS_MAX_HEADER_LENGTH
# Real tensor names are under 120 characters; the layer numbers in a longer one could not be read as
# integers (Python refuses 4,300 digits), and nothing needs them.
MAX_TENSOR_NAME = 512
_LENGTH = struct.Struct("<Q")

# Bits per element of each safetensors dtype (safetensors' Dtype::bitsize), sub-byte floats included.
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F6_E2M3": 6, "F6_E3M2": 6, "F4": 4,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64,
    "U64": 64,
}


@dataclass(frozen=True)
class TensorExtent:
    nbytes: int
    parameters: int


def _integers(value: Any, length: int | None = None) -> bool:
    return (isinstance(value, (list, tuple)) and (length is None or len(value) == length)
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value))


def tensor_extent(where: str, name: str, dtype: Any, shape: Any, data_offsets: Any) -> TensorExtent:
    """The bytes and elements of one tensor entry of the file ``where``; FormatError when they cannot be."""
    if not _integers(data_offsets, 2) or data_offsets[0] > data_offsets[1]:
        raise FormatError(f"{where}: tensor {name!r}: data_offsets {shown(data_offsets)}: expected [begin, end], "
                          "integers with 0 <= begin <= end")
    if not _integers(shape):
        raise FormatError(f"{where}: tensor {name!r}: shape {shown(shape)}: expected a list of integers >= 0")
    nbytes = data_offsets[1] - data_offsets[0]
    elements = math.prod(shape)
    bits = DTYPE_BITS.get(dtype) if isinstance(dtype, str) else None
    # An unknown dtype still has at least one bit per element.
    fits = -(-elements * bits // 8) == nbytes if bits else elements <= 8 * nbytes
    if not fits:
        count = f"{elements} {dtype} elements" if bits else f"{elements} elements"
        raise FormatError(f"{where}: tensor {name!r}: shape {shown(shape)} ({count}) does not fill data_offsets "
                          f"{shown(data_offsets)} ({nbytes} bytes)")
    return TensorExtent(nbytes, elements)


def read_safetensors_header(reader: RangeReader) -> SafetensorsFileMetadata:
    """The header of the safetensors file behind ``reader``, checked against the file."""
    from huggingface_hub.utils._safetensors import SafetensorsFileMetadata

    name = reader.name
    head = reader.read_at(0, min(reader.size, FIRST_READ))
    if len(head) < _LENGTH.size:
        raise FormatError(f"{name}: {reader.size} bytes, too small for a safetensors file")
    (length,) = _LENGTH.unpack_from(head)
    if length > MAX_HEADER_BYTES:
        raise FormatError(f"{name}: declares a {length:,}-byte header; safetensors headers stop at {MAX_HEADER_BYTES:,} (not safetensors, or corrupt)")
    if _LENGTH.size + length > reader.size:
        raise FormatError(f"{name}: declares a {length:,}-byte header in a {reader.size:,}-byte file (truncated or corrupt)")
    data = head[_LENGTH.size : _LENGTH.size + length]
    if len(data) < length:
        data += reader.read_at(len(head), _LENGTH.size + length - len(head))
    if len(data) != length:
        raise FormatError(f"{name}: the header ends after {len(data):,} of its {length:,} bytes (truncated)")
    raw = parse_json(data, name, JsonKind.safetensors)
    if not isinstance(raw, dict):
        raise FormatError(f"{name}: the header is {shown(raw)}, not a JSON object")
    metadata = raw.get("__metadata__", {})
    if not isinstance(metadata, dict):
        raise FormatError(f"{name}: __metadata__ is {shown(metadata)}, not a JSON object")
    # Offsets are not held to the file's size: header-only copies (and the test stand-ins) end after the header.
    tensors = {key: _tensor(name, key, entry) for key, entry in raw.items() if key != "__metadata__"}
    return SafetensorsFileMetadata(metadata=metadata, tensors=tensors)


def _tensor(name: str, key: str, entry: Any) -> TensorInfo:
    from huggingface_hub.utils._safetensors import TensorInfo

    check_tensor_name(key, name)
    where = f"{name}: tensor {_short(key)}"
    if not isinstance(entry, dict):
        raise FormatError(f"{where} is {shown(entry)}, not a JSON object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or not dtype:
        raise FormatError(f"{where}: dtype {shown(dtype)} is not a type name")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    tensor_extent(name, key, dtype, shape, offsets)
    return TensorInfo(dtype=dtype, shape=shape, data_offsets=(offsets[0], offsets[1]))


def check_tensor_name(key: str, name: str) -> None:
    """FormatError for a tensor name no real checkpoint has (``name`` is the file that holds it)."""
    if len(key) > MAX_TENSOR_NAME:
        raise FormatError(f"{name}: a tensor name of {len(key):,} characters ({_short(key, 40)}); real ones are under {MAX_TENSOR_NAME}")


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
