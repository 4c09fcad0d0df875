"""Other processes' load while a sweep measures: the meter on real processes (runtime/load.py), the summary
and warning over a sweep's runs (sweep/machine_load.py), and the journal keeping each run's reading."""

from __future__ import annotations

import json
import time

import psutil
import pytest
from cpuburn import burners

from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.load import MIN_WINDOW_S, LoadMeter, OtherLoad, machine_busy_seconds
from mtpinspect.sweep.machine_load import BUSY_SHARE, summarize_load
from mtpinspect.sweep.records import MalformedRecord, RunRecord
from mtpinspect.vocabulary import MachineState, RunStatus


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def test_a_named_server_is_ours_and_any_other_process_is_not() -> None:
    """Two meters read over the same window; one names the spinning child as its server. The difference
    between their figures is the child's own CPU use, whatever else the machine runs meanwhile. The child
    starts after the meters, as a sweep's servers do: its whole life is in the window."""
    as_server, as_other = LoadMeter(), LoadMeter()
    with burners() as (proc,):
        time.sleep(MIN_WINDOW_S + 0.3)
        ours = as_server.other_load(proc.pid)
        theirs = as_other.other_load(None)
        burned = _cpu(psutil.Process(proc.pid))
    assert ours is not None and theirs is not None
    assert ours.cores == theirs.cores == psutil.cpu_count()
    assert theirs.window_seconds >= MIN_WINDOW_S
    assert burned / theirs.window_seconds > 0.2  # the child got a share of a core, even on a loaded machine
    # Counter rounding: 10 ms per CPU and per process on each of the four readings, over a second and more.
    tolerance = 0.04 * (psutil.cpu_count() + 2) / theirs.window_seconds
    assert theirs.cores_used - ours.cores_used == pytest.approx(burned / theirs.window_seconds, abs=tolerance)
    assert 0.0 <= ours.cores_used <= ours.cores + tolerance


def test_a_stopped_server_stays_ours() -> None:
    """A server stopped and reaped between two readings (the last run of a visit, then the next visit's
    first): its CPU time moves to this process's reaped children, and is not read as other work."""
    meter = LoadMeter()
    busy_before = machine_busy_seconds()
    with burners(seconds=MIN_WINDOW_S) as (proc,):
        time.sleep(MIN_WINDOW_S / 2)
        burned = _cpu(psutil.Process(proc.pid))
        proc.wait()  # reaped here; it spins on for the rest of its second first
    load = meter.other_load(None)
    busy = machine_busy_seconds() - busy_before
    assert load is not None and burned / load.window_seconds > 0.1
    tolerance = 0.04 * (psutil.cpu_count() + 2)
    assert load.cores_used * load.window_seconds <= busy - burned + tolerance


def test_a_window_reaches_back_at_least_a_second() -> None:
    """Runs shorter than the counters' rounding are read over the last second, not over themselves."""
    meter = LoadMeter()
    time.sleep(MIN_WINDOW_S + 0.1)
    meter.mark(None)
    first = meter.other_load(None)
    assert first is not None and first.window_seconds >= MIN_WINDOW_S  # from the meter's start, not the mark
    quick = [meter.other_load(None) for _ in range(3)]
    assert all(q is not None and MIN_WINDOW_S <= q.window_seconds < MIN_WINDOW_S + 1.0 for q in quick)


def _run(config: str, cores_used: float | None, cores: int = 2, status: RunStatus = RunStatus.ok) -> RunRecord:
    load = None if cores_used is None else OtherLoad(cores_used=cores_used, window_seconds=1.2, cores=cores)
    return RunRecord(
        configuration=config, n_max=None if config == "baseline" else 2, synthetic=None, prompt_id="p",
        prompt_class="code", repeat=0, server_id=config, status=status, error=None, wall_seconds=0.1, settings={},
        finished_at=0.0, decode_tokens_per_second=100.0, other_load=load,
    )


def test_no_reading_no_summary() -> None:
    # A server at an --endpoint, or a journal of an earlier version; failed runs' speeds are not shown.
    assert summarize_load([_run("baseline", None), _run("n-max-2", 1.9, status=RunStatus.error)]) is None


def test_a_quiet_machine_has_no_warning() -> None:
    threshold = BUSY_SHARE * 2
    load = summarize_load([_run("baseline", 0.05), _run("baseline", threshold), _run("n-max-2", 0.3)])
    assert load is not None
    assert load.state is MachineState.quiet and load.warning is None
    assert (load.runs, load.busy_runs, load.busy_share, load.busy_median_cores) == (3, 0, 0.0, None)
    assert load.median_cores == 0.3 and load.peak_cores == threshold  # at the threshold is not above it
    assert load.busy_above_cores == threshold and load.cores == 2


def test_busy_runs_are_counted_and_the_warning_says_what_and_what_to_do() -> None:
    runs = [_run("baseline", 1.6), _run("baseline", 1.5), _run("baseline", 0.1), _run("n-max-2", 1.9),
            _run("n-max-2", 0.2), _run("n-max-2", 0.0)]
    load = summarize_load(runs)
    assert load is not None and load.state is MachineState.busy
    assert (load.runs, load.busy_runs, load.busy_share) == (6, 3, 0.5)
    assert load.busy_median_cores == 1.6 and load.peak_cores == 1.9
    assert [(c.configuration, c.runs, c.busy_runs) for c in load.by_configuration] == [("baseline", 3, 2), ("n-max-2", 3, 1)]
    warning = load.warning or ""
    assert warning.startswith("speeds may be disturbed: other processes used 1.6 of 2 cores during 50% of the runs "
                              "(3 of 6; up to 1.9)")
    assert "Close what else is running" in warning and "--repeat" in warning
    # The same share on a bigger machine is not busy: the threshold is a share of its cores.
    assert summarize_load([_run("baseline", 1.9, cores=16)]).state is MachineState.quiet


def test_the_journal_keeps_each_runs_reading() -> None:
    """--resume summarises the runs of earlier invocations from their journal lines."""
    run = _run("n-max-2", 1.25)
    line = json.loads(json.dumps(to_jsonable(run)))
    assert line["other_load"] == {"cores_used": 1.25, "window_seconds": 1.2, "cores": 2}
    assert RunRecord.from_dict(line) == run
    del line["other_load"]  # written before readings were taken
    assert RunRecord.from_dict(line).other_load is None
    with pytest.raises(MalformedRecord, match="other_load"):
        RunRecord.from_dict({**line, "other_load": {"cores_used": "high", "window_seconds": 1.0, "cores": 2}})
