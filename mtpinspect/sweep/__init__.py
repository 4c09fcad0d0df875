"""`mtpinspect sweep`: measure MTP speculative decoding with the real llama-server across n-max.

plan (configurations, rounds, server visits) -> run (one server per visit, runs journalled in
journal.py) -> records (what one run measured) -> statistics (per configuration and prompt class) ->
report (JSON, tables, plot). The typed entry point is :func:`run_sweep` with :class:`SweepOptions`.
"""

from __future__ import annotations

from mtpinspect.sweep.api import run_sweep
from mtpinspect.sweep.options import SweepOptions
from mtpinspect.sweep.progress import ProgressEvent
from mtpinspect.sweep.report import SweepReport

__all__ = ["ProgressEvent", "SweepOptions", "SweepReport", "run_sweep"]
