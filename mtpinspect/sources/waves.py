"""Reads that go out together: a command's Hub requests in as few sequential waves as its files allow.

On the Hub a request costs a round trip (50-150 ms), so what a user waits for is the number of requests
made one after another, not their number. The evidence step hands a batch of jobs to ``Waves.run``
(each job reads and parses one file through a RangeReader); each job runs in its own thread, at most
CONCURRENCY at once. Before a job sends a request it waits at a gate until every other running job is
about to send one too, or has finished; then they all go out together. So the first reads of every file
of the batch go out in one wave, the reads each of them needs next in the following one, and a wave's
requests never overlap the next wave's: the waves counted here are the waves the server sees (a redirect
hop and a retry pass the gate too, and are waves of their own). A request made outside a batch is a
wave of its own.

A job that fails stops the batch: jobs not started are skipped, running ones stop at their next gate
(a request already on the wire ends as the command's timeout bounds it), and ``run`` returns only when
every job thread has ended, then raises the error of the first failed job in batch order. Ctrl-C in the
caller stops the batch the same way, and ``run`` raises it within workers.STOP_WAIT seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from mtpinspect import workers

T = TypeVar("T")

# Requests in flight at once: enough for a split GGUF's shards or a checkpoint's MTP shards, few enough
# that a Hub or a proxy does not take it for abuse (browsers open 6 to 8 connections per host).
CONCURRENCY = 8


class Cancelled(Exception):
    """Raised in a job at its next request once another job of the batch has failed."""


class Waves:
    """The gate every Hub request of one command passes (``gate``), and the batches that share it (``run``)."""

    def __init__(self, concurrency: int = CONCURRENCY) -> None:
        self.concurrency = concurrency
        self._lock = threading.Condition()
        self._local = threading.local()  # in_batch: the thread runs jobs of a batch
        self._running = 0  # job threads running (not waiting at the gate, not finished)
        self._waiting = 0  # job threads waiting at the gate
        self._opened = 0  # waves opened so far: the id of the latest
        self._failed = False  # a job of the current batch failed: the others stop

    def gate(self) -> int:
        """Wait until this request may be sent; return the id of the wave it goes out in."""
        with self._lock:
            if not getattr(self._local, "in_batch", False):
                self._opened += 1
                return self._opened
            if self._failed:
                raise Cancelled
            self._running -= 1
            self._waiting += 1
            wave = self._opened
            if self._running == 0:
                self._open()
            else:
                self._lock.wait_for(lambda: self._opened != wave or self._failed)
            if self._failed:
                if self._opened == wave:  # woken by the failure, not by its wave: running again, to stop
                    self._waiting -= 1
                    self._running += 1
                raise Cancelled
            return self._opened

    def _stop(self) -> None:
        """The caller was interrupted: no job starts, and the jobs waiting at the gate stop now."""
        with self._lock:
            self._failed = True
            self._lock.notify_all()

    def _open(self) -> None:
        """Let every waiting job send (the lock is held)."""
        self._running += self._waiting
        self._waiting = 0
        self._opened += 1
        self._lock.notify_all()

    def run(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Run ``jobs`` so that their requests go out in waves; their results, in order.

        Raises the first failed job's error (in the order of ``jobs``) once every job thread has ended."""
        if getattr(self._local, "in_batch", False):
            raise RuntimeError("Waves.run inside a job of a batch")
        results: list[T | None] = [None] * len(jobs)
        errors: list[Exception | None] = [None] * len(jobs)
        queue = iter(enumerate(jobs))

        def worker() -> None:
            self._local.in_batch = True
            while True:
                with self._lock:
                    item = None if self._failed else next(queue, None)
                    if item is None:
                        self._running -= 1
                        if self._running == 0 and self._waiting:
                            self._open()
                        return
                index, job = item
                try:
                    results[index] = job()
                except Exception as exc:  # re-raised by run, in the caller's thread
                    errors[index] = exc
                    with self._lock:
                        self._failed = True
                        self._lock.notify_all()  # the jobs waiting at the gate stop now

        count = min(self.concurrency, len(jobs))
        with self._lock:
            self._running = count  # counted before any starts, so the first gate waits for all
            self._waiting = 0
            self._failed = False
        threads: list[workers.Worker] = []
        with workers.stopping(threads, self._stop):
            try:
                workers.spawn(worker, count, "read", threads)
            finally:
                # A thread that did not start still counts as running: take it off, or the gate never opens.
                with self._lock:
                    unstarted = count - len(threads)
                    self._running -= unstarted
                    if unstarted and self._running == 0 and self._waiting:
                        self._open()
            workers.join(threads)
        failure = next((e for e in errors if e is not None and not isinstance(e, Cancelled)), None)
        if failure is not None:
            raise failure
        return results  # type: ignore[return-value]
