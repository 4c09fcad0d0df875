"""Score `diagnose --log` on real pastes: the share whose first cause and engine are the thread's, and the wrong
causes given at high confidence (the worst result: counted apart).

The rule is tests/test_log_corpus.py's: the first cause must be the index's first expected cause; an entry that
expects none must get no cause at all, or exactly the minor ones its ``expect.minor`` lists; the engine must be
the index's. A cause at high confidence (>= 0.8) that the entry does not expect is a wrong cause at high
confidence, whatever else the diagnosis got right. A folder whose entries have no ``expect`` is a negative corpus
(outputs of other software, cases/logs-negative/): right when no cause is named (a refusal, exit 2, is right too).
Issue 30 and issue 42 scored set-aside halves this way once, before their pastes joined cases/logs/ (its README
lists the halves):

    python bench/score_log_cases.py cases/logs                      # the whole corpus
    python bench/score_log_cases.py cases/logs-negative             # the negative corpus
    python bench/score_log_cases.py cases/logs --files A.log B.log   # some of it

Where a set's collector judged, entry by entry, whether the paste alone shows the thread's answer (the eighth set's
``paste_alone``: "shows both", "cause only in the thread", "engine only in the thread", "neither"), a second line
scores the entries a reader of the paste alone can get right.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mtpinspect.causes import confidence_word
from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import MtpinspectError


def _shows_answer(entry: dict) -> bool:
    """Whether the entry's collector judged that its paste alone shows the expected cause and engine. An untied
    entry's answer is "no cause" (nothing in the paste ties its crash to drafting): the paste shows it wherever it
    names the engine, though the thread's own cause is only in the thread."""
    judged = entry.get("paste_alone")
    return judged == "shows both" or judged == "cause only in the thread" and "untied" in entry.get("expect", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder with index.json (cases/logs/'s format) and the pastes")
    parser.add_argument("--files", nargs="*", help="score only these entries")
    args = parser.parse_args()
    entries = json.loads((args.folder / "index.json").read_text(encoding="utf-8"))
    if args.files:
        entries = [e for e in entries if e["file"] in set(args.files)]
    right = wrong_high = 0
    shown = [0, 0]  # entries whose paste alone shows the answer, by the collector's "paste_alone" judgement: right, all
    for entry in entries:
        expect = entry.get("expect")
        try:
            report = diagnose(log_files=[args.folder / entry["file"]])
        except MtpinspectError as exc:
            ok = expect is None
            right += ok
            shown[1] += _shows_answer(entry)  # a refused entry is a miss, whatever its paste shows
            print(f"{'ok  ' if ok else 'MISS'}  {entry['file']}: refused: {str(exc)[:200]}")
            continue
        codes = [c.code for c in report.causes]
        if expect is None:  # a negative: no MTP cause at all
            ok = not codes
            high = [c.code for c in report.causes if confidence_word(c.confidence) == "high"]
            wrong_high += bool(high)
            right += ok
            print(f"{'ok  ' if ok else 'MISS'}  {entry['file']}: expected no cause; got {codes or 'no cause'}"
                  + (f"  WRONG AT HIGH CONFIDENCE: {high}" if high else ""))
            continue
        log = report.logs[0]
        expected = expect["causes"]
        allowed = {*expected, *expect.get("minor", [])}
        cause_ok = codes[:1] == expected[:1] if expected else codes == expect.get("minor", [])
        ok = cause_ok and str(log.runtime) == expect["runtime"]
        high = [c.code for c in report.causes if confidence_word(c.confidence) == "high" and c.code not in allowed]
        wrong_high += bool(high)
        right += ok
        if _shows_answer(entry):
            shown[0] += ok
            shown[1] += 1
        print(f"{'ok  ' if ok else 'MISS'}  {entry['file']}: expected {expected or 'no cause'} ({expect['runtime']}); "
              f"got {codes[:2] or 'no cause'} ({log.runtime})"
              + (f"  WRONG AT HIGH CONFIDENCE: {high}" if high else ""))
    print(f"{right} of {len(entries)} right; {wrong_high} with a wrong cause at high confidence")
    if shown[1]:
        print(f"{shown[0]} of the {shown[1]} whose paste alone shows the expected cause and engine (the collector's "
              f"'paste_alone' judgement) right")


if __name__ == "__main__":
    main()
