"""`mtpinspect drift` against the real llama-server on the built-in trained model (short settings), and a
breakdown judged through the engine stand-in (tests/enginestub.py) whose MTP runs go wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from cliproc import error_line, run_cli
from enginestub import write_prompts

from mtpinspect.drift import DriftOptions, run_drift
from mtpinspect.drift.compare import BreakdownKind, Judgement, analyse, steps_of
from mtpinspect.drift.plan import Trigger
from mtpinspect.jsonable import to_jsonable
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.prompts import load_builtin
from mtpinspect.vocabulary import Engine

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "mtpinspect" / "schemas" / "drift.schema.json")
                    .read_text(encoding="utf-8"))
STUB = str(Path(__file__).resolve().parent / "enginestub.py")
VLLM = f"{sys.executable} {STUB} vllm --port {{port}} --speculative-config '{{\"method\": \"mtp\", \"num_speculative_tokens\": {{n}}}}'"


@pytest.mark.server
def test_drift_on_the_built_in_model_holds_each_trigger_alone(tmp_path: Path) -> None:
    """Short settings (3 prompts, 48 tokens): the control, a restart and MTP at -t 1 give the baseline's
    text exactly on CPU, every pass's answers are journalled, and the report follows its schema."""
    prompts = load_builtin()[:3]
    report = run_drift(None, DriftOptions(prompts=prompts, n_predict=48, n_max=(2,), threads=2, out_dir=tmp_path / "out"))
    by_trigger = {c.trigger: c for c in report.comparisons}
    assert set(by_trigger) == {Trigger.control, Trigger.restart, Trigger.mtp, Trigger.batch, Trigger.slots,
                               Trigger.threads}
    for trigger in (Trigger.control, Trigger.restart, Trigger.mtp):
        assert (by_trigger[trigger].matching, by_trigger[trigger].compared) == (3, 3), trigger
    mtp = by_trigger[Trigger.mtp]
    assert mtp.acceptance is not None and 0 < mtp.acceptance <= 1
    assert report.failures == [] and report.tiny_model
    command = " ".join(report.server.command)
    assert command.endswith("-np 1 -t 1") and "-c 8192" in command
    records = Journal(tmp_path / "out" / "drift.jsonl").read().records
    answers = [r for r in records if r["kind"] == "drift-answer"]
    assert len(answers) == 7 * 3  # baseline, again, n-max-2, restart, one-by-one, at-once, threads-2
    assert {r["server"] for r in records if r["kind"] == "drift-server"} == {
        "baseline", "n-max-2", "restart", "slots-3", "threads-2"}
    reference = [r for r in answers if r["pass_id"] == "baseline"]
    assert all(r["probabilities"] and len(r["probabilities"]) == 48 for r in reference)
    assert all(r["probabilities"] is None for r in answers if r["pass_id"] == "n-max-2")
    doc = json.loads((tmp_path / "out" / "drift.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, SCHEMA)
    assert doc == json.loads(json.dumps(to_jsonable(report)))


@pytest.mark.server
def test_a_flip_to_the_real_second_choice_is_placed_on_the_real_token(tmp_path: Path) -> None:
    """The baseline's real tokens and candidates: a text that takes the second choice at token 10 is found
    at that token, with those candidates, as taking the second choice."""
    run_drift(None, DriftOptions(prompts=load_builtin()[:1], n_predict=24, n_max=(1,), slots=1, threads=0,
                                 out_dir=tmp_path / "out"))
    answer = next(r for r in Journal(tmp_path / "out" / "drift.jsonl").read().records
                  if r.get("pass_id") == "baseline")
    steps = steps_of(answer["probabilities"])
    assert steps is not None and len(steps) == 24
    start = len(b"".join(s.token.encode() for s in steps[:10]).decode("utf-8", errors="ignore"))
    first, second = steps[10].candidates[:2]
    other = answer["text"][:start] + second.token + " and on"
    found = analyse("p", answer["text"], other, steps, answer["prompt_tokens"])
    assert found is not None
    assert found.token == 10 and found.context_position == answer["prompt_tokens"] + 10
    assert found.candidates == [first, second] and found.took_second is True
    assert found.margin == pytest.approx(first.logprob - second.logprob)


def test_mtp_runs_that_loop_empty_or_change_an_answer_are_breakdowns(tmp_path: Path) -> None:
    """Through the stand-in: its MTP server answers a loop, nothing, a changed number, and a flip to the
    second choice at a near-tie; the baseline's passes, its restart and its batch are the same text. drift
    reads the baseline's candidates from the OpenAI API's logprobs, judges the first three breakdowns (sent to
    diagnose) and the flip a near-tie; the CLI exits 1 on a breakdown."""
    prompts = tmp_path / "prompts.jsonl"
    items = [{"id": f"p{i}", "class": "code", "prompt": f"question {i}: what is {i} + {i}?"} for i in range(4)]
    prompts.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    serve = VLLM + " --mtp-output loop,empty,answer,flip"
    report = run_drift(None, DriftOptions(prompts=str(prompts), n_predict=24, n_max=(2,), engine=Engine.vllm,
                                          serve=serve, out_dir=tmp_path / "out", startup_timeout=60))
    by_trigger = {c.trigger: c for c in report.comparisons}
    for trigger in (Trigger.control, Trigger.restart, Trigger.batch):
        assert by_trigger[trigger].matching == 4, trigger
    mtp = by_trigger[Trigger.mtp]
    assert mtp.matching == 0
    found = {d.prompt_id: d for d in mtp.divergences}
    assert [found[p].judgement for p in ("p0", "p1", "p2", "p3")] == [Judgement.breakdown] * 3 + [Judgement.near_tie]
    assert BreakdownKind.loop in found["p0"].breakdown and BreakdownKind.empty in found["p1"].breakdown
    assert found["p2"].breakdown == [BreakdownKind.number] and found["p2"].took_second is False
    flip = found["p3"]
    assert (flip.token, flip.context_position, flip.took_second) == (8, 3 + 8, True)  # the stub's usage: 3 prompt tokens
    assert flip.margin == pytest.approx(0.001)
    assert mtp.acceptance is not None and 0 < mtp.acceptance < 1  # from vLLM's counters around the pass
    assert "MTP broke output on p0, p1, p2" in report.answer and "mtpinspect diagnose" in report.answer
    assert Trigger.threads not in by_trigger and Trigger.slots not in by_trigger  # the engine's own
    jsonschema.validate(json.loads((tmp_path / "out" / "drift.json").read_text(encoding="utf-8")), SCHEMA)
    proc = run_cli("drift", "--engine", "vllm", "--serve", serve, "--prompts", str(prompts), "--n-predict", "24",
                   "--n-max", "2", "--out", str(tmp_path / "cli"), timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "breakdown (loop)" in proc.stdout and "near-tie (then number)" in proc.stdout
    assert "mtpinspect diagnose" in proc.stdout


def test_an_endpoint_says_what_it_cannot_measure(tmp_path: Path) -> None:
    """A running server with MTP on and no baseline: the control and batching only, the rest said; progress
    counts every request; --format csv is one row per trigger."""
    from enginestub import StubState, serve_in_thread

    from mtpinspect.sweep.progress import RUN_DONE, ProgressEvent

    server, url = serve_in_thread(StubState("vllm", 2))
    events: list[ProgressEvent] = []
    prompts = str(write_prompts(tmp_path / "p.jsonl"))
    try:
        report = run_drift(None, DriftOptions(prompts=prompts, n_predict=16, endpoint=url, n_max=(2,),
                                              out_dir=tmp_path / "out"), progress=events.append)
        proc = run_cli("drift", "--endpoint", url, "--n-max", "2", "--prompts", prompts, "--n-predict", "16",
                       "--out", str(tmp_path / "csv"), "--format", "csv", timeout=60)
    finally:
        server.shutdown()
    assert {c.trigger for c in report.comparisons} == {Trigger.control, Trigger.batch}
    assert any("restart" in line for line in report.not_measured)
    assert any("--baseline-endpoint" in line for line in report.not_measured)
    done = [e for e in events if e.phase == RUN_DONE]
    assert len(done) == 4 * 2 and done[-1].done == done[-1].total == 8  # 4 passes of 2 prompts
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "trigger,kind,change,same text,matching,compared,acceptance,differences"
    assert [line.split(",")[1] for line in lines[1:]] == ["control", "batch"]


def test_requests_that_fail_are_recorded_and_not_compared(tmp_path: Path) -> None:
    """A server whose completions are malformed: every request is journalled with its reason, no prompt is
    compared (never as an empty text), and the command exits 1 with the failures shown."""
    from enginestub import StubState, serve_in_thread

    server, url = serve_in_thread(StubState("vllm", 2, fault="bad-usage"))
    prompts = str(write_prompts(tmp_path / "p.jsonl"))
    try:
        report = run_drift(None, DriftOptions(prompts=prompts, n_predict=16, endpoint=url, n_max=(2,),
                                              out_dir=tmp_path / "out"))
        proc = run_cli("drift", "--endpoint", url, "--n-max", "2", "--prompts", prompts, "--n-predict", "16",
                       "--out", str(tmp_path / "cli"), timeout=60)
    finally:
        server.shutdown()
    assert all(c.compared == 0 and c.divergences == [] for c in report.comparisons)
    assert len(report.failures) == 4 * 2 and all("usage.completion_tokens" in f for f in report.failures)
    answers = [r for r in Journal(tmp_path / "out" / "drift.jsonl").read().records if r["kind"] == "drift-answer"]
    assert len(answers) == 8 and all(r["status"] == "error" and r["error"] for r in answers)
    assert proc.returncode == 1 and "0 / 0 (of 2)" in proc.stdout and "Failures" in proc.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (["--", "-t", "4"], "--threads"),
    (["--", "-np", "4"], "-np"),
    (["--slots", "0"], "--slots"),
    (["--threads", "-1"], "--threads"),
    (["--n-predict", "1"], "--n-predict"),
    (["--n-max", "x"], "--n-max"),
    (["--engine", "vllm", "--serve", VLLM, "--threads", "2"], "--threads"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    error_line(run_cli("drift", "--out", str(tmp_path / "o"), *args, timeout=60), needle)


@pytest.mark.server
def test_servers_that_fail_to_start_alike_stop_the_run_in_one_line(tmp_path: Path) -> None:
    """Every llama-server refuses an unknown flag: the first two failures, the same reason, stop the run; the
    starts are journalled with their reason and the command says so in one line, exit 2."""
    out = tmp_path / "o"
    proc = run_cli("drift", "--prompts", "code", "--n-max", "1", "--threads", "0", "--out", str(out),
                   "--", "--no-such-flag", timeout=120)
    line = error_line(proc, "failed to start for the same reason")
    assert "baseline and n-max-1" in line
    starts = [r for r in Journal(out / "drift.jsonl").read().records if r["kind"] == "drift-server"]
    assert [(r["server"], r["status"]) for r in starts] == [("baseline", "failed"), ("n-max-1", "failed")]
    assert all("--no-such-flag" in r["reason"] for r in starts)
    doc = json.loads((out / "drift.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, SCHEMA)
    assert all(c["compared"] == 0 for c in doc["comparisons"])
