"""Header-only copies of remote files: each file at its full size, with the bytes that were fetched
(its header) at their offsets and a hole everywhere else.

A program that reads only the header (llama.cpp's metadata-only load) takes such a copy for the real
file. The holes cost no disk on filesystems with sparse files (Linux, macOS); on Windows (NTFS marks
files sparse only on request) no copy is made.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from mtpinspect.errors import SourceError
from mtpinspect.files import writable

Pieces = Sequence[tuple[int, bytes]]


def sparse_files_supported() -> bool:
    return os.name != "nt"


def write_header_copies(folder: Path, files: Mapping[str, tuple[int, Pieces]]) -> dict[str, Path]:
    """Write each ``path -> (size, pieces)`` under ``folder`` (keeping the relative paths, so split
    shards stay beside their first shard); return where each went."""
    if not sparse_files_supported():
        raise SourceError("header-only copies need sparse files, which this platform does not make by default")
    written = {}
    for rel, (size, pieces) in files.items():
        parts = PurePosixPath(rel).parts
        if not parts or any(part in ("", ".", "..") for part in parts) or PurePosixPath(rel).is_absolute():
            raise SourceError(f"{rel}: not a plain relative path; refusing to write it")
        path = folder.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        with writable(path).open("wb") as fh:
            for offset, data in pieces:
                if offset + len(data) > size:
                    raise SourceError(f"{rel}: {len(data)} bytes at offset {offset} lie past its {size} bytes")
                fh.seek(offset)
                fh.write(data)
            fh.truncate(size)
        written[rel] = path
    return written
