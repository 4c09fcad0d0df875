"""The log file of a server mtpinspect starts (llama-server, or an engine's --serve command), capped.

A server's stdout and stderr go to a pipe that a thread here copies into the log file, never straight to
the file: a chatty server wrote 2.8 GB in 16 s. The file keeps the first HEAD_BYTES the server wrote (the
lines a sweep and diagnose read while it runs: the start, each request's draft line), then one marker
line; the last TAIL_BYTES it wrote are kept in memory and appended when it stops, because the tail holds
the crash that failure_reason quotes. So a log file is at most HEAD_BYTES + TAIL_BYTES and two marker
lines, whatever the server prints. The file is opened by the one write rule (files.writable), never through a link: the tool names it.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from pathlib import Path
from typing import IO

from mtpinspect.errors import OutputError
from mtpinspect.files import OWN_NAME_HINT, writable

HEAD_BYTES = 64 << 20  # llama-server logs a few hundred KB per sweep configuration; -v a few MB
TAIL_BYTES = 1 << 20
_CHUNK = 1 << 16
# After the server has stopped, how long its last lines may take to come through the pipe; a child it
# left behind that still holds the pipe does not hold the log (or mtpinspect) open past this.
_DRAIN_S = 2.0
_POLL_S = 0.2


class ServerLog:
    """A capped log file fed by a pipe. Give ``fileno()`` (the pipe's writing end) to the server as its
    stdout and stderr, call ``started()`` once it runs, and ``close()`` once it has stopped (or failed):
    the file then holds everything up to the cap, the marker, and the tail."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[bytes] = writable(path, link_hint=OWN_NAME_HINT).open("wb", buffering=0)
        except OSError as exc:
            raise OutputError(f"{path}: cannot write the server log ({exc.strerror or exc})") from None
        self._read, self._write = os.pipe()
        os.set_inheritable(self._read, False)
        self.received = 0  # every byte the server wrote, kept or not: it is alive while this grows
        self._kept = 0
        self._tail = bytearray()
        self._tail_in_file = False  # written after the marker when the server stopped (not on a full disk)
        self._stop = threading.Event()
        self._pump = threading.Thread(target=self._copy, name=f"log {path.name}", daemon=True)
        self._pump.start()

    def fileno(self) -> int:
        return self._write

    def started(self) -> None:
        """The server holds its own copy of the writing end: ours goes, so its exit ends the pipe."""
        self._close_write()

    def close(self) -> None:
        """Wait (at most _DRAIN_S) for what the stopped server wrote last, then write the tail; idempotent."""
        self._close_write()
        self._pump.join(_DRAIN_S)
        self._stop.set()  # a left-behind child still writing: stop reading it
        self._pump.join()

    def unwritten(self) -> bytes:
        """The server's last bytes past the cap that the file does not hold: while it runs (the file ends at
        the marker until it stops), or for good when the disk was full. Empty otherwise."""
        return b"" if self._tail_in_file else bytes(self._tail)

    def last_text(self, limit: int = 64 << 10) -> str:
        """The end of what the server wrote so far, as a failure quotes it, whether or not it is in the file."""
        tail = self.unwritten()
        return tail[-limit:].decode("utf-8", errors="replace") if tail else tail_text(self.path, limit)

    def _close_write(self) -> None:
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    def _copy(self) -> None:
        try:
            while not self._stop.is_set():
                if not select.select([self._read], [], [], _POLL_S)[0]:
                    continue
                chunk = os.read(self._read, _CHUNK)
                if not chunk:
                    break
                try:
                    self._keep(chunk)
                except OSError:
                    # A full disk: the file stops where the disk did, but the pipe is still read (a pipe
                    # nobody reads would block the server's next write); its tail is kept in memory.
                    self._kept = HEAD_BYTES
                    self._tail += chunk
                    del self._tail[:-TAIL_BYTES]
        except OSError:
            pass  # the pipe itself failed: nothing more can come
        finally:
            with contextlib.suppress(OSError):
                self._finish()
            os.close(self._read)

    def _keep(self, chunk: bytes) -> None:
        self.received += len(chunk)
        room = max(0, HEAD_BYTES - self._kept)
        if room:
            self._file.write(chunk[:room])
            self._kept += min(room, len(chunk))
            if self._kept >= HEAD_BYTES:
                self._file.write(f"\n[mtpinspect: the log is cut here at {HEAD_BYTES >> 20} MiB; the server's last "
                                 f"{TAIL_BYTES >> 20} MiB follow when it stops]\n".encode())
        rest = chunk[room:]
        if rest:
            self._tail += rest
            del self._tail[:-TAIL_BYTES]

    def _finish(self) -> None:
        try:
            if self.received > self._kept:
                dropped = self.received - self._kept - len(self._tail)
                tail = self._tail
                if dropped > 0 and b"\n" in tail:
                    tail = tail[tail.index(b"\n") + 1:]  # from a whole line on
                self._file.write(f"[mtpinspect: {self.received - self._kept - len(tail):,} bytes not kept; "
                                 "the server's last lines:]\n".encode())
                self._file.write(bytes(tail))
                self._tail_in_file = True
        finally:
            self._file.close()


def tail_text(path: Path, limit: int = 64 << 10) -> str:
    """The last ``limit`` bytes of a log file as text (the last lines a failure quotes), from a whole line on."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - limit))
            data = fh.read(limit)
    except OSError:
        return ""
    if len(data) == limit and b"\n" in data:
        data = data[data.index(b"\n") + 1:]
    return data.decode("utf-8", errors="replace")
