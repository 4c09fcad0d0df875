"""Whether an mtp- sidecar's head was trained with its trunk's embedding: a few rows of each compared.

A sidecar carries its own copy of the tensors the head shares with the trunk (``token_embd``, the output
norm and head, conversion/*.py's keep-lists), and llama.cpp drafts with the sidecar's copies. A sidecar of
the same release holds the trunk's own rows (the same bytes when the types agree, the same vectors within
the quantization's error when they do not); a head trained with another trunk (another training run, model
or revision) holds other vectors, and its drafts are rejected though everything loads. This module reads
and measures; gguf_rules.py judges.

The sample: SAMPLED_ROWS token rows spread evenly over the vocabulary, and the output norm (one row), each
one range read per file, all in one batch: 8 requests, one wave on the Hub (sources/waves.py sends 8 at
once). Three rows suffice: another run's rows are unrelated vectors (cosine near 0), the same embedding's
the same bytes or within the quantization's error (bench/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from mtpinspect.errors import MtpinspectError
from mtpinspect.formats.gguf import GGUFHeader, GGUFTensor
from mtpinspect.formats.gguf_rows import cosine, row_span, row_values
from mtpinspect.sources.reader import Tree

SAMPLED_ROWS = 3
COMPARED_TENSORS = ("token_embd.weight", "output_norm.weight")


class GgufFiles(Protocol):
    """A GGUF's files (a split's shards, or one) and their headers: evidence.GgufEvidence has them. Declared
    here so that this module, which evidence uses, needs nothing back from evidence."""

    @property
    def files(self) -> Sequence[str]: ...
    @property
    def headers(self) -> Sequence[GGUFHeader]: ...


@dataclass(frozen=True)
class RowMatch:
    """One row in both files: the same bytes, or the cosine of the two vectors (None: one is all zero, holds
    NaN or Inf, or its type cannot be read), and whether each file's row holds only finite values (None: its
    type cannot be read)."""

    tensor: str
    row: int
    identical: bool
    cosine: float | None
    main_finite: bool | None = None
    sidecar_finite: bool | None = None


@dataclass(frozen=True)
class EmbeddingComparison:
    """The sampled rows of the trunk's and the sidecar's shared tensors, compared."""

    main_file: str
    sidecar_file: str
    types: dict[str, tuple[str, str]]  # tensor -> (main's ggml type, sidecar's)
    rows: tuple[RowMatch, ...]
    bytes_read: int


@dataclass(frozen=True)
class HeadRows:
    """Sampled rows of the embedding a GGUF's own head drafts with (its nextn.embed_tokens, else token_embd):
    whether each holds only finite values (None: a type gguf-py cannot read)."""

    file: str
    tensor: str
    ggml_type: str
    rows: tuple[tuple[int, bool | None], ...]
    bytes_read: int

    @property
    def non_finite(self) -> list[int]:
        return [row for row, finite in self.rows if finite is False]


# The types whose rows the standard library reads (gguf_rows.py): a check of a bundled GGUF samples its head's
# rows only at these, so that it never imports numpy and gguf-py to dequantize a K-quant embedding.
LIGHT_TYPES = frozenset({"F32", "F16", "BF16", "Q8_0"})


def sample_head_rows(tree: Tree, files: GgufFiles, names: Sequence[str]) -> HeadRows | None:
    """SAMPLED_ROWS rows of the first of ``names`` the files hold, in one batch; None when they hold none or
    it is of a type outside LIGHT_TYPES. A read that fails raises MtpinspectError."""
    holder = next((h for name in names if (h := _holder(files, name)) is not None), None)
    if holder is None or holder[2].ggml_type not in LIGHT_TYPES:
        return None
    path, header, tensor = holder
    rows = sampled_rows(tensor)
    data = tree.read_batch([partial(_read_row, tree, path, header, tensor, row) for row in rows])
    return HeadRows(path, tensor.name, tensor.ggml_type,
                    tuple((row, _finite(_values(raw, tensor))) for row, raw in zip(rows, data)), sum(map(len, data)))


def sampled_rows(tensor: GGUFTensor) -> list[int]:
    """SAMPLED_ROWS rows spread evenly over a 2-D tensor (the middle of each of as many equal parts), or
    row 0 of a 1-D one."""
    if len(tensor.shape) < 2:
        return [0]
    rows = tensor.shape[1]
    return sorted({(2 * i + 1) * rows // (2 * SAMPLED_ROWS) for i in range(min(SAMPLED_ROWS, rows))})


def _holder(files: GgufFiles, name: str) -> tuple[str, GGUFHeader, GGUFTensor] | None:
    for path, header in zip(files.files, files.headers):
        tensor = header.tensor(name)
        if tensor is not None:
            return path, header, tensor
    return None


def _read_row(tree: Tree, path: str, header: GGUFHeader, tensor: GGUFTensor, row: int) -> bytes:
    span = row_span(header, tensor, row)
    data = tree.open(path).read_at(span.offset, span.length)
    if len(data) != span.length:
        raise MtpinspectError(f"{path}: {tensor.name} row {row}: {len(data)} of {span.length} bytes read")
    return data


def compare_embeddings(tree: Tree, main: GgufFiles, sidecar: GgufFiles) -> EmbeddingComparison | None:
    """The sampled rows of the shared tensors, in both files; None when a file lacks them or their widths
    differ (the pairing rules say why). A read that fails raises MtpinspectError."""
    pairs = {}
    for name in COMPARED_TENSORS:
        ours, theirs = _holder(main, name), _holder(sidecar, name)
        if ours is None or theirs is None or ours[2].shape != theirs[2].shape:
            continue
        pairs[name] = (ours, theirs)
    if "token_embd.weight" not in pairs:
        return None
    jobs: list[Callable[[], bytes]] = []
    keys = []
    for name, (ours, theirs) in pairs.items():
        for row in sampled_rows(ours[2]):
            keys.append((name, row))
            jobs += [partial(_read_row, tree, *ours, row), partial(_read_row, tree, *theirs, row)]
    data = tree.read_batch(jobs)
    rows = []
    for i, (name, row) in enumerate(keys):
        a, b = data[2 * i], data[2 * i + 1]
        (_, _, ta), (_, _, tb) = pairs[name]
        # Rows of zero bytes in both (a sparse download, an unused token) say nothing: not identical, no cosine.
        same = ta.ggml_type == tb.ggml_type and a == b and any(a)
        va, vb = _values(a, ta), _values(b, tb)
        rows.append(RowMatch(name, row, same, None if same or va is None or vb is None else cosine(va, vb),
                             _finite(va), _finite(vb)))
    return EmbeddingComparison(
        main_file=pairs["token_embd.weight"][0][0], sidecar_file=pairs["token_embd.weight"][1][0],
        types={name: (ours[2].ggml_type, theirs[2].ggml_type) for name, (ours, theirs) in pairs.items()},
        rows=tuple(rows), bytes_read=sum(len(d) for d in data))


def _values(raw: bytes, tensor: GGUFTensor) -> tuple[float, ...] | None:
    return row_values(raw, tensor.ggml_type, tensor.shape[0])


def _finite(values: tuple[float, ...] | None) -> bool | None:
    """False when a value is NaN or Inf: a head whose embedding holds them drafts nothing useful."""
    return None if values is None else all(math.isfinite(v) for v in values)
