"""Run `diagnose --log`'s reader over real text on this machine that is not about speculative decoding, and print every
file that gets a cause (issue 42: a reader that finds a cause in any text is not trusted for the texts it gets right).

Every readable text file under the given folders is read as a pasted log through the public API under
`diagnose --log` (mtpinspect.diagnosis.diagnose): changelogs and READMEs under /usr/share/doc (gzip ones decompressed),
/var/log, package managers' logs, a build log, site-packages' docs. A file that gets any cause is printed with the
cause, its confidence and the line it cites; on such text each is a fault of the reader unless the text truly shows
a speculative-decoding failure. Bounded: a file count cap, a byte cap per file (a larger file is read by its head, cut
at a line end), a time cap per file and for the whole scan; binary files (a NUL in the head) are skipped. Run it niced
on a shared machine (it lowers its own priority too):

    nice python bench/scan_silence.py /usr/share/doc /var/log --max-files 4000 --max-bytes 262144 --max-seconds 600
    python bench/scan_silence.py ~/.venv/lib/python3.11/site-packages --ext txt md rst

Exit status 1 when a file got a cause, else 0.
"""

from __future__ import annotations

import argparse
import gzip
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from mtpinspect.causes import confidence_word
from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import MtpinspectError

_COMPRESSED = (".gz",)
_NEVER = (".xz", ".bz2", ".zst", ".zip", ".whl", ".so", ".pyc", ".png", ".jpg", ".gif", ".pdf", ".gguf", ".npz", ".bin")


class _TooSlow(Exception):
    pass


def _files(folders: list[Path], exts: tuple[str, ...]) -> Iterator[Path]:
    """Regular files under the folders, in a stable order, symlinks not followed."""
    for folder in folders:
        if folder.is_file():
            yield folder
            continue
        for root, dirs, names in os.walk(folder, followlinks=False):
            dirs.sort()
            for name in sorted(names):
                path = Path(root, name)
                if path.is_symlink() or not path.is_file():
                    continue
                plain = name[:-3] if name.endswith(_COMPRESSED) else name
                if exts and not (plain.endswith(exts) or f".{plain}" in exts):
                    continue
                if name.endswith(_NEVER):
                    continue
                yield path


def _head(path: Path, limit: int) -> bytes | None:
    """The file's first ``limit`` bytes (decompressed for gzip), cut at the last line end; None when unreadable or
    binary."""
    try:
        if path.name.endswith(_COMPRESSED):
            with gzip.open(path, "rb") as f:
                data = f.read(limit + 1)
        else:
            with path.open("rb") as f:
                data = f.read(limit + 1)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if b"\0" in data[:8192]:
        return None
    if len(data) > limit:
        data = data[: data.rfind(b"\n", 0, limit) + 1 or limit]
    return data


def _on_alarm(signum: int, frame: object) -> None:
    raise _TooSlow


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders (or files) to scan")
    parser.add_argument("--ext", nargs="*", default=[], help="only names ending so, or so named (a .gz after them allowed): txt md rst METADATA")
    parser.add_argument("--max-files", type=int, default=3000, help="files read at most (default 3000)")
    parser.add_argument("--max-bytes", type=int, default=256 * 1024, help="bytes read of a file's head (default 256 KiB)")
    parser.add_argument("--max-seconds", type=float, default=600, help="the whole scan stops after this (default 600)")
    parser.add_argument("--file-seconds", type=int, default=20, help="one file's reading stops after this (default 20)")
    args = parser.parse_args()
    os.nice(10)
    signal.signal(signal.SIGALRM, _on_alarm)
    exts = tuple(e if e.startswith(".") else f".{e}" for e in args.ext)
    counts: Counter[str] = Counter()
    started = time.monotonic()
    stopped = ""
    with tempfile.TemporaryDirectory(prefix="scan-silence-") as scratch:
        for path in _files(args.folders, exts):
            if counts["read"] >= args.max_files:
                stopped = f"stopped at the file cap ({args.max_files})"
                break
            if time.monotonic() - started > args.max_seconds:
                stopped = f"stopped at the time cap ({args.max_seconds:.0f} s)"
                break
            data = _head(path, args.max_bytes)
            if data is None:
                counts["skipped (unreadable or binary)"] += 1
                continue
            if not data.strip():
                counts["skipped (empty)"] += 1
                continue
            counts["read"] += 1
            copy = Path(scratch, path.name[:-3] if path.name.endswith(_COMPRESSED) else path.name)
            copy.write_bytes(data)
            signal.alarm(args.file_seconds)
            try:
                report = diagnose(log_files=[copy])
            except MtpinspectError:
                counts["refused (no line means anything)"] += 1
                continue
            except _TooSlow:
                counts["over the time cap per file"] += 1
                print(f"SLOW   {path}: over {args.file_seconds} s", flush=True)
                continue
            finally:
                signal.alarm(0)
                copy.unlink(missing_ok=True)
            if not report.causes:
                counts["read, no cause"] += 1
                continue
            counts["with a cause"] += 1
            for cause in report.causes:
                said = [e.replace(str(copy), str(path)) for e in cause.evidence] or [""]
                cited = next((e for e in said if ": line " in e), said[0])
                print(f"CAUSE  {path}: {cause.code} {cause.confidence:.2f} {confidence_word(cause.confidence)}\n"
                      f"       {said[0][:300]}\n       {cited[:300]}", flush=True)
    elapsed = time.monotonic() - started
    print(f"{counts['read']} files read in {elapsed:.0f} s ({stopped or 'all files'}); "
          f"{counts['with a cause']} with a cause, {counts['read, no cause']} read with no cause, "
          f"{counts['refused (no line means anything)']} refused, {counts['over the time cap per file']} over the time "
          f"cap per file; skipped: {counts['skipped (unreadable or binary)']} unreadable or binary, "
          f"{counts['skipped (empty)']} empty")
    return 1 if counts["with a cause"] else 0


if __name__ == "__main__":
    sys.exit(main())
