"""Local sources: a snapshot directory (the Hugging Face cache included) or loose GGUF files.

They offer the same surface as a Hub repo (a file listing with sizes, range readers, small JSON files,
safetensors headers), so the formats and the evidence never ask where the bytes come from.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from mtpinspect.errors import FormatError, SourceError
from mtpinspect.sources.filenames import HF_CACHE_FOLDER
from mtpinspect.sources.reader import ByteMeter, LocalFileReader, RepoFile

if TYPE_CHECKING:
    from huggingface_hub.utils._safetensors import SafetensorsFileMetadata

_SKIPPED_DIRS = {".git", ".cache", "__pycache__"}


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

    def ref(self, rel: str) -> str:
        return str(self.path(rel))

    def open(self, rel: str) -> LocalFileReader:
        if rel not in self.files:
            raise SourceError(f"{self.root}: no file '{rel}'")
        return LocalFileReader(self.path(rel), meter=self.meter)

    def safetensors_header(self, rel: str) -> SafetensorsFileMetadata:
        # huggingface_hub's own parser, imported only when a checkpoint is read.
        from huggingface_hub import parse_local_safetensors_file_metadata
        from huggingface_hub.errors import SafetensorsParsingError

        try:
            meta = parse_local_safetensors_file_metadata(self.path(rel))
        except SafetensorsParsingError as exc:
            raise FormatError(f"{self.path(rel)}: bad safetensors header ({_first_sentence(exc)})") from None
        except OSError as exc:
            raise SourceError(f"{self.path(rel)}: cannot read ({exc.strerror or exc})") from None
        with open(self.path(rel), "rb") as f:
            header_len = struct.unpack("<Q", f.read(8))[0]
        self.meter.requests += 1
        self.meter.add(8 + header_len)
        return meta


def _first_sentence(exc: Exception) -> str:
    return str(exc).split(". ")[0]


def _list_dir(root: Path) -> dict[str, RepoFile]:
    files: dict[str, RepoFile] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part in _SKIPPED_DIRS for part in rel.parts) or not p.is_file():
            continue
        files[rel.as_posix()] = RepoFile(rel.as_posix(), p.stat().st_size)
    return files


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


def open_files(paths: list[Path]) -> LocalTree:
    """Loose files (a GGUF, its shards, its mtp- sidecar) seen as one tree rooted at their common folder."""
    resolved = [p.expanduser().resolve() for p in paths]
    for p in resolved:
        if not p.exists():
            raise SourceError(f"{p}: no such file")
        if not p.is_file():
            raise SourceError(f"{p}: not a regular file")
    root = Path(*_common_parts([p.parent for p in resolved]))
    files = {p.relative_to(root).as_posix(): RepoFile(p.relative_to(root).as_posix(), p.stat().st_size) for p in resolved}
    return LocalTree(root=root, name=str(resolved[0]), files=files)


def _common_parts(dirs: list[Path]) -> tuple[str, ...]:
    parts = dirs[0].parts
    for d in dirs[1:]:
        n = 0
        while n < min(len(parts), len(d.parts)) and parts[n] == d.parts[n]:
            n += 1
        parts = parts[:n]
    return parts or ("/",)
