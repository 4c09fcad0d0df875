"""Rows of a GGUF tensor: where each lies in the file, and the values it holds.

A 2-D tensor of ggml shape (ne0, ne1) is ne1 rows of ne0 elements, each row a whole number of the type's
blocks, stored one after the other from the tensor's offset. So one row of a token embedding (one token's
vector) is one contiguous range of the file, and a few rows of a file of hundreds of GB are a few small
range reads: `check` compares an mtp- sidecar's embedding with its trunk's this way before a download.

Values: F32, F16, BF16 and Q8_0 (the type most mtp- sidecars ship at) are read with the standard library;
the other quantized types through gguf-py's own dequantization (``gguf.quants``, imported only then: it
imports numpy). A type gguf-py cannot dequantize
gives None, and the caller says so.
"""

from __future__ import annotations

import contextlib
import math
import struct
from dataclasses import dataclass

from mtpinspect.errors import FormatError
from mtpinspect.formats.gguf import GGUFHeader, GGUFTensor
from mtpinspect.formats.gguf_constants import GGML_QUANT_SIZES, GGMLQuantizationType

# The widest real embedding (n_embd 16,384 at F32) is 64 KiB a row; anything claiming far more is refused
# before a byte is read.
MAX_ROW_BYTES = 1024 * 1024
_Q8_0 = struct.Struct("<e32b")


@dataclass(frozen=True)
class RowSpan:
    """One row of a tensor: its byte range in the file (absolute) and how many elements it holds."""

    offset: int
    length: int
    width: int


def row_span(header: GGUFHeader, tensor: GGUFTensor, row: int) -> RowSpan:
    """Where row ``row`` of a 1-D or 2-D ``tensor`` of ``header`` lies (a 1-D tensor is one row, 0).
    FormatError when the tensor is not a whole number of blocks a row, the row does not exist, a row is
    larger than MAX_ROW_BYTES or the range lies past the end of the file."""
    where = f"{header.name}: {tensor.name}"
    width, rows = tensor.shape[0], math.prod(tensor.shape[1:])
    try:
        block, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType[tensor.ggml_type]]
    except KeyError:
        raise FormatError(f"{where}: ggml type {tensor.ggml_type} has no known block size") from None
    if len(tensor.shape) > 2 or width % block:
        raise FormatError(f"{where}: shape {list(tensor.shape)} is not rows of whole {tensor.ggml_type} blocks")
    if not 0 <= row < rows:
        raise FormatError(f"{where}: no row {row} (it has {rows})")
    length = width // block * block_bytes
    if length > MAX_ROW_BYTES:
        raise FormatError(f"{where}: a row of {length} bytes, more than the {MAX_ROW_BYTES} any embedding has")
    offset = header.data_offset + tensor.offset + row * length
    if offset + length > header.file_size:
        raise FormatError(f"{where}: row {row} lies past the end of the file ({header.file_size} bytes)")
    return RowSpan(offset, length, width)


def row_values(raw: bytes, ggml_type: str, width: int) -> tuple[float, ...] | None:
    """The ``width`` values of one row stored as ``ggml_type``; None for a type gguf-py cannot dequantize."""
    if ggml_type == "F32":
        return struct.unpack(f"<{width}f", raw)
    if ggml_type == "F16":
        return struct.unpack(f"<{width}e", raw)
    if ggml_type == "BF16":
        # A bfloat16 is the top half of a float32.
        return struct.unpack(f"<{width}f", b"".join(b"\0\0" + raw[i:i + 2] for i in range(0, len(raw), 2)))
    if ggml_type == "Q8_0":
        return _q8_0(raw)
    import numpy as np
    from gguf.quants import dequantize  # numpy, for the quantized types only

    # gguf-py raises NotImplementedError for a type it has no dequantizer for (Q8_1, Q8_K, ...), its only
    # public signal: such rows give no values, and the check says they were not compared.
    with contextlib.suppress(NotImplementedError):
        values = dequantize(np.frombuffer(raw, dtype=np.uint8), GGMLQuantizationType[ggml_type])
        return tuple(float(v) for v in values.reshape(-1)[:width])
    return None


def _q8_0(raw: bytes) -> tuple[float, ...]:
    # ggml's block_q8_0: an f16 scale, then 32 int8 quants; a value is scale * quant.
    values: list[float] = []
    for start in range(0, len(raw), _Q8_0.size):
        scale, *quants = _Q8_0.unpack_from(raw, start)
        values += [scale * q for q in quants]
    return tuple(values)


def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float | None:
    """The cosine of the angle between two rows; None when either is all zero (nothing to compare)."""
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if not norm or not math.isfinite(norm):
        return None
    return sum(x * y for x, y in zip(a, b)) / norm
