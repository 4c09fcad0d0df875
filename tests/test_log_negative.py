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


# Another program's error line where "mtp" or "draft" is only part of a file, path, archive or branch name it quotes
# (the words of each program as it prints them: coreutils' quoting, tar's "(child)" lines, rsync's link_stat, scp,
# git's pathspec and remote ref, unzip's three names, Python's OSError repr). None is in the corpus.
OPERAND_LINES = [
    "rsync: [sender] link_stat \"/home/kim/mtp-backup/DCIM\" failed: No such file or directory (2)\n"
    "rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1338) [sender=3.2.7]",
    "cp: cannot stat 'draft-models/notes.txt': No such file or directory",
    "ls: cannot access 'mtp': No such file or directory",
    "mv: cannot move 'mtp-sync' to 'old/mtp-sync': Permission denied",
    "scp: /srv/phone/mtp-export/IMG_0001.jpg: No such file or directory",
    "unzip:  cannot find or open mtp-dump.zip, mtp-dump.zip.zip or mtp-dump.zip.ZIP.",
    "tar: mtp-draft-notes/README: Cannot open: Permission denied\ntar: Exiting with failure status due to previous errors",
    "fatal: couldn't find remote ref mtp-draft",
    "error: src refspec draft/mtp-sync does not match any\nerror: failed to push some refs to 'origin'",
    "Traceback (most recent call last):\n  File \"/home/kim/sync.py\", line 4, in <module>\n"
    "    open('/media/phone/mtp/draft_tokens.json')\n"
    "FileNotFoundError: [Errno 2] No such file or directory: '/media/phone/mtp/draft_tokens.json'",
    "PermissionError: [Errno 13] Permission denied: '/run/user/1000/gvfs/mtp:host=SAMSUNG/Phone'",
    "python3: can't open file '/home/kim/mtp/draft.py': [Errno 2] No such file or directory",
]


@pytest.mark.parametrize("text", OPERAND_LINES, ids=[t.split(":")[0][:24] for t in OPERAND_LINES])
def test_a_name_another_program_quotes_is_no_cause(text: str, tmp_path: Path) -> None:
    path = tmp_path / "paste.log"
    path.write_text(text + "\n", encoding="utf-8")
    try:
        report = diagnose(log_files=[path])
    except FormatError:
        return
    assert report.causes == [], [(c.code, c.confidence, c.evidence[:1]) for c in report.causes]


def test_the_names_are_blanked_not_the_words() -> None:
    from mtpinspect.logread.voices import without_operands

    assert "mtp" not in without_operands("error: pathspec 'draft/mtp-export' did not match any file(s) known to git")
    assert "mtp" not in without_operands("tar (child): mtp-phone-backup-2026-11.tar.gz: Cannot open: No such file or directory")
    # The engines' own words stay, and so does a model file (an mtp- GGUF is the head) and prose with one slash.
    for line in ("srv load_model: failed to load MTP head from 'C:\\Qwen3.6-35B-A3B-MTP-UD-Q4_K_XL.gguf'",
                 "Error: failed to load speculative decoding draft model '/models/draft.gguf'",
                 "error: MTP/EAGLE not supported for this model",
                 "Traceback: vllm/v1/spec_decode/eagle.py:123 in propose",
                 "ModuleNotFoundError: No module named 'vllm.v1.spec_decode.eagle'"):
        assert without_operands(line) == line


# Engine and app lines with MTP words in a model path or beside one still read (the rule must not blind them).
ENGINE_LINES = [
    "E srv    load_model: failed to load draft model, '/models/unsloth/mtp-Qwen3.6-27B-Q8_0.gguf'",
    "Error: MTP speculative decoding is not supported for this model in /opt/app/engines/llama.cpp",
    "srv    load_model: failed to load MTP head from 'D:\\models\\Qwen3.6-35B-A3B-MTP-UD-Q4_K_XL.gguf'",
]


@pytest.mark.parametrize("text", ENGINE_LINES)
def test_engine_lines_with_a_path_still_read(text: str, tmp_path: Path) -> None:
    path = tmp_path / "paste.log"
    path.write_text(text + "\n", encoding="utf-8")
    report = diagnose(log_files=[path])
    assert report.causes and text.strip() in report.causes[0].evidence[0]
