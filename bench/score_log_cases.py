"""Score `diagnose --log` on real pastes: the share whose first cause and engine are the thread's.

The rule is tests/test_log_corpus.py's: the first cause must be the index's first expected cause (for an entry
that expects none, no cause that blocks MTP or says it accepts nothing), and the engine must be the index's.
Issue 30 scored a set-aside half this way once, before its pastes joined cases/logs/ (its README lists the
halves):

    python bench/score_log_cases.py cases/logs                      # the whole corpus
    python bench/score_log_cases.py cases/logs --files A.log B.log   # some of it
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import MtpinspectError
from mtpinspect.vocabulary import Mechanism


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder with index.json (cases/logs/'s format) and the pastes")
    parser.add_argument("--files", nargs="*", help="score only these entries")
    args = parser.parse_args()
    entries = json.loads((args.folder / "index.json").read_text(encoding="utf-8"))
    if args.files:
        entries = [e for e in entries if e["file"] in set(args.files)]
    right = 0
    for entry in entries:
        try:
            report = diagnose(log_files=[args.folder / entry["file"]])
        except MtpinspectError as exc:
            print(f"MISS  {entry['file']}: refused: {exc}")
            continue
        (log,) = report.logs
        codes = [c.code for c in report.causes]
        expected = entry["expect"]["causes"]
        cause_ok = codes[:1] == expected[:1] if expected else not [
            c for c in report.causes if c.mechanism in (Mechanism.blocked, Mechanism.zero)]
        ok = cause_ok and str(log.runtime) == entry["expect"]["runtime"]
        right += ok
        print(f"{'ok  ' if ok else 'MISS'}  {entry['file']}: expected {expected or 'no cause'} ({entry['expect']['runtime']}); "
              f"got {codes[:2] or 'no cause'} ({log.runtime})")
    print(f"{right} of {len(entries)}")


if __name__ == "__main__":
    main()
