"""Bad input, round 2 (issue 20): what a careless or hostile new user typed, through the real CLI in a child
process. Each case gets one line and exit 2, or an answer that agrees with itself, in bounded time and
output, and nothing that was not the tool's to replace is replaced. Sweeps run the real llama-server.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from casekit import safetensors_header
from cliproc import CLI, error_line, run_cli
from gguf_factory import write_gguf
from hubstub import HubStub

from mtpinspect.cache_dir import CACHE_ENV
from mtpinspect.cli._output import MAX_LINE_CHARS
from mtpinspect.runtime.command_server import server_for_commands
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny.gguf", TinyModelSpec())[0]


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A trunk-only GGUF with its mtp- sidecar beside it."""
    trunk, sidecar = write_tiny_model(tmp_path_factory.mktemp("split") / "m.gguf", TinyModelSpec(layout="sidecar"))
    return trunk, sidecar


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HF_")}, **extra}


# -- 1: HF_HUB_OFFLINE ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["check"], ["check", "--all"], ["diagnose", "--no-probe"]])
def test_offline_mode_is_one_line_saying_what_is_cached(tmp_path: Path, command: list[str]) -> None:
    env = _env(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    error_line(run_cli(*command, "acme/model", env=env), "HF_HUB_OFFLINE", "no snapshot")
    snapshot = tmp_path / "hf" / "hub" / "models--acme--model" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    error_line(run_cli(*command, "acme/model", env=env), "1 snapshot(s)", str(snapshot))


# -- 2: metrics lines whose numbers are not numbers --------------------------------------------------------

_VLLM = "INFO 08-01 12:00:{s:02d} metrics.py:100] Speculative metrics: Draft acceptance rate: {rate}, System efficiency: " \
        "0.400, Number of speculative tokens: 3, Number of accepted tokens: 10, Number of draft tokens: 20, " \
        "Number of emitted tokens: 15."


@pytest.mark.parametrize("rate", ["...", "0.5.5"])
def test_a_metrics_line_without_numbers_is_skipped_and_named(tmp_path: Path, rate: str) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(_VLLM.format(s=0, rate=rate) + "\n" + _VLLM.format(s=10, rate="0.500") + "\n")
    run = run_cli("diagnose", "--log", str(log), "--format", "json")
    assert run.returncode in (0, 1), run.stderr
    doc = json.loads(run.stdout)
    assert doc["logs"][0]["drafted"] == 20 and doc["logs"][0]["accepted"] == 10
    assert any("skipped 1 metrics line(s) whose figures are not numbers" in note for note in doc["notes"]), doc["notes"]


def test_the_log_formats_page_as_a_log_is_no_traceback() -> None:
    # The page that documents the log lines (it was the README's section) holds them as documentation writes them.
    page = Path(__file__).parent.parent / "docs" / "diagnose.md"
    run = run_cli("diagnose", "--log", str(page))
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode in (0, 1) and "skipped" in run.stdout, run.stdout[-2000:]


# -- 3: nan and inf as durations ------------------------------------------------------------------------


@pytest.mark.parametrize("args, env", [
    (["--timeout", "nan"], {}), (["--deadline", "nan"], {}), (["--deadline", "inf"], {}),
    ([], {"MTPINSPECT_TIMEOUT": "nan"}), ([], {"MTPINSPECT_DEADLINE": "nan"}),
])
def test_nan_durations_are_refused(args: list[str], env: dict[str, str]) -> None:
    error_line(run_cli("check", "acme/model", *args, env=_env(**env)), "is not a number of seconds")


def test_nan_start_timeout_is_refused(tiny: Path, tmp_path: Path) -> None:
    error_line(run_cli("sweep", str(tiny), "--out", str(tmp_path / "out"), "--start-timeout", "nan"), "not a number")


# -- 4: long strings are cut in the human formats -----------------------------------------------------------


def test_a_megabyte_architecture_name_is_cut(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "long.gguf", arch="x" * 1_000_000)
    run = run_cli("check", str(path), timeout=60)
    assert run.returncode in (1, 2) and "Traceback" not in run.stderr, run.stderr
    assert len(run.stdout) + len(run.stderr) < 100_000  # was 9.8 MB
    assert "[cut: 1,000,000 characters]" in " ".join((run.stdout + run.stderr).split())
    doc = json.loads(run_cli("check", str(path), "--format", "json", timeout=60).stdout)
    assert doc["architecture"]["gguf_architecture"] == "x" * 1_000_000  # JSON carries values whole


def test_a_megabyte_log_line_is_cut(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("llama_model_loader: error while handling argument " + "y" * 1_000_000 + "\n")
    run = run_cli("diagnose", "--log", str(log), timeout=60)
    assert "Traceback" not in run.stderr, run.stderr
    assert max(len(line) for line in run.stdout.splitlines()) < MAX_LINE_CHARS + 200


# -- 5, 6: the sweep's bounds ------------------------------------------------------------------------------


@pytest.mark.parametrize("args, needle", [
    (["--n-max", "99999999999999999999"], "--n-max 99999999999999999999: must be within 1..2047"),
    (["--n-max", "2147483647"], "--batch-size"),
    (["--n-max", "1,0"], "--n-max 0"),
    (["--repeat", "1000000000"], "--repeat 1000000000: must be within 1..1000"),
    (["--n-predict", "1"], "--n-predict 1"),
    (["--n-predict", "10000000000"], "--n-predict 10000000000"),
    (["--seed", "-1"], "--seed -1"),
    (["--seed", "4294967295"], "means random"),
    (["--synthetic", "nan"], "--synthetic nan"),
])
def test_sweep_options_out_of_bounds_are_refused_before_anything_starts(
    tiny: Path, tmp_path: Path, args: list[str], needle: str
) -> None:
    out = tmp_path / "out"
    error_line(run_cli("sweep", str(tiny), "--out", str(out), *args, timeout=60), needle)
    assert not out.exists()


def test_sweep_help_says_the_bounds() -> None:
    text = " ".join(run_cli("sweep", "--help").stdout.split())
    assert "each 1-2047" in text and "(1-1000)" in text and "(2-32768)" in text


@pytest.mark.parametrize("journal", ["/dev/zero", "fifo"])
def test_a_journal_that_never_ends_is_refused(tiny: Path, tmp_path: Path, journal: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if journal == "fifo":
        os.mkfifo(out / "runs.jsonl")
    else:
        (out / "runs.jsonl").symlink_to(journal)
    run = run_cli("sweep", str(tiny), "--out", str(out), "--resume", "--n-max", "1", "--repeat", "1", timeout=90)
    error_line(run, "runs.jsonl")


# -- 7: a config that declares more MTP layers than have weights ---------------------------------------------


@pytest.mark.parametrize("declared", [2, 10**9])
def test_declared_mtp_layers_without_weights_are_not_usable(tmp_path: Path, declared: int) -> None:
    header, _ = safetensors_header({"tensors": [
        ["model.embed_tokens.weight", "BF16", [4096, 64]], ["model.layers.2.eh_proj.weight", "BF16", [64, 128]],
        ["model.layers.2.enorm.weight", "BF16", [64]], ["model.layers.2.hnorm.weight", "BF16", [64]]]})
    (tmp_path / "model.safetensors").write_bytes(header)
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 2,
        "num_nextn_predict_layers": declared, "hidden_size": 64, "vocab_size": 4096, "torch_dtype": "bfloat16"}))
    run = run_cli("check", str(tmp_path), "--format", "json")
    doc = json.loads(run.stdout)
    assert run.returncode == 1, run.stderr
    assert any(f["code"] == "MTP_WEIGHTS_MISSING" and f["severity"] == "error" for f in doc["findings"])
    assert doc["usable"] is False and doc["verdict"].startswith("MTP not usable")
    assert {name: r["status"] for name, r in doc["runtimes"].items()}["vllm"] == "unsupported"
    assert not any(r["status"] == "supported" for r in doc["runtimes"].values())


# -- 8: a sweep that measured nothing says so -----------------------------------------------------------------


def _sweep_json(model: Path, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    run = run_cli("sweep", str(model), "--out", str(out), "--n-max", "1", "--repeat", "1", "--n-predict", "8",
                  "--prompts", "code", "--no-plot", "--format", "json", *extra, timeout=300)
    assert "Traceback" not in run.stderr, run.stderr
    return run, json.loads(run.stdout)


@pytest.mark.server
def test_a_trunk_swept_without_its_sidecar_is_no_measurement(split: tuple[Path, Path], tmp_path: Path) -> None:
    trunk, sidecar = split
    run, doc = _sweep_json(trunk, tmp_path / "out")
    rec = doc["recommendation"]
    assert run.returncode == 1, run.stderr
    assert rec["measured"] is False and rec["n_max"] is None
    assert rec["reason"].startswith("no measurement: no MTP configuration ran")
    assert f"{sidecar} beside the model" in rec["reason"] and "--mtp-file" in rec["reason"]
    assert "leave MTP off" not in rec["reason"]
    run, doc = _sweep_json(trunk, tmp_path / "paired", "--mtp-file", str(sidecar))
    assert run.returncode == 0 and doc["recommendation"]["measured"] is True, run.stderr


@pytest.mark.server
def test_a_text_file_as_model_is_no_measurement(tmp_path: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("not a model\n")
    run, doc = _sweep_json(text, tmp_path / "out")
    assert run.returncode in (1, 2), run.stderr
    assert doc["recommendation"]["measured"] is False
    assert doc["recommendation"]["reason"].startswith("no measurement: no baseline run finished")


# -- 9: broken symlinks are not Hub repo ids ----------------------------------------------------------------------


@pytest.mark.parametrize("command", [["check"], ["check", "--all"]])
def test_a_broken_symlink_is_said_at_once(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "fs").mkdir()
    (tmp_path / "fs" / "x.gguf").symlink_to(tmp_path / "gone.gguf")
    (tmp_path / "fs" / "loop").symlink_to("loop")
    env = _env(HF_ENDPOINT="http://127.0.0.1:9")  # were it asked, the Hub would not answer
    error_line(run_cli(*command, "fs/x.gguf", cwd=tmp_path, env=env), "broken symbolic link", "does not exist")
    error_line(run_cli(*command, "fs/loop", cwd=tmp_path, env=env), "broken symbolic link", "loop")


# -- 10: a cache folder that is a file -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["runtime", "build"], ["sweep", "{tiny}", "--out", "{out}"], ["diagnose", "{tiny}"]])
def test_a_cache_folder_that_is_a_file_is_one_line(tiny: Path, tmp_path: Path, command: list[str]) -> None:
    cache = tmp_path / "cache-file"
    cache.write_text("")
    args = [part.format(tiny=tiny, out=tmp_path / "out") for part in command]
    env = {k: v for k, v in _env(**{CACHE_ENV: str(cache)}).items() if k != "LLAMA_SERVER"}
    env["PATH"] = "/usr/bin:/bin"  # no llama-server on PATH: the cache is where it is looked for
    error_line(run_cli(*args, env=env, timeout=120), str(cache), "Not a directory", CACHE_ENV)


# -- 11: a header-cache entry that is not a regular file --------------------------------------------------------------


@pytest.mark.parametrize("replacement", ["fifo", "device-link"])
def test_a_cache_entry_that_is_not_a_file_is_ignored(tmp_path: Path, replacement: str) -> None:
    gguf = write_tiny_model(tmp_path / "m-Q8_0.gguf", TinyModelSpec())[0]
    with HubStub() as hub:
        hub.add_repo("acme/m", {"m-Q8_0.gguf": gguf})
        env = _env(HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"))
        first = run_cli("check", "acme/m", "--no-verify", "--format", "json", env=env, timeout=60)
        assert first.returncode == 0, first.stderr
        entries = sorted((Path(os.environ[CACHE_ENV]) / "headers").glob("*/*.bin"))
        assert entries
        for entry in entries:
            entry.unlink()
            if replacement == "fifo":
                os.mkfifo(entry)
            else:
                entry.symlink_to("/dev/zero")
        again = run_cli("check", "acme/m", "--no-verify", "--format", "json", "--deadline", "20", env=env, timeout=60)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["usable"] is True and json.loads(again.stdout)["bytes_cached"] == 0


# -- 12: stdout full or closed ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stdout", ["full", "closed"])
@pytest.mark.parametrize("command", [
    ["check", "{tiny}"], ["check", "{tiny}", "--format", "json"], ["check", "{tiny}", "--format", "csv"],
    ["check", "{tiny}", "--format", "md"], ["check", "--codes"], ["diagnose", "--codes", "--format", "csv"],
    ["tiny-model", "{out}"], ["--help"], ["sweep", "--help"],
])
def test_stdout_full_or_closed_is_one_line(tiny: Path, tmp_path: Path, stdout: str, command: list[str]) -> None:
    args = [part.format(tiny=tiny, out=tmp_path / "t.gguf") for part in command]
    redirect = "> /dev/full" if stdout == "full" else ">&-"
    script = " ".join(f"'{a}'" for a in [*CLI, *args]) + f" {redirect}"
    run = subprocess.run(["sh", "-c", script], capture_output=False, stderr=subprocess.PIPE, text=True, timeout=120)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert len(lines) == 1 and "stdout" in lines[0], run.stderr


def test_an_ascii_stdout_gets_escapes_not_a_traceback(tiny: Path, tmp_path: Path) -> None:
    model = tmp_path / "モデル.gguf"
    model.write_bytes(tiny.read_bytes())
    run = run_cli("check", str(model), env=_env(PYTHONIOENCODING="ascii", LC_ALL="C"))
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "\\u30e2\\u30c7\\u30eb.gguf" in run.stdout


def test_a_reader_that_leaves_stays_quiet(tiny: Path) -> None:
    run = subprocess.run(["sh", "-c", " ".join([*CLI, "check", str(tiny)]) + " | head -c 10 > /dev/null"],
                         stderr=subprocess.PIPE, text=True, timeout=120)
    assert run.stderr == "", run.stderr


# -- 13: tiny-model never replaces what is not a regular file --------------------------------------------------------------


def test_tiny_model_refuses_special_files_and_links(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.gguf"
    os.mkfifo(fifo)
    target = tmp_path / "real.gguf"
    target.write_bytes(b"keep")
    link = tmp_path / "link.gguf"
    link.symlink_to(target)
    to_device = tmp_path / "null.gguf"
    to_device.symlink_to("/dev/null")
    error_line(run_cli("tiny-model", str(fifo)), "is a FIFO")
    error_line(run_cli("tiny-model", str(link)), "symbolic link", "--force")
    error_line(run_cli("tiny-model", str(to_device), "--force"), "/dev/null", "character device")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and target.read_bytes() == b"keep" and link.is_symlink()
    # With --force the file the link points to is written; the link stays a link.
    assert run_cli("tiny-model", str(link), "--force").returncode == 0
    assert link.is_symlink() and target.read_bytes()[:4] == b"GGUF"


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_tiny_model_never_replaces_a_device_node(tmp_path: Path) -> None:
    device = tmp_path / "full"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # a private /dev/full
    error_line(run_cli("tiny-model", str(device)), "character device")
    assert stat.S_ISCHR(os.lstat(device).st_mode)


def test_tiny_model_refuses_a_sidecar_path_that_is_a_fifo_before_writing(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "mtp-m.gguf")
    error_line(run_cli("tiny-model", str(tmp_path / "m.gguf"), "--layout", "sidecar"), "mtp-m.gguf", "FIFO")
    assert not (tmp_path / "m.gguf").exists()


# -- 14: a sidecar checked on its own ------------------------------------------------------------------------------------


def test_a_sidecar_with_its_trunk_beside_it_pairs_in_the_recipes(split: tuple[Path, Path], tmp_path: Path) -> None:
    trunk, sidecar = split
    doc = json.loads(run_cli("check", str(sidecar), "--format", "json").stdout)
    ollama, llama = doc["runtimes"]["ollama"]["command"], doc["runtimes"]["llama.cpp"]["command"]
    assert f"FROM {trunk}" in ollama and f"DRAFT {sidecar}" in ollama and f"FROM {sidecar}" not in ollama
    assert llama.startswith(f"{server_for_commands().program} -m {trunk} -md {sidecar}")
    alone = tmp_path / sidecar.name
    alone.write_bytes(sidecar.read_bytes())
    doc = json.loads(run_cli("check", str(alone), "--format", "json").stdout)
    assert doc["runtimes"]["ollama"]["command"] is None  # the main GGUF is not known: no recipe
    assert "MAIN.gguf" in doc["runtimes"]["llama.cpp"]["command"]
