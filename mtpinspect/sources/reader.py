"""Random access to the bytes of one file, local or remote, with the cost of every read counted.

Format parsers read through a ``RangeReader`` and never ask where the bytes come from. Each
``read_at`` may be an HTTP round trip (the Hub reader sends one Range request per call), so parsers
ask for few, large reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mtpinspect.errors import SourceError


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
