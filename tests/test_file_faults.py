"""Files that fight back, through the CLI: devices and FIFOs given as inputs, full and read-only output
folders, a journal edited or written by another version, two sweeps into one folder.

Each case runs the real `mtpinspect` in a child process; sweeps run the real llama-server on tiny models.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cliproc import CLI, error_line, in_mounts, run_cli, run_cli_measured, stop_cli, wait_for_server

from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

MAX_RSS_MB = 200  # these commands refuse the input before reading it: tens of MB


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny.gguf", TinyModelSpec(acceptance="perfect"))[0]


def _sweep_args(model: Path, out: Path, *extra: str) -> list[str]:
    return ["sweep", str(model), "--out", str(out), "--n-max", "1", "--repeat", "1", "--n-predict", "8", "--no-plot", *extra]


# -- item 9: special files ----------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")
@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo"])
@pytest.mark.parametrize("option", ["diagnose --log", "sweep --prompts"])
def test_special_files_are_refused_not_read(tmp_path: Path, tiny: Path, special: str, option: str) -> None:
    path = special
    if special == "fifo":
        path = str(tmp_path / "pipe")
        os.mkfifo(path)  # nobody ever writes to it: opening it to read would wait forever
    command, flag = option.split()
    args = [command, flag, path] if command == "diagnose" else [command, str(tiny), flag, path, "--out", str(tmp_path)]
    proc = run_cli_measured(*args, timeout=60)
    peak_mb = proc.peak_mb
    line = error_line(proc, path, "empty" if special == "fifo" else "character device")
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert peak_mb < MAX_RSS_MB, f"{option} {special}: child peak RSS {peak_mb:.0f} MB ({line})"


def test_a_log_from_a_pipe_is_read(tmp_path: Path) -> None:
    """Pipes stay usable (`--log /dev/stdin`, `--log <(docker logs ...)`): read to the end, within the cap."""
    log = "srv  log_server_r: draft acceptance rate = 0.50000 (    4 accepted /     8 generated)\n"
    proc = run_cli("diagnose", "--log", "/dev/stdin", "--format", "json", input=log * 3)
    assert proc.returncode in (0, 1), proc.stderr
    (evidence,) = json.loads(proc.stdout)["logs"]
    assert (evidence["accepted"], evidence["drafted"]) == (12, 24)


# -- item 16: full and read-only disks ----------------------------------------------------------


@pytest.mark.server
def test_full_disk_keeps_the_journal_whole_lines(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # OUT is a 12 KiB file system, full after a dozen runs; the server logs get their own, roomy one.
    script = ('mount -t tmpfs -o size=12k tmpfs "$OUT" && mkdir "$OUT/logs" && mount -t tmpfs -o size=16m tmpfs "$OUT/logs" '
              '&& $CLI ' + " ".join(_sweep_args(tiny, out)) + '; code=$?; cat "$OUT/runs.jsonl" > "$COPY"; exit $code')
    proc = in_mounts(script, {"OUT": str(out), "COPY": str(tmp_path / "journal-copy.jsonl")})
    error_line(proc, "runs.jsonl", "No space left on device", "--resume")
    journal = (tmp_path / "journal-copy.jsonl").read_bytes()
    assert journal.endswith(b"\n"), journal[-200:]
    records = [json.loads(line) for line in journal.splitlines()]
    # Everything measured before the disk filled is there, each record whole.
    assert sum(r["kind"] == "run" and r["status"] == "ok" for r in records) >= 5


def test_read_only_out_and_tiny_model(tmp_path: Path, tiny: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    commands = {
        "new-out": ["sweep", str(tiny), "--out", str(ro / "new")],
        "existing-out": ["sweep", str(tiny), "--out", str(ro)],
        "tiny-model": ["tiny-model", str(ro / "model.gguf")],
    }
    script = 'mount -t tmpfs -o ro tmpfs "$RO" && ' + " ; ".join(
        f'$CLI {" ".join(args)} 2> "$RESULTS/{name}.err"; echo $? > "$RESULTS/{name}.rc"' for name, args in commands.items()
    )
    results = tmp_path / "results"
    results.mkdir()
    in_mounts(script, {"RO": str(ro), "RESULTS": str(results)})
    for name in commands:
        rc = int((results / f"{name}.rc").read_text())
        stderr = (results / f"{name}.err").read_text()
        error_line(subprocess.CompletedProcess([], rc, "", stderr), "Read-only file system")
        assert len(stderr.splitlines()) == 1, (name, stderr)
    assert str(ro / "new") in (results / "new-out.err").read_text()


# -- item 17: --resume on a journal with malformed records ----------------------------------------


@pytest.mark.server
def test_resume_skips_malformed_records_and_runs_outside_the_plan(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "out"
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "class": "code", "prompt": f"def f{i}(x):"}) + "\n" for i in range(2)))
    args = [*_sweep_args(tiny, out, "--prompts", str(prompts)), "--format", "json"]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    journal = out / "runs.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    run = next(r for r in lines if r["kind"] == "run" and r["n_max"] == 1)
    # A newer version's log object (one more key) is still a good record.
    run["log"]["draft_ms"] = 1.5
    bad = [
        {k: v for k, v in run.items() if k != "prompt_id"},  # a field missing
        {**run, "repeat": [0]},
        {**run, "decode_tokens_per_second": "fast"},
    ]
    outside = [{**run, "configuration": "n-max-4", "n_max": 4}, {**run, "prompt_id": "p9"}, {**run, "repeat": 3}]
    journal.write_text("".join(json.dumps(r) + "\n" for r in [*lines, *bad, *outside]))

    resumed = run_cli(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert "3 malformed record(s) skipped" in resumed.stderr
    counts = json.loads(resumed.stdout)["runs"]
    assert (counts["planned"], counts["ok"], counts["not_run"], counts["malformed"]) == (4, 4, 0, 3)
    assert counts["ignored"] == 3


# -- item 20: two sweeps into one folder ----------------------------------------------------------


@pytest.mark.server
def test_second_sweep_into_a_busy_folder(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "out"
    # A lock left by a sweep that was killed: its PID no longer runs, so the folder is free.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out.mkdir()
    (out / "sweep.lock").write_text(f"{dead.pid}\n")

    first = subprocess.Popen([*CLI, *_sweep_args(tiny, out, "--format", "json", "--n-predict", "32")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        wait_for_server(first)
        second = run_cli(*_sweep_args(tiny, out))
        line = error_line(second, str(out), "another sweep", f"pid {first.pid}")
        assert len(second.stderr.splitlines()) == 1, second.stderr
        stdout, stderr = first.communicate(timeout=120)
    finally:
        stop_cli(first)
    assert first.returncode == 0, stderr
    counts = json.loads(stdout)["runs"]
    # The first sweep's journal was left alone: everything it measured is in its report.
    assert counts["ok"] == counts["planned"] == 24 and counts["not_run"] == 0, line
    assert not (out / "sweep.lock").exists()
    assert [p.name for p in out.iterdir() if p.name.startswith("runs")] == ["runs.jsonl"]


# -- item 18: tiny-model --seed -1 --------------------------------------------------------------


def test_tiny_model_negative_seed(tmp_path: Path) -> None:
    proc = run_cli("tiny-model", str(tmp_path / "m.gguf"), "--seed", "-1")
    error_line(proc, "--seed", "-1")
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "m.gguf").exists()
