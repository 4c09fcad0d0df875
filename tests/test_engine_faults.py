"""Hostile engine servers (issue 29, defects 4-6, 15-17 and the --endpoint ones decided in docs/faults.md):
the stand-in of tests/enginestub.py in its fault modes, measured through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from cliproc import CLI, error_line, gone, reap, run_cli
from enginestub import StubState, serve_in_thread, write_prompts

from mtpinspect.sweep.journal import Journal


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    return write_prompts(tmp_path / "prompts.jsonl")


def _sweep(state: StubState, out: Path, prompts: Path, *extra: str, url_of=lambda url: url,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`sweep --endpoint` at the stand-in (served from this process), 16 tokens a request, one round."""
    server, url = serve_in_thread(state)
    try:
        return run_cli("sweep", "--endpoint", url_of(url), "--n-max", str(state.n), "--prompts", str(prompts),
                       "--n-predict", "16", "--repeat", "1", "--no-plot", "--out", str(out), *extra, timeout=timeout)
    finally:
        server.shutdown()


def _ran(proc: subprocess.CompletedProcess[str]) -> None:
    """The sweep finished (0, or 1: no setting to recommend without a baseline), with no traceback."""
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-2000:])


def _runs(out: Path) -> list[dict]:
    return [r for r in Journal(out / "runs.jsonl").read().records if r["kind"] == "run"]


# -- 4: a position label of 5,000 digits ----------------------------------------------------------


def test_a_position_label_of_5000_digits_is_skipped_and_named(tmp_path: Path, prompts: Path) -> None:
    """Was a ValueError traceback (int() refuses 5,000 digits)."""
    proc = _sweep(StubState("vllm", 2, fault="long-position"), tmp_path / "out", prompts)
    _ran(proc)
    runs = [r for r in _runs(tmp_path / "out") if r["n_max"] == 2]
    assert runs and all(r["status"] == "ok" for r in runs)
    assert all("is no draft position" in r["log_mismatch"] and "5,000 characters" in r["log_mismatch"] for r in runs)
    assert all(len(r["per_position"]) == 2 for r in runs)


def test_diagnose_endpoint_with_a_position_label_of_5000_digits() -> None:
    server, url = serve_in_thread(StubState("vllm", 2, fault="long-position"))
    try:
        proc = run_cli("diagnose", "--endpoint", url, "--format", "json", timeout=120)
    finally:
        server.shutdown()
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr[-2000:]


# -- 5 and 16: a /metrics page that trickles, or is over the cap -----------------------------------


def test_a_metrics_page_that_trickles_is_bounded_in_total_time(tmp_path: Path, prompts: Path) -> None:
    """One byte every 0.5 s never trips a per-read timeout: the sweep used to wait without bound."""
    began = time.monotonic()
    proc = _sweep(StubState("vllm", 2, fault="trickle-metrics"), tmp_path / "out", prompts, timeout=60)
    line = error_line(proc, "GET /metrics", "no whole answer within 10 s")
    assert time.monotonic() - began < 30, line


def test_a_metrics_page_over_the_cap_is_said_to_be(tmp_path: Path, prompts: Path) -> None:
    """Was 'no /metrics page'."""
    proc = _sweep(StubState("vllm", 2, fault="huge-metrics"), tmp_path / "out", prompts)
    error_line(proc, "GET /metrics", "over 16 MiB (the cap)")


# -- 6: counters that cannot be one request's ------------------------------------------------------


@pytest.mark.parametrize("fault, needle", [("counters-jump", "more than one request can draft"),
                                           ("counters-negative", "a counter went down or is not a count")])
def test_counters_that_cannot_be_one_requests_are_a_failed_measurement(tmp_path: Path, prompts: Path, fault: str,
                                                                       needle: str) -> None:
    """Were recorded as measured: a million drafts for a 16-token request, negative counts as '67%'."""
    out = tmp_path / "out"
    _sweep(StubState("vllm", 2, fault=fault), out, prompts, "--format", "json")
    runs = {r["prompt_id"]: r for r in _runs(out) if r["n_max"] == 2}
    first = runs["c1"]  # its scrape before is honest, the one after is not
    assert first["status"] == "error" and needle in first["error"], first
    assert "counters that cannot be one request's" in first["error"]
    if fault == "counters-negative":
        assert runs["e1"]["status"] == "error"
    else:
        assert runs["e1"]["status"] == "ok" and runs["e1"]["drafted"] <= 17 * 2  # both scrapes shifted alike
    # The journal says it failed: --resume measures it again (an honest server now).
    proc = _sweep(StubState("vllm", 2), out, prompts, "--resume")
    _ran(proc)
    latest = [r for r in _runs(out) if r["n_max"] == 2 and r["prompt_id"] == "c1"][-1]
    assert latest["status"] == "ok"


# -- 15: credentials in the URL --------------------------------------------------------------------


def test_basic_auth_in_the_url_is_sent_and_never_printed(tmp_path: Path, prompts: Path) -> None:
    """Was: the password printed, and 'nothing answers there'."""
    out = tmp_path / "out"
    proc = _sweep(StubState("vllm", 2, fault="basic-auth"), out, prompts, "--format", "json",
                  url_of=lambda url: url.replace("http://", "http://user:s3cret@"))
    _ran(proc)
    assert "s3cret" not in proc.stdout + proc.stderr
    assert all(r["status"] == "ok" for r in _runs(out))
    for path in [out / "runs.jsonl", out / "report.json", *(out / "logs").glob("*")]:
        if path.is_file():
            assert "s3cret" not in path.read_text(errors="replace"), path
    assert "user:***@" in (out / "report.json").read_text()


def test_wrong_credentials_are_one_line_masked(tmp_path: Path, prompts: Path) -> None:
    proc = _sweep(StubState("vllm", 2, fault="basic-auth"), tmp_path / "out", prompts,
                  url_of=lambda url: url.replace("http://", "http://user:wrong-pw@"))
    line = error_line(proc, "user:***@", "HTTP 401")
    assert "wrong-pw" not in proc.stdout + proc.stderr, line


# -- 17: redirects ---------------------------------------------------------------------------------


def test_a_redirect_is_not_followed_and_names_its_location(tmp_path: Path, prompts: Path) -> None:
    """Was followed silently to another host (and a redirected POST became a GET without the prompt)."""
    proc = _sweep(StubState("vllm", 2, fault="redirect"), tmp_path / "out", prompts)
    error_line(proc, "HTTP 307 redirect to http://other-host.invalid:8000/v1/models", "not followed")


# -- decided in docs/faults.md: the /v1 base URL vLLM prints, TLS ----------------------------------


@pytest.mark.parametrize("tail", ["/v1/", "/v1/models"])  # the second: found by the second hostile pass
def test_the_v1_base_url_vllm_prints_is_taken_and_said(tmp_path: Path, prompts: Path, tail: str) -> None:
    """Was refused without a hint. The report's determinism note speaks of vLLM, not of llama.cpp's kernels."""
    proc = _sweep(StubState("vllm", 2), tmp_path / "out", prompts, url_of=lambda url: url + tail)
    _ran(proc)
    assert "(the API's paths start with /v1 themselves)" in proc.stderr
    note = json.loads((tmp_path / "out" / "report.json").read_text())["determinism_note"]
    assert "vLLM's GPU kernels" in note and "llama.cpp" not in note


def test_tls_to_a_plain_http_server_says_tls(tmp_path: Path, prompts: Path) -> None:
    """Was 'nothing answers there'."""
    proc = _sweep(StubState("vllm", 2), tmp_path / "out", prompts, url_of=lambda url: url.replace("http:", "https:"))
    error_line(proc, "GET /v1/models", "TLS failed")


@pytest.mark.parametrize("url, needle", [
    ("http://user:pw@127.0.0.1:99999", "port"),
    ("http://127.0.0.1:8000/?a=1", "without ?query"),
    ("ftp://user:pw@127.0.0.1", "not an http"),
    ("http://user:pw@[::1", "not an http"),  # second pass: urlsplit's ValueError was a traceback
])
def test_bad_endpoint_urls_are_one_line_masked(tmp_path: Path, url: str, needle: str) -> None:
    proc = run_cli("sweep", "--endpoint", url, "--out", str(tmp_path / "o"), timeout=60)
    error_line(proc, needle)
    assert ":pw@" not in proc.stderr


def test_a_completion_whose_token_count_is_not_a_number(tmp_path: Path, prompts: Path) -> None:
    """Second pass: int('many') was a traceback."""
    out = tmp_path / "out"
    proc = _sweep(StubState("vllm", 2, fault="bad-usage"), out, prompts)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "usage.completion_tokens = 'many': not a figure from 0 to" in proc.stderr + (out / "runs.jsonl").read_text()


# -- 7 and 8: what a --serve command starts is stopped, however it starts it and however we end --------

STUB = str(Path(__file__).resolve().parent / "enginestub.py")
SPEC = "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": {n}}'"


def _wrapper(tmp_path: Path, body: str) -> str:
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    return f"sh {script} --port {{port}} {SPEC}"


def _with_arg(needle: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if needle in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


def test_a_command_that_daemonises_is_measured_and_stopped_with_its_helpers(tmp_path: Path, prompts: Path) -> None:
    """`setsid server & exit 0` left the server running (and a double-forked helper outlived the sweep)."""
    helper = f"sleep 3{os.getpid()}"  # a command line no other test has
    serve = _wrapper(tmp_path, f'(setsid {helper} &)\nsetsid {sys.executable} {STUB} vllm "$@" &\nexit 0')
    out = tmp_path / "out"
    try:
        proc = run_cli("sweep", "--engine", "vllm", "--serve", serve, "--n-max", "1", "--prompts", str(prompts),
                       "--n-predict", "16", "--repeat", "1", "--no-plot", "--out", str(out), timeout=120)
        _ran(proc)
        assert all(r["status"] == "ok" for r in _runs(out)) and len(_runs(out)) == 4
        assert not [p for p in _with_arg(STUB) if "vllm" in p.cmdline()]
        assert not _with_arg(helper)
    finally:
        for leftover in [*_with_arg(helper), *[p for p in _with_arg(STUB) if "vllm" in p.cmdline()]]:
            reap(leftover)


def test_kill_9_of_mtpinspect_stops_the_server_a_wrapper_started(tmp_path: Path, prompts: Path) -> None:
    """The kernel's parent-death signal reaches the wrapper only: its server lived on."""
    load = f"60.{os.getpid()}"  # a command line no other test has
    # The line after it keeps the shell from exec-ing the server in its place (dash does, for a last command).
    serve = _wrapper(tmp_path, f'{sys.executable} {STUB} vllm "$@" --load-seconds {load}\necho "server exited: $?"')
    proc = subprocess.Popen([*CLI, "sweep", "--engine", "vllm", "--serve", serve, "--n-max", "1", "--prompts",
                             str(prompts), "--out", str(tmp_path / "out")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    stubs: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while not stubs and time.monotonic() < deadline and proc.poll() is None:
            stubs = _with_arg(f"--load-seconds {load}")
            time.sleep(0.1)
        assert stubs, ("the sweep started no server", proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
        proc.kill()
        proc.wait()
        assert all(gone(stub, timeout=20) for stub in stubs)
    finally:
        proc.kill()
        for stub in stubs:
            reap(stub)


def test_a_detached_container_is_refused_in_one_line(tmp_path: Path) -> None:
    proc = run_cli("sweep", "--engine", "vllm", "--serve", "docker run -d --rm vllm/vllm-openai --port {port} "
                   + SPEC, "--out", str(tmp_path / "o"), timeout=60)
    error_line(proc, "detached container", "without -d")
