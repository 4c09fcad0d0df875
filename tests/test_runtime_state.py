"""`mtpinspect runtime` on a machine where nothing is built yet (a status, exit 0), the build tools it
reports (runtime/toolchain.py), and the llama-server that printed commands name (command_server.server_for_commands).
No llama-server runs here: the states are made with real files (a cache folder, stand-in tools on PATH)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mtpinspect.runtime.build_cache import BINARY_NAME, BUILD_RECIPE, METADATA_NAME, install_dir
from mtpinspect.runtime.command_server import SERVER_ON_PATH, server_for_commands
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP, PINNED_VERSION
from mtpinspect.runtime.toolchain import CMAKE_NEEDED, CXX_NEEDED, NVCC_NEEDED, find_toolchain
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No $LLAMA_SERVER, $CXX or $CUDACXX, a PATH of one empty folder (returned), an empty cache folder."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("LLAMA_SERVER", "CXX", "CUDACXX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.setenv("MTPINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    return tools


def _tool(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _cached_build(backend: str = "cpu") -> Path:
    """A cache entry as `runtime build` leaves it (the binary and its build.json); nothing runs it here."""
    folder = install_dir(backend)
    folder.mkdir(parents=True)
    _tool(folder, BINARY_NAME)
    (folder / METADATA_NAME).write_text(json.dumps({"backend": backend, "recipe": BUILD_RECIPE}))
    return folder / BINARY_NAME


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mtpinspect", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "400"})  # tables unwrapped: paths whole


def test_runtime_on_a_fresh_machine_is_a_status(bare: Path) -> None:
    done = _cli("runtime")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    cached = install_dir("cpu") / BINARY_NAME
    assert "not built yet" in done.stdout and str(cached) in done.stdout
    assert f"llama-cpp-python=={PINNED_VERSION} (llama.cpp {PINNED_LLAMA_CPP}), cpu" in done.stdout
    # Nothing to build with: what is missing is named, with where to get it.
    assert f"cannot build it here yet: {CMAKE_NEEDED} and {CXX_NEEDED} not found" in done.stdout

    cmake, cxx = _tool(bare, "cmake"), _tool(bare, "g++")
    shown = _cli("runtime", "show")
    assert shown.returncode == 0 and "`mtpinspect runtime build` builds it" in shown.stdout
    assert "cannot build" not in shown.stdout and str(cmake) in shown.stdout and str(cxx) in shown.stdout

    doc = json.loads(_cli("runtime", "--format", "json").stdout)
    assert doc["built"] is False and doc["path"] is None and doc["version"] is None and doc["verify_helper"] is None
    assert doc["pinned"]["path"] == str(cached) and doc["pinned"]["backend"] == "cpu"
    assert doc["toolchain"] == {"cmake": str(cmake), "cxx": str(cxx), "nvcc": None, "missing": []}
    cuda = json.loads(_cli("runtime", "--backend", "cuda", "--format", "json").stdout)
    assert cuda["toolchain"]["missing"] == [NVCC_NEEDED] and cuda["pinned"]["path"] == str(install_dir("cuda") / BINARY_NAME)


@pytest.mark.parametrize("how", ["--server", "$LLAMA_SERVER"])
def test_a_named_server_that_is_wrong_stays_an_error(bare: Path, tmp_path: Path, how: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone" / "llama-server"
    if how == "--server":
        done = _cli("runtime", "show", "--server", str(gone))
    else:
        monkeypatch.setenv("LLAMA_SERVER", str(gone))
        done = _cli("runtime")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"mtpinspect: error: {'$LLAMA_SERVER=' if how != '--server' else ''}{gone}: no such file"]


def test_toolchain_follows_cxx_and_cudacxx(bare: Path, tmp_path: Path) -> None:
    _tool(bare, "cmake")
    clang = _tool(bare, "clang++")
    assert find_toolchain() == find_toolchain(dict(os.environ))
    found = find_toolchain()
    assert (found.cmake, found.cxx, found.nvcc) == (str(bare / "cmake"), str(clang), None)
    assert found.missing("cpu") == [] and found.missing("cuda") == [NVCC_NEEDED]
    # $CXX names the compiler CMake takes: one that is not there is missing, whatever else is on PATH.
    assert find_toolchain({**os.environ, "CXX": str(tmp_path / "no-such-c++")}).cxx is None
    nvcc = _tool(tmp_path, "nvcc-12")
    assert find_toolchain({**os.environ, "CXX": "clang++", "CUDACXX": str(nvcc)}).nvcc == str(nvcc)


def test_printed_commands_name_the_server_the_tool_would_run(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nothing = server_for_commands()
    assert nothing.program == SERVER_ON_PATH and "mtpinspect runtime build" in (nothing.note or "")
    cpu = _cached_build("cpu")
    assert server_for_commands().program == str(cpu) and server_for_commands().note is None
    cuda = _cached_build("cuda")
    assert server_for_commands().program == str(cuda)  # on a machine that built CUDA, that is the one that runs
    monkeypatch.setenv("LLAMA_SERVER", "llama-server-b9200")
    assert (server_for_commands().program, server_for_commands().note) == ("llama-server-b9200", None)


def test_check_and_tiny_model_print_the_server_the_tool_would_run(bare: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (model,) = write_tiny_model(tmp_path / "tiny-F32.gguf", TinyModelSpec())

    def commands() -> tuple[str, str, str]:
        check = _cli("check", str(model), "--no-verify")
        doc = json.loads(_cli("check", str(model), "--no-verify", "--format", "json").stdout)
        tiny = _cli("tiny-model", str(tmp_path / "new.gguf"), "--force")
        assert check.returncode == 0 and tiny.returncode == 0, check.stderr + tiny.stderr
        return check.stdout, doc["runtimes"]["llama.cpp"]["command"], tiny.stdout

    # Nothing built: `llama-server` from PATH, and a note on how to get the pinned one.
    shown, command, tiny = commands()
    note = server_for_commands().note
    assert command.startswith(f"{SERVER_ON_PATH} -m {model} ") and f"note: {note}" in shown
    assert f"try: {SERVER_ON_PATH} -m {tmp_path / 'new.gguf'} " in tiny and f"note: {note}" in tiny
    # The cached pinned build: its path, found without running it.
    cached = _cached_build("cpu")
    shown, command, tiny = commands()
    assert command.startswith(f"{cached} -m {model} ") and "note:" not in shown
    assert f"try: {cached} -m " in tiny and "note:" not in tiny
    monkeypatch.setenv("LLAMA_SERVER", "/opt/llama.cpp/bin/llama-server")
    assert commands()[1].startswith(f"/opt/llama.cpp/bin/llama-server -m {model} ")
