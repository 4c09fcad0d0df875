"""LM Studio's models folder, found as LM Studio finds it (lmstudio-js findLMStudioHome.ts; the facts:
mtpinspect/app_facts.py): its home is the path in ``~/.lmstudio-home-pointer``, else ``~/.cache/lm-studio``
when that exists, else ``~/.lmstudio``; its models folder is ``settings.json``'s ``downloadsFolder`` when set,
else ``<home>/models``, holding plain GGUF files under ``<publisher>/<repo>/``. Its llama.cpp engines lie in
``<home>/extensions/backends/llama.cpp-<platform>-<variant>-<version>/``: their versions say whether MTP can run.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.app_facts import (
    LM_STUDIO_DOWNLOADS_KEY,
    LM_STUDIO_ENGINE_PREFIX,
    LM_STUDIO_ENGINES,
    LM_STUDIO_HOME,
    LM_STUDIO_HOME_POINTER,
    LM_STUDIO_LEGACY_HOME,
    LM_STUDIO_SETTINGS,
    version_key,
)
from mtpinspect.errors import FormatError, SourceError, UsageError
from mtpinspect.files import read_bounded
from mtpinspect.sources.local import MAX_ENTRIES, TooManyEntries, gguf_files

# A pointer file holds one path; settings.json a few kilobytes.
POINTER_LIMIT = 4096
SETTINGS_LIMIT = 1024 * 1024
_ENGINE_VERSION = re.compile(r"-(\d+\.\d+\.\d+)$")


@dataclass(frozen=True)
class Place:
    """LM Studio's home and models folder, and how each was found (for messages)."""

    home: Path
    home_why: str
    models: Path
    models_why: str

    def describe(self) -> str:
        return f"{self.models} ({self.models_why}; home {self.home}: {self.home_why})"


def place() -> Place:
    """Where LM Studio keeps its files and models, decided as LM Studio decides it."""
    user = Path.home()
    pointer = user / LM_STUDIO_HOME_POINTER
    if pointer.is_file():
        text = read_bounded(pointer, POINTER_LIMIT, "LM Studio's home pointer").decode("utf-8", "replace").strip()
        if not text:
            raise SourceError(f"{pointer}: empty; LM Studio writes its home folder's path there")
        home, home_why = Path(text).expanduser(), f"named in {pointer}"
    elif (user / LM_STUDIO_LEGACY_HOME).exists():
        home, home_why = user / LM_STUDIO_LEGACY_HOME, f"no {LM_STUDIO_HOME_POINTER}; the older home exists"
    else:
        home, home_why = user / LM_STUDIO_HOME, f"no {LM_STUDIO_HOME_POINTER}; the default"
    downloads = _downloads_folder(home / LM_STUDIO_SETTINGS)
    if downloads is not None:
        return Place(home, home_why, downloads, f"{LM_STUDIO_DOWNLOADS_KEY} in {home / LM_STUDIO_SETTINGS}")
    return Place(home, home_why, home / "models", "the default models folder")


def _downloads_folder(settings: Path) -> Path | None:
    if not settings.is_file():
        return None
    data = read_bounded(settings, SETTINGS_LIMIT, "LM Studio's settings")
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{settings}: not valid JSON ({exc})") from None
    value = doc.get(LM_STUDIO_DOWNLOADS_KEY) if isinstance(doc, dict) else None
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise FormatError(f"{settings}: {LM_STUDIO_DOWNLOADS_KEY} is {value!r}, not a folder path")
    return Path(value).expanduser()


def engine_versions(home: Path) -> list[str]:
    """The versions of the llama.cpp engines installed under ``home``, oldest first."""
    folder = home / LM_STUDIO_ENGINES
    if not folder.is_dir():
        return []
    found = {m.group(1) for p in folder.iterdir() if p.is_dir() and p.name.startswith(LM_STUDIO_ENGINE_PREFIX)
             and (m := _ENGINE_VERSION.search(p.name))}
    return sorted(found, key=version_key)


def roots() -> list[Path]:
    """LM Studio's models folder (a list: the messages name what was looked at)."""
    return [place().models]


def _existing(label: str) -> list[Path]:
    where = place()
    if not where.models.is_dir():
        raise SourceError(f"{label}: no LM Studio models folder at {where.describe()}")
    return [where.models]


def parse(text: str) -> tuple[str, str | None]:
    """'PUBLISHER/REPO[:QUANT]' -> ('PUBLISHER/REPO', QUANT or None)."""
    repo, _, quant = text.partition(":")
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts) or any(p in (".", "..") for p in parts):
        raise UsageError(f"lmstudio:{text}: expected lmstudio:PUBLISHER/REPO[:QUANT]")
    return repo, quant or None


def repo_folder(repo: str) -> Path:
    """The folder of PUBLISHER/REPO in the models folder (names match without case)."""
    label = f"lmstudio:{repo}"
    found = _existing(label)
    publisher, name = repo.split("/")
    for root in found:
        exact = root / publisher / name
        if exact.is_dir():
            return exact
        pub = _named(root, publisher)
        folder = _named(pub, name) if pub is not None else None
        if folder is not None:
            return folder
    listing = ", ".join(repos()[:12]) or "none"
    raise SourceError(f"{label}: no folder {publisher}/{name} in LM Studio's models folder "
                      f"({place().describe()}; repos there: {listing})")


def _named(folder: Path, name: str) -> Path | None:
    """The subfolder of ``folder`` named ``name`` without regard to case; at most MAX_ENTRIES entries are
    looked at, and one that cannot be read (a loop of links, a FIFO) is no match."""
    try:
        with os.scandir(folder) as listing:
            for entry in itertools.islice(listing, MAX_ENTRIES):
                with contextlib.suppress(OSError):
                    if entry.name.lower() == name.lower() and entry.is_dir():
                        return Path(entry.path)
    except OSError:
        return None
    return None


def repos() -> list[str]:
    """Every PUBLISHER/REPO folder that holds a GGUF, found by the folder bounds of `check DIR`
    (local.gguf_files): a downloadsFolder of `/` or one full of links, FIFOs and deep trees is one line."""
    seen: dict[str, str] = {}
    for root in [r for r in roots() if r.is_dir()]:
        try:
            found = gguf_files(root)
        except TooManyEntries:
            raise SourceError(f"{root}: more than {MAX_ENTRIES} files and folders in LM Studio's models folder "
                              f"({place().describe()}): not a models folder; set {LM_STUDIO_DOWNLOADS_KEY} to "
                              "the folder LM Studio downloads to") from None
        for rel in found:
            parts = rel.split("/")
            if len(parts) >= 3:  # PUBLISHER/REPO/[...]/FILE.gguf
                seen.setdefault("/".join(parts[:2]).lower(), "/".join(parts[:2]))
    return sorted(seen.values())


def all_folders(label: str) -> list[tuple[str, Path]]:
    """(PUBLISHER/REPO, folder) for every repo folder that holds a GGUF."""
    _existing(label)
    return [(repo, repo_folder(repo)) for repo in repos()]
