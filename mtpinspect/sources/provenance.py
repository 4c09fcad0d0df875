"""What a local folder says about where its files came from, besides their names.

`hf download REPO --local-dir DIR` (huggingface_hub's `_local_folder.py`) leaves, for every file it wrote,
`DIR/.cache/huggingface/download/<path in repo>.metadata`: three lines, the commit the file was downloaded
at, its etag (git blob id, or sha256 for LFS files) and the time the metadata was written. The repo id is
not recorded. huggingface_hub trusts a file's metadata only while the file's mtime is at most one second
past that time; the same rule says here which files were changed after the download.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

DOWNLOAD_METADATA = Path(".cache") / "huggingface" / "download"
# Three short lines; a file much larger than this is not huggingface_hub's.
_METADATA_LIMIT = 1024
# A repo of 160 shards has 160 metadata files; reading more says nothing new about where they came from.
MAX_METADATA_FILES = 512


@dataclass(frozen=True)
class LocalDownload:
    """The `hf download --local-dir` records of a folder."""

    commits: tuple[str, ...]  # most recorded first
    recorded: int  # files with a readable record
    files: int  # files in the folder
    changed: tuple[str, ...]  # files modified after their record was written

    @property
    def commit(self) -> str:
        return self.commits[0]

    def line(self) -> str:
        at = f"commit {self.commit}" + (f" (and {len(self.commits) - 1} other commit(s))" if len(self.commits) > 1 else "")
        changed = f"; changed since: {', '.join(self.changed[:3])}{' ...' if len(self.changed) > 3 else ''}" if self.changed else ""
        return (f"{DOWNLOAD_METADATA.as_posix()}: {self.recorded} of {self.files} file(s) downloaded from the Hub with "
                f"`hf download --local-dir` at {at} (the repo id is not recorded){changed}")


def _record(path: Path) -> tuple[str, float] | None:
    """(commit, timestamp) of one metadata file, or None when it is not one huggingface_hub wrote."""
    try:
        with open(path, "rb") as f:
            lines = f.read(_METADATA_LIMIT).decode("utf-8", errors="replace").splitlines()
        commit, timestamp = lines[0].strip(), float(lines[2].strip())
    except (OSError, IndexError, ValueError):
        return None
    return (commit, timestamp) if len(commit) == 40 and all(c in "0123456789abcdef" for c in commit) else None


def local_download(root: Path, files: Iterable[str]) -> LocalDownload | None:
    """The download records of the folder's files, or None when it was not written by `hf download --local-dir`."""
    base = root / DOWNLOAD_METADATA
    if not base.is_dir():
        return None
    paths = sorted(files)
    commits: Counter[str] = Counter()
    changed = []
    for rel in paths[:MAX_METADATA_FILES]:
        record = _record(base / f"{rel}.metadata")
        if record is None:
            continue
        commit, timestamp = record
        commits[commit] += 1
        try:
            if (root / rel).stat().st_mtime - 1 > timestamp:
                changed.append(rel)
        except OSError:
            continue
    if not commits:
        return None
    return LocalDownload(tuple(c for c, _ in commits.most_common()), sum(commits.values()), len(paths), tuple(changed))
