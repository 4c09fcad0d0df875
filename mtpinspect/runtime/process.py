"""The programs mtpinspect starts (llama-server, `llama-server --version`) as operating-system processes.

Each runs in its own session, so that a terminal's Ctrl-C reaches only mtpinspect, which then stops
them in order. The other side of that: a hangup or ``kill -9`` of mtpinspect never reaches them. So on
Linux each child asks the kernel to kill it when mtpinspect dies (``PR_SET_PDEATHSIG``), and a child
that outlives its time is killed with its whole process group, not just the process we started.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process exits (Linux; else None).

    The kernel ties it to the thread that starts the child: start servers from a thread that outlives them.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child must not load anything
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)

    return arm


# What a probe (`--version`, `nvidia-smi -L`) may print before it is taken for something else and stopped:
# the real answers are a few lines; a program that prints without end grew mtpinspect to 24 GB before.
PROBE_MAX_BYTES = 16 * 1024
_READ_BYTES = 8192
_POLL_S = 0.02
# A probe's leftovers (a daemon it started) get this long after SIGTERM before SIGKILL.
_LEFTOVER_GRACE_S = 1.0


class ProbeOverflow(Exception):
    """A probe printed more than ``max_bytes`` on one stream and was stopped."""

    def __init__(self, command: Sequence[str], max_bytes: int) -> None:
        super().__init__(f"{command[0]} printed more than {max_bytes} bytes")
        self.max_bytes = max_bytes


def run_bounded(command: Sequence[str], timeout: float, max_bytes: int = PROBE_MAX_BYTES,
                env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """Run a short command and return its stdout and stderr (at most ``max_bytes`` of each). Bounded in
    time (subprocess.TimeoutExpired after ``timeout`` s) and in memory (ProbeOverflow when a stream
    exceeds ``max_bytes``); either way, and after a normal exit too, every process it started is stopped:
    its process group, and what left the group (``setsid``, a double fork), found by the mark its
    environment carries, as for a ``--serve`` command (serve_scope.py). ``env``: variables set for it over
    this process's environment."""
    from mtpinspect.runtime.serve_scope import new_scope  # psutil: only where a program runs

    scope = new_scope()
    proc = subprocess.Popen(
        list(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**scope.environment(), **(env or {})}, start_new_session=os.name != "nt", preexec_fn=die_with_parent(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    kept = (bytearray(), bytearray())
    over = threading.Event()

    def pump(fd: int, into: bytearray) -> None:
        # Reads stop at the bound: the program then blocks on a full pipe instead of filling memory.
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, _READ_BYTES):
                into += chunk[: max_bytes + 1 - len(into)]
                if len(into) > max_bytes:
                    over.set()
                    return

    readers = [threading.Thread(target=pump, args=(stream.fileno(), into), daemon=True)
               for stream, into in zip((proc.stdout, proc.stderr), kept)]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    try:
        while not over.is_set() and any(reader.is_alive() for reader in readers):
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(list(command), timeout)
            if proc.poll() is not None:
                scope.stop(_LEFTOVER_GRACE_S)  # exited: what it left running would hold the pipes open
            over.wait(_POLL_S)
        if over.is_set():
            raise ProbeOverflow(command, max_bytes)
    finally:
        kill_group(proc)
        scope.stop(_LEFTOVER_GRACE_S)
        proc.wait()
        for reader in readers:
            reader.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
    return tuple(bytes(out[:max_bytes]).decode("utf-8", errors="replace") for out in kept)  # type: ignore[return-value]


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the process group a ``start_new_session`` child leads (the child alone on Windows)."""
    try:
        if os.name == "nt":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process and its descendants so far (0 once it has exited)."""
    import psutil  # here, not at the top: `check` imports this module (through the build's cache) and never walks a tree

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in processes:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue  # a child that exited between listing and reading
        total += times.user + times.system
    return total


def stop_group(proc: subprocess.Popen, grace: float, *, nudge: float = 0.0) -> None:
    """Stop a ``start_new_session`` child in order: SIGTERM to its group (an engine frees its GPU memory
    on the way out), SIGKILL to the group after ``grace`` seconds, then any descendant that left the
    group (a launcher's workers may start their own sessions). ``nudge``: wait that long after the first
    SIGTERM and send a second one before the grace period (llama-server waits for requests in flight
    after the first and exits at once on the second)."""
    import psutil

    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        family = []
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            if nudge > 0:
                try:
                    proc.wait(timeout=nudge)
                except subprocess.TimeoutExpired:
                    _signal_group(proc, signal.SIGTERM)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait()
    else:
        kill_group(proc)  # the leader is gone; what it left in the group is not
    for child in family:
        try:
            child.kill()
            child.wait(timeout=5)
        except (psutil.NoSuchProcess, psutil.TimeoutExpired):
            pass


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        if os.name == "nt":
            proc.send_signal(sig)
        else:
            os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # already gone
