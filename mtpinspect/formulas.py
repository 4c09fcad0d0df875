"""The arithmetic of speculative decoding, each formula once: sweep statistics, the diagnose probe and
the tiny model's calibration all use these."""

from __future__ import annotations

import math
from collections.abc import Sequence


def expected_length(acceptance: float, n_max: int) -> float:
    """Tokens per verification step if each draft token were accepted with per-token rate a:
    1 + a + a^2 + ... + a^n.

    ``a`` must be a per-token (conditional) rate such as the first position's acceptance, not
    accepted/drafted: with full drafts, mean length is exactly 1 + n * (accepted/drafted).
    """
    return 1.0 + sum(acceptance**i for i in range(1, n_max + 1))


def acceptance_for_length(length: float, n_max: int) -> float | None:
    """The per-token acceptance a with 1 + a + ... + a^n = length (bisection); None when even a = 1
    gives less than ``length``, 0.0 when any acceptance reaches it."""
    if length <= 1.0:
        return 0.0
    if length > n_max + 1:
        return None
    low, high = 0.0, 1.0
    for _ in range(40):
        mid = (low + high) / 2
        if expected_length(mid, n_max) < length:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def geometric_mean(values: Sequence[float]) -> float | None:
    """The mean of ratios (speedups) that neither a 2x nor a 0.5x dominates; None without positive values."""
    positive = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in positive) / len(positive)) if positive else None


def crossing(points: Sequence[tuple[float, float]], level: float = 1.0) -> float | None:
    """The x where a curve of (x, y) points, sorted by x, first rises through ``level`` (linear
    interpolation between the two points around it); None when it never does."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y0 < level <= y1:
            return x0 + (level - y0) * (x1 - x0) / (y1 - y0)
    return None
