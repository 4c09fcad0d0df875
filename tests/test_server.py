"""The real llama-server on real tiny models: start, complete, /metrics, logs, failures, crashes, stop.

Every figure the sweep relies on is checked three ways: the request's `timings`, the `/metrics`
delta around the request, and the server's own `draft acceptance` log line.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import psutil
import pytest

from mtpinspect.errors import ServerError, UsageError
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.runtime.logs import parse_draft_lines, unused_nextn_tensors
from mtpinspect.runtime.memory import RssSampler, tree_rss
from mtpinspect.runtime.server import LlamaServer, ServerDiedError, ServerStartError
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

MTP_3 = ["--spec-type", "draft-mtp", "--spec-draft-n-max", "3"]


@pytest.fixture(scope="module")
def binary() -> ServerBinary:
    return find_server(build=True, progress=print)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("models")
    specs = {
        "perfect": TinyModelSpec(acceptance="perfect"),
        "none": TinyModelSpec(acceptance="none"),
        "no-nextn": TinyModelSpec(nextn=False),
    }
    return {name: write_tiny_model(folder / f"{name}.gguf", spec)[0] for name, spec in specs.items()}


def _server(binary: ServerBinary, model: Path, args: list[str], tmp_path: Path, **kw: object) -> LlamaServer:
    return LlamaServer(binary, model, args, log_path=tmp_path / "server.log", **kw)  # type: ignore[arg-type]


def _start_failure(binary: ServerBinary, model: Path, args: list[str], tmp_path: Path) -> ServerStartError:
    server = _server(binary, model, args, tmp_path)
    with pytest.raises(ServerStartError) as exc:
        server.start()
    assert "\n" not in str(exc.value)
    assert exc.value.log_tail and exc.value.returncode not in (None, 0)
    assert not server.alive()
    return exc.value


@pytest.mark.server
def test_mtp_request_figures_agree(binary: ServerBinary, models: dict[str, Path], tmp_path: Path) -> None:
    with _server(binary, models["perfect"], MTP_3, tmp_path) as server:
        assert server.command[:2] == [str(binary.path), "-m"]
        for flag in ("--metrics", "--host", "127.0.0.1", "-np"):
            assert flag in server.command
        assert server.url.endswith(f":{server.port}") and server.alive()
        _, offset = server.log_since(0)
        before = server.metrics()
        completion = server.complete("hello world", n_predict=64)
        delta = server.metrics().delta(before)
        new_log, offset2 = server.wait_for_log(offset)

    assert completion.predicted_n == 64 and completion.text
    assert completion.draft_n > 0 and completion.draft_n_accepted == completion.draft_n  # perfect head
    assert completion.predicted_per_second > 0
    assert (delta.draft_tokens, delta.accepted_tokens) == (completion.draft_n, completion.draft_n_accepted)
    assert delta.tokens_predicted == completion.predicted_n
    assert delta.mean_length is not None and delta.mean_length > 3.0  # n-max 3, every draft accepted
    assert len(delta.per_position_rates()) == 3
    (logged,) = parse_draft_lines(new_log)
    assert (logged.accepted, logged.generated) == (completion.draft_n_accepted, completion.draft_n)
    assert logged.acceptance == delta.acceptance == 1.0
    assert logged.mean_length == pytest.approx(delta.mean_length, abs=0.005)
    assert offset2 > offset and unused_nextn_tensors(new_log) == []


@pytest.mark.server
def test_rejecting_head_and_baseline(binary: ServerBinary, models: dict[str, Path], tmp_path: Path) -> None:
    with _server(binary, models["none"], MTP_3, tmp_path) as server:
        before = server.metrics()
        rejected = server.complete("hello world", n_predict=32)
        delta = server.metrics().delta(before)
    assert rejected.draft_n > 0 and rejected.draft_n_accepted == 0
    assert delta.accepted_tokens == 0 and delta.mean_length == 1.0

    with _server(binary, models["perfect"], [], tmp_path) as server:
        plain = server.complete("hello world", n_predict=32)
        log, _ = server.wait_for_log(0)
    # Without --spec-type the timings carry no draft fields and the loader skips the MTP block.
    assert "draft_n" not in plain.timings and (plain.draft_n, plain.draft_n_accepted) == (0, 0)
    assert parse_draft_lines(log) == []
    assert any(".nextn.eh_proj." in name for name in unused_nextn_tensors(log))
    # Greedy decoding gives the same text with and without drafting.
    assert rejected.text[: len(plain.text)] == plain.text


@pytest.mark.server
def test_unknown_spec_type_mtp(binary: ServerBinary, models: dict[str, Path], tmp_path: Path) -> None:
    error = _start_failure(binary, models["perfect"], ["--spec-type", "mtp"], tmp_path)
    assert "unknown speculative type: mtp" in error.reason and error.reason in str(error)


@pytest.mark.server
def test_draft_mtp_without_nextn(binary: ServerBinary, models: dict[str, Path], tmp_path: Path) -> None:
    error = _start_failure(binary, models["no-nextn"], ["--spec-type", "draft-mtp"], tmp_path)
    assert "doesn't contain MTP layers" in str(error) or "failed to create MTP context" in str(error)


@pytest.mark.server
def test_model_file_that_is_missing(binary: ServerBinary, tmp_path: Path) -> None:
    error = _start_failure(binary, tmp_path / "absent.gguf", [], tmp_path)
    assert "absent.gguf" in str(error)


@pytest.mark.server
def test_killed_mid_request(binary: ServerBinary, models: dict[str, Path], tmp_path: Path) -> None:
    # The rejecting head drafts and discards three tokens per step: a long request takes seconds.
    with _server(binary, models["none"], MTP_3, tmp_path) as server:
        timer = threading.Timer(0.5, os.kill, (server.pid, signal.SIGKILL))
        timer.start()
        try:
            with pytest.raises(ServerDiedError) as exc:
                server.complete("hello world", n_predict=2000)
        finally:
            timer.cancel()
        assert "\n" not in str(exc.value) and "SIGKILL" in str(exc.value)
        assert exc.value.returncode == -signal.SIGKILL
        with pytest.raises(ServerDiedError):
            server.metrics()


@pytest.mark.server
def test_stop_leaves_no_process(binary: ServerBinary, models: dict[str, Path], tmp_path: Path) -> None:
    server = _server(binary, models["perfect"], MTP_3, tmp_path)
    with pytest.raises(KeyboardInterrupt):
        with server:
            pid = server.pid
            family = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
            raise KeyboardInterrupt  # what Ctrl-C does in the caller
    assert not server.alive() and server.returncode is not None
    assert not any(p.is_running() for p in family)
    assert tree_rss(pid) == 0
    server.stop()  # idempotent
    with pytest.raises(ServerError) as exc:
        server.complete("x", n_predict=1)
    assert "not running" in str(exc.value)


@pytest.mark.server
def test_rss_sampler_sees_the_server(binary: ServerBinary, models: dict[str, Path], tmp_path: Path) -> None:
    with _server(binary, models["none"], MTP_3, tmp_path) as server:
        with RssSampler(server.pid, hz=50) as sampler:
            server.complete("hello world", n_predict=64)
            now = sampler.current_bytes()
    assert sampler.samples >= 2
    assert 1 << 20 < now <= sampler.peak_bytes < 4 << 30


@pytest.mark.server
def test_arguments_mtpinspect_owns(binary: ServerBinary, models: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UsageError) as exc:
        _server(binary, models["perfect"], ["--port", "8080", "-t", "2"], tmp_path)
    assert "--port" in str(exc.value) and "\n" not in str(exc.value)
