"""A safetensors header entry checked against what the format allows, before its figures are used.

huggingface_hub's header reader returns each tensor's dtype, shape and data offsets as the file states them.
The safetensors library refuses, on load, offsets that are not two integers in order and a shape whose
elements do not fill exactly the bytes between them; check refuses the same, with one line naming the
tensor and the value, instead of reporting negative bytes or 1e36 parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mtpinspect.errors import FormatError

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
        raise FormatError(f"{where}: tensor {name!r}: data_offsets {_shown(data_offsets)}: expected [begin, end], "
                          "integers with 0 <= begin <= end")
    if not _integers(shape):
        raise FormatError(f"{where}: tensor {name!r}: shape {_shown(shape)}: expected a list of integers >= 0")
    nbytes = data_offsets[1] - data_offsets[0]
    elements = math.prod(shape)
    bits = DTYPE_BITS.get(dtype) if isinstance(dtype, str) else None
    # An unknown dtype still has at least one bit per element.
    fits = -(-elements * bits // 8) == nbytes if bits else elements <= 8 * nbytes
    if not fits:
        count = f"{elements} {dtype} elements" if bits else f"{elements} elements"
        raise FormatError(f"{where}: tensor {name!r}: shape {_shown(shape)} ({count}) does not fill data_offsets "
                          f"{_shown(data_offsets)} ({nbytes} bytes)")
    return TensorExtent(nbytes, elements)


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(list(value)) if isinstance(value, tuple) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
