"""One sweep per output folder: a lock file that holds the owner's PID.

Two sweeps writing one folder would rename each other's journal and mix their runs. The sweep holds an
advisory lock on ``OUT/sweep.lock`` while it runs (flock on POSIX, msvcrt on Windows) and removes the
file when it ends. The operating system drops the lock when its owner dies, ``kill -9`` included, so
a lock file left behind by a dead sweep is taken over. The PID in the file is for the message a second
sweep prints. The file is opened by files.lock_file (never through a link planted in its place).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from mtpinspect.errors import OutputError
from mtpinspect.files import lock_file, try_lock

LOCK_NAME = "sweep.lock"
# Another process may remove the file between our open and our lock; then we open it again.
_ATTEMPTS = 5


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder`` (created if missing) while the block runs; OutputError if another sweep holds it."""
    path = folder / LOCK_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot create the output folder ({exc.strerror or exc})") from None
    try:
        stream = _acquire(path, folder)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the sweep's lock file ({exc.strerror or exc})") from None
    with stream:
        try:
            yield
        finally:
            # Removed while still locked, so no other sweep can be holding this file.
            with suppress(OSError):
                path.unlink()


def _acquire(path: Path, folder: Path) -> IO[str]:
    for _ in range(_ATTEMPTS):
        stream = lock_file(path)
        if not try_lock(stream):
            owner = _owner(stream)
            stream.close()
            raise OutputError(f"{folder}: another sweep is writing to this folder (pid {owner}); "
                              "wait for it to finish or pass another --out")
        if _same_file(stream, path):
            stream.seek(0)
            stream.truncate()
            stream.write(f"{os.getpid()}\n")
            stream.flush()
            return stream
        stream.close()  # its owner removed it as we opened it
    raise OutputError(f"{path}: the lock file keeps disappearing; is another program cleaning this folder?")


def _owner(stream: IO[str]) -> str:
    try:
        stream.seek(0)
        return stream.read(32).strip() or "unknown"
    except OSError:
        return "unknown"


def _same_file(stream: IO[str], path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(stream.fileno()), path.stat())
    except OSError:
        return False
