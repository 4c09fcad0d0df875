"""Reading a file the user names (a log, a prompt file), bounded in bytes and in time whatever it is;
reading a cache entry only when it is a regular file; writing a file only where one may be written.

``st_size`` is never trusted (devices and /proc files say 0, a file can grow while it is read): a read
stops one byte past its cap. Devices such as /dev/zero and /dev/urandom are refused. Pipes
(``--log /dev/stdin``, ``--log <(docker logs ...)``) are read up to the cap, waiting a bounded time for
each chunk; a FIFO that no program writes to reads as empty instead of blocking.
"""

from __future__ import annotations

import contextlib
import os
import select
import stat
from collections.abc import Callable
from pathlib import Path

from mtpinspect.errors import FormatError, OutputError, SourceError

PIPE_IDLE_TIMEOUT_S = 30.0
_CHUNK = 1 << 20


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def read_cached(path: Path, limit: int) -> bytes | None:
    """Up to ``limit + 1`` bytes of a cache entry, or None when it is missing, unreadable or anything but a
    regular file (a FIFO would block the read for ever, a device never end, a symlink point anywhere):
    the caller treats None as "not cached"."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(_CHUNK, left))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def writable(path: Path, *, through_link: bool = False) -> Path:
    """Where writing ``path`` may put a file: ``path`` itself when it is new or a regular file; the file a
    symbolic link points to only when ``through_link`` (else the link is refused, never replaced).
    OutputError for anything else: a device, a FIFO, a socket or a folder is never replaced by a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise OutputError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    if stat.S_ISLNK(mode):
        if not through_link:
            raise OutputError(f"{path}: is a symbolic link (to {os.readlink(path)}); not replaced "
                              "(pass --force to write the file it points to)")
        try:
            target = Path(os.path.realpath(path, strict=False))
        except OSError as exc:  # a loop of links
            raise OutputError(f"{path}: cannot follow the symbolic link ({exc.strerror or exc})") from None
        return writable(target)
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path}: is a {_kind(mode)}, not a regular file; refusing to replace it")
    return path


def write_file(path: Path, write: Callable[[Path], None], *, through_link: bool = False) -> Path:
    """Write a file safely: ``write(temporary)`` fills a temporary file beside the target, which then
    replaces the target in one rename (a reader never sees half a file), only where :func:`writable`
    allows. Returns the path written; OutputError when it cannot be."""
    target = writable(path, through_link=through_link)
    temporary = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        write(temporary)
        os.replace(temporary, target)
    except OSError as exc:
        with contextlib.suppress(OSError):  # on a read-only file system even this fails
            temporary.unlink(missing_ok=True)
        raise OutputError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise
    return target


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
