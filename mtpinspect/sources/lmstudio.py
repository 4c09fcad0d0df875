"""LM Studio's models folder: ``~/.lmstudio/models/<publisher>/<repo>/*.gguf`` (older versions:
``~/.cache/lm-studio/models``), plain GGUF files, one folder per Hub repo. A models folder moved
elsewhere in LM Studio's settings is checked as a folder: ``mtpinspect check DIR --all``.
"""

from __future__ import annotations

from pathlib import Path

from mtpinspect.errors import SourceError, UsageError
from mtpinspect.sources.filenames import is_gguf


def roots() -> list[Path]:
    """LM Studio's models folders, current first."""
    home = Path.home()
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def _existing(label: str) -> list[Path]:
    found = [root for root in roots() if root.is_dir()]
    if not found:
        raise SourceError(f"{label}: no LM Studio models folder (looked for {', '.join(map(str, roots()))})")
    return found


def parse(text: str) -> tuple[str, str | None]:
    """'PUBLISHER/REPO[:QUANT]' -> ('PUBLISHER/REPO', QUANT or None)."""
    repo, _, quant = text.partition(":")
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts) or any(p in (".", "..") for p in parts):
        raise UsageError(f"lmstudio:{text}: expected lmstudio:PUBLISHER/REPO[:QUANT]")
    return repo, quant or None


def repo_folder(repo: str) -> Path:
    """The folder of PUBLISHER/REPO in the first models folder that has it (names match without case)."""
    label = f"lmstudio:{repo}"
    found = _existing(label)
    publisher, name = repo.split("/")
    for root in found:
        exact = root / publisher / name
        if exact.is_dir():
            return exact
        for pub in root.iterdir() if root.is_dir() else []:
            if pub.is_dir() and pub.name.lower() == publisher.lower():
                for folder in pub.iterdir():
                    if folder.is_dir() and folder.name.lower() == name.lower():
                        return folder
    listing = ", ".join(repos()[:12]) or "none"
    raise SourceError(f"{label}: no folder {publisher}/{name} in LM Studio's models folders "
                      f"({', '.join(map(str, found))}; repos there: {listing})")


def repos() -> list[str]:
    """Every PUBLISHER/REPO folder that holds a GGUF, over all models folders (the first one wins)."""
    seen: dict[str, str] = {}
    for root in [r for r in roots() if r.is_dir()]:
        for folder in sorted(p for p in root.glob("*/*") if p.is_dir()):
            if any(is_gguf(f.name) for f in folder.rglob("*") if f.is_file()):
                seen.setdefault(f"{folder.parent.name}/{folder.name}".lower(), f"{folder.parent.name}/{folder.name}")
    return list(seen.values())


def all_folders(label: str) -> list[tuple[str, Path]]:
    """(PUBLISHER/REPO, folder) for every repo folder that holds a GGUF."""
    _existing(label)
    return [(repo, repo_folder(repo)) for repo in repos()]
