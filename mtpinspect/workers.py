"""The threads a command runs beside its main one, and how they end when the command is stopped (Ctrl-C, SIGTERM).

Worker threads read the Hub (a census's repos, a batch of reads in waves) or wait on an engine (a sweep's
concurrent requests, drift's prompts sent at once). Python delivers Ctrl-C to the main thread only, and a
thread still running while the interpreter tears itself down at exit (inside a socket read, a digest,
zlib) can crash the process: `find` stopped by Ctrl-C ended in a segmentation fault with nothing printed
(issue 47, bench/README.md). So:

- ``run_all`` hands jobs out from one queue to at most ``limit`` threads; once it is stopped (its caller
  interrupted, or a job failed), no further job starts;
- when its caller is interrupted, it calls ``on_stop`` (Clock.stop: every request of the command not yet
  sent fails at once), waits at most STOP_WAIT seconds for the jobs in flight to end, and raises the
  KeyboardInterrupt on, so that the caller prints what was done;
- a job still running after that (a read from a server that answers nothing, until its timeout) is left
  behind, and ``exit_process`` ends the process without the interpreter's teardown while it runs.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn, TypeVar

R = TypeVar("R")

# How long a stopped command waits for its jobs in flight: a header being parsed ends well within it; a read
# that waits on a silent server is left behind (its timeout is --timeout, 30 s by default).
STOP_WAIT = 2.0
PREFIX = "mtpinspect-"  # of every worker thread's name, as a stack dump shows it
_JOIN_SLICE = 0.02  # how often a wait looks whether the threads have ended


class Worker(threading.Thread):
    """A worker thread whose end is a flag that the waiting thread reads between short sleeps. Nothing here waits on
    a lock the worker also takes: Ctrl-C raised inside such a wait (Thread.join, Event.wait) leaves the lock's
    state wrong in CPython 3.11. A join marks the thread stopped while it still runs (threading.py's bpo-45274
    branch of _wait_for_tstate_lock releases the running thread's own lock), and exit_process then took a
    thread left in a stalled read for ended; an Event.wait releases the Event's lock while the worker holds
    it ("release unlocked lock" in the worker's Event.set, found by bench/bench_interrupt.py)."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        # A daemon: one left behind by a stopped command must not keep a program that called the API from exiting.
        super().__init__(target=target, name=name, daemon=True)
        self.ended = False

    def run(self) -> None:
        try:
            super().run()
        finally:
            self.ended = True


def spawn(target: Callable[[], None], count: int, name: str, started: list[Worker]) -> None:
    """Start ``count`` worker threads running ``target``, named ``mtpinspect-NAME-I``, each added to ``started`` as it
    starts (a thread the system refuses raises, and the ones before it are there to be waited for)."""
    for i in range(count):
        thread = Worker(target, f"{PREFIX}{name}-{i}")
        thread.start()
        started.append(thread)


@contextmanager
def stopping(threads: Sequence[Worker], on_stop: Callable[[], None]) -> Iterator[None]:
    """Around the start of ``threads`` and the wait for them: when the block raises (Ctrl-C in the caller, a thread
    that could not start), ``on_stop``, then at most STOP_WAIT seconds more for the threads, and the exception
    goes on (a second Ctrl-C cuts that wait short)."""
    try:
        yield
    except BaseException:
        on_stop()
        join(threads, STOP_WAIT)
        raise


def join(threads: Sequence[Worker], seconds: float | None = None) -> bool:
    """Wait for the threads (at most ``seconds``; None: as long as they run); whether all have ended. The main thread
    waits in short sleeps, where a Ctrl-C is raised holding no lock."""
    ends = None if seconds is None else time.monotonic() + seconds
    main = threading.current_thread() is threading.main_thread()  # the one thread a Ctrl-C is raised in
    for thread in threads:
        while not thread.ended:
            left = _JOIN_SLICE if ends is None else min(_JOIN_SLICE, ends - time.monotonic())
            if left <= 0:
                return False
            if main:
                time.sleep(left)
            else:
                thread.join(left)  # ends the moment the thread does: a census's nested batches lose no time
    return True


def run_all(jobs: Sequence[Callable[[], R]], limit: int, *, name: str,
            on_stop: Callable[[], None] | None = None) -> list[R]:
    """Run ``jobs`` in at most ``limit`` threads; their results in order. A job that raises stops the others from
    starting; its error (the first in the order of ``jobs``) is raised once every thread has ended. Ctrl-C in
    the caller: no job starts any more, ``on_stop`` is called, and KeyboardInterrupt is raised within STOP_WAIT
    seconds."""
    results: list[R | None] = [None] * len(jobs)
    errors: list[BaseException | None] = [None] * len(jobs)
    queue = iter(enumerate(jobs))
    lock = threading.Lock()
    stopped = threading.Event()

    def worker() -> None:
        while True:
            with lock:
                item = None if stopped.is_set() else next(queue, None)
            if item is None:
                return
            index, job = item
            try:
                results[index] = job()
            except BaseException as exc:  # re-raised in the caller's thread
                errors[index] = exc
                stopped.set()

    def stop() -> None:
        stopped.set()
        if on_stop is not None:
            on_stop()

    threads: list[Worker] = []
    with stopping(threads, stop):
        spawn(worker, min(limit, len(jobs)), name, threads)
        join(threads)
    failure = next((e for e in errors if e is not None), None)
    if failure is not None:
        raise failure
    return results  # type: ignore[return-value]


def running() -> list[Worker]:
    """The worker threads still running (left behind by a stopped command)."""
    return [t for t in threading.enumerate() if isinstance(t, Worker) and not t.ended]


def exit_process(code: int) -> NoReturn:
    """End the program with ``code``. While a worker thread still runs, the interpreter is not torn down (a thread
    inside C code then can crash the process): the output is flushed and the process ends at once."""
    if not running():
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe or terminal: nobody is there to read it
    os._exit(code)
