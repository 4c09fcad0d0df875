"""`mtpinspect drift`: why temperature-0 output changed when MTP went on, and whether it matters.

plan (the servers, their passes over the prompts, and the triggers: the control, a restart, MTP at
each n-max, batching, the thread count, each alone) -> run (one server per start, every answer
journalled) -> compare (where two passes part, the baseline's top candidates there, the judgement:
near-tie or breakdown) -> report (the table, the plain answer, JSON). The typed entry point is
:func:`run_drift` with :class:`DriftOptions`.
"""

from __future__ import annotations

from mtpinspect.drift.api import run_drift
from mtpinspect.drift.options import DriftOptions
from mtpinspect.drift.report import DriftReport

__all__ = ["DriftOptions", "DriftReport", "run_drift"]
