"""Hostile and odd pastes given to `diagnose --log` (issue 42): each is one clear line (exit 2) or the right reading.

The texts are built from real corpus pastes (cases/logs/) re-encoded, repeated or put side by side, and from the
shapes the issue's hostile pass used: long lines full of near-matches, UTF-16 as PowerShell's ``>`` writes it.
Timing belongs to bench/bench_log_scan.py; here each test only has to finish (the old quadratic patterns took a
minute on these texts, so a regression shows as a test that hangs past pytest's patience, not as a figure).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mtpinspect.diagnosis import diagnose
from mtpinspect.vocabulary import Engine

CASE_LOGS = Path(__file__).resolve().parents[1] / "cases" / "logs"
VLLM_ZERO = CASE_LOGS / "vllm-ascend-eagle3-pd-zero-acceptance.log"
LLAMA_HEALTHY = CASE_LOGS / "llama.cpp-router-healthy-draft-acceptance-mean-len.log"


def _cli(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mtpinspect", "diagnose", "--log", str(path)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_any_encoding_reads_as_utf8_does(tmp_path: Path, encoding: str, newline: str) -> None:
    text = VLLM_ZERO.read_text(encoding="utf-8")
    pasted = tmp_path / "paste.log"
    pasted.write_bytes(text.replace("\n", newline).encode(encoding))
    plain = diagnose(log_files=[VLLM_ZERO])
    read = diagnose(log_files=[pasted])
    assert [c.code for c in read.causes] == [c.code for c in plain.causes] and read.causes
    (log,) = read.logs
    assert (log.runtime, log.drafted, log.accepted) == (Engine.vllm, plain.logs[0].drafted, plain.logs[0].accepted)


def test_a_utf16_run_appended_to_a_utf8_log_is_read(tmp_path: Path) -> None:
    # Two shells wrote one file: the first half UTF-8, the second UTF-16-LE (PowerShell's >>).
    text = VLLM_ZERO.read_text(encoding="utf-8")
    half = len(text.splitlines()) // 2
    lines = text.splitlines(keepends=True)
    pasted = tmp_path / "mixed.log"
    pasted.write_bytes("".join(lines[:half]).encode("utf-8") + "".join(lines[half:]).encode("utf-16-le"))
    (log,) = diagnose(log_files=[pasted]).logs
    assert log.runtime is Engine.vllm and log.drafted == diagnose(log_files=[VLLM_ZERO]).logs[0].drafted


def test_two_runs_in_one_text_are_both_judged(tmp_path: Path) -> None:
    # A vLLM run at 0% pasted above a healthy llama-server run: the 0% run was dropped silently.
    pasted = tmp_path / "two-runs.log"
    pasted.write_text(VLLM_ZERO.read_text(encoding="utf-8") + "\n" + LLAMA_HEALTHY.read_text(encoding="utf-8"),
                      encoding="utf-8")
    report = diagnose(log_files=[pasted])
    runtimes = sorted(str(log.runtime) for log in report.logs)
    assert runtimes == ["llama.cpp", "vllm"], runtimes
    vllm = next(log for log in report.logs if log.runtime is Engine.vllm)
    assert vllm.accepted == 0 and vllm.drafted
    # The zero run is judged: a cause whose evidence names that run's lines.
    assert report.causes and any(vllm.path in line for c in report.causes for line in c.evidence), report.causes
    assert report.exit_code == 1


def test_long_lines_of_near_matches_are_one_line(tmp_path: Path) -> None:
    # 60 lines of 16 KB holding -mtp in fork-flag shapes that never close (59 s before), one 64 KB line that starts
    # like a metrics sample and is not one (54 s before).
    flags = tmp_path / "flags.log"
    flags.write_text("".join(" " + ("--a-mtp" * 2300)[:16000] + "!\n" for _ in range(60)), encoding="utf-8")
    sample = tmp_path / "sample.log"
    sample.write_text("llamacpp:" + "a" * 65536 + " x y\n", encoding="utf-8")
    for path in (flags, sample):
        proc = _cli(path)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-500:]
        assert "no line means anything to this tool" in proc.stderr and "Traceback" not in proc.stderr


def test_a_healthy_log_with_a_request_body_names_no_cause(tmp_path: Path) -> None:
    # llama-server --verbose logs each request body (tools/server/server-http.cpp: SRV_DBG("request:  %s\n")); the
    # user's prompt words ("error: invalid argument: --mtp", "unknown speculative type") are content, not the engine's.
    body = ('srv  log_server_r: request:  {"messages":[{"role":"user","content":"my build says error: invalid argument: '
            '--mtp and unknown speculative type: mtp, then Segmentation fault. Why does the draft model fail with '
            'MTP not supported?"}],"temperature":0}\n')
    text = LLAMA_HEALTHY.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    pasted = tmp_path / "verbose.log"
    pasted.write_text("".join(lines[:1]) + body + "".join(lines[1:]), encoding="utf-8")
    report = diagnose(log_files=[pasted])
    assert report.causes == [] and report.exit_code == 0
    assert report.logs[0].acceptance == diagnose(log_files=[LLAMA_HEALTHY]).logs[0].acceptance


# The figures of cases/logs/vllm-bench-serve-mtp8-speculative-block.log, in the other shapes vLLM's bench and users
# give them: --save-result's one-line JSON, a pasted block of keys, Markdown bullets.
_SPEC_DECODE = {"spec_decode_acceptance_rate": 43.71, "spec_decode_acceptance_length": 4.5, "spec_decode_num_drafts": 11043,
                "spec_decode_draft_tokens": 88344, "spec_decode_accepted_tokens": 38611,
                "spec_decode_per_position_acceptance_rates": [76.17, 61.58, 51.25, 42.43, 36.4, 30.94, 27.22, 23.65]}


@pytest.mark.parametrize("shape", ["json", "block", "bullets"])
def test_vllm_bench_results_are_read_by_their_names(tmp_path: Path, shape: str) -> None:
    import json

    head = {"backend": "vllm", "completed": 80, "output_throughput": 1234.5}
    if shape == "json":
        text = json.dumps({**head, **_SPEC_DECODE}) + "\n"
    elif shape == "block":
        text = "".join(f'  "{k}": {json.dumps(v)},\n' for k, v in {**head, **_SPEC_DECODE}.items())
    else:
        text = "".join(f"- **{k}**: {json.dumps(v)}\n" for k, v in _SPEC_DECODE.items())
    pasted = tmp_path / "bench.txt"
    pasted.write_text(text, encoding="utf-8")
    (log,) = diagnose(log_files=[pasted]).logs
    assert (log.runtime, log.drafts, log.drafted, log.accepted) == (Engine.vllm, 11043, 88344, 38611)
    assert log.mean_length == pytest.approx(1 + 38611 / 11043) and log.acceptance == pytest.approx(38611 / 88344)
    assert [round(p, 4) for p in log.per_position] == [0.7617, 0.6158, 0.5125, 0.4243, 0.364, 0.3094, 0.2722, 0.2365]


def test_sglang_accept_len_quoted_alone_is_read(tmp_path: Path) -> None:
    # The Decode batch line wrapped by the terminal: its figures on a line of their own.
    pasted = tmp_path / "sglang.txt"
    pasted.write_text("[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 4, #token: 8640, token usage: 0.02,\n"
                      "accept len: 1.02, accept rate: 0.01, cuda graph: True, gen throughput (token/s): 95.3\n"
                      "accept len: 1.03, accept rate: 0.01, cuda graph: True, gen throughput (token/s): 96.1\n",
                      encoding="utf-8")
    report = diagnose(log_files=[pasted])
    (log,) = report.logs
    assert log.runtime is Engine.sglang and log.mean_length == pytest.approx(1.025)
    assert report.causes and report.causes[0].code in ("HEAD_DISAGREES", "HEAD_QUANTIZED")


def test_two_runs_of_one_engine_are_each_judged(tmp_path: Path) -> None:
    # One paste, two llama-server runs under their commands: a head drafting at 0% (an IQ3_S-quantized head) and
    # a healthy one at 79%. Each run is its own entry, numbered with the line it starts on; the 0% run's cause is
    # named, the healthy run's figures are not added to it.
    zero = (CASE_LOGS / "llama.cpp-gsq-iq3s-mtp-head-zero.log").read_text(encoding="utf-8")
    healthy = LLAMA_HEALTHY.read_text(encoding="utf-8")
    pasted = tmp_path / "two.log"
    pasted.write_text("$ llama-server -m q-iq3s.gguf --spec-type draft-mtp\n" + zero.rstrip("\n") + "\n"
                      "$ llama-server -m q-q8.gguf --spec-type draft-mtp\n" + healthy, encoding="utf-8")
    report = diagnose(log_files=[pasted])
    alone = diagnose(log_files=[CASE_LOGS / "llama.cpp-gsq-iq3s-mtp-head-zero.log"]).logs[0]
    assert len(report.logs) == 2 and [log.path.rsplit("(", 1)[1] for log in report.logs] == [
        "run 1, from line 1)", f"run 2, from line {len(zero.splitlines()) + 2})"]
    first, second = report.logs
    assert (first.accepted, first.drafted) == (alone.accepted, alone.drafted)
    assert second.acceptance == diagnose(log_files=[LLAMA_HEALTHY]).logs[0].acceptance
    assert report.causes and all("run 1," in c.evidence[0] for c in report.causes[:1])
