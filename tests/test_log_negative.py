"""Outputs of other software (cases/logs-negative/) get no MTP cause from `diagnose --log` (issue 42).

Each text is real output of a program that is not about MTP and holds words a careless reader takes for MTP's
(SMTP, a draft post, accept, token, speculative in a name, libmtp's mtp-detect, a shell's segfault line). The
diagnosis must refuse it in one line (exit 2) or read it and name no cause at all: every cause code is an MTP
cause.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import FormatError

NEGATIVE = Path(__file__).resolve().parents[1] / "cases" / "logs-negative"
ENTRIES: list[dict[str, Any]] = json.loads((NEGATIVE / "index.json").read_text(encoding="utf-8"))


def test_the_negative_corpus_is_complete() -> None:
    files = {p.name for p in NEGATIVE.glob("*.log")}
    assert files == {e["file"] for e in ENTRIES} and len(files) >= 30
    assert all(e["program"] and e["how"] for e in ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_no_mtp_cause_for_text_that_is_not_about_mtp(entry: dict[str, Any]) -> None:
    try:
        report = diagnose(log_files=[NEGATIVE / entry["file"]])
    except FormatError as exc:  # refused: one line naming the file, what the tool reads
        assert str(exc).startswith(str(NEGATIVE / entry["file"])) and "\n" not in str(exc)
        return
    assert report.causes == [], [(c.code, c.confidence, c.evidence[:1]) for c in report.causes]
    assert report.exit_code == 0


@pytest.mark.parametrize("file", ["python-smtplib-connection-refused.log", "bash-image-script-segfault-core-dumped.log",
                                  "python-keyerror-blog-draft-post.log"])
def test_the_cli_says_a_crash_is_a_crash(file: str) -> None:
    # The texts the issue found blamed on MTP (MTP_FAILED, MTP_ENGINE_CRASH at exit 1): exit 0, no cause.
    proc = subprocess.run([sys.executable, "-m", "mtpinspect", "diagnose", "--log", str(NEGATIVE / file)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "MTP_" not in proc.stdout and "no cause of low MTP acceptance" in proc.stdout
