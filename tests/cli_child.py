"""Run the real CLI in a child process and see what a user sees: exit status, output, time, memory.

The child's peak memory is its own (VmHWM, read by the child itself just before it exits, counted from
exec): RUSAGE_CHILDREN would be the largest child of the whole test run so far, which lets a bound
pass vacuously.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.cache_dir import CACHE_ENV

# Runs the CLI as `python -m mtpinspect` does, then writes the process's own peak RSS in KiB to the file
# in argv[1].
MEASURED = """
import runpy, sys
peak_file, sys.argv = sys.argv[1], ["mtpinspect", *sys.argv[2:]]
try:
    {run}
finally:
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(peak_file, "w") as out:
        out.write(kib)
"""
CLI = 'runpy.run_module("mtpinspect", run_name="__main__", alter_sys=True)'


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float  # wall time of the child
    peak_mb: float  # the child's own peak RSS


def clean_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The test runner's environment without HF_* and MTPINSPECT_* settings (but the test's own cache folder,
    conftest.py), plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MTPINSPECT_")) or k == CACHE_ENV}
    return {**base, **(env or {})}


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, address_space: int | None = None
) -> CliRun:
    """`mtpinspect ARGS` in a child; raises subprocess.TimeoutExpired when it runs past ``timeout``.
    ``address_space`` caps the child's (bytes), so that a read without a bound ends in MemoryError
    rather than in the test machine's swap."""

    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    with tempfile.TemporaryDirectory(prefix="mtpinspect-peak-") as tmp:
        peak_file = Path(tmp) / "peak-kib"
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", MEASURED.format(run=CLI), str(peak_file), *args],
                              capture_output=True, text=True, timeout=timeout, env=clean_env(env),
                              preexec_fn=cap if address_space else None)
        seconds = time.monotonic() - start
        peak_mb = int(peak_file.read_text()) / 1024 if peak_file.is_file() else float("nan")
    return CliRun(proc.returncode, proc.stdout, proc.stderr, seconds, peak_mb)


def assert_one_line_error(proc: CliRun | subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit status 2 and exactly one line on stderr, no traceback, holding every needle (any case)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-4000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle.lower() in lines[0].lower(), lines[0]
    return lines[0]
