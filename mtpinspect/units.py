"""How quantities are written for people, in one place: durations as the sweep's bar, the build's progress
and its closing line show them."""

from __future__ import annotations


def duration(seconds: float | None) -> str:
    """``7m05s``, ``42s``; ``--`` when unknown (no estimate yet)."""
    if seconds is None:
        return "--"
    whole = int(round(seconds))
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"
