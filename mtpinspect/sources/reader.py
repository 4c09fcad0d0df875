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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mtpinspect.errors import FormatError, SourceError

if TYPE_CHECKING:
    from huggingface_hub.utils._safetensors import SafetensorsFileMetadata

# A JSON file (config, index, quantization config) larger than this is not one we read.
JSON_LIMIT = 64 * 1024 * 1024


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
    """One file of a tree: its path relative to the tree's root ('/'-separated) and its size."""

    path: str
    size: int


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

    def safetensors_header(self, path: str) -> SafetensorsFileMetadata:
        """The header of a safetensors file of the tree (read with huggingface_hub's parser)."""
        ...

    def ref(self, path: str) -> str:
        """How a printed command names the file: its local path, or its name in the repo."""
        ...


def read_json(tree: Tree, path: str, *, limit: int = JSON_LIMIT) -> Any:
    """A small JSON file of a tree, parsed; FormatError when it is not JSON."""
    reader = tree.open(path)
    data = reader.read_at(0, min(reader.size, limit))
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{reader.name}: not valid JSON ({exc})") from None
