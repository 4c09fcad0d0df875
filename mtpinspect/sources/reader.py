"""Random access to the bytes of files, local or remote, with the cost of every read counted.

Format parsers read through a ``RangeReader`` and never ask where the bytes come from. Each
``read_at`` may be an HTTP round trip (the Hub reader sends one Range request per call), so parsers
ask for few, large reads. A ``Tree`` is a set of such files with their sizes (a Hub repo at one
commit, a local folder): what a new kind of source implements.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from mtpinspect.errors import FormatError, SourceError

MIB = 1024 * 1024


class JsonKind(str, Enum):
    """What a JSON document is: it sets how large the document may be."""

    config = "config file"  # config.json and the quantization side files
    index = "index file"  # *.safetensors.index.json, *.bin.index.json
    listing = "Hub listing"  # model_info's answer
    safetensors = "safetensors header"


@dataclass(frozen=True)
class JsonLimit:
    """The most bytes a document may have, and the most values (objects, arrays, members, items) it may
    hold: parsed JSON takes up to 25 times its size in memory (`[{},{},...]`), so bytes alone do not
    bound it."""

    max_bytes: int
    max_values: int


# Real sizes: config.json and hf_quant_config.json of MiniMax-M3-NVFP4 are 3.1 MB (134k values);
# DeepSeek-V3's index of 163 shards is 8.9 MB (182k values); a listing is about 100 bytes per file; a
# safetensors header is at most huggingface_hub's SAFETENSORS_MAX_HEADER_LENGTH (25,000,000 bytes).
JSON_LIMITS = {
    JsonKind.config: JsonLimit(8 * MIB, 500_000),
    JsonKind.index: JsonLimit(32 * MIB, 1_000_000),
    JsonKind.listing: JsonLimit(16 * MIB, 500_000),
    JsonKind.safetensors: JsonLimit(25_000_000, 2_500_000),
}
MAX_INT_DIGITS = 30  # no count or size in a model file needs more; Python refuses 4,300 and up


@dataclass
class ByteMeter:
    """What a check costs: bytes fetched and requests made, summed over every reader sharing it.

    ``add`` counts bytes only; whoever makes the request also bumps ``requests`` (one HTTP response
    body may be counted by a hook that does not know how many requests it belongs to).
    """

    bytes_read: int = 0
    requests: int = 0

    def add(self, nbytes: int) -> None:
        self.bytes_read += nbytes


@dataclass(frozen=True)
class RepoFile:
    """One file of a tree: its path relative to the tree's root ('/'-separated) and its size.

    A size is None only in a Hub listing that gave none (a mirror that ignores ?blobs=true); the tree
    learns it when the file is opened."""

    path: str
    size: int | None


class RangeReader(Protocol):
    """One file that can be read at any offset; every ``read_at`` is one request."""

    name: str  # shown in messages: a path, or repo/file

    @property
    def size(self) -> int: ...

    def read_at(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; fewer only at the end of the file."""
        ...


class LocalFileReader:
    """A RangeReader on a local path; the file is opened per read so no handle outlives a call."""

    def __init__(self, path: str | os.PathLike[str], meter: ByteMeter | None = None) -> None:
        self.path = Path(path)
        self.name = str(path)
        self.meter = meter
        try:
            st = self.path.stat()
        except FileNotFoundError:
            raise SourceError(f"{self.name}: no such file") from None
        except OSError as exc:
            raise SourceError(f"{self.name}: cannot read ({exc.strerror or exc})") from None
        if not self.path.is_file():
            raise SourceError(f"{self.name}: not a regular file")
        self._size = st.st_size

    @property
    def size(self) -> int:
        return self._size

    def read_at(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ValueError(f"read_at({offset}, {length}): negative offset or length")
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                data = f.read(length)
        except OSError as exc:
            raise SourceError(f"{self.name}: cannot read ({exc.strerror or exc})") from None
        if self.meter is not None:
            self.meter.requests += 1
            self.meter.add(len(data))
        return data


class RecordingReader:
    """A RangeReader that keeps what it returns, by offset: a remote file's header, fetched once for
    the parser, can then be written into a local header-only copy (sources/header_copy.py)."""

    def __init__(self, inner: RangeReader) -> None:
        self.inner = inner
        self.name = inner.name
        self.pieces: list[tuple[int, bytes]] = []

    @property
    def size(self) -> int:
        return self.inner.size

    def read_at(self, offset: int, length: int) -> bytes:
        data = self.inner.read_at(offset, length)
        self.pieces.append((offset, data))
        return data


class Tree(Protocol):
    """Files addressed by their path relative to one root, as in a repo: what check reads from."""

    name: str  # shown in messages: a repo id or a folder
    files: dict[str, RepoFile]
    meter: ByteMeter  # every read through this tree is counted here
    sha: str | None  # the commit, when the tree is a snapshot of a repo
    revision: str | None  # the revision the user asked for, pinned in printed commands; None: the default
    card_data: Mapping[str, Any] | None  # the model card's front matter when the source serves it parsed; None: read README.md

    @property
    def total_size(self) -> int: ...

    def open(self, path: str) -> RangeReader:
        """A reader for one of ``files``; SourceError for a path that is not there."""
        ...

    def ref(self, path: str) -> str:
        """How a printed command names the file: its local path, or its name in the repo."""
        ...


def json_kind(path: str) -> JsonKind:
    return JsonKind.index if path.endswith(".index.json") else JsonKind.config


def read_json(tree: Tree, path: str) -> Any:
    """A JSON file of a tree, parsed within its kind's limits (FormatError past them, or when not JSON)."""
    reader = tree.open(path)
    kind = json_kind(path)
    check_json_size(reader.size, reader.name, kind)
    return parse_json(reader.read_at(0, reader.size), reader.name, kind)


def check_json_size(size: int, name: str, kind: JsonKind) -> None:
    limit = JSON_LIMITS[kind].max_bytes
    if size > limit:
        raise FormatError(f"{name}: {size / MIB:.1f} MiB; {kind.value}s have at most {limit / MIB:.0f} MiB")


class _LongNumber(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _LongNumber(f"an integer of {len(text.lstrip('-')):,} digits; numbers in model files have at most {MAX_INT_DIGITS}")
    return int(text)


def parse_json(data: bytes, name: str, kind: JsonKind) -> Any:
    """``data`` parsed, within the limits of ``kind``: bytes, values, nesting and integer digits."""
    limit = JSON_LIMITS[kind]
    check_json_size(len(data), name, kind)
    # Every value but the first sits after one of these; counted in strings too, so an upper bound.
    values = sum(data.count(mark) for mark in (b",", b":", b"[", b"{"))
    if values > limit.max_values:
        raise FormatError(f"{name}: about {values:,} JSON values; {kind.value}s hold at most {limit.max_values:,}")
    try:
        return json.loads(data, parse_int=_parse_int)
    except _LongNumber as exc:
        raise FormatError(f"{name}: {exc}") from None
    except RecursionError:
        raise FormatError(f"{name}: JSON nested too deeply to read (Python's parser stops near 1,000 levels)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{name}: not valid JSON ({exc})") from None
