"""The sweep's JSONL journal: one line per server start and per run, written as each one finishes.

Each line is flushed and fsynced before the sweep moves on, so a crash, a kill or Ctrl-C loses at most
the run in flight. A line cut short by such a crash is skipped on reading (and counted), so the journal
stays usable for ``--resume``; a line a full disk cuts short is removed at once (OutputError).
"""

from __future__ import annotations

import errno
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtpinspect.errors import OutputError
from mtpinspect.files import OWN_NAME_HINT, read_bounded, writable
from mtpinspect.jsonable import to_jsonable

# About a million runs' records: far more than --repeat's bound allows (runtime/bounds.py).
MAX_JOURNAL_BYTES = 512 << 20


@dataclass
class JournalContents:
    records: list[dict[str, Any]] = field(default_factory=list)
    # Lines that were not a JSON object (a write cut short by a crash).
    damaged_lines: int = 0


class Journal:
    """Append-only JSONL file of sweep records."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: Any) -> None:
        """One record (a dataclass, through mtpinspect.jsonable) as one line, on disk before this returns."""
        line = json.dumps(to_jsonable(record), ensure_ascii=False, separators=(",", ":")) + "\n"
        # Never a FIFO (the append would block), a device, or a link (the tool names this file: OWN_NAME_HINT).
        writable(self.path, link_hint=OWN_NAME_HINT)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Unbuffered: a buffer left over from a failed write would land after the cut below.
            with self.path.open("ab", buffering=0) as stream:
                end = stream.seek(0, os.SEEK_END)
                if end > 0 and not self._ends_with_newline():
                    # The previous writer died mid-line; start ours on a fresh line so both stay parseable.
                    line = "\n" + line
                try:
                    data = memoryview(line.encode("utf-8"))
                    while data:
                        written = stream.write(data)
                        if not written:
                            raise OSError(errno.EIO, "the write made no progress")
                        data = data[written:]
                    os.fsync(stream.fileno())
                except OSError:
                    # A full disk takes part of the line: cut it off, so the journal stays whole lines.
                    stream.truncate(end)
                    raise
        except OSError as exc:
            raise OutputError(
                f"{self.path}: cannot write ({exc.strerror or exc}); the runs recorded before are kept: "
                "run again with --resume once it can be written"
            ) from None

    def set_aside(self) -> None:
        """A fresh run keeps the previous journal under a dated name instead of mixing with it."""
        if not (self.path.exists() and self.path.stat().st_size > 0):
            return
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.path.stat().st_mtime))
        target = self.path.with_name(f"{self.path.stem}-{stamp}{self.path.suffix}")
        suffix = 1
        while target.exists():  # rename() would silently replace an earlier journal of the same second
            suffix += 1
            target = self.path.with_name(f"{self.path.stem}-{stamp}-{suffix}{self.path.suffix}")
        try:
            self.path.rename(target)
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot set the previous journal aside ({exc.strerror or exc})") from None

    def read(self) -> JournalContents:
        """The records, read within MAX_JOURNAL_BYTES (FormatError past it; SourceError for a device)."""
        contents = JournalContents()
        if not os.path.lexists(self.path):
            return contents
        text = read_bounded(self.path, MAX_JOURNAL_BYTES, "sweep journal",
                            "start a fresh sweep in another --out folder").decode("utf-8", errors="replace")
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                contents.damaged_lines += 1
                continue
            if isinstance(record, dict):
                contents.records.append(record)
            else:
                contents.damaged_lines += 1
        return contents

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as stream:
            stream.seek(-1, os.SEEK_END)
            return stream.read(1) == b"\n"
