"""Reading a file the user names (a log, a prompt file), bounded in bytes and in time whatever it is.

``st_size`` is never trusted (devices and /proc files say 0, a file can grow while it is read): a read
stops one byte past its cap. Devices such as /dev/zero and /dev/urandom are refused. Pipes
(``--log /dev/stdin``, ``--log <(docker logs ...)``) are read up to the cap, waiting a bounded time for
each chunk; a FIFO that no program writes to reads as empty instead of blocking.
"""

from __future__ import annotations

import os
import select
import stat
from pathlib import Path

from mtpinspect.errors import FormatError, SourceError

PIPE_IDLE_TIMEOUT_S = 30.0
_CHUNK = 1 << 20


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def read_bounded(path: Path, limit: int, what: str, hint: str = "") -> bytearray:
    """Up to ``limit`` bytes of ``path``: SourceError if it cannot be read, FormatError if it holds more.

    ``what`` names the file in messages ("log file"); ``hint`` follows the too-large message.
    """
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait until some program opens it to write.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise SourceError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory, not a {what}") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise SourceError(f"{path}: is a directory, not a {what}")
        pipe = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        if not (stat.S_ISREG(mode) or pipe):
            raise SourceError(f"{path}: is a {_kind(mode)}, not a {what}")
        data = _read_fd(fd, limit, path)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FormatError(f"{path}: {what} larger than {_size(limit)}" + (f"; {hint}" if hint else ""))
    return data


def _read_fd(fd: int, limit: int, path: Path) -> bytearray:
    data = bytearray()
    while len(data) <= limit:
        try:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - len(data)))
        except BlockingIOError:
            # A pipe whose writer has sent nothing yet.
            if not select.select([fd], [], [], PIPE_IDLE_TIMEOUT_S)[0]:
                raise SourceError(f"{path}: nothing arrived for {PIPE_IDLE_TIMEOUT_S:g} s (a pipe whose writer stalled)") from None
            continue
        except OSError as exc:
            raise SourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if not chunk:
            break
        data += chunk
    return data


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"
