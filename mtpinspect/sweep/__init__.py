"""`mtpinspect sweep`: measure MTP speculative decoding with the real llama-server across n-max.

plan (configurations, rounds, server visits) -> run (one server per visit, journalled runs) ->
records (what one run measured) -> statistics (per configuration and prompt class) -> report (JSON,
tables, plot). The typed entry point is :func:`run_sweep`.
"""

from __future__ import annotations

from mtpinspect.sweep.api import SweepOptions, run_sweep
from mtpinspect.sweep.plan import Configuration
from mtpinspect.sweep.progress import ProgressEvent
from mtpinspect.sweep.prompts import Prompt, builtin_classes, load_builtin, load_prompts
from mtpinspect.sweep.report import SweepReport
from mtpinspect.sweep.statistics import BreakEven, GroupStats, Recommendation, Spread

__all__ = [
    "BreakEven",
    "Configuration",
    "GroupStats",
    "ProgressEvent",
    "Prompt",
    "Recommendation",
    "Spread",
    "SweepOptions",
    "SweepReport",
    "builtin_classes",
    "load_builtin",
    "load_prompts",
    "run_sweep",
]
