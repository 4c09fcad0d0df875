"""The training text: three classes, each unpacked from a Debian package that the recipe fetches itself.

- code: the Python standard library's sources (``libpython3.11-stdlib``);
- prose-en: Python's documentation, the reST sources of its HTML pages (``python3.11-doc``);
- prose-ja: the Japanese manual pages (``manpages-ja``), with the roff markup taken out.

Every file is one document. A document goes to the held-out part when the sha256 of its path in the
package ends in a byte below ``HELD_OUT_SHARE`` of 256: a split that depends on nothing but the
package's own file list, so every run (and every machine) holds out the same documents. Measurements
(training/evaluate.py, bench/bench_trained_model.py) read the held-out part only.

The corpus is ``debian`` (the packages, fetched with ``apt-get download``: what the shipped model was
trained on) or ``sample`` (a few of their files, shipped with mtpinspect: sample.py), for machines without
apt-get. Both are archives unpacked into the cache, and ``documents`` reads either tree of files at their
paths in the package: the cleaning and the held-out split are the same rules.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.cache_dir import make_folder
from mtpinspect.errors import OutputError, SourceError

DEBIAN, SAMPLE = "debian", "sample"
CORPORA = (DEBIAN, SAMPLE)  # `mtpinspect train --corpus`; the recipe records which (Recipe.corpus)
SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "corpus-sample"
# The sample: sample.json (each file's package, version, path and sha256, and the licences) and an archive
# per package, PACKAGE.tar, of its files at their paths in the package. Archives, not a tree of files:
# the Python sources would be .py files inside mtpinspect, which tools would take for its own modules.
SAMPLE_RECORD = "sample.json"
HELD_OUT_SHARE = 0.05
# A manual page counts as Japanese prose when at least this share of its characters is Japanese.
_MIN_JAPANESE = 0.2
_MAX_DOCUMENT_BYTES = 1 << 20  # the largest file of each package is far below; a bound, not a filter


@dataclass(frozen=True)
class CorpusClass:
    """One class of text: the package it comes from and which of its files are documents."""

    name: str  # the prompt class it stands for in a sweep (cases/prompts)
    package: str
    pattern: str  # a regular expression on the file's path inside the package


CLASSES = (
    CorpusClass("code", "libpython3.11-stdlib", r"^usr/lib/python3\.11/.*\.py$"),
    CorpusClass("prose-en", "python3.11-doc", r"^usr/share/doc/python3\.11/html/_sources/.*\.rst\.txt$"),
    CorpusClass("prose-ja", "manpages-ja", r"^usr/share/man/ja/man\d/.*\.gz$"),
)


@dataclass(frozen=True)
class Document:
    cls: str
    path: str  # inside the package
    text: str
    held_out: bool


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    root: Path  # the unpacked package, or the sample's archive of it, unpacked
    corpus: str = DEBIAN


def held_out(path: str) -> bool:
    return hashlib.sha256(path.encode()).digest()[-1] < int(HELD_OUT_SHARE * 256)


def packages(corpus: str, cache: Path) -> dict[str, Package]:
    """Each class's package by class name, unpacked into ``cache``: fetched from Debian into ``cache/debs``,
    or the shipped sample's archive of it into ``cache/sample``."""
    if corpus == SAMPLE:
        return sample_packages(SAMPLE_DIR, cache / "sample")
    return {cls.name: fetch(cls, cache / "debs") for cls in CLASSES}


def sample_packages(sample: Path, cache: Path) -> dict[str, Package]:
    """The sample in ``sample`` (sample.py writes it) as packages, each archive unpacked into ``cache`` once."""
    try:
        record = json.loads((sample / SAMPLE_RECORD).read_text(encoding="utf-8"))
        versions = {cls.name: str(record["packages"][cls.package]["version"]) for cls in CLASSES}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"corpus sample {sample}: cannot read its {SAMPLE_RECORD} ({exc})") from None
    return {cls.name: Package(cls.package, versions[cls.name], _unpacked(sample / f"{cls.package}.tar", cache), SAMPLE)
            for cls in CLASSES}


def _unpacked(archive: Path, cache: Path) -> Path:
    """The archive's files in a folder of ``cache`` named by its digest: unpacked once, and again only when
    the archive changes (another mtpinspect)."""
    try:
        data = archive.read_bytes()
    except OSError as exc:
        raise SourceError(f"corpus sample {archive}: {exc.strerror or exc}") from None
    root = cache / f"{archive.stem}-{hashlib.sha256(data).hexdigest()[:16]}"
    if root.is_dir():
        return root
    staging = Path(tempfile.mkdtemp(prefix=f".{archive.stem}-", dir=make_folder(cache)))
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(staging, filter="data")
            else:  # Python < 3.10.12 / 3.11.4: the archive is the package's own
                tar.extractall(staging)  # noqa: S202
        staging.rename(root)
    except tarfile.TarError as exc:
        raise SourceError(f"corpus sample {archive}: not a readable archive ({exc})") from None
    except OSError as exc:
        if not root.is_dir():  # else another run unpacked it first
            raise OutputError(f"{cache}: cannot unpack the corpus sample there ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root


def fetch(cls: CorpusClass, cache: Path) -> Package:
    """The class's package, downloaded with apt-get into ``cache`` and unpacked there (once)."""
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob(f"{cls.package}_*.deb"))
    if not debs:
        _need("apt-get", cls.package)
        _download(cls.package, cache)
        debs = sorted(cache.glob(f"{cls.package}_*.deb"))
        if not debs:
            raise SourceError(f"corpus package {cls.package}: apt-get download wrote no .deb into {cache}")
    deb = debs[-1]
    version = deb.name.split("_")[1]
    root = cache / f"{cls.package}_{version}"
    if not root.is_dir():
        _need("dpkg-deb", cls.package)
        staging = Path(tempfile.mkdtemp(prefix=f".{cls.package}-", dir=cache))
        try:
            _run(["dpkg-deb", "-x", str(deb), str(staging)], f"corpus package {cls.package}: cannot unpack {deb.name}")
            staging.rename(root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return Package(cls.package, version.replace("%3a", ":"), root)


def _need(tool: str, package: str) -> None:
    """Off Debian (Fedora, macOS, Windows) the tools are missing: say so, and what trains without them."""
    if shutil.which(tool) is None:
        raise SourceError(f"corpus package {package}: {tool} not found: the Debian corpus (the default) is fetched with "
                          "Debian's apt-get and dpkg-deb; --corpus sample trains on the sample that ships with mtpinspect "
                          "and needs neither")


def _download(package: str, dest: Path) -> None:
    _run(["apt-get", "download", package], f"corpus package {package}: apt-get download failed "
         "(is it in the package lists? `apt-get update` refreshes them)", cwd=dest)


def _run(command: list[str], what: str, cwd: Path | None = None) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=600,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"{what}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise SourceError(f"{what}: {last[:200]}")


def documents(cls: CorpusClass, package: Package) -> Iterator[Document]:
    """The class's documents, in a fixed order (sorted paths), cleaned for training."""
    pattern = re.compile(cls.pattern)
    paths = sorted(p for p in package.root.rglob("*") if p.is_file() and pattern.match(p.relative_to(package.root).as_posix()))
    found = False
    for path in paths:
        rel = path.relative_to(package.root).as_posix()
        text = _clean(cls.name, path)
        if text:
            found = True
            yield Document(cls.name, rel, text, held_out(rel))
    if not found:
        raise SourceError(f"corpus package {package.name} {package.version}: no {cls.name} documents "
                          f"(no file matches {cls.pattern} with text in it)")


def _clean(cls: str, path: Path) -> str:
    if path.stat().st_size > _MAX_DOCUMENT_BYTES:
        return ""
    if cls == "prose-ja":
        try:
            with gzip.open(path, "rb") as fh:
                raw = fh.read(_MAX_DOCUMENT_BYTES * 8)
        except (OSError, EOFError):
            return ""
        text = roff_text(raw.decode("utf-8", errors="replace"))
        return text if japanese_share(text) >= _MIN_JAPANESE else ""
    return path.read_text(encoding="utf-8", errors="replace").strip()


_ROFF_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\[/,&:]"), ""),  # italic corrections, zero-width marks
    (re.compile(r"\\\(em|\\\(en"), "—"),
    (re.compile(r"\\\(aq"), "'"),
    (re.compile(r"\\\([lr]q|\\\(dq"), '"'),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""),  # other named glyphs
    (re.compile(r"\\[-e]"), lambda m: "-" if m.group(0) == "\\-" else "\\"),
    (re.compile(r"\\s[-+]?\d"), ""),
    (re.compile(r"\\[ ~0|^]"), " "),
    (re.compile(r"\\\*\(?.."), ""),
    (re.compile(r"\\c$"), ""),
]
_TEXT_MACROS = {"SH", "SS", "B", "I", "BR", "BI", "IR", "IB", "RB", "RI", "TP", "IP", "SM", "SB", "UR", "MT", "Nm", "Nd", "Sh"}


def roff_text(source: str) -> str:
    """The text a reader sees in a manual page's roff source: requests dropped, the words of the
    font and heading macros kept, escapes resolved."""
    out: list[str] = []
    for line in source.splitlines():
        if line.startswith((".\\\"", "'\\\"", "\\\"")):
            continue
        if line.startswith((".", "'")):
            name, _, rest = line[1:].strip().partition(" ")
            if name not in _TEXT_MACROS or not rest:
                continue
            line = rest.replace('"', "")
        for pattern, repl in _ROFF_ESCAPES:
            line = pattern.sub(repl, line)
        line = line.rstrip()
        if line:
            out.append(line)
    return "\n".join(out).strip()


def japanese_share(text: str) -> float:
    if not text:
        return 0.0
    japanese = sum(1 for ch in text if "\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
    return japanese / len(text)
