"""Processes that misbehave, through the CLI: servers that never come up, signals from a closed terminal
or `kill -9`, a closed output pipe, an interrupt while the program is still starting.

The real llama-server runs where a server is involved; the fake servers below stand for broken ones
and say in their names how they misbehave.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from cliproc import CLI, error_line, gone, reap, run_cli, stop_cli, wait_for_server

from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.runtime.server import LlamaServer, ServerStartError
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

_VERSION = 'if [ "$1" = "--version" ]; then echo "version: 0.5.0-dev (build 1, commit 0c1e570)"; exit 0; fi\n'
FAKE_SERVERS = {
    # Answers --version like the pinned build, then neither listens nor writes a line (a hung GPU init).
    "never-listens-llama-server": _VERSION + 'echo $$ >> "$0.pids"\nexec sleep 600\n',
    # --version starts a helper and never returns: a wrapper script whose child holds its pipes.
    "hangs-on-version-llama-server": 'sleep 600 &\necho $! > "$0.child"\nwait\n',
}


@pytest.fixture(scope="module")
def binary() -> ServerBinary:
    return find_server(build=True, progress=print)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny.gguf", TinyModelSpec(acceptance="perfect"))[0]


def fake_server(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + FAKE_SERVERS[name])
    path.chmod(0o755)
    return path


def assert_all_gone(fake: Path) -> None:
    """Every start of a never-listening fake server has ended."""
    pids = [int(pid) for pid in Path(f"{fake}.pids").read_text().split()]
    assert pids
    for pid in pids:
        try:
            process = psutil.Process(pid)
        except psutil.NoSuchProcess:
            continue
        try:
            assert gone(process, timeout=5), f"fake server {pid} outlived its start"
        finally:
            reap(process)


# -- item 12: slow-to-fail servers ----------------------------------------------------------------


def test_never_listening_server_stops_the_sweep_after_two_configurations(tmp_path: Path, tiny: Path) -> None:
    server = fake_server(tmp_path, "never-listens-llama-server")
    out = tmp_path / "out"
    started = time.monotonic()
    proc = run_cli("sweep", str(tiny), "--server", str(server), "--start-timeout", "2", "--out", str(out),
                   "--n-max", "1,2,3,4", "--repeat", "3", "--no-plot", timeout=120)
    elapsed = time.monotonic() - started
    line = error_line(proc, "baseline and n-max-1 failed to start for the same reason", "not ready after 2 s",
                      "180 planned runs not run")
    # Two starts of 2 s each, not 13 of 600 s; and no fake server left sleeping.
    assert elapsed < 30, (elapsed, line)
    assert_all_gone(server)
    journal = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert [(r["configuration"], r["status"]) for r in journal] == [("baseline", "failed"), ("n-max-1", "failed")]
    report = json.loads((out / "report.json").read_text())
    assert report["stopped"] == line.split(": error: ", 1)[1]
    assert report["runs"]["not_run"] == 180


def test_diagnose_takes_a_start_timeout(tmp_path: Path, tiny: Path) -> None:
    server = fake_server(tmp_path, "never-listens-llama-server")
    started = time.monotonic()
    proc = run_cli("diagnose", str(tiny), "--server", str(server), "--start-timeout", "2", timeout=120,
                   env={**os.environ, "TMPDIR": str(tmp_path)})
    error_line(proc, "cannot run this model even without MTP", "not ready after 2 s")
    assert time.monotonic() - started < 30
    assert not list(tmp_path.glob("mtpinspect-diagnose-*"))
    assert_all_gone(server)


def test_silent_server_fails_before_its_start_timeout(tmp_path: Path, tiny: Path) -> None:
    server = LlamaServer(
        ServerBinary(fake_server(tmp_path, "never-listens-llama-server"), "fake", None, "cpu", "--server"),
        tiny, log_path=tmp_path / "server.log", startup_timeout=60, silence_timeout=1.5,
    )
    started = time.monotonic()
    with pytest.raises(ServerStartError, match="wrote nothing and used no CPU for 1.5 s"):
        server.start()
    assert time.monotonic() - started < 10
    assert not server.alive()
    assert_all_gone(server.binary.path)


@pytest.mark.server
def test_a_loading_server_is_not_silent(binary: ServerBinary, tiny: Path, tmp_path: Path) -> None:
    """The real llama-server starts well within a short silence limit: it logs while it loads."""
    with LlamaServer(binary, tiny, log_path=tmp_path / "server.log", silence_timeout=1.0) as server:
        assert server.alive()


# -- item 22: --version that never returns --------------------------------------------------------


def test_version_timeout_kills_the_whole_process_group(tmp_path: Path, tiny: Path) -> None:
    server = fake_server(tmp_path, "hangs-on-version-llama-server")
    proc = run_cli("sweep", str(tiny), "--server", str(server), "--start-timeout", "2", "--out", str(tmp_path / "out"),
                   timeout=60)
    error_line(proc, str(server), "`--version` did not return within 2 s")
    try:
        child = psutil.Process(int(Path(f"{server}.child").read_text()))
    except psutil.NoSuchProcess:
        return  # already stopped and reaped: the probe stops every process it started before it returns
    try:
        assert gone(child), "the --version wrapper's child outlived the timeout"
    finally:
        reap(child)


# -- item 21: a relative --server path ------------------------------------------------------------


@pytest.mark.server
def test_relative_server_path(binary: ServerBinary, tmp_path: Path) -> None:
    (tmp_path / "llama-server").symlink_to(binary.path)
    for args, env in ((["--server", "./llama-server"], {}), ([], {"LLAMA_SERVER": "./llama-server"})):
        proc = run_cli("runtime", *args, "--format", "json", cwd=tmp_path, env={**os.environ, **env})
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["path"] == str(binary.path)


# -- item 19: hangups, quits and kill -9 ----------------------------------------------------------


def _sweep(tiny: Path, out: Path, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, "sweep", str(tiny), "--out", str(out), "--n-max", "1", "--repeat", "3",
                             "--n-predict", "64", "--no-plot"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)  # type: ignore[call-overload]


@pytest.mark.server
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGKILL], ids=["HUP", "QUIT", "KILL"])
def test_signals_leave_no_server_behind(tiny: Path, tmp_path: Path, sig: signal.Signals) -> None:
    proc = _sweep(tiny, tmp_path / "out")
    server = wait_for_server(proc)
    try:
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        assert gone(server), f"llama-server outlived mtpinspect after {sig.name}"
    finally:
        reap(server)
        stop_cli(proc)
    if sig != signal.SIGKILL:
        assert proc.returncode == 130 and "Traceback" not in stderr, stderr
        assert "interrupted" in stderr.splitlines()[-1]


@pytest.mark.server
def test_diagnose_cleans_its_temporary_folder_on_hangup(tiny: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen([*CLI, "diagnose", str(tiny)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    server = wait_for_server(proc)
    try:
        assert list(tmp_path.glob("mtpinspect-diagnose-*"))
        proc.send_signal(signal.SIGHUP)
        _, stderr = proc.communicate(timeout=60)
        assert gone(server)
    finally:
        reap(server)
        stop_cli(proc)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert not list(tmp_path.glob("mtpinspect-diagnose-*"))


# -- item 22: a closed pipe, an interrupt during start-up ---------------------------------------


def test_closed_pipe_exits_quietly(tiny: Path) -> None:
    """`mtpinspect check X | head`: the reader is gone before we write; exit as SIGPIPE would, silently."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([*CLI, "check", str(tiny)], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (128 + signal.SIGPIPE, "")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_signal_while_starting_gives_one_line(tiny: Path, sig: signal.Signals) -> None:
    """The signal lands while the command line is still being imported: as soon as click, its first
    import, has a module loaded (Python reports each import as it completes)."""
    proc = subprocess.Popen([*CLI, "check", str(tiny)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.rsplit("|", 1)[-1].strip().startswith("click."):
            proc.send_signal(sig)
            break
    _, rest = proc.communicate(timeout=60)
    messages = [line for line in rest.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 130, (proc.returncode, messages)
    assert messages == ["mtpinspect: interrupted"], messages
