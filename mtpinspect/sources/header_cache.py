"""The header cache: the bytes `check` read from Hub files, kept on disk so that the next check of the same
files (check, check --all, diagnose) reads none of them again.

An entry holds what was read of one file (its header, or a whole config or index file: any number of
byte spans), keyed by repo, resolved commit, path and ETag (the listing's id of the content: the LFS
sha256, else the git blob id); a repo's listing at a commit is an entry too (sources/hub.py), which
lets `find` skip the listing of a repo whose main has not moved. A file at a commit never changes, and the ETag says which content it is;
a file the listing gives no id for is not cached. Entries live in headers/ of mtpinspect's cache folder
($MTPINSPECT_CACHE_DIR, else ~/.cache/mtpinspect), one file each, written under a temporary name and
renamed into place (another process never sees half an entry); the folder is kept under MAX_BYTES by
removing the least recently used entries. An entry that does not read back whole (another key, a span
or a checksum that does not match, a foreign file, anything but a regular file: a FIFO, a device, a
symlink) is ignored and rewritten: never trusted. The cache
only saves requests: a cache that cannot be written (a read-only or full disk) changes nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.cache_dir import cache_dir
from mtpinspect.files import read_cached

MAGIC = b"mtpinspect header cache 1\n"
MAX_BYTES = 1024 * 1024 * 1024  # about 100 checked models: a GGUF header is up to 15 MB, an index 9 MB
# No entry is larger: a GGUF header stops at 64 MiB (formats/gguf.py), an index file at 32 MiB.
MAX_ENTRY_BYTES = 80 * 1024 * 1024
_MAX_META_BYTES = 64 * 1024


@dataclass(frozen=True)
class CacheKey:
    repo: str
    revision: str  # the resolved commit
    path: str
    etag: str

    @property
    def digest(self) -> str:
        return hashlib.sha256("\0".join((self.repo, self.revision, self.path, self.etag)).encode()).hexdigest()

    def as_dict(self) -> dict[str, str]:
        return {"repo": self.repo, "revision": self.revision, "path": self.path, "etag": self.etag}


class Spans:
    """Bytes of one file at known offsets: disjoint, sorted, adjacent ones merged."""

    def __init__(self, pieces: list[tuple[int, bytes]] | None = None) -> None:
        self._starts: list[int] = []
        self._data: list[bytes] = []
        for offset, data in pieces or []:
            self.add(offset, data)

    @property
    def pieces(self) -> list[tuple[int, bytes]]:
        return list(zip(self._starts, self._data))

    @property
    def nbytes(self) -> int:
        return sum(len(d) for d in self._data)

    def get(self, offset: int, length: int) -> bytes | None:
        """Bytes [offset, offset + length) when one span holds them all, else None."""
        i = bisect_right(self._starts, offset) - 1
        if i < 0:
            return None
        start, data = self._starts[i], self._data[i]
        if offset + length > start + len(data):
            return None
        return data[offset - start : offset - start + length]

    def add(self, offset: int, data: bytes) -> None:
        if not data:
            return
        start, end = offset, offset + len(data)
        keep_starts, keep_data = [], []
        for s, d in zip(self._starts, self._data):
            if s + len(d) < start or s > end:  # neither overlaps nor touches the new span
                keep_starts.append(s)
                keep_data.append(d)
                continue
            # Merge: the new bytes win where they overlap (they are the same bytes of the same content).
            if s < start:
                data, start = d[: start - s] + data, s
            if s + len(d) > end:
                data, end = data + d[end - s :], s + len(d)
        at = bisect_right(keep_starts, start)
        keep_starts.insert(at, start)
        keep_data.insert(at, data)
        self._starts, self._data = keep_starts, keep_data


class HeaderCache:
    """The entries under ``root``, at most ``max_bytes`` of them in all."""

    def __init__(self, root: Path, max_bytes: int = MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._lock = threading.Lock()  # one eviction at a time within a process

    @classmethod
    def default(cls) -> HeaderCache:
        return cls(cache_dir() / "headers")

    def path(self, key: CacheKey) -> Path:
        """Where the entry of ``key`` lives."""
        digest = key.digest
        return self.root / digest[:2] / f"{digest}.bin"

    def holds(self, key: CacheKey) -> bool:
        """Whether there is an entry for ``key`` (not whether it reads back whole: load says that)."""
        return self.path(key).is_file()

    def load(self, key: CacheKey) -> Spans | None:
        """The spans kept for ``key``; None when there is no entry or it does not read back whole."""
        path = self.path(key)
        raw = read_cached(path, MAX_ENTRY_BYTES)
        if raw is None:
            return None
        spans = _decode(raw, key)
        if spans is not None:
            try:
                os.utime(path)  # recently used: evicted last
            except OSError:
                pass
        return spans

    def store(self, key: CacheKey, spans: Spans) -> None:
        """Keep ``spans`` for ``key`` (replacing what was kept), then evict down to the size cap."""
        payload = b"".join(data for _, data in spans.pieces)
        meta = {**key.as_dict(), "spans": [[offset, len(data)] for offset, data in spans.pieces],
                "sha256": hashlib.sha256(payload).hexdigest()}
        blob = MAGIC + json.dumps(meta).encode() + b"\n" + payload
        if len(blob) > MAX_ENTRY_BYTES:
            return
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(blob)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return  # a cache that cannot be written only costs requests next time
        self._evict()

    def _evict(self) -> None:
        """Remove the least recently used entries until the folder holds at most max_bytes."""
        with self._lock:
            entries = []
            try:
                for folder in self.root.iterdir():
                    if folder.is_dir():
                        for entry in folder.iterdir():
                            try:
                                st = entry.stat()
                            except OSError:
                                continue
                            entries.append((st.st_mtime, st.st_size, entry))
            except OSError:
                return
            total = sum(size for _, size, _ in entries)
            for _, size, entry in sorted(entries, key=lambda e: e[0]):
                if total <= self.max_bytes:
                    break
                try:
                    entry.unlink()
                except OSError:
                    continue
                total -= size


def _decode(raw: bytes, key: CacheKey) -> Spans | None:
    """The spans of an entry, if it is whole and is the entry of ``key``."""
    if not raw.startswith(MAGIC) or len(raw) > MAX_ENTRY_BYTES:
        return None
    end = raw.find(b"\n", len(MAGIC), len(MAGIC) + _MAX_META_BYTES)
    if end < 0:
        return None
    try:
        meta = json.loads(raw[len(MAGIC) : end])
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(meta, dict) or any(meta.get(k) != v for k, v in key.as_dict().items()):
        return None
    layout, digest = meta.get("spans"), meta.get("sha256")
    if not isinstance(layout, list) or not all(
        isinstance(s, list) and len(s) == 2 and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in s)
        for s in layout
    ):
        return None
    payload = raw[end + 1 :]
    if sum(length for _, length in layout) != len(payload) or hashlib.sha256(payload).hexdigest() != digest:
        return None
    spans, at = Spans(), 0
    for offset, length in layout:
        spans.add(offset, payload[at : at + length])
        at += length
    return spans
