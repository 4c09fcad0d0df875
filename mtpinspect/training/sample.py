"""The sample corpus: a few documents of each class, copied whole from the same Debian packages, that ships
with mtpinspect (data/corpus-sample/) so that `mtpinspect train --corpus sample` and the training tests
have real text where apt-get is not (Fedora, macOS, Windows, a container without apt lists).

The sample holds an archive per package, PACKAGE.tar, of the chosen files at their paths inside the
package, so corpus.documents reads it, unpacked, as it reads an unpacked package: the same cleaning (the
manual pages stay gzip'd roff, their licence notices in their comments) and the same held-out split (the
hash of the path). Its sample.json records the package, version, path and sha256 of every file, and the
licences. Made by

    python -m mtpinspect.training.sample DIR

from the packages fetched as `mtpinspect train` fetches them (apt-get download).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

from mtpinspect.errors import MtpinspectError, OutputError, SourceError
from mtpinspect.training.corpus import CLASSES, DEBIAN, SAMPLE_RECORD, CorpusClass, Document, Package, documents, packages

# Bytes of each class's files as the package holds them (manual pages gzip'd): about 190 KB of documents in
# all, several per class on each side of the split, each class's text many windows of the recipe's 385 tokens.
TRAIN_BYTES = 48 << 10
HELD_OUT_BYTES = 16 << 10
# Files of a size between these: several documents per class, not one long one, and no stubs (a package's
# __init__.py, the documentation's table-of-contents pages).
MIN_FILE_BYTES = 2 << 10
MAX_FILE_BYTES = 16 << 10

LICENCES = {
    "libpython3.11-stdlib": "Python Software Foundation License Version 2 (Python's own sources). The package's "
    "copyright file is a link to libpython3.11-minimal's: the python3.11 source package's debian/copyright, "
    "which python3.11-doc carries as well (python3.11-doc/usr/share/doc/python3.11-doc/copyright here).",
    "python3.11-doc": "Python Software Foundation License Version 2 (the documentation; code examples in it are "
    "also under the Zero-Clause BSD licence): see its copyright file, copied here.",
    "manpages-ja": "Each manual page keeps the licence of the page it translates, named in its roff comments "
    "(the pages are copied whole, comments included); see the package's copyright file, copied here.",
}


def _order(doc: Document) -> bytes:
    # A fixed order that mixes the folders of a package, and is not the held-out rule's hash.
    return hashlib.sha256(f"corpus-sample:{doc.path}".encode()).digest()


def chosen(cls: CorpusClass, package: Package) -> list[Document]:
    """The class's documents in the sample: in a fixed order, each of MIN_FILE_BYTES to MAX_FILE_BYTES, taken
    while its side of the split has room; both sides must get some."""
    room = {False: TRAIN_BYTES, True: HELD_OUT_BYTES}
    picked = []
    for doc in sorted(documents(cls, package), key=_order):
        size = (package.root / doc.path).stat().st_size
        if MIN_FILE_BYTES <= size <= min(MAX_FILE_BYTES, room[doc.held_out]):
            room[doc.held_out] -= size
            picked.append(doc)
    if {doc.held_out for doc in picked} != {False, True}:
        raise SourceError(f"corpus package {package.name} {package.version}: no {cls.name} documents of "
                          f"{MIN_FILE_BYTES} to {MAX_FILE_BYTES} bytes on one side of the held-out split")
    return sorted(picked, key=lambda doc: doc.path)


def _copyright(package: Package) -> str | None:
    """The package's own copyright file, when it is a file of the package (not a link into another one)."""
    path = f"usr/share/doc/{package.name}/copyright"
    source = package.root / path
    if source.is_file() and source.resolve().is_relative_to(package.root.resolve()):
        return path
    return None


def _entry(package: Package, path: str) -> dict[str, Any]:
    data = (package.root / path).read_bytes()
    return {"path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _archive(package: Package, paths: list[str], target: Path) -> None:
    """The files as a tar of their paths in the package, the same bytes for the same files (no dates, owners)."""
    with tarfile.open(target, "w", format=tarfile.USTAR_FORMAT) as tar:
        for path in sorted(paths):
            data = (package.root / path).read_bytes()
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))


def _refuse_filled(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise OutputError(f"{dest}: exists and is not an empty folder (the sample is written into a new one)")


def write(dest: Path, packages: dict[str, Package]) -> dict[str, Any]:
    """The sample of ``packages`` (by class name) into ``dest``, a new or empty folder; its record."""
    _refuse_filled(dest)
    dest.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "about": "A few documents of each class of `mtpinspect train`'s corpus, copied whole from the Debian packages "
                 "named here; PACKAGE.tar holds them at their paths in the package: `mtpinspect train --corpus sample`.",
        "made_by": "python -m mtpinspect.training.sample DIR",
        "selection": {"train_bytes": TRAIN_BYTES, "held_out_bytes": HELD_OUT_BYTES, "min_file_bytes": MIN_FILE_BYTES,
                      "max_file_bytes": MAX_FILE_BYTES},
        "packages": {},
    }
    for cls in CLASSES:
        package = packages[cls.name]
        docs = chosen(cls, package)
        notice = _copyright(package)
        _archive(package, [doc.path for doc in docs] + ([notice] if notice else []), dest / f"{package.name}.tar")
        record["packages"][package.name] = {
            "class": cls.name, "version": package.version, "licence": LICENCES[package.name], "copyright": notice,
            "files": [{**_entry(package, doc.path), "held_out": doc.held_out} for doc in docs]}
    (dest / SAMPLE_RECORD).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mtpinspect.training.sample",
                                     description="Write the sample corpus from the Debian packages (apt-get download).")
    parser.add_argument("dest", type=Path, help="a new or empty folder (the shipped one: mtpinspect/data/corpus-sample)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="the packages go into its debs/ (default: `mtpinspect train`'s, in the mtpinspect cache folder)")
    args = parser.parse_args(argv)
    from mtpinspect.cache_dir import cache_dir

    try:
        _refuse_filled(args.dest)  # before the download
        record = write(args.dest, packages(DEBIAN, args.cache or cache_dir() / "training"))
    except MtpinspectError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    for name, entry in record["packages"].items():
        sides = [f["held_out"] for f in entry["files"]]
        print(f"{entry['class']}: {name} {entry['version']}: {sides.count(False)} training and {sides.count(True)} held-out "
              f"documents, {sum(f['bytes'] for f in entry['files'])} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
