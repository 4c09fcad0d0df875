"""Progress of a running sweep: events for a caller's callback, with a time-left estimate.

The estimate counts what is still to do in the two units a sweep spends time on: runs (average run
time so far) and server starts (average start-up time so far, which dominates for large models).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mtpinspect.sweep.plan import Plan, Visit
from mtpinspect.sweep.prompts import Prompt

# Phases, in the order they happen for one server start.
BUILD = "build"  # building llama-server (message carries the build step)
SERVER_START = "server-start"
SERVER_FAILED = "server-failed"
RUN_START = "run-start"
RUN_DONE = "run-done"
# A line that stays on screen (the baseline command the tool made from a --serve template).
NOTE = "note"


@dataclass(frozen=True)
class ProgressEvent:
    phase: str
    done: int
    total: int
    elapsed_seconds: float
    eta_seconds: float | None
    configuration: str | None
    prompt_id: str | None
    repeat: int | None
    message: str


ProgressCallback = Callable[[ProgressEvent], None]


class _Labelled(Protocol):
    @property
    def label(self) -> str: ...


class Step(Protocol):
    """A planned run as progress names it: a sweep's PlannedRun, or a drift pass's request."""

    @property
    def configuration(self) -> _Labelled: ...

    @property
    def prompt(self) -> Prompt: ...

    @property
    def repeat(self) -> int: ...


class Stop(Protocol):
    """A server start as progress names it (a sweep's Visit, a drift pass)."""

    @property
    def configuration(self) -> _Labelled: ...


class ProgressTracker:
    """Counts finished runs and server starts and reports each step to a callback."""

    def __init__(self, plan: Plan | tuple[int, int], callback: ProgressCallback | None) -> None:
        """``plan``: a sweep's plan, or (runs, server starts) for another measurement (drift)."""
        self.callback = callback
        self.total, self.visits_left = (plan.total_runs, len(plan.visits)) if isinstance(plan, Plan) else plan
        self.done = 0
        self._started = time.monotonic()
        self._run_seconds: list[float] = []
        self._start_seconds: list[float] = []

    def eta(self) -> float | None:
        if not self._run_seconds:
            return None
        per_run = sum(self._run_seconds) / len(self._run_seconds)
        per_start = sum(self._start_seconds) / len(self._start_seconds) if self._start_seconds else 0.0
        return (self.total - self.done) * per_run + self.visits_left * per_start

    def emit(self, phase: str, message: str, run: Step | None = None, visit: Stop | None = None) -> None:
        if self.callback is None:
            return
        config = run.configuration if run is not None else visit.configuration if visit is not None else None
        self.callback(
            ProgressEvent(
                phase=phase,
                done=self.done,
                total=self.total,
                elapsed_seconds=time.monotonic() - self._started,
                eta_seconds=self.eta(),
                configuration=config.label if config is not None else None,
                prompt_id=run.prompt.id if run is not None else None,
                repeat=run.repeat if run is not None else None,
                message=message,
            )
        )

    def server_started(self, seconds: float) -> None:
        self.visits_left -= 1
        self._start_seconds.append(seconds)

    def server_failed(self, visit: Visit, reason: str) -> None:
        self.start_failed(visit, len(visit.runs), reason)

    def start_failed(self, visit: Stop, runs: int, reason: str) -> None:
        """A server that did not start: the ``runs`` it was to serve will not run."""
        self.visits_left -= 1
        self.done += runs
        self.emit(SERVER_FAILED, reason, visit=visit)

    def run_finished(self, run: Step, seconds: float, message: str) -> None:
        self.done += 1
        self._run_seconds.append(seconds)
        self.emit(RUN_DONE, message, run=run)

    def runs_abandoned(self, count: int) -> None:
        """Runs of a visit whose server died: they will not run in this sweep."""
        self.done += count
