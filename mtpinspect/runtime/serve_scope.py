"""Every process a ``--serve`` command starts, found and stopped: when the command daemonises
(``setsid ... & exit 0``, ``nohup``, a double fork), and when mtpinspect itself is killed with ``kill -9``.

The process group and ``PR_SET_PDEATHSIG`` reach only the command and what stays in its group: a
daemon leaves the group, and the kernel's parent-death signal reaches the direct child alone (a
wrapper script's server outlived mtpinspect). So each command runs with ``MTPINSPECT_SERVE`` in its
environment, which everything it starts inherits; a process is the command's when it carries the
command's value. Stopping a server stops every such process, and a tiny watchdog (watchdog.py),
holding a pipe that only mtpinspect can keep open, stops them too when mtpinspect dies in any way,
then exits. What clears its environment (``env -i``) or runs elsewhere (a container of ``docker run
-d``) is not found: ``--serve`` refuses a detached container (base.py's check_template).
"""

from __future__ import annotations

import itertools
import os
import secrets
import subprocess
import sys
import threading
from dataclasses import dataclass

import psutil

MARK = "MTPINSPECT_SERVE"
# This mtpinspect's own prefix of the marks: another mtpinspect's servers are never touched.
_TOKEN = f"{os.getpid()}-{secrets.token_hex(6)}"
_numbers = itertools.count(1)
_watchdog: subprocess.Popen[bytes] | None = None
_watchdog_lock = threading.Lock()
_PASSES = 3


def marked(value: str, *, prefix: bool = False) -> list[psutil.Process]:
    """The processes of this user whose environment carries ``MTPINSPECT_SERVE=value`` (or a value under
    ``value/`` with ``prefix``), oldest first."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            mark = proc.environ().get(MARK)
            if mark and (mark.startswith(value + "/") if prefix else mark == value):
                found.append((proc.create_time(), proc))
        except psutil.Error:
            continue  # another user's, or gone between listing and reading
    return [proc for _, proc in sorted(found, key=lambda pair: pair[0])]


def terminate(processes: list[psutil.Process], grace: float) -> None:
    """SIGTERM (an engine frees its GPU memory on the way out), SIGKILL to those left after ``grace`` s."""
    for proc in processes:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(processes, timeout=grace)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)


@dataclass(frozen=True)
class ServeScope:
    """What one start of a ``--serve`` command owns: every process that carries its mark."""

    mark: str

    def environment(self) -> dict[str, str]:
        return {**os.environ, MARK: self.mark}

    def processes(self) -> list[psutil.Process]:
        return marked(self.mark)

    def stop(self, grace: float) -> None:
        # Again while any are left: what they started between the listing and their end (a bounded number
        # of passes: a command that forks without end is still stopped at the process group).
        for _ in range(_PASSES):
            found = self.processes()
            if not found:
                return
            terminate(found, grace)


def new_scope() -> ServeScope:
    """A mark for one start of a command; the watchdog is started with the first (Linux and macOS)."""
    _ensure_watchdog()
    return ServeScope(f"{_TOKEN}/{next(_numbers)}")


def _ensure_watchdog() -> None:
    global _watchdog
    with _watchdog_lock:
        if _watchdog is not None or os.name == "nt":
            return
        # Its stdin is the pipe: mtpinspect holds the only write end (not inherited by what it starts), so
        # the watchdog reads end of file exactly when mtpinspect has exited, however. Its own session: a
        # terminal's Ctrl-C or hangup must not end it before mtpinspect has stopped the servers.
        try:
            _watchdog = subprocess.Popen([sys.executable, "-m", "mtpinspect.runtime.watchdog", _TOKEN],
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            pass  # no interpreter to run it (a frozen build): servers are still stopped on every other exit
