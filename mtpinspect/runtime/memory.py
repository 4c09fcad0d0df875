"""Memory of a server while it runs: resident set size of its process tree, and GPU memory.

RSS is sampled in a background thread (20 Hz by default) because peaks during loading and drafting
last only milliseconds; the sum over the process and its children covers router-mode servers (the
tree is listed again once a second, its members' RSS read at every sample).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType

import psutil

# Listing a process's descendants reads every process on the machine (milliseconds of CPU, taken from
# the server being measured, 20 times a second); reading the RSS of a known process costs microseconds.
# So the sampler lists the tree this often and reads its members at every sample.
FAMILY_REFRESH_S = 1.0


def process_family(pid: int) -> list[psutil.Process]:
    """A process and all its descendants ([] once it has exited)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _rss(processes: list[psutil.Process]) -> int:
    total = 0
    for proc in processes:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue  # a child that exited between listing and reading
    return total


def tree_rss(pid: int) -> int:
    """RSS in bytes of a process and all its descendants (0 once it has exited)."""
    return _rss(process_family(pid))


class RssSampler:
    """Context manager that records the peak RSS of a process tree while the block runs."""

    def __init__(self, pid: int, hz: float = 20.0) -> None:
        if hz <= 0:
            raise ValueError("hz must be positive")
        self.pid = pid
        self.interval = 1.0 / hz
        self.peak_bytes = 0
        self.samples = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def current_bytes(self) -> int:
        """RSS of the tree right now (also counted towards the peak)."""
        value = tree_rss(self.pid)
        self._record(value)
        return value

    def _record(self, value: int) -> None:
        if value > 0:
            with self._lock:  # the sampling thread and current_bytes() both record
                self.samples += 1
                self.peak_bytes = max(self.peak_bytes, value)

    def _run(self) -> None:
        family: list[psutil.Process] = []
        listed_at = -FAMILY_REFRESH_S
        while not self._stop.is_set():
            if time.monotonic() - listed_at >= FAMILY_REFRESH_S:
                family, listed_at = process_family(self.pid), time.monotonic()
            self._record(_rss(family))
            self._stop.wait(self.interval)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"rss-{self.pid}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> RssSampler:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


# Where the amdgpu kernel driver reports each card's VRAM in use, in bytes (what amd-smi and rocm-smi read).
DRM_ROOT = Path("/sys/class/drm")


def gpu_memory_used() -> dict[int, int] | None:
    """Used memory in bytes per GPU index from nvidia-smi, else from the amdgpu driver; None without either."""
    if shutil.which("nvidia-smi") is None:
        return amd_vram_used()
    return _nvidia_used()


def amd_vram_used(root: Path = DRM_ROOT) -> dict[int, int] | None:
    """VRAM in use per AMD card (``cardN/device/mem_info_vram_used``), by card number; None without one."""
    used: dict[int, int] = {}
    try:
        cards = [p for p in root.iterdir() if p.name.startswith("card") and p.name[4:].isdigit()]
    except OSError:
        return None
    for card in sorted(cards, key=lambda p: int(p.name[4:])):
        try:
            used[int(card.name[4:])] = int((card / "device" / "mem_info_vram_used").read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            continue  # not an amdgpu card, or a value being rewritten
    return used or None


def _nvidia_used() -> dict[int, int] | None:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    used: dict[int, int] = {}
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            try:
                used[int(parts[0])] = int(float(parts[1]) * 1024 * 1024)
            except ValueError:
                continue  # "[N/A]" on some boards
    return used or None
