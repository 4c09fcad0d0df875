"""Local sources: a snapshot directory (the Hugging Face cache included) or the folder of a local GGUF.

They offer the same surface as a Hub repo (a file listing with sizes, range readers), so the formats
and the evidence never ask where the bytes come from.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import ClassVar, TypeVar

from mtpinspect.errors import SourceError
from mtpinspect.sources.filenames import HF_CACHE_FOLDER, is_gguf
from mtpinspect.sources.reader import ByteMeter, LocalFileReader, RepoFile

T = TypeVar("T")
_SKIPPED_DIRS = {".git", ".cache", "__pycache__"}
# A model's snapshot holds at most a few thousand files, a few folders deep.
MAX_ENTRIES = 100_000
MAX_DEPTH = 8


@dataclass
class LocalTree:
    """Files under one directory, addressed by their path relative to it (as in a repo): a Tree."""

    root: Path
    name: str
    files: dict[str, RepoFile]
    meter: ByteMeter = field(default_factory=ByteMeter)
    sha: str | None = None  # the snapshot's commit, for a Hugging Face cache folder
    # Commands name local files by path: no revision to pin.
    revision: ClassVar[None] = None
    # A folder's model card is its README.md, read like any other file.
    card_data: ClassVar[None] = None

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files.values())

    def path(self, rel: str) -> Path:
        return self.root / rel

    def add(self, path: Path) -> str:
        """Name a file outside the listing (an --mtp-file elsewhere) in the tree; return its key: the path
        relative to the root when it lies under it, else the absolute path (``path()`` then returns it)."""
        if not path.is_file():
            raise SourceError(f"{path}: {'not a regular file' if path.exists() else 'no such file'}")
        absolute = Path(os.path.abspath(path))
        rel = os.path.relpath(absolute, os.path.abspath(self.root))
        key = PurePosixPath(*Path(rel).parts).as_posix() if not rel.startswith("..") else str(absolute)
        self.files[key] = RepoFile(key, absolute.stat().st_size)
        return key

    def ref(self, rel: str) -> str:
        return str(self.path(rel))

    def open(self, rel: str) -> LocalFileReader:
        if rel not in self.files:
            raise SourceError(f"{self.root}: no file '{rel}'")
        return LocalFileReader(self.path(rel), meter=self.meter)

    def read_batch(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """One after the other: a local read is no round trip."""
        return [job() for job in jobs]


class TooManyEntries(SourceError):
    """A folder walk passed MAX_ENTRIES: the caller may say what the folder was meant to be."""


def _walk(root: Path, *, depth: int, descend: Callable[[str], bool], keep: Callable[[str], bool]) -> dict[str, RepoFile]:
    """The regular files under ``root`` (symlinks followed, as in a Hugging Face cache snapshot), at most
    ``depth`` folders deep, entering only folders ``descend`` accepts (by name) and keeping only files ``keep``
    accepts. Bounded: a folder with more than MAX_ENTRIES entries in all is not a model's (``check /``), and a
    folder reached twice through symlinks is read once."""
    files: dict[str, RepoFile] = {}
    seen: set[tuple[int, int]] = set()
    pending: list[tuple[Path, PurePosixPath]] = [(root, PurePosixPath())]
    entries = 0
    while pending:
        folder, rel = pending.pop()
        try:
            with os.scandir(folder) as listing:
                found = list(itertools.islice(listing, MAX_ENTRIES + 1 - entries))
        except OSError as exc:
            if folder == root:
                raise SourceError(f"{root}: cannot read the folder ({exc.strerror or exc})") from None
            continue  # an unreadable subfolder (permissions, /proc) holds nothing check could read either
        entries += len(found)
        if entries > MAX_ENTRIES:
            raise TooManyEntries(f"{root}: more than {MAX_ENTRIES} files and folders: not a model's folder "
                                 "(name the folder of one model, or its GGUF file)")
        for entry in found:
            try:
                if entry.is_dir():
                    stat = entry.stat()
                    if len(rel.parts) + 1 < depth and entry.name not in _SKIPPED_DIRS and descend(entry.name) \
                            and (stat.st_dev, stat.st_ino) not in seen:
                        seen.add((stat.st_dev, stat.st_ino))
                        pending.append((Path(entry.path), rel / entry.name))
                elif entry.is_file() and keep(entry.name):
                    files[(rel / entry.name).as_posix()] = RepoFile((rel / entry.name).as_posix(), entry.stat().st_size)
            except OSError:
                continue  # gone since it was listed, or a dangling link: not a file to read
    return dict(sorted(files.items()))


def gguf_files(root: Path) -> list[str]:
    """The GGUF files under ``root`` (relative POSIX paths), by the bounds of ``check DIR``: MAX_DEPTH
    folders deep, MAX_ENTRIES entries in all (TooManyEntries past them), unreadable folders, FIFOs,
    dangling links and loops of links skipped. An app's models store is walked by this rule too."""
    return list(_walk(root, depth=MAX_DEPTH, descend=lambda _: True, keep=is_gguf))


def _list_dir(root: Path) -> dict[str, RepoFile]:
    return _walk(root, depth=MAX_DEPTH, descend=lambda _: True, keep=lambda _: True)


def _resolve_hf_cache(root: Path, revision: str | None) -> tuple[Path, str | None]:
    """A `models--org--name` cache folder resolves to one of its snapshots (refs/<revision> or the sha)."""
    ref = revision or "main"
    ref_file = root / "refs" / ref
    if ref_file.is_file():
        sha = ref_file.read_text().strip()
    else:
        sha = ref
    snap = root / "snapshots" / sha
    if not snap.is_dir():
        snaps = sorted(p.name for p in (root / "snapshots").iterdir()) if (root / "snapshots").is_dir() else []
        raise SourceError(f"{root}: no cached snapshot for revision '{ref}' (cached: {', '.join(snaps) or 'none'})")
    return snap, sha


def open_directory(path: Path, *, revision: str | None = None) -> LocalTree:
    path = path.expanduser()
    sha = None
    if HF_CACHE_FOLDER.match(path.name) and (path / "snapshots").is_dir():
        path, sha = _resolve_hf_cache(path, revision)
    elif revision is not None:
        raise SourceError(f"{path}: --revision applies to Hub repos and Hugging Face cache folders, not to a plain directory")
    files = _list_dir(path)
    if not files:
        raise SourceError(f"{path}: directory is empty")
    return LocalTree(root=path, name=str(path), files=files, sha=sha)


def open_gguf_folder(folder: Path) -> LocalTree:
    """The GGUF files of the folder a local GGUF lies in, and of its `MTP/` subfolder: the main file's split
    shards and the sidecars to pair with it. The folder is the one the user named, symlinks not resolved (a
    Hugging Face cache snapshot links each file into blobs/, where no sibling is), so printed paths are theirs."""
    files = _walk(folder, depth=2, descend=lambda name: name.lower() == "mtp", keep=is_gguf)
    return LocalTree(root=folder, name=str(folder), files=files)
