"""Reading a file the user names (a log, a prompt file), bounded in bytes and in time whatever it is;
reading a cache entry only when it is a regular file; writing a file only where one may be written;
replacing a folder only when the tool wrote everything in it.

``st_size`` is never trusted (devices and /proc files say 0, a file can grow while it is read): a read
stops one byte past its cap. Devices such as /dev/zero and /dev/urandom are refused. Pipes
(``--log /dev/stdin``, ``--log <(docker logs ...)``) are read up to the cap, waiting a bounded time for
each chunk; a FIFO that no program writes to reads as empty instead of blocking.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import select
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from mtpinspect.errors import FormatError, OutputError, SourceError

T = TypeVar("T")
PIPE_IDLE_TIMEOUT_S = 30.0
_CHUNK = 1 << 20


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words (from its st_mode)."""
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


# What a refused link's message says to do: a file the user named may be written through it with --force;
# a file the tool names itself (OUT/report.json, OUT/runs.jsonl, a server log) never is.
FORCE_HINT = "pass --force to write the file it points to"
OWN_NAME_HINT = "mtpinspect names this file itself and never writes through a link: remove the link or pass another --out"


def writable(path: Path, *, through_link: bool = False, link_hint: str = FORCE_HINT) -> Path:
    """Where writing ``path`` may put a file: ``path`` itself when it is new or a regular file; the file a
    symbolic link points to only when ``through_link`` (else the link is refused, never replaced, with
    ``link_hint``). OutputError for anything else: a device, a FIFO, a socket or a folder is never replaced
    by a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise OutputError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    if stat.S_ISLNK(mode):
        if not through_link:
            raise OutputError(f"{path}: is a symbolic link (to {os.readlink(path)}); not replaced ({link_hint})")
        try:
            target = Path(os.path.realpath(path, strict=False))
        except OSError as exc:  # a loop of links
            raise OutputError(f"{path}: cannot follow the symbolic link ({exc.strerror or exc})") from None
        return writable(target)
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path}: is a {kind_of(mode)}, not a regular file; refusing to replace it")
    return path


def own_folder(path: Path) -> Path:
    """A folder mtpinspect names and fills itself (a sweep's or drift's logs): OutputError when a symbolic
    link stands there, never written through (:data:`OWN_NAME_HINT`), or a file."""
    if path.is_symlink():
        raise OutputError(f"{path}: is a symbolic link (to {os.readlink(path)}); not written into ({OWN_NAME_HINT})")
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: is a file where mtpinspect keeps its logs folder; move it or pass another --out")
    return path


def write_file(path: Path, write: Callable[[Path], None], *, through_link: bool = False,
               link_hint: str = FORCE_HINT) -> Path:
    """Write a file safely: ``write(temporary)`` fills a temporary file beside the target, which then
    replaces the target in one rename (a reader never sees half a file), only where :func:`writable`
    allows. Returns the path written; OutputError when it cannot be."""
    target = writable(path, through_link=through_link, link_hint=link_hint)
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


def lock_file(path: Path) -> IO[str]:
    """A lock file (the sweep's, a build's) opened to read and write, by the one write rule: made if missing,
    else used only when it is a regular file with no other name. A symbolic link is never followed
    (O_NOFOLLOW: a planted link had its target truncated), a hard link is another name of someone's file,
    and a FIFO, device or folder is no lock: each is refused in one line and left as it is."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise OutputError(f"{path}: is a symbolic link (to {os.readlink(path)}); not followed, "
                              "refusing to use it as a lock file (remove it)") from None
        raise OutputError(f"{path}: cannot open the lock file ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{path}: is a {kind_of(st.st_mode)}, not a regular file; refusing to use it as a lock file")
        if st.st_nlink > 1:
            raise OutputError(f"{path}: the file has {st.st_nlink} names (a hard link to another file); "
                              "refusing to write it as a lock file (remove it)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "r+", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


try:
    import fcntl

    def try_lock(stream: IO[str]) -> bool:
        """Take the exclusive advisory lock of a file from :func:`lock_file` without waiting; False when
        another process holds it. The system drops it when its holder dies, ``kill -9`` included."""
        try:
            fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

except ImportError:  # Windows
    import msvcrt

    def try_lock(stream: IO[str]) -> bool:
        stream.seek(0)
        try:
            msvcrt.locking(stream.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True


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
            raise SourceError(f"{path}: is a {kind_of(mode)}, not a {what}")
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


@dataclass(frozen=True)
class OwnedFolder:
    """A folder mtpinspect writes whole (tiny-model's checkpoint, train's OUT) and the relative paths it
    writes there. Only a folder holding nothing but those may be replaced: the tool never deletes what it
    did not write."""

    what: str  # "checkpoint folder", "training folder": for messages
    names: frozenset[str]  # relative POSIX paths the tool writes, folders included ("checkpoint")


def replaceable_folder(path: Path, owned: OwnedFolder, *, force: bool) -> Path:
    """``path`` made absolute, once it may be written or replaced; OutputError (one line) when it may not:
    the working folder or one holding it (`.`, `..`: replacing it removes the user's shell's folder), a
    symbolic link, something other than a folder, a non-empty folder without ``force``, or one holding
    anything the tool does not write."""
    folder = Path(os.path.abspath(path))  # `.` and `..` resolved, so the staging folder lands beside it
    here = Path(os.path.realpath(os.getcwd()))
    if os.path.islink(folder):
        raise OutputError(f"{path}: is a symbolic link (to {os.readlink(folder)}); not replaced")
    real = Path(os.path.realpath(folder))
    if real == here or real in here.parents:
        raise OutputError(f"{path}: is the working folder or holds it; refusing to replace it "
                          "(name a new folder, e.g. ./checkpoint)")
    if not os.path.lexists(folder):
        above = folder.parent
        while not os.path.lexists(above) and above != above.parent:
            above = above.parent
        if not above.is_dir():  # `notes.txt/ck`: mkdir would say only "File exists"
            raise OutputError(f"{path}: {above} is not a folder")
        return folder
    if not folder.is_dir():
        raise OutputError(f"{path}: exists and is not a folder")
    try:
        foreign = _foreign_entry(folder, owned.names)
        empty = next(os.scandir(folder), None) is None
    except OSError as exc:
        raise OutputError(f"{path}: cannot read the folder ({exc.strerror or exc})") from None
    if empty:
        return folder
    if foreign is not None:
        raise OutputError(f"{path}: holds {foreign}, which mtpinspect does not write; not a {owned.what}, "
                          "not replaced (name a new folder)")
    if not force:
        raise OutputError(f"{path}: the {owned.what} is not empty (pass --force to replace it)")
    return folder


def _foreign_entry(folder: Path, names: frozenset[str], prefix: str = "") -> str | None:
    """The first entry under ``folder`` that is not in ``names`` (links are not followed), else None.
    Bounded: it stops at the first stranger, so a folder is read at most len(names) + 1 entries deep."""
    with os.scandir(folder) as entries:
        for entry in entries:
            rel = prefix + entry.name
            if rel not in names:
                return rel
            if entry.is_dir(follow_symlinks=False):
                inner = _foreign_entry(Path(entry.path), names, rel + "/")
                if inner is not None:
                    return inner
    return None


def replace_folder(path: Path, owned: OwnedFolder, fill: Callable[[Path], T]) -> T:
    """Fill a new folder beside ``path`` (``fill(staging)``), then put it in place of ``path`` in renames, so
    a failure leaves nothing half-written. ``path`` comes from :func:`replaceable_folder` and is checked
    again just before the old one goes (the user may have added a file meanwhile). Returns fill's result."""
    old = path.with_name(f".{path.name}.old-{os.getpid()}")
    staging: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # a parent that is a file: one line, below
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
        staging.chmod(0o755)  # mkdtemp makes it private; the result is an ordinary folder
        result = fill(staging)
        if os.path.lexists(path):
            replaceable_folder(path, owned, force=True)
            os.rename(path, old)
        try:
            os.rename(staging, path)
        except OSError:
            if os.path.lexists(old):
                os.rename(old, path)  # the old one back in place
            raise
        shutil.rmtree(old, ignore_errors=True)  # only what replaceable_folder found to be ours
    except OSError as exc:
        raise OutputError(f"{path}: cannot write the {owned.what} ({exc.strerror or exc})") from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return result


def pasted_text(data: bytes | bytearray) -> str:
    """A pasted or saved text as str, whatever wrote it: UTF-8 with or without a BOM, UTF-16 with or without one
    (what PowerShell's ``>`` writes), UTF-16 runs appended to a UTF-8 file, CRLF or lone CR line ends. Line ends
    become "\\n"; bytes that are not text become U+FFFD. One pass per step: linear in the size."""
    raw = data
    if raw.startswith(b"\xff\xfe") or raw.startswith(b"\xfe\xff"):
        text = raw.decode("utf-16", errors="replace")
    elif raw.startswith(b"\xef\xbb\xbf"):
        text = raw[3:].decode("utf-8", errors="replace")
    else:
        # Judged on the first 64 bytes: a UTF-8 start with UTF-16 appended later is read as UTF-8 (NULs dropped below).
        head = raw[:64]
        even, odd = head[0::2].count(0), head[1::2].count(0)
        # ASCII text as UTF-16 without a BOM: every other byte is zero (LE: the odd ones).
        if len(head) >= 8 and odd > 0.3 * len(head) / 2 and even < odd / 8:
            text = raw[: len(raw) // 2 * 2].decode("utf-16-le", errors="replace")
        elif len(head) >= 8 and even > 0.3 * len(head) / 2 and odd < even / 8:
            text = raw[: len(raw) // 2 * 2].decode("utf-16-be", errors="replace")
        else:
            text = raw.decode("utf-8", errors="replace")
    if "\x00" in text:  # UTF-16 runs inside a UTF-8 file (a log appended to by two shells): their ASCII, read
        text = text.replace("\x00", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.lstrip("\ufeff")


def save_safetensors(tensors: Mapping[str, Any], path: Path, metadata: dict[str, str] | None = None) -> None:
    """safetensors.numpy's save_file, its I/O failures raised as the OSError they are: SafetensorError is
    no OSError, so a full disk under it was a traceback ("I/O error: No space left on device (os error 28)")."""
    from safetensors import SafetensorError
    from safetensors.numpy import save_file

    try:
        save_file(dict(tensors), str(path), metadata=metadata)
    except SafetensorError as exc:
        code = re.search(r"\(os error (\d+)\)", str(exc))
        if code is None:
            raise OSError(errno.EIO, f"safetensors: {exc}", str(path)) from None
        raise OSError(int(code.group(1)), os.strerror(int(code.group(1))), str(path)) from None
