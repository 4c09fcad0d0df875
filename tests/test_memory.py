"""The RSS sampler on real process trees: it lists the tree once a second and reads RSS at every sample."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mtpinspect.runtime.memory import FAMILY_REFRESH_S, RssSampler, amd_vram_used, tree_rss

MIB = 1 << 20
# A parent that starts, after a pause, a child holding 200 MiB for a while (as a router-mode server
# starts its model servers after it is up).
_PARENT = (
    "import subprocess, sys, time\n"
    "time.sleep({pause})\n"
    "subprocess.run([sys.executable, '-c', 'b = bytearray(200 << 20); b[::4096] = b\"x\" * len(b[::4096]); "
    "import time; time.sleep({hold})'])\n"
)


def test_a_child_that_starts_later_is_counted() -> None:
    code = _PARENT.format(pause=0.3, hold=2 * FAMILY_REFRESH_S + 0.5)
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        with RssSampler(parent.pid, hz=20) as sampler:
            parent.wait(timeout=30)
    finally:
        parent.kill()
    # The parent alone is a bare interpreter (tens of MiB); the peak includes the child's 200 MiB.
    assert sampler.peak_bytes > 200 * MIB
    assert sampler.samples >= 20


def test_the_sampler_reads_each_sample() -> None:
    """Between two listings of the tree the sampler still sees every change of its members' RSS."""
    code = "import time; time.sleep(0.2); b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(0.3)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        with RssSampler(proc.pid, hz=50) as sampler:
            proc.wait(timeout=30)
    finally:
        proc.kill()
    # The allocation happens 0.2 s in, well within the first listing's second.
    assert sampler.peak_bytes > 300 * MIB
    assert tree_rss(proc.pid) == 0


def test_amd_vram_is_read_from_the_amdgpu_driver(tmp_path: Path) -> None:
    """The files the amdgpu driver writes under /sys/class/drm, laid out the same in a folder."""
    for name, value in (("card1", "2147483648\n"), ("card0", "1048576\n")):
        (tmp_path / name / "device").mkdir(parents=True)
        (tmp_path / name / "device" / "mem_info_vram_used").write_text(value)
    (tmp_path / "card2" / "device").mkdir(parents=True)  # an NVIDIA or Intel card: no such file
    (tmp_path / "card0-DP-1").mkdir()  # a connector, not a card
    assert amd_vram_used(tmp_path) == {0: 1048576, 1: 2147483648}
    assert amd_vram_used(tmp_path / "card2") is None
