"""Issue 29 (bad input, round 3): what mtpinspect writes, waits on and walks, through the real CLI.
A folder the tool replaces, server log caps, the sweep lock, the LM Studio store walk, the build lock."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cliproc import error_line, run_cli


def _tree(root: Path) -> dict[str, str]:
    """Every path under root with a digest of its bytes (or its link target): what must stay as it was."""
    seen = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            seen[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            seen[rel] = "dir"
    return seen


def _users_folder(root: Path) -> Path:
    """A folder as a user has it: a git repository and files of their own."""
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "notes.txt").write_text("my notes\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('mine')\n")
    return root


@pytest.mark.parametrize("target", [".", "..", "./", "sub/..", "../project"])
def test_checkpoint_never_replaces_the_working_folder(tmp_path: Path, target: str) -> None:
    """`tiny-model --trained --checkpoint . --force` emptied the current folder (the staging folder was made
    inside it, then the target removed). A folder holding the working directory is refused, whatever --force."""
    project = _users_folder(tmp_path / "project")
    (project / "sub").mkdir()
    before = _tree(tmp_path)
    proc = run_cli("tiny-model", "--trained", "--checkpoint", target, "--force", cwd=project)
    error_line(proc, target.rstrip("/") or target, "working folder")
    assert _tree(tmp_path) == before


def test_checkpoint_force_refuses_a_folder_that_is_not_a_checkpoint(tmp_path: Path) -> None:
    """--force replaces a checkpoint mtpinspect wrote, never a folder holding anything else."""
    users = _users_folder(tmp_path / "mine")
    before = _tree(tmp_path)
    proc = run_cli("tiny-model", "--trained", "--checkpoint", str(users), "--force", cwd=tmp_path)
    error_line(proc, str(users), "mtpinspect does not write")
    assert _tree(tmp_path) == before


def test_checkpoint_force_replaces_its_own_checkpoint(tmp_path: Path) -> None:
    """A folder holding only what the checkpoint writes is replaced with --force; nothing is left beside it."""
    folder = tmp_path / "ckpt"
    assert run_cli("tiny-model", "--trained", "--checkpoint", str(folder)).returncode == 0
    (folder / "config.json").write_text("{}")  # an older or damaged copy
    proc = run_cli("tiny-model", "--trained", "--checkpoint", str(folder), "--force")
    assert proc.returncode == 0, proc.stderr
    assert (folder / "config.json").read_text() != "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_checkpoint_symlink_to_a_folder_is_refused(tmp_path: Path) -> None:
    users = _users_folder(tmp_path / "mine")
    (tmp_path / "link").symlink_to(users)
    before = _tree(tmp_path)
    proc = run_cli("tiny-model", "--trained", "--checkpoint", "link", "--force", cwd=tmp_path)
    error_line(proc, "link", "symbolic link")
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("target", [".", ".."])
def test_train_never_replaces_the_working_folder(tmp_path: Path, target: str) -> None:
    """`train . --force` had the same pattern (staging inside OUT, then OUT removed): the same folder rule."""
    pytest.importorskip("torch")
    project = _users_folder(tmp_path / "project")
    before = _tree(tmp_path)
    proc = run_cli("train", target, "--force", "--steps", "1", "--corpus", "sample", cwd=project)
    error_line(proc, target, "working folder")
    assert _tree(tmp_path) == before


def test_train_force_refuses_a_folder_that_is_not_its_output(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    users = _users_folder(tmp_path / "mine")
    before = _tree(tmp_path)
    error_line(run_cli("train", str(users), "--force", "--steps", "1", "--corpus", "sample"), str(users),
               "mtpinspect does not write")
    assert _tree(tmp_path) == before


# -- defect 10: OUT/sweep.lock through a planted link ----------------------------------------------


def _tiny_gguf(folder: Path) -> Path:
    from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

    return write_tiny_model(folder / "tiny.gguf", TinyModelSpec(acceptance="perfect"))[0]


def _sweep(model: Path, out: Path) -> list[str]:
    return ["sweep", str(model), "--out", str(out), "--n-max", "1", "--repeat", "1", "--n-predict", "8", "--no-plot"]


@pytest.mark.parametrize("plant", ["symlink", "hardlink", "fifo"])
def test_sweep_lock_is_never_written_through_what_is_planted_there(tmp_path: Path, plant: str) -> None:
    """A symbolic link planted as OUT/sweep.lock had its target truncated and overwritten with the PID; a
    hard link (another name of the user's file) would have been too, and a FIFO is no lock. Refused in one
    line before any server starts; the user's file is byte for byte as it was."""
    out = tmp_path / "out"
    out.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_text("the user's data\n")
    lock = out / "sweep.lock"
    if plant == "symlink":
        lock.symlink_to(precious)
    elif plant == "hardlink":
        os.link(precious, lock)
    else:
        os.mkfifo(lock)
    proc = run_cli(*_sweep(_tiny_gguf(tmp_path), out), timeout=60)
    error_line(proc, str(lock), {"symlink": "symbolic link", "hardlink": "names", "fifo": "FIFO"}[plant])
    assert precious.read_text() == "the user's data\n"
    assert os.path.lexists(lock)  # what was planted is left alone too


# -- defect 18: waiting for another process's build of llama-server ----------------------------------

_HOLDER = """
import sys, time
from mtpinspect.runtime import build
root = build.cache_root()
with build.build_lock("cpu"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def _hold_build_lock(cache: Path, seconds: float) -> subprocess.Popen[str]:
    """Another mtpinspect building: a child holding the cpu build lock through the real function."""
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, str(seconds)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "MTPINSPECT_CACHE_DIR": str(cache)})
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def test_waiting_for_another_build_says_so_and_is_bounded(tmp_path: Path) -> None:
    """`runtime build` while another process builds waited in silence and without bound. It says whose
    build it waits for (pid, start, its log) and gives up after MTPINSPECT_BUILD_WAIT seconds, one line."""
    cache = tmp_path / "cache"
    child = _hold_build_lock(cache, 60)
    try:
        started = time.monotonic()
        proc = run_cli("runtime", "build", "--backend", "cpu", timeout=60,
                       env={**os.environ, "MTPINSPECT_CACHE_DIR": str(cache), "MTPINSPECT_BUILD_WAIT": "2"})
        elapsed = time.monotonic() - started
    finally:
        child.kill()
        child.wait()
    waiting = [line for line in proc.stderr.splitlines() if "waiting for another mtpinspect's build" in line]
    assert len(waiting) == 1, proc.stderr
    assert f"pid {child.pid}" in waiting[0] and "build-cpu.log" in waiting[0] and "started" in waiting[0]
    error_line(proc, ".build-cpu.lock", f"pid {child.pid}", "MTPINSPECT_BUILD_WAIT")
    assert elapsed < 30


def test_a_build_lock_whose_holder_dies_is_taken_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """flock is released when its holder dies (kill -9 included): the waiter takes over at once."""
    from mtpinspect.runtime import build

    cache = tmp_path / "cache"
    monkeypatch.setenv("MTPINSPECT_CACHE_DIR", str(cache))
    monkeypatch.setenv("MTPINSPECT_BUILD_WAIT", "60")
    child = _hold_build_lock(cache, 60)
    said: list[str] = []
    killer = threading.Timer(1.0, child.kill)
    killer.start()
    started = time.monotonic()
    try:
        with build.build_lock("cpu", progress=said.append):
            took = time.monotonic() - started
    finally:
        killer.cancel()
        child.kill()
        child.wait()
    assert took < 10 and len(said) == 1 and f"pid {child.pid}" in said[0], said


@pytest.mark.parametrize("value", ["nan", "-1", "soon", "inf"])
def test_build_wait_bound_must_be_a_number(tmp_path: Path, value: str) -> None:
    cache = tmp_path / "cache"
    child = _hold_build_lock(cache, 60)
    try:
        proc = run_cli("runtime", "build", "--backend", "cpu", timeout=60,
                       env={**os.environ, "MTPINSPECT_CACHE_DIR": str(cache), "MTPINSPECT_BUILD_WAIT": value})
    finally:
        child.kill()
        child.wait()
    error_line(proc, "MTPINSPECT_BUILD_WAIT", value)


# -- defect 11: LM Studio's downloadsFolder at / or at a folder with hostile entries -------------------


def _lmstudio_home(tmp_path: Path, downloads: Path) -> dict[str, str]:
    """A user whose LM Studio settings.json points its models folder (downloadsFolder) at ``downloads``."""
    from appstores import write_lmstudio_settings

    from mtpinspect.cache_dir import CACHE_ENV

    home = tmp_path / "home"
    write_lmstudio_settings(home / ".lmstudio", downloads)
    return {**os.environ, "HOME": str(home), CACHE_ENV: str(tmp_path / "cache")}


def _hostile_store(root: Path) -> Path:
    """A models folder as a careless or hostile disk has it: a FIFO, a broken link, a loop of links, a
    folder 40 deep and one 30,000 wide, beside one real repo."""
    from appstores import write_lmstudio_repo

    from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

    (gguf,) = write_tiny_model(root.parent / "tiny-F32.gguf", TinyModelSpec())
    write_lmstudio_repo(root, "org/Tiny-GGUF", [gguf], models=root)
    (root / "pub" / "repo").mkdir(parents=True)
    os.mkfifo(root / "pub" / "repo" / "model.gguf")
    (root / "pub" / "broken.gguf").symlink_to(root / "nowhere")
    (root / "loop").mkdir()
    (root / "loop" / "a").symlink_to(root / "loop" / "b")
    (root / "loop" / "b").symlink_to(root / "loop" / "a")
    (root / "loop" / "self").symlink_to(root / "loop")
    deep = root / "deep" / "x"
    for _ in range(40):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "far.gguf").write_bytes(b"GGUF")
    wide = root / "wide" / "w"
    wide.mkdir(parents=True)
    for i in range(30_000):
        (wide / f"{i}.txt").touch()
    return root


@pytest.mark.parametrize("args", [("lmstudio:nobody/Nothing",), ("lmstudio:", "--all"), ("lmstudio:pub/repo",)])
def test_lmstudio_store_with_hostile_entries(tmp_path: Path, args: tuple[str, ...]) -> None:
    store = _hostile_store(tmp_path / "models")
    env = _lmstudio_home(tmp_path, store)
    started = time.monotonic()
    proc = run_cli("check", *args, "--no-verify", env=env, timeout=120)
    assert time.monotonic() - started < 60
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if args[0] == "lmstudio:nobody/Nothing":
        error_line(proc, "nobody/Nothing", "org/Tiny-GGUF")
    elif args[0] == "lmstudio:pub/repo":
        error_line(proc, "pub/repo")  # its one "GGUF" is a FIFO: never opened, never waited on
    else:
        assert proc.returncode in (0, 1) and "org/Tiny-GGUF" in proc.stdout, proc.stderr[-2000:]


def test_lmstudio_store_at_the_root_folder(tmp_path: Path) -> None:
    """downloadsFolder "/" walked the whole file system and ended in a traceback: the bounds of `check DIR`."""
    env = _lmstudio_home(tmp_path, Path("/"))
    for args in (("lmstudio:nobody/Nothing",), ("lmstudio:", "--all")):
        started = time.monotonic()
        proc = run_cli("check", *args, "--no-verify", env=env, timeout=120)
        assert time.monotonic() - started < 60
        error_line(proc, "LM Studio", "/")


# -- defect 9: server logs have a size cap -------------------------------------------------------------

_VERSION = 'if [ "$1" = "--version" ]; then echo "version: 0.5.0-dev (build 1, commit 0c1e570)"; exit 0; fi\n'
_CHATTY = {
    # Writes 200 MB of chatter as fast as the pipe takes it, then its crash, and exits.
    "chatty-crashing-llama-server": _VERSION + 'yes "load_tensors: chatter chatter chatter" | head -c 200000000\n'
                                    'echo "llama_model_load: error loading model: the fake server\'s last words"\n'
                                    'exit 1\n',
    # Writes chatter for ever (bounded by --start-timeout) and never listens.
    "chatty-forever-llama-server": _VERSION + 'exec yes "load_tensors: chatter for ever"\n',
}


def _chatty(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + _CHATTY[name])
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("name", list(_CHATTY))
def test_server_logs_are_capped_and_keep_the_last_line(tmp_path: Path, name: str) -> None:
    """A chatty server wrote 2.8 GB of log in 16 s. Each log keeps its head up to the cap and its tail (where
    the crash is); the error line still quotes the server's last words."""
    from mtpinspect.runtime.server_log import HEAD_BYTES, TAIL_BYTES

    out = tmp_path / "out"
    started = time.monotonic()
    proc = run_cli(*_sweep(_tiny_gguf(tmp_path), out), "--server", str(_chatty(tmp_path, name)),
                   "--start-timeout", "4", timeout=120)
    assert time.monotonic() - started < 60
    # Both configurations are failed starts (a report, exit 1), each reason quoting the server's last line,
    # not the cut marker.
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr[-2000:]
    reason = ("failed to start (exit code 1): error loading model: the fake server's last words" if "crashing" in name
              else "not ready after 4 s; last log line: load_tensors: chatter for ever")
    assert proc.stderr.count(reason) == 2, proc.stderr[-2000:]
    logs = sorted((out / "logs").iterdir())
    assert logs, proc.stderr
    for log in logs:
        size = log.stat().st_size
        assert size <= HEAD_BYTES + TAIL_BYTES + 4096, (log, size)
        text = log.read_bytes()
        assert b"[mtpinspect: the log is cut here at 64 MiB" in text and b"bytes not kept" in text
        if "crashing" in name:
            assert text.rstrip().endswith(b"the fake server's last words"), text[-300:]


# -- decided: the sweep's own files in OUT are never written through a link -----------------------------


@pytest.mark.parametrize("name", ["report.json", "runs.jsonl", "sweep.png", "logs"])
def test_sweep_never_writes_its_files_through_a_planted_link(tmp_path: Path, name: str) -> None:
    """report.json was written through a planted symbolic link (its target overwritten) while runs.jsonl set
    the link aside: one rule now. A link at any name the sweep gives its own files is refused in one line
    before a server starts, and left as it is with what it points to."""
    out = tmp_path / "out"
    out.mkdir()
    precious = tmp_path / "precious"
    if name == "logs":
        precious.mkdir()
        (precious / "mine.txt").write_text("the user's data\n")
    else:
        precious.write_text("the user's data\n")
    (out / name).symlink_to(precious)
    (tmp_path / "m").mkdir()
    args = _sweep(_tiny_gguf(tmp_path / "m"), out)
    before = _tree(tmp_path)
    if name == "sweep.png":
        args.remove("--no-plot")
    error_line(run_cli(*args, timeout=60), str(out / name), "symbolic link")
    assert _tree(tmp_path) == before


# -- decided: an Ollama blob that is a FIFO or a folder ---------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_ollama_blob_that_is_no_file_is_named_as_what_it_is(tmp_path: Path, kind: str) -> None:
    """A blob that is a FIFO or a folder was called "not in blobs/" (missing); it is there and is no file."""
    from appstores import MODEL, blob_path, write_ollama_model

    from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

    store = tmp_path / "ollama"
    (gguf,) = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec())
    manifest = write_ollama_model(store, "tiny:head", gguf=gguf)
    blob = blob_path(store, manifest, MODEL)
    blob.unlink()
    os.mkfifo(blob) if kind == "fifo" else blob.mkdir()
    proc = run_cli("check", "ollama:tiny:head", "--no-verify", timeout=60,
                   env={**os.environ, "OLLAMA_MODELS": str(store)})
    error_line(proc, blob.name, "FIFO" if kind == "fifo" else "directory", "not a regular file")


def test_a_full_disk_under_the_server_logs_does_not_block_the_server(tmp_path: Path) -> None:
    """Hostile pass: when the log's disk fills, the pipe is still read (else the server would block on its
    next write and never crash or answer), and the error still quotes its last line, kept in memory."""
    from cliproc import in_mounts

    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    args = [*_sweep(_tiny_gguf(tmp_path), out), "--server", str(_chatty(tmp_path, "chatty-crashing-llama-server")),
            "--start-timeout", "20"]
    started = time.monotonic()
    proc = in_mounts('mount -t tmpfs -o size=1m tmpfs "$OUT/logs" && $CLI ' + " ".join(args), {"OUT": str(out)})
    assert time.monotonic() - started < 60
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.count("error loading model: the fake server's last words") == 2, proc.stderr[-2000:]


def test_checkpoint_under_a_file_is_one_line(tmp_path: Path) -> None:
    """Hostile pass: a DIR whose parent is a file ended in a FileExistsError traceback."""
    (tmp_path / "notes.txt").write_text("mine\n")
    before = _tree(tmp_path)
    error_line(run_cli("tiny-model", "--trained", "--checkpoint", "notes.txt/ck/deeper", cwd=tmp_path),
               "notes.txt is not a folder")
    assert _tree(tmp_path) == before


def test_engine_server_logs_are_capped_too(tmp_path: Path) -> None:
    """The --serve path writes its logs through the same capped sink; its failure quotes the last line."""
    from mtpinspect.runtime.server_log import HEAD_BYTES, TAIL_BYTES

    script = tmp_path / "chatty-engine.sh"
    script.write_text('yes "INFO chatter" | head -c 100000000\necho\necho "RuntimeError: the fake engine\'s last words"\nexit 3\n')
    out = tmp_path / "out"
    proc = run_cli("sweep", "--engine", "vllm", "--serve", f"sh {script} {{port}} --n {{n}}", "--serve-baseline",
                   f"sh {script} {{port}}", "--out", str(out), "--n-max", "1", "--repeat", "1", "--start-timeout", "30",
                   timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.count("RuntimeError: the fake engine's last words") == 2, proc.stderr[-2000:]
    for log in (out / "logs").iterdir():
        assert log.stat().st_size <= HEAD_BYTES + TAIL_BYTES + 4096, log
