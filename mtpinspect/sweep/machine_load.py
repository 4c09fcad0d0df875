"""Was the machine busy with other work while the sweep measured? The summary of every run's reading
(runtime/load.py: the cores other work kept busy), and the warning the report gives when speeds may be
disturbed, with what to do about it.
"""

from __future__ import annotations

import statistics as stats
from collections.abc import Sequence
from dataclasses import dataclass, replace

from mtpinspect.runtime.load import OtherLoad
from mtpinspect.sweep.records import RunRecord
from mtpinspect.vocabulary import MachineState, RunStatus

# A run counts as busy when other work kept more than this share of the machine's cores busy during it.
# llama-server runs a thread per core by default and a decode step waits for its slowest thread, so a
# quarter of the cores taken slows steps by about as much: more than the differences a sweep has to tell
# apart (speedups of 1.1x-1.3x). The reading's rounding (a few hundredths of a core, runtime/load.py) stays
# far below it even on one core, and a desktop's idle background (a browser, an editor) uses less.
BUSY_SHARE = 0.25


@dataclass(frozen=True)
class BusyConfiguration:
    """How many of one configuration's runs were busy: busy runs lined up with one configuration bias its speedup."""

    configuration: str
    runs: int
    busy_runs: int


@dataclass(frozen=True)
class MachineLoad:
    """What other work used of the machine while the sweep's runs were measured."""

    state: MachineState
    cores: int  # the machine's logical CPUs (of the latest run measured)
    busy_above_cores: float  # BUSY_SHARE of them: a run above this counts as busy
    runs: int  # finished runs with a reading
    busy_runs: int
    busy_share: float  # busy_runs / runs
    median_cores: float  # cores other work used, median over the runs
    peak_cores: float
    busy_median_cores: float | None  # median over the busy runs; None when none was
    by_configuration: list[BusyConfiguration]
    warning: str | None  # what was measured and what to do, when busy; None when quiet


def is_busy(load: OtherLoad) -> bool:
    return load.cores_used > BUSY_SHARE * load.cores


def summarize_load(runs: Sequence[RunRecord]) -> MachineLoad | None:
    """The machine's load over the finished runs that carry a reading; None when none does (a server at an
    --endpoint, which may run elsewhere, or a journal written before readings were taken)."""
    measured = [(r, r.other_load) for r in runs if r.status == RunStatus.ok and r.other_load is not None]
    if not measured:
        return None
    cores = measured[-1][1].cores
    used = [load.cores_used for _, load in measured]
    busy = [load.cores_used for _, load in measured if is_busy(load)]
    by_configuration: dict[str, BusyConfiguration] = {}
    for run, load in measured:
        seen = by_configuration.get(run.configuration, BusyConfiguration(run.configuration, 0, 0))
        by_configuration[run.configuration] = BusyConfiguration(run.configuration, seen.runs + 1,
                                                                seen.busy_runs + is_busy(load))
    summary = MachineLoad(
        state=MachineState.busy if busy else MachineState.quiet,
        cores=cores,
        busy_above_cores=BUSY_SHARE * cores,
        runs=len(measured),
        busy_runs=len(busy),
        busy_share=len(busy) / len(measured),
        median_cores=stats.median(used),
        peak_cores=max(used),
        busy_median_cores=stats.median(busy) if busy else None,
        by_configuration=list(by_configuration.values()),
        warning=None,
    )
    return replace(summary, warning=_warning(summary))


def _warning(load: MachineLoad) -> str | None:
    """What was measured and what to do about it, when some runs were busy (one text: the JSON's and the table's)."""
    if load.busy_median_cores is None:
        return None
    return (
        f"speeds may be disturbed: other processes used {load.busy_median_cores:.1f} of {load.cores} cores during "
        f"{load.busy_share:.0%} of the runs ({load.busy_runs} of {load.runs}; up to {load.peak_cores:.1f}), more than "
        f"{load.busy_above_cores:.1f} ({BUSY_SHARE:.0%} of the cores), above which a run counts as busy; "
        "their speeds are in the medians and the min-max ranges. Close what else is running and run the sweep "
        "again, or, if that work comes and goes, measure more rounds (--repeat) so that the medians rest on quiet runs."
    )
