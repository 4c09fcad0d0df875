"""The programs mtpinspect starts (llama-server, `llama-server --version`) as operating-system processes.

Each runs in its own session, so that a terminal's Ctrl-C reaches only mtpinspect, which then stops
them in order. The other side of that: a hangup or ``kill -9`` of mtpinspect never reaches them. So on
Linux each child asks the kernel to kill it when mtpinspect dies (``PR_SET_PDEATHSIG``), and a child
that outlives its time is killed with its whole process group, not just the process we started.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence

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


def run_bounded(command: Sequence[str], timeout: float) -> tuple[str, str]:
    """Run a short command and return its stdout and stderr; on timeout kill its whole group and raise
    subprocess.TimeoutExpired (a wrapper script's children would otherwise live on, holding the pipes)."""
    with subprocess.Popen(
        list(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        errors="replace", start_new_session=os.name != "nt", preexec_fn=die_with_parent(),
    ) as proc:
        try:
            return proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            try:
                proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # a descendant that left the group still holds the pipes; they are closed on return
            raise


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
