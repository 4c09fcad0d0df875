"""Where mtpinspect keeps what it caches (built llama-servers, Hub file headers): one folder for all."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "MTPINSPECT_CACHE_DIR"


def cache_dir() -> Path:
    """$MTPINSPECT_CACHE_DIR, else the user cache directory (~/.cache/mtpinspect on Linux)."""
    import platformdirs

    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir("mtpinspect"))
