"""safetensors headers: an 8-byte little-endian length, then a JSON object of tensors, read by range.

Local and Hub files are read the same way, through a RangeReader: one read of the first 100,000 bytes
(huggingface_hub's choice: 97% of headers fit), a second only for a longer header. Nothing trusts the
file: the declared length must fit huggingface_hub's SAFETENSORS_MAX_HEADER_LENGTH and the file, the
JSON is parsed within the limits of a safetensors header (sources.reader), and every tensor entry must
be what the format says (a dtype name, a shape of sizes, data_offsets [begin, end] inside the data
section, a shape its bytes can hold) or the file is a FormatError naming the tensor, the key and the
value. The result is huggingface_hub's own SafetensorsFileMetadata.
"""

from __future__ import annotations

import struct
from math import prod
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
    data_size = reader.size - _LENGTH.size - length
    tensors = {key: _tensor(name, key, entry, data_size) for key, entry in raw.items() if key != "__metadata__"}
    return SafetensorsFileMetadata(metadata=metadata, tensors=tensors)


def _tensor(name: str, key: str, entry: Any, data_size: int) -> TensorInfo:
    from huggingface_hub.utils._safetensors import TensorInfo

    check_tensor_name(key, name)
    where = f"{name}: tensor {_short(key)}"
    if not isinstance(entry, dict):
        raise FormatError(f"{where} is {shown(entry)}, not a JSON object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or not dtype:
        raise FormatError(f"{where}: dtype {shown(dtype)} is not a type name")
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(_is_size(n) for n in shape):
        raise FormatError(f"{where}: shape {shown(shape)} is not a list of sizes")
    offsets = entry.get("data_offsets")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_size(n) for n in offsets) and offsets[0] <= offsets[1]):
        raise FormatError(f"{where}: data_offsets {shown(offsets)} is not [begin, end] with 0 <= begin <= end")
    begin, end = offsets
    if end > data_size:
        raise FormatError(f"{where}: data_offsets {offsets} end past the file's {data_size:,} bytes of data (truncated or corrupt)")
    count = prod(shape)
    if count > 8 * (end - begin):  # no dtype has less than a bit per value
        raise FormatError(f"{where}: shape {shape} is {count:,} values, more than its {end - begin:,} bytes hold (corrupt)")
    return TensorInfo(dtype=dtype, shape=shape, data_offsets=(begin, end))


def check_tensor_name(key: str, name: str) -> None:
    """FormatError for a tensor name no real checkpoint has (``name`` is the file that holds it)."""
    if len(key) > MAX_TENSOR_NAME:
        raise FormatError(f"{name}: a tensor name of {len(key):,} characters ({_short(key, 40)}); real ones are under {MAX_TENSOR_NAME}")


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
