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


def _no_cause(tmp_path: Path, text: str) -> None:
    """A pasted text is refused in one line or read with no cause."""
    path = tmp_path / "paste.log"
    path.write_text(text + "\n", encoding="utf-8")
    try:
        report = diagnose(log_files=[path])
    except FormatError:
        return
    assert report.causes == [], [(c.code, c.confidence, c.evidence[:1]) for c in report.causes]


@pytest.mark.parametrize("text", OPERAND_LINES, ids=[t.split(":")[0][:24] for t in OPERAND_LINES])
def test_a_name_another_program_quotes_is_no_cause(text: str, tmp_path: Path) -> None:
    _no_cause(tmp_path, text)


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


# "MTP" as the Media Transfer Protocol of phones, in its programs' own message formats (none is in the corpus):
# libmtp's libmtp.c (LIBMTP_ERROR("LIBMTP PANIC: Unable to initialize device\n"), its error stack's "Error %d: %s",
# ptp.c's "PTP Layer error %04x: %s"), mtp-detect (examples/detect.c: "Device %d (VID=%04x and PID=%04x) is a %s %s.",
# "Unable to open raw device %d"), udev's mtp-probe (util/mtp-probe.c: "bus: %d, device: %d was not an MTP device", as
# journald prints it), go-mtpfs (mtp/detect.go: fmt.Errorf("no MTP devices found") under main.go's log.Fatalf("detect
# failed: %v")), jmtpfs (its MtpErrorCantOpenDevice thrown after libmtp's panic, as pasted in public threads), gvfs's mtp
# backend through gio (daemon/gvfsbackendmtp.c: "Unable to open MTP device “%s”").
TRANSFER_LINES = [
    "gvfsd[4121]: Device 0 (VID=04e8 and PID=6860) is a Samsung Galaxy models (MTP).\n"
    "gvfsd[4121]: error returned by libusb_claim_interface() = -6LIBMTP PANIC: Unable to initialize device",
    "gvfsd[3388]: Error 2: PTP Layer error 02ff: get_all_metadata_fast(): could not get proplist of all objects.\n"
    "gvfsd[3388]: LIBMTP PANIC: MTP device storage failed, trying to continue",
    "Dec 04 21:13:07 lap mtp-probe[9021]: checking bus 3, device 12: \"/sys/devices/pci0000:00/0000:00:14.0/usb3/3-2\"\n"
    "Dec 04 21:13:07 lap mtp-probe[9021]: bus: 3, device: 12 was not an MTP device",
    "$ go-mtpfs ~/phone\n2026/12/04 21:13:09 detect failed: no MTP devices found",
    "kim@lap:~$ mtp-detect\nlibmtp version: 1.1.21\n\nListing raw device(s)\n"
    "Device 0 (VID=04e8 and PID=6860) is a Samsung Galaxy models (MTP).\n   Found 1 device(s):\n"
    "error returned by libusb_claim_interface() = -6LIBMTP PANIC: Unable to initialize device\nUnable to open raw device 0",
    "gio: mtp://SAMSUNG_Android_R58N123/: Unable to open MTP device “003,012”",
    "kim@lap:~$ jmtpfs ~/phone\nDevice 0 (VID=0e8d and PID=201d) is a MediaTek Inc Elephone P8000 (MTP).\n"
    "error returned by libusb_claim_interface() = -6LIBMTP PANIC: Unable to initialize device\n"
    "terminate called after throwing an instance of 'MtpErrorCantOpenDevice'\n  what():  Can't open device\nAborted (core dumped)",
]


@pytest.mark.parametrize("text", TRANSFER_LINES, ids=[t.split(":")[0][:24] for t in TRANSFER_LINES])
def test_the_media_transfer_protocol_is_no_drafter(text: str, tmp_path: Path) -> None:
    _no_cause(tmp_path, text)


# The same texts beside a real drafter's failure (llama-server's own load_model lines): the drafter keeps its cause,
# whether the phone's lines come first (a journal), or a shell shows a protocol program's output and then the engine's.
DRAFTER_LINES = [
    "srv    load_model: failed to load MTP head from '/models/Qwen3.6-35B-A3B-MTP-UD-Q4_K_XL.gguf'",
    "E srv    load_model: failed to load draft model, '/models/unsloth/mtp-Qwen3.6-27B-Q8_0.gguf'",
]


@pytest.mark.parametrize("drafter", DRAFTER_LINES)
@pytest.mark.parametrize("transfer", [TRANSFER_LINES[0], TRANSFER_LINES[3], TRANSFER_LINES[4]], ids=["gvfsd", "go-mtpfs", "mtp-detect"])
def test_a_drafter_beside_the_media_transfer_protocol_keeps_its_cause(transfer: str, drafter: str, tmp_path: Path) -> None:
    path = tmp_path / "paste.log"
    alone = tmp_path / "alone.log"
    alone.write_text(drafter + "\n", encoding="utf-8")
    path.write_text(transfer + "\n$ llama-server -m /models/q.gguf --spec-type draft-mtp\n" + drafter + "\n", encoding="utf-8")
    expected = diagnose(log_files=[alone]).causes
    report = diagnose(log_files=[path])
    assert expected and [c.code for c in report.causes] == [c.code for c in expected]
    assert drafter.strip() in report.causes[0].evidence[0]


def test_only_the_protocol_lines_are_blanked() -> None:
    from mtpinspect.logread.voices import transfer_lines, without_transfer

    text = "$ go-mtpfs ~/phone\n2013/06/06 12:17:53 detect failed: no MTP devices found\n$ llama-server --spec-type draft-mtp\n" \
           "srv load_model: failed to load MTP head\ngvfsd[1]: LIBMTP PANIC: x\nerror: MTP/EAGLE not supported for this model\n"
    starts = transfer_lines(text)
    at, marked = 0, []
    for line in text.splitlines():
        marked.append(at in starts)
        at += len(line) + 1
    assert marked == [True, True, False, False, True, False]
    assert without_transfer("LIBMTP PANIC: no MTP devices") == "LIB    PANIC: no     devices"
    # A drafting result annotated "(MTP)" and a host's line naming USB are no protocol lines: only the protocol's own
    # words (a VID, "MTP device", PTP/MTP) make them one.
    assert transfer_lines("batch=32: 900 -> 610 tok/s (MTP)\nUSB hub found; MTP head loaded\n") == frozenset()
