"""Where mtpinspect keeps what it caches (built llama-servers, Hub file headers): one folder for all."""

from __future__ import annotations

import os
from pathlib import Path

from mtpinspect.errors import OutputError

CACHE_ENV = "MTPINSPECT_CACHE_DIR"


def cache_dir() -> Path:
    """$MTPINSPECT_CACHE_DIR, else the user cache directory (~/.cache/mtpinspect on Linux)."""
    import platformdirs

    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir("mtpinspect"))


def make_folder(path: Path) -> Path:
    """A folder of the cache, made if missing; OutputError naming it when it cannot be (the cache folder
    is a file, or read-only)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{exc.filename or path}: cannot hold the cache folder ({exc.strerror or exc}); "
                          f"set {CACHE_ENV} to a folder that can be written") from None
    return path
