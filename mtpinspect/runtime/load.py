"""How much of the machine's CPU other work took while a server was measured.

What is measured: the CPU time all the machine's CPUs were busy (``/proc/stat`` through psutil), minus
the CPU time that is ours: this process's threads, the children it has reaped (a stopped server's
whole life is added to them when it is reaped), and the live server's process tree. What is left is
other processes' work, and on a virtual machine the time the hypervisor gave other guests (``steal``):
both take cores the server would have used. Divided by the window's wall time it is the number of
cores other work kept busy.

Why not the load average: it counts our own server's threads, so a sweep on an idle machine reads as
loaded; it is a one-minute moving average, so it cannot tell one run from the next; and it counts
processes waiting on the disk. Why not sum every other process's CPU time: listing every process takes
milliseconds, and processes that start and end between two readings (a compiler in a build) are
missed, while the machine-wide counters include them.

Both counters advance in clock ticks (10 ms per CPU and per process), so a window of a few tens of ms,
which is a whole request on a small model, would be mostly rounding. So each figure covers the window
from the newest reading that is at least MIN_WINDOW_S old up to now: the run, and the runs just before
it when they were shorter. One reading costs three small reads from /proc (the server's tree is
listed again at most once per FAMILY_REFRESH_S); nothing waits, so a reading is bounded in time.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import psutil

from mtpinspect.runtime.memory import FAMILY_REFRESH_S, process_family

# A second covers a few ticks' rounding per CPU: within a few hundredths of a core on a small machine.
MIN_WINDOW_S = 1.0


@dataclass(frozen=True)
class OtherLoad:
    """What other work used of the machine's CPUs during a run (and just before it, for a short run)."""

    cores_used: float  # cores other work kept busy, on average over the window
    window_seconds: float
    cores: int  # the machine's logical CPUs


@dataclass(frozen=True)
class _Reading:
    at: float  # time.monotonic()
    busy: float  # CPU seconds the machine's CPUs have been busy, summed
    own: float  # CPU seconds of this process, its reaped children and the server's live tree


def machine_busy_seconds() -> float:
    """CPU seconds all CPUs have been busy since boot: everything but idle and waiting on the disk.

    guest and guest_nice are left out: Linux already counts them in user and nice."""
    times = psutil.cpu_times()
    return sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def own_seconds(family: list[psutil.Process]) -> float:
    """CPU seconds that are this sweep's: this process, its reaped children, and ``family`` (the live server)."""
    mine = psutil.Process().cpu_times()
    total = mine.user + mine.system + mine.children_user + mine.children_system
    for proc in family:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue  # exited since it was listed; once reaped, its time is in children_* above
        total += times.user + times.system
    return total


class LoadMeter:
    """Readings of other work's CPU use, one per measured run, for one sweep (one meter per sweep)."""

    def __init__(self) -> None:
        self.cores = psutil.cpu_count() or 1
        self._family_of: int | None = None
        self._family: list[psutil.Process] = []
        self._listed_at = 0.0
        self._readings: deque[_Reading] = deque([self._read(None)])

    def mark(self, server_pid: int | None) -> None:
        """A reading without a figure: where the next run's window may start (a server just came up)."""
        self._keep(self._read(server_pid))

    def other_load(self, server_pid: int | None) -> OtherLoad | None:
        """Other work's CPU use from the newest reading at least MIN_WINDOW_S old (else the oldest) to now."""
        now = self._read(server_pid)
        start = self._keep(now)
        window = now.at - start.at
        if window <= 0:
            return None
        other = max(0.0, (now.busy - start.busy) - (now.own - start.own))  # below 0 only by rounding
        return OtherLoad(cores_used=other / window, window_seconds=window, cores=self.cores)

    def _keep(self, reading: _Reading) -> _Reading:
        """Add a reading; drop those no window can start from any more; the window start for ``reading``."""
        self._readings.append(reading)
        while len(self._readings) > 2 and self._readings[1].at <= reading.at - MIN_WINDOW_S:
            self._readings.popleft()
        return self._readings[0]

    def _read(self, server_pid: int | None) -> _Reading:
        return _Reading(time.monotonic(), machine_busy_seconds(), own_seconds(self._server_tree(server_pid)))

    def _server_tree(self, pid: int | None) -> list[psutil.Process]:
        # Listing descendants reads every process on the machine, so it is done once per server and then at
        # most once per FAMILY_REFRESH_S (llama-server starts no processes while it serves).
        if pid is None:
            return []
        if pid != self._family_of or time.monotonic() - self._listed_at >= FAMILY_REFRESH_S:
            self._family_of, self._family, self._listed_at = pid, process_family(pid), time.monotonic()
        return self._family
