"""What bounds one command's Hub requests: its FetchPolicy (`--timeout`, `--deadline`, `--retries`,
`--no-cache`) and its Clock (the deadline and the pauses the Hub asks for), shared by every request.

Apart from sources/fetch.py, which sends the requests, so that a command parses its options and checks a
local model without importing the HTTP client's modules (socket, zlib...).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

RETRY_AFTER_CAP = 60.0  # seconds; a server asking for more is reported, not waited for
MAX_BACKOFF = 8.0
# The longest --timeout, --deadline or --start-timeout taken: a week. Longer is no bound a person means, and
# 1e10 s overflowed the socket and lock timeouts (OverflowError) instead of being refused.
MAX_SECONDS = 7 * 24 * 3600.0


@dataclass(frozen=True)
class FetchPolicy:
    """How long and how often a command asks the Hub (`--timeout`, `--deadline`, `--retries`), and whether
    it asks for what the header cache already holds (`--no-cache`)."""

    timeout: float = 30.0  # seconds to connect, and between two pieces of an answer
    deadline: float = 300.0  # seconds for all the Hub requests of one command together
    retries: int = 3  # further attempts after a transient failure
    backoff: float = 1.0  # the first wait before a retry; doubles up to MAX_BACKOFF
    cache: bool = True  # read and keep file headers in the header cache (sources/header_cache.py)

    def __post_init__(self) -> None:
        # The API's check of what the CLI's Seconds refuses in one line (cli/_args.py).
        for name in ("timeout", "deadline", "backoff"):
            value = getattr(self, name)
            if not 0 < value <= MAX_SECONDS:  # also false for nan
                raise ValueError(f"FetchPolicy.{name} = {value!r}: a number of seconds above 0 and at most {MAX_SECONDS:g}")


class Clock:
    """One command's Hub budget: its policy, the moment its deadline passes, and the moment the Hub last asked
    everyone to wait until (a 429's Retry-After, a 5xx's backoff): every request of the command that shares
    this clock waits for it, so a census of many repos slows down as one client, not one repo at a time."""

    def __init__(self, policy: FetchPolicy | None = None) -> None:
        self.policy = policy or FetchPolicy()
        self.ends = time.monotonic() + self.policy.deadline
        self._resume = 0.0  # time.monotonic() before which no request is sent
        self.stopped = False  # stop(): the command was interrupted
        self._lock = threading.Lock()
        self._auth: dict[str | None, dict[str, str]] = {}

    def auth_headers(self, token: str | None) -> dict[str, str]:
        """huggingface_hub's auth headers for ``token``, made once per command: build_hf_headers reads the
        token file each time (3 ms), which every repo of a census of thousands paid."""
        from huggingface_hub.utils import build_hf_headers

        with self._lock:
            if token not in self._auth:
                self._auth[token] = build_hf_headers(token=token)
            return dict(self._auth[token])

    def left(self) -> float:
        return self.ends - time.monotonic()

    def stop(self) -> None:
        """The command was interrupted (Ctrl-C): every request sharing this clock that is not yet sent, and every
        answer still being read, fails at its next step as past the deadline, which passes now."""
        with self._lock:
            self.stopped = True
            self.ends = min(self.ends, time.monotonic())

    def pause(self, seconds: float) -> None:
        """No request sharing this clock goes out for ``seconds``."""
        with self._lock:
            self._resume = max(self._resume, time.monotonic() + seconds)

    def wait_turn(self) -> None:
        """Sleep out a pause (never past the deadline: the request then fails on it)."""
        while True:
            with self._lock:
                wait = min(self._resume, self.ends) - time.monotonic()
            if wait <= 0:
                return
            time.sleep(wait)
