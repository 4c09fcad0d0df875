"""`sweep --engine ... --serve` and `sweep --endpoint` (issue 24): vLLM and SGLang through the stand-in
server of tests/enginestub.py (their real metric names, label sets and log lines), llama.cpp through
the real llama-server started from the user's own command."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import psutil
import pytest
from cliproc import CLI, error_line, gone, reap, run_cli
from enginestub import StubState, serve_in_thread, write_prompts

from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.engines import spec_of
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.sweep import ProgressEvent, SweepOptions, run_sweep
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.progress import NOTE, RUN_DONE
from mtpinspect.sweep.records import RunRecord, ServerRecord
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model
from mtpinspect.vocabulary import Engine, Reasoning, RequestKind, RunStatus, ServerStatus

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "mtpinspect" / "schemas" / "sweep.schema.json").read_text())
STUB = str(Path(__file__).resolve().parent / "enginestub.py")
# 64 tokens: the first from the prompt, 63 from verification steps. With ACCEPTED = (3, 1, 0, 2) cycled and
# capped at n, n = 1 accepts 1, 1, 0, 1 per four steps (7 tokens): 9 rounds, 36 steps, 27 accepted.
N_PREDICT = 64
VLLM = f"{sys.executable} {STUB} vllm --port {{port}} --speculative-config '{{\"method\": \"mtp\", \"num_speculative_tokens\": {{n}}}}'"
SGLANG = (f"{sys.executable} {STUB} sglang --port {{port}} --speculative-algorithm EAGLE --speculative-num-steps {{n}} "
          "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4")


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    return write_prompts(tmp_path / "prompts.jsonl")


def _options(out: Path, prompts: Path, **changes: Any) -> SweepOptions:
    base = dict(n_max=(1, 3), repeat=1, prompts=prompts, n_predict=N_PREDICT, out_dir=out, plot=False)
    return SweepOptions(**{**base, **changes})


def _records(out: Path) -> tuple[list[RunRecord], list[ServerRecord]]:
    records = Journal(out / "runs.jsonl").read().records
    return ([RunRecord.from_dict(r) for r in records if r["kind"] == "run"],
            [ServerRecord.from_dict(r) for r in records if r["kind"] == "server"])


def _stubs_running() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if STUB in (proc.info["cmdline"] or []):
            found.append(proc)
    return found


# -- --serve on the stand-ins ------------------------------------------------------------------------


def test_vllm_serve_reads_its_counters_per_position_and_stops_every_server(tmp_path: Path, prompts: Path) -> None:
    out = tmp_path / "out"
    events: list[ProgressEvent] = []
    report = run_sweep(None, _options(out, prompts, engine=Engine.vllm, serve=VLLM), progress=events.append)
    jsonschema.validate(to_jsonable(report), SCHEMA)
    groups = {(g.configuration, g.prompt_class): g for g in report.results}
    one = groups[("n-max-1", "code")]
    assert (one.drafted, one.accepted, one.drafts) == (36, 27, 36) and one.acceptance == 0.75
    assert one.per_position == [0.75] and one.mean_length == 1.75
    three = groups[("n-max-3", "prose-en")]
    assert len(three.per_position) == 3 and three.per_position[0] > three.per_position[2]
    assert three.identical_to_baseline is True
    runs, servers = _records(out)
    assert all(r.status == RunStatus.ok for r in runs) and len(runs) == 6
    baseline = next(s for s in servers if s.n_max is None)
    assert not any(t.startswith("--speculative") for t in baseline.command)  # dropped by the tool itself
    assert any(e.phase == NOTE and e.message == "baseline ran: " + shlex.join(baseline.command) for e in events)
    assert report.server.version == "0.11.0" and report.server.command == baseline.command
    assert report.engine is not None and report.engine.engine is Engine.vllm
    n = report.recommendation.n_max
    assert n is not None and f'"num_speculative_tokens": {n}' in report.engine.setting
    assert report.engine.command is not None and f'"num_speculative_tokens": {n}}}' in " ".join(report.engine.command)
    assert all(Path(s.log_path).is_file() for s in servers)
    assert not _stubs_running()


def test_sglang_serve_reads_accept_len_from_its_log(tmp_path: Path, prompts: Path) -> None:
    out = tmp_path / "out"
    report = run_sweep(None, _options(out, prompts, n_max=(1,), engine=Engine.sglang, serve=SGLANG))
    one = next(g for g in report.results if g.configuration == "n-max-1" and g.prompt_class == "code")
    assert (one.drafted, one.accepted, one.drafts, one.mean_length) == (36, 27, 36, 1.75)
    runs, servers = _records(out)
    assert all("--enable-metrics" in s.command for s in servers)  # SGLang's /metrics is off without it
    assert "accept len (1.75)" in (next(r for r in runs if r.n_max == 1).log_mismatch or "")
    assert report.engine is not None and "--speculative-num-steps 1 " in report.engine.setting
    assert "--speculative-num-draft-tokens 2" in report.engine.setting


def test_vllm_v0_counters_without_drafts_or_positions(tmp_path: Path, prompts: Path) -> None:
    """vLLM's V0 engine published no num_drafts and no per-position counters: read the other form."""
    out = tmp_path / "out"
    report = run_sweep(None, _options(out, prompts, n_max=(1,), engine=Engine.vllm, serve=VLLM + " --v0"))
    one = next(g for g in report.results if g.configuration == "n-max-1" and g.prompt_class == "code")
    assert (one.drafted, one.accepted, one.drafts, one.mean_length, one.per_position) == (36, 27, 36, 1.75, [])


def test_a_server_that_exits_or_never_answers_fails_its_configuration_only(tmp_path: Path, prompts: Path) -> None:
    out = tmp_path / "out"
    good_baseline = f"{sys.executable} {STUB} vllm --port {{port}}"
    report = run_sweep(None, _options(out, prompts, n_max=(1,), engine=Engine.vllm, serve=VLLM + " --exit-at-start",
                                      serve_baseline=good_baseline))
    failure = next(f for f in report.failures if f.configuration == "n-max-1")
    assert "exited (exit code 1)" in failure.reason and "weights missing from checkpoint" in failure.reason
    assert report.runs.ok == 2  # the baseline ran
    out2 = tmp_path / "out2"
    began = time.monotonic()
    report = run_sweep(None, _options(out2, prompts, n_max=(1,), engine=Engine.vllm, serve=VLLM + " --load-seconds 60",
                                      serve_baseline=good_baseline, startup_timeout=2))
    assert time.monotonic() - began < 30
    failure = next(f for f in report.failures if f.configuration == "n-max-1")
    assert "did not answer /v1/models within 2 s" in failure.reason and "starting on port" in failure.reason
    assert not _stubs_running()


@pytest.mark.parametrize("template, needle", [
    (f"{sys.executable} {STUB} vllm --port {{port}}", "no {n} in it"),
    (f"{sys.executable} {STUB} vllm --speculative-config {{n}}", "no {port} in it"),
    ("vllm serve 'unclosed", "cannot split it"),
])
def test_bad_templates_are_one_line(tmp_path: Path, template: str, needle: str) -> None:
    proc = run_cli("sweep", "--engine", "vllm", "--serve", template, "--out", str(tmp_path / "o"), timeout=60)
    error_line(proc, needle)


def test_baseline_that_cannot_be_derived_asks_for_serve_baseline(tmp_path: Path) -> None:
    template = f"{sys.executable} {STUB} vllm --port {{port}} --max-num-seqs {{n}}"
    proc = run_cli("sweep", "--engine", "vllm", "--serve", template, "--out", str(tmp_path / "o"), timeout=60)
    error_line(proc, "--serve-baseline")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_signals_leave_no_engine_server_behind(tmp_path: Path, prompts: Path, sig: signal.Signals) -> None:
    """The signal comes while the user's server is loading (a minute here): it is stopped with its group."""
    proc = subprocess.Popen([*CLI, "sweep", "--engine", "vllm", "--serve", VLLM + " --load-seconds 60", "--prompts",
                             str(prompts), "--out", str(tmp_path / "out"), "--no-plot"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    stubs: list[psutil.Process] = []
    while not stubs and time.monotonic() < deadline:
        stubs = [p for p in _stubs_running() if p.ppid() == proc.pid]
        time.sleep(0.05)
    try:
        assert stubs, "the sweep started no server"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        assert all(gone(stub) for stub in stubs)
    finally:
        for stub in stubs:
            reap(stub)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr


# -- --endpoint ------------------------------------------------------------------------------------


def test_endpoint_reads_deltas_around_each_request_through_a_restart(tmp_path: Path, prompts: Path) -> None:
    """The running server restarts (its counters go back to zero) between two requests: the request after
    it is still measured exactly. Its draft length is read from its per-position counters."""
    state, baseline = StubState("vllm", 1), StubState("vllm", 0)
    server, url = serve_in_thread(state)
    base_server, base_url = serve_in_thread(baseline)
    restarted: list[int] = []

    def restart_after_first(event: ProgressEvent) -> None:
        if event.phase == RUN_DONE and event.configuration == "n-max 1" and not restarted:
            state.restart()
            restarted.append(1)

    try:
        report = run_sweep(None, _options(tmp_path / "out", prompts, n_max=(), repeat=2, endpoint=url,
                                          baseline_endpoint=base_url), progress=restart_after_first)
    finally:
        server.shutdown()
        base_server.shutdown()
    assert restarted
    runs, _ = _records(tmp_path / "out")
    mtp = [r for r in runs if r.n_max == 1]
    assert len(mtp) == 4 and all((r.drafted, r.accepted, r.drafts) == (36, 27, 36) for r in mtp)
    assert sum("restarted" in (r.log_mismatch or "") for r in mtp) == 1
    groups = {(g.configuration, g.prompt_class): g for g in report.results}
    assert groups[("n-max-1", "code")].acceptance == 0.75
    assert groups[("baseline", "code")].repeats_identical is True  # the temp-0 check: same prompt twice
    assert groups[("n-max-1", "code")].identical_to_baseline is True
    assert report.engine is not None and report.engine.command is None and report.server.path == url


def test_endpoint_sglang_uses_its_gauge(tmp_path: Path, prompts: Path) -> None:
    state = StubState("sglang", 1)
    server, url = serve_in_thread(state)
    try:
        report = run_sweep(None, _options(tmp_path / "out", prompts, n_max=(1,), endpoint=url))
    finally:
        server.shutdown()
    one = next(g for g in report.results if g.prompt_class == "code")
    assert one.mean_length == 1.75 and one.acceptance == 0.75
    assert report.recommendation.measured is False  # no baseline endpoint: nothing to compare with
    assert report.engine is not None and report.engine.engine is Engine.sglang


def test_endpoint_chat_requests_through_the_engines_template(tmp_path: Path, prompts: Path) -> None:
    """--request chat was refused with --engine, --serve and --endpoint; vLLM and SGLang users send chat. The
    sweep sends /v1/chat/completions, with --reasoning off as the template's enable_thinking, and measures as
    for completions; the report and the journal's settings say how requests were sent."""
    state = StubState("vllm", 1)
    server, url = serve_in_thread(state)
    try:
        report = run_sweep(None, _options(tmp_path / "out", prompts, n_max=(1,), endpoint=url,
                                          request=RequestKind.chat, reasoning=Reasoning.off))
    finally:
        server.shutdown()
    assert state.chat_bodies and all(b["messages"][0]["role"] == "user" for b in state.chat_bodies)
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in state.chat_bodies)
    assert {b["messages"][0]["content"] for b in state.chat_bodies} == {"def fibonacci(n):", "The history of the city"}
    runs, _ = _records(tmp_path / "out")
    assert runs and all(r.status == RunStatus.ok and r.text and r.settings["request"] == "chat" for r in runs)
    one = next(g for g in report.results if g.prompt_class == "code")
    assert one.acceptance == 0.75
    assert report.request is not None and report.request.sent.startswith("chat (/v1/chat/completions) through the engine's")


def test_endpoint_without_speculative_counters_says_what_it_found(tmp_path: Path) -> None:
    state = StubState("vllm", 2, spec_metrics=False)
    server, url = serve_in_thread(state)
    try:
        proc = run_cli("sweep", "--endpoint", url, "--n-max", "2", "--out", str(tmp_path / "o"), timeout=60)
    finally:
        server.shutdown()
    line = error_line(proc, "vllm server with /metrics", "none of speculative decoding", "--speculative-config")
    assert "vllm:generation_tokens" in line


def test_endpoint_that_is_not_an_llm_server(tmp_path: Path) -> None:
    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = run_cli("sweep", "--endpoint", f"http://127.0.0.1:{server.server_address[1]}", "--out",
                       str(tmp_path / "o"), timeout=60)
    finally:
        server.shutdown()
    error_line(proc, "not an OpenAI-compatible LLM server", "HTTP 404")


def test_endpoint_draft_length_must_be_known(tmp_path: Path) -> None:
    state = StubState("vllm", 2, v0=True)  # V0: no per-position counters to read the length from
    server, url = serve_in_thread(state)
    try:
        proc = run_cli("sweep", "--endpoint", url, "--out", str(tmp_path / "o"), timeout=60)
    finally:
        server.shutdown()
    error_line(proc, "--n-max N", "counters do not say")


# -- units -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine, template, kept", [
    (Engine.vllm, "vllm serve m --port {port} --speculative-config '{\"num_speculative_tokens\": {n}}' -tp 2",
     "vllm serve m --port {port} -tp 2"),
    (Engine.vllm, "vllm serve m --port {port} --speculative-config.num_speculative_tokens={n}", "vllm serve m --port {port}"),
    (Engine.sglang, "python -m sglang.launch_server --model m --speculative-algorithm NEXTN --speculative-num-steps={n} "
                    "--speculative-num-draft-tokens {n} --port {port}", "python -m sglang.launch_server --model m --port {port}"),
    (Engine.llama_cpp, "llama-server -m x --spec-type draft-mtp --spec-draft-n-max {n} --spec-draft-backend-sampling "
                       "-md y.gguf -ngl 99 --port {port}", "llama-server -m x -ngl 99 --port {port}"),
])
def test_baseline_drops_the_engines_speculative_options(engine: Engine, template: str, kept: str) -> None:
    assert " ".join(spec_of(engine).baseline_tokens(shlex.split(template))) == kept


# -- the whole path on the real llama-server ---------------------------------------------------------


@pytest.fixture(scope="module")
def server_binary() -> ServerBinary:
    return find_server(build=True, progress=print)


@pytest.mark.server
def test_llama_cpp_serve_with_the_users_own_command(server_binary: ServerBinary, tmp_path: Path, prompts: Path) -> None:
    model = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(acceptance="perfect"))[0]
    template = f"{shlex.quote(str(server_binary.path))} -m {{model}} --port {{port}} -np 1 --spec-type draft-mtp --spec-draft-n-max {{n}}"
    out = tmp_path / "out"
    report = run_sweep(model, _options(out, prompts, n_max=(1, 2), n_predict=32, engine=Engine.llama_cpp, serve=template))
    jsonschema.validate(to_jsonable(report), SCHEMA)
    groups = {(g.configuration, g.prompt_class): g for g in report.results}
    for n in (1, 2):
        group = groups[(f"n-max-{n}", "code")]
        assert group.acceptance == 1.0 and len(group.per_position) == n and group.drafted > 0
        assert group.log_agrees is True  # its counters and its own "draft acceptance" lines, as today
    runs, servers = _records(out)
    assert all(r.status == RunStatus.ok for r in runs) and all(s.status == ServerStatus.started for s in servers)
    baseline = next(s for s in servers if s.n_max is None)
    assert "--spec-type" not in baseline.command and "--metrics" in baseline.command
    assert str(model) in baseline.command
    # In llama-server's own options, whichever way the measurement went on this machine.
    n = report.recommendation.n_max
    assert report.engine is not None and report.engine.setting == (
        "leave speculative decoding off: run it without --spec-type and -md" if n is None
        else f"--spec-type draft-mtp --spec-draft-n-max {n}")
    assert not [p for p in psutil.Process().children(recursive=True) if "llama-server" in p.name()]


@pytest.mark.server
def test_serve_fills_model_with_a_built_in_models_file(server_binary: ServerBinary, tmp_path: Path, prompts: Path) -> None:
    """{model} of --serve is the built-in model's GGUF: "builtin:qwen35" itself means nothing to a server."""
    from mtpinspect.trained_model import QWEN35_GGUF

    template = f"{shlex.quote(str(server_binary.path))} -m {{model}} --port {{port}} -np 1 --spec-type draft-mtp --spec-draft-n-max {{n}}"
    out = tmp_path / "out"
    report = run_sweep("builtin:qwen35", _options(out, prompts, n_max=(1,), n_predict=8, engine=Engine.llama_cpp, serve=template))
    runs, servers = _records(out)
    assert servers and all(s.status == ServerStatus.started for s in servers), servers
    assert all(str(QWEN35_GGUF.resolve()) in s.command for s in servers)
    assert report.runs.ok == len(runs) > 0


# -- diagnose --endpoint ---------------------------------------------------------------------------

DIAGNOSE_SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "mtpinspect" / "schemas" / "diagnose.schema.json").read_text())


def _diagnose(*states: StubState, extra: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    servers = [serve_in_thread(state) for state in states]
    urls = [url for _, url in servers]
    args = ["diagnose", "--endpoint", urls[0], *(("--baseline-endpoint", urls[1]) if len(urls) > 1 else ()), *extra]
    try:
        return run_cli(*args, "--format", "json", timeout=120), urls
    finally:
        for server, _ in servers:
            server.shutdown()


def test_diagnose_endpoint_measures_a_healthy_head_and_checks_determinism() -> None:
    # A healthy head: 11 of 12 drafts accepted, on the copy class too (diagnosis/head_rules.py); the stub's
    # default, half, is a weak head there.
    proc, urls = _diagnose(StubState("vllm", 3, accepted=(3, 3, 2, 3)), StubState("vllm", 0))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, DIAGNOSE_SCHEMA)
    assert doc["endpoint"] == urls[0] and doc["probe"]["server"]["version"] == "vllm 0.11.0"
    mtp = [f for f in doc["probe"]["results"] if f["n_max"] == 3]
    assert {f["prompt_class"] for f in mtp} == {"code", "prose-en", "copy"}
    assert all(len(f["per_position"]) == 3 and f["acceptance"] > 0.4 for f in mtp)
    notes = "\n".join(doc["notes"])
    assert f"temp-0 determinism on {urls[1]}, baseline, code: the same prompt twice gave identical text" in notes
    assert f"on {urls[0]}, n-max 3, code: the baseline's text exactly" in notes


@pytest.mark.parametrize(("engine", "words"), [("vllm", "try the latest vLLM release"),
                                               ("sglang", "try the latest SGLang release")])
def test_diagnose_endpoint_with_a_head_that_never_agrees(engine: str, words: str) -> None:
    # SGLang's counters do not give the draft length: said with --n-max, as its user would.
    extra = ("--n-max", "3") if engine == "sglang" else ()
    proc, _ = _diagnose(StubState(engine, 3, accepted=(0,)), StubState(engine, 0), extra=extra)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, DIAGNOSE_SCHEMA)
    assert doc["probe"]["server"]["engine"] == engine
    assert doc["causes"][0]["code"] == "HEAD_DISAGREES"
    assert all(f["acceptance"] == 0.0 for f in doc["probe"]["results"] if f["n_max"] == 3)
    # The fix is said for the engine measured, not as a llama.cpp re-export.
    fix = doc["causes"][0]["fix"]
    assert words in fix and "convert_hf_to_gguf" not in fix, fix


def test_diagnose_endpoint_without_speculative_counters() -> None:
    proc, _ = _diagnose(StubState("sglang", 2, spec_metrics=False))
    error_line(proc, "sglang server with /metrics", "none of speculative decoding", "--speculative-algorithm")


def test_endpoint_marks_a_request_that_ran_beside_other_traffic(tmp_path: Path, prompts: Path) -> None:
    state = StubState("vllm", 2)
    server, url = serve_in_thread(state)

    def someone_else(event: ProgressEvent) -> None:
        if event.phase == RUN_DONE and event.prompt_id == "c1":
            # Lands in the next request's window: the scrape after c1 has already been taken.
            state.generate("another user's prompt", 10)

    try:
        run_sweep(None, _options(tmp_path / "out", prompts, n_max=(2,), endpoint=url), progress=someone_else)
    finally:
        server.shutdown()
    runs, _ = _records(tmp_path / "out")
    second = next(r for r in runs if r.prompt_id == "e1")
    assert "other requests ran meanwhile" in (second.log_mismatch or "")
    assert not (next(r for r in runs if r.prompt_id == "c1").log_mismatch or "")


@pytest.mark.parametrize("args, needle", [
    (["--serve", VLLM], "--engine"),
    (["--engine", "vllm", "--serve", VLLM, "--endpoint", "http://127.0.0.1:9"], "one of them"),
    (["--engine", "vllm", "--serve", VLLM, "--synthetic", "0.5"], "--synthetic"),
    (["--engine", "vllm", "--serve", VLLM, "--", "-ngl", "99"], "put them in the command"),
    (["--engine", "vllm", "--serve", VLLM, "--baseline-endpoint", "http://127.0.0.1:9"], "--serve-baseline"),
    (["--endpoint", "ftp://example.invalid"], "not an http"),
])
def test_option_mixups_are_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    error_line(run_cli("sweep", *args, "--out", str(tmp_path / "o"), timeout=60), needle)


def test_endpoint_of_another_engine_than_said(tmp_path: Path) -> None:
    server, url = serve_in_thread(StubState("vllm", 2))
    try:
        proc = run_cli("sweep", "--engine", "sglang", "--endpoint", url, "--out", str(tmp_path / "o"), timeout=60)
    finally:
        server.shutdown()
    error_line(proc, f"{url} is a vllm server")


@pytest.mark.server
def test_llama_cpp_endpoint_measured_without_restarting_it(server_binary: ServerBinary, tmp_path: Path,
                                                          prompts: Path) -> None:
    from mtpinspect.runtime.server import LlamaServer

    model = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(acceptance="perfect"))[0]
    with LlamaServer(server_binary, model, ["--spec-type", "draft-mtp", "--spec-draft-n-max", "2"],
                     log_path=tmp_path / "server.log") as server:
        report = run_sweep(None, _options(tmp_path / "out", prompts, n_max=(2,), n_predict=32, endpoint=server.url))
        assert server.alive()  # measured, not restarted or stopped
    group = next(g for g in report.results if g.prompt_class == "code")
    assert group.acceptance == 1.0 and len(group.per_position) == 2
    assert report.engine is not None and report.engine.engine is Engine.llama_cpp and report.server.path == server.url


def test_diagnose_endpoint_whose_mtp_text_differs_points_to_drift() -> None:
    """The determinism lines say where the text differs, in vLLM's terms, and name the drift command that judges it."""
    proc, urls = _diagnose(StubState("vllm", 3, mtp_output=("answer",)), StubState("vllm", 0))
    assert proc.returncode in (0, 1), proc.stderr
    notes = "\n".join(json.loads(proc.stdout)["notes"])
    assert f"on {urls[0]}, n-max 3, code: differs from the baseline's text from character" in notes
    assert f"`mtpinspect drift --endpoint {urls[0]}` says whether it is one" in notes
    assert "vLLM's GPU kernels" in notes and "`mtpinspect drift` measures which trigger" in notes
