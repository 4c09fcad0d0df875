"""Child processes that keep CPUs busy for a while: other work on the machine, as a test needs it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Each child spins for at most this long, so none outlives a test that dies without killing it.
_SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@contextmanager
def burners(count: int = 1, seconds: float = 120.0) -> Iterator[list[subprocess.Popen]]:
    """``count`` spinning children, killed and reaped when the block ends."""
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(count):
            procs.append(subprocess.Popen([sys.executable, "-c", _SPIN.format(seconds=seconds)]))
        yield procs
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()
