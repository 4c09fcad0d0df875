"""Each method and condition measured on its own (issue 43): independent rounds for a method with state
across requests, different prompts for concurrent requests, the time to the first token as the client sees
it, stopping at once with requests in flight, and ids and output paths checked before the first run.

Pure tests of the plan and the statistics first, then the HTTP client against a loopback stream, the CLI's
one-line refusals, and the real llama-server.
"""

from __future__ import annotations

import http.server
import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cliproc import CLI, error_line, run_cli

from mtpinspect.runtime.http import Cancel, HttpFailure, request
from mtpinspect.sweep.plan import Method, build_plan, conditions, configurations
from mtpinspect.sweep.prompts import Prompt
from mtpinspect.sweep.records import RunRecord
from mtpinspect.sweep.statistics import summarize
from mtpinspect.vocabulary import RunStatus

PROMPTS = [Prompt("c1", "code", "def fibonacci(n):"), Prompt("c2", "code", "SELECT name FROM"),
           Prompt("c3", "code", "#include <stdio.h>"), Prompt("p1", "prose", "Once upon a time")]


# -- the plan (pure) ------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["rounds", "grouped"])
def test_a_method_with_state_across_requests_starts_every_round_on_a_fresh_server(order: str) -> None:
    """ngram-mod's n-gram map outlives a request: round 2 on round 1's server would replay round 1's answers.
    Every other setting keeps sharing a server where its rounds meet."""
    configs = configurations([2], methods=[(Method.draft_mtp, None), (Method.ngram_mod, None)])
    plan = build_plan(configs, PROMPTS, 3, order=order)
    ngram = [v for v in plan.visits if v.configuration.method is Method.ngram_mod and v.configuration.n_max]
    assert len(ngram) == 3
    assert [sorted({r.repeat for r in v.runs}) for v in ngram] == [[0], [1], [2]]
    others = [v for v in plan.visits if not v.configuration.keeps_state]
    assert any(len({r.repeat for r in v.runs}) > 1 for v in others)  # rounds meet and share a start
    assert configs[2].keeps_state and not configs[1].keeps_state and not configs[0].keeps_state


def test_concurrent_requests_are_different_prompts_of_the_class() -> None:
    """At --concurrency N the N requests were N copies of one prompt, so pooled acceptance equalled the single
    request's by construction. Now: the run's prompt and the next ones of its class, cycled."""
    configs = configurations([2], conditions=conditions([3, 4], [0.0]))
    plan = build_plan(configs, PROMPTS, 1)
    for visit in plan.visits:
        for run in visit.runs:
            ids = [p.id for p in run.prompts]
            assert len(ids) == run.configuration.condition.concurrency
            assert {p.prompt_class for p in run.prompts} == {run.prompt.prompt_class}
            assert ids[0] == run.prompt.id
            if run.prompt.prompt_class == "code":
                assert len(set(ids[:3])) == 3  # three prompts in the class: three different requests
    run = next(r for v in plan.visits for r in v.runs if v.configuration.condition.concurrency == 4
               and r.prompt.id == "c2")
    assert [p.id for p in run.prompts] == ["c2", "c3", "c1", "c2"]  # cycled where the class has fewer
    single = build_plan(configurations([2]), PROMPTS, 1).visits[0].runs[0]
    assert [p.id for p in single.prompts] == [single.prompt.id]


def _record(prompt_ms: float, first_token_ms: list[float]) -> RunRecord:
    return RunRecord(configuration="baseline", n_max=None, synthetic=None, prompt_id="c1", prompt_class="code",
                     repeat=0, server_id="s", status=RunStatus.ok, error=None, wall_seconds=1.0, settings={},
                     finished_at=0.0, decode_tokens_per_second=10.0, prompt_ms=prompt_ms,
                     per_request_prompt_ms=[prompt_ms], per_request_first_token_ms=first_token_ms)


def test_ttft_is_the_clients_time_to_the_first_token_not_the_servers_prompt_time() -> None:
    """TTFT was timings.prompt_ms. A client waits for queueing, tokenization and the first decode step too:
    TTFT is what the client timed, the server's prompt time stands beside it under its own name, and a run
    with no client timing has no TTFT (never the prompt time in its place)."""
    configs = configurations([1])[:1]
    (group,) = summarize([_record(4.0, [55.0]), _record(6.0, [65.0])], [], configs, ["code"])
    assert group.ttft_ms is not None and group.ttft_ms.median == 60.0
    assert group.prompt_ms is not None and group.prompt_ms.median == 5.0
    (untimed,) = summarize([_record(4.0, [])], [], configs, ["code"])
    assert untimed.ttft_ms is None and untimed.prompt_ms is not None


# -- bad settings and output paths: one line, before the first run ------------------------------------


@pytest.mark.parametrize(("args", "needles"), [
    (["--temperature", "0.7,0.70000001"], ["0.7", "0.70000001", "recorded as temperature 0.7"]),
    (["--method", "draft:{a},draft:{b}"], ["both draft models are named d"]),
])
def test_settings_that_would_share_an_id_are_refused_up_front(tmp_path: Path, args: list[str],
                                                              needles: list[str]) -> None:
    """Two settings that rendered to one id merged their runs into one row and lost one model's figures."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "d.gguf").write_bytes(b"GGUF")
    args = [a.format(a=tmp_path / "a" / "d.gguf", b=tmp_path / "b" / "d.gguf") for a in args]
    error_line(run_cli("sweep", "--out", str(tmp_path / "out"), "--server", "/nonexistent/llama-server", *args),
               *needles)
    assert not (tmp_path / "out" / "runs.jsonl").exists()


@pytest.mark.parametrize("plant", ["under-a-file", "symlink"])
def test_a_bad_mtp_bench_folder_is_refused_before_the_first_run(tmp_path: Path, plant: str) -> None:
    """--mtp-bench-json DIR under a file, or with a link planted where a configuration's file goes, was found
    after every run, and then report.json and the plot were not written either."""
    if plant == "under-a-file":
        (tmp_path / "file").write_text("x")
        folder, needle = tmp_path / "file" / "bench", "is a file"
    else:
        folder = tmp_path / "bench"
        folder.mkdir()
        (tmp_path / "precious").write_text("the user's\n")
        (folder / "baseline.json").symlink_to(tmp_path / "precious")
        needle = "symbolic link"
    proc = run_cli("sweep", "--out", str(tmp_path / "out"), "--server", "/nonexistent/llama-server", "--n-max", "1",
                   "--mtp-bench-json", str(folder))
    error_line(proc, str(folder), needle)
    assert "llama-server" not in proc.stderr.split(": error: ")[-1].split(str(folder))[0]
    if plant == "symlink":
        assert (tmp_path / "precious").read_text() == "the user's\n"


def test_drift_refuses_a_symlinked_logs_folder_as_sweep_does(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "logs").symlink_to(elsewhere)
    for command in ("drift", "sweep"):
        error_line(run_cli(command, "--out", str(out), "--server", "/nonexistent/llama-server"),
                   str(out / "logs"), "symbolic link")
    assert list(elsewhere.iterdir()) == []


# -- requests in flight are cut at once -----------------------------------------------------------------


class _SlowStream(http.server.BaseHTTPRequestHandler):
    """Streams one event, then nothing for a minute: a request a stop must not wait for."""

    def do_POST(self) -> None:  # noqa: N802 (the handler's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b'data: {"content": "x"}\n\n')
        self.wfile.flush()
        time.sleep(60)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def slow_stream() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowStream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_cancel_cuts_every_request_in_flight_at_once(slow_stream: str) -> None:
    """Ctrl-C at --concurrency 4 waited 16 s for every request in flight. Four streamed requests, each 60 s
    from its end: the cancel returns all four within a second, each saying it was cancelled, and the time
    to the first event was read before it."""
    cancel = Cancel()
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(request, "POST", slow_stream + "/completion", timeout=120, body=b"{}",
                               cancel=cancel, first=lambda line: line.startswith(b"data:")) for _ in range(4)]
        time.sleep(0.5)
        began = time.monotonic()
        cancel.cancel()
        errors = []
        for future in futures:
            with pytest.raises(HttpFailure) as caught:
                future.result(timeout=5)
            errors.append(caught.value)
        elapsed = time.monotonic() - began
    assert elapsed < 1.0
    assert all(e.kind == "cancelled" for e in errors)
    with pytest.raises(HttpFailure, match="cancelled"):
        request("POST", slow_stream + "/completion", timeout=5, body=b"{}", cancel=cancel)


# -- the real llama-server ---------------------------------------------------------------------------

N_PREDICT = 24


def _journal_runs(out: Path) -> list[RunRecord]:
    lines = (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    return [RunRecord.from_dict(r) for r in map(json.loads, lines) if r.get("kind") == "run"]


@pytest.mark.server
def test_ngram_mod_rounds_do_not_replay_each_other(tmp_path: Path) -> None:
    """ngram-mod drafted little in round 0 and, on the same server, replayed round 0's answers in round 1
    (acceptance 1.00). Each round now starts clean: on the same prompt, round 1 drafts what round 0 drafted."""
    from mtpinspect.sweep import SweepOptions, run_sweep

    out = tmp_path / "out"
    report = run_sweep(None, SweepOptions(n_max=(8,), repeat=2, prompts="code", n_predict=64, out_dir=out,
                                          plot=False, methods=("ngram-mod",)))
    runs = [r for r in _journal_runs(out) if r.configuration == "ngram-mod-n-max-8"]
    assert len(runs) == 6 and all(r.status == RunStatus.ok for r in runs), [r.error for r in runs]
    by_round = {(r.prompt_id, r.repeat): r for r in runs}
    for prompt_id in {r.prompt_id for r in runs}:
        first, second = by_round[(prompt_id, 0)], by_round[(prompt_id, 1)]
        assert first.text == second.text
        assert (second.drafted, second.accepted) == (first.drafted, first.accepted), prompt_id
    assert len({r.server_id for r in runs}) == 2  # a server per round
    assert report.rounds is not None and "fresh llama-server for every round" in report.rounds


@pytest.mark.server
def test_concurrent_requests_differ_and_are_counted_each(tmp_path: Path) -> None:
    """Three requests at once are the class's three prompts; each one's drafted and accepted counts are its own
    (they differ), their sum is the run's and agrees with /metrics and the log."""
    from mtpinspect.sweep import SweepOptions, run_sweep

    out = tmp_path / "out"
    run_sweep(None, SweepOptions(n_max=(2,), repeat=1, prompts="code", n_predict=N_PREDICT, out_dir=out,
                                 plot=False, concurrency=(3,)))
    runs = [r for r in _journal_runs(out) if r.configuration == "n-max-2@c3"]
    assert runs and all(r.status == RunStatus.ok for r in runs), [r.error for r in runs]
    for run in runs:
        assert len(set(run.per_request_prompt_ids)) == 3
        assert sum(run.per_request_drafted) == run.drafted == run.metrics_drafted
        assert sum(run.per_request_accepted) == run.accepted == run.metrics_accepted
        assert run.log_agrees is True
    assert any(len(set(r.per_request_drafted)) > 1 or len(set(r.per_request_accepted)) > 1 for r in runs)


@pytest.mark.server
def test_ttft_is_timed_by_the_client_beside_the_prompt_time(tmp_path: Path) -> None:
    from mtpinspect.sweep import SweepOptions, run_sweep

    out = tmp_path / "out"
    report = run_sweep(None, SweepOptions(n_max=(2,), repeat=1, prompts="code", n_predict=8, out_dir=out,
                                          plot=False, long_prompt=1500))
    for run in _journal_runs(out):
        assert len(run.per_request_first_token_ms) == 1 and len(run.per_request_prompt_ms) == 1
        # The client's wait holds the server's prompt time and more (the first decode step, the HTTP).
        assert run.per_request_first_token_ms[0] > run.per_request_prompt_ms[0]
        assert run.per_request_first_token_ms[0] < run.wall_seconds * 1000.0
    group = next(g for g in report.results if g.prompt_class == "long" and g.n_max is None)
    assert group.ttft_ms is not None and group.prompt_ms is not None
    assert group.ttft_ms.median > group.prompt_ms.median


@pytest.mark.server
def test_sigterm_at_concurrency_4_stops_within_2_s_and_resume_completes(tmp_path: Path) -> None:
    """SIGTERM with four requests in flight took 16 s (every request waited for). The sweep stops within
    2 s, keeps the runs it finished, and --resume measures the rest."""
    out = tmp_path / "out"
    prompt = tmp_path / "code.txt"  # one prompt: two runs (baseline, n-max 2), the second stopped in flight
    prompt.write_text("def fibonacci(n):", encoding="utf-8")
    # Long enough answers that the second run is still in flight a moment after the first is journalled.
    args = ["sweep", "--out", str(out), "--n-max", "2", "--repeat", "1", "--prompts", str(prompt), "--n-predict",
            "800", "--concurrency", "4", "--no-plot"]
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = out / "runs.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and '"kind":"run"' in journal.read_text(encoding="utf-8"):
            break
        time.sleep(0.05)
    time.sleep(0.3)  # the next run's four requests in flight
    assert proc.poll() is None
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert time.monotonic() - began < 2.0
    kept = [r for r in _journal_runs(out) if r.status == RunStatus.ok]
    assert kept
    done = run_cli(*args, "--resume", timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    finished = {(r.configuration, r.prompt_id) for r in _journal_runs(out) if r.status == RunStatus.ok}
    assert len(finished) == 2


def _stats(method: str | None, n_max: int | None, tps: float, spread: float = 0.01, **figures: Any) -> Any:
    from mtpinspect.sweep.statistics import GroupStats, Spread

    setting = "off" if n_max is None else (f"n-max {n_max}" if method == "draft-mtp" else f"{method} n-max {n_max}")
    return GroupStats(
        configuration=setting, label=setting, n_max=n_max, synthetic=None, prompt_class="code", runs=3, failed=0,
        error=None, tokens_per_second=Spread(tps, tps * (1 - spread), tps * (1 + spread)),
        prompt_tokens_per_second=None, speedup=None, within_noise=None, acceptance=figures.get("acceptance"),
        mean_length=figures.get("mean_length"), first_position_acceptance=None, expected_length=None,
        per_position=[], drafted=0, accepted=0, drafts=0, checkpoint_restores=None, rss_peak_bytes=figures.get("rss"),
        rss_post_load_bytes=None,
        gpu_memory_bytes=None, repeats_identical=None, identical_to_baseline=None, first_divergence=None,
        log_agrees=None, method=method, setting=setting, ttft_ms=Spread(40.0, 30.0, 50.0))


def test_methods_side_by_side_in_one_table_with_a_winner_per_class() -> None:
    """Seed 001's comparison: MTP, a draft model and n-gram drafting on the same prompts, each method's fastest
    n-max with tok/s, acceptance, mean length, client TTFT and peak memory, and the winner (beyond noise)."""
    from mtpinspect.sweep.statistics import compare_methods

    groups = [_stats(None, None, 100.0), _stats("draft-mtp", 2, 150.0, acceptance=0.7, mean_length=2.4, rss=97),
              _stats("draft-mtp", 3, 140.0), _stats("draft", 2, 130.0, acceptance=0.9, rss=300),
              _stats("ngram-mod", 2, 101.0, spread=0.05, acceptance=1.0)]
    for group in groups[1:]:
        group.speedup = group.tokens_per_second.median / 100.0
        group.within_noise = group.tokens_per_second.overlaps(groups[0].tokens_per_second)
    (table,) = compare_methods(groups, ["code"])
    assert [(r.method, r.setting) for r in table.rows] == [("off", "off"), ("draft-mtp", "n-max 2"),
                                                            ("draft", "draft n-max 2"), ("ngram-mod", "ngram-mod n-max 2")]
    mtp = table.rows[1]
    assert (mtp.tokens_per_second, mtp.acceptance, mtp.mean_length, mtp.ttft_ms, mtp.rss_peak_bytes) == (
        150.0, 0.7, 2.4, 40.0, 97)
    assert table.winner == "n-max 2"
    assert compare_methods(groups[:3], ["code"]) == []  # one method: no comparison table
