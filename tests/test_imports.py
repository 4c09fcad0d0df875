"""What each light command imports: `--help`, `check` on a local GGUF, `find` and `diagnose --log` never import
numpy, gguf-py or matplotlib (no GGUF is written), tabulate only when a table is drawn, and the rules of a
checkpoint only for a checkpoint. `check` on a local GGUF leaves out the Hub's client, the build machinery,
llama.cpp's verify runner, the apps' store readers and the measuring commands; `diagnose --log` leaves out the
probe's sweep and everything that starts or asks a server; `--help` imports no command.
Each runs as the real CLI in a child process, which prints the modules it ended with: a behaviour, not a
timing (the timings are bench/bench_whole_command.py's)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_child import clean_env
from hubstub import HubStub

import mtpinspect

HEAVY = ("numpy", "gguf", "matplotlib", "tabulate")
# What a check of a local GGUF has no use for: the Hub's requests (fetch.py and its socket, huggingface_hub),
# building, finding or running llama.cpp (--no-verify), Ollama's and LM Studio's readers, and the other commands.
NOT_FOR_A_LOCAL_CHECK = (
    "huggingface_hub", "httpx2", "mtpinspect.sources.fetch", "mtpinspect.sources.hub", "mtpinspect.sources.header_cache",
    "mtpinspect.runtime.build", "mtpinspect.runtime.find", "mtpinspect.runtime.process", "mtpinspect.runtime.toolchain",
    "mtpinspect.runtime.verify", "mtpinspect.sources.lmstudio", "mtpinspect.sources.ollama", "mtpinspect.sweep",
    "mtpinspect.diagnosis", "mtpinspect.drift", "mtpinspect.training", "mtpinspect.cli.sweep", "mtpinspect.cli.diagnose",
    "psutil",
    # A checkpoint's readers and rules (inspection/evidence.py). The row readers (inspection/embedding.py,
    # formats/gguf_rows.py) are a bundled head's too since issue 44: its embedding's rows are checked for NaN or
    # Inf, with the standard library only (numpy stays out, HEAVY).
    "mtpinspect.formats.config", "mtpinspect.formats.quantization", "mtpinspect.formats.safetensors",
    "mtpinspect.sources.provenance", "mtpinspect.inspection.quant_audit", "mtpinspect.inspection.origin",
)
FIXTURES = Path(__file__).parent / "diagnose_fixtures"
CRASH_LOG = Path(__file__).parents[1] / "cases" / "logs" / "llama.cpp-gemma4-sm-tensor-ctkd-abort-backtrace.log"
TRAINED_GGUF = Path(mtpinspect.__file__).parent / "data" / "trained" / "tiny-glm-mtp-Q8_0.gguf"

# Runs `mtpinspect ARGS` as `python -m mtpinspect` does, then prints which of the modules named in argv[1]
# (comma-separated) it imported.
_CHILD = """
import json, runpy, sys
watched, sys.argv = set(sys.argv[1].split(",")), ["mtpinspect", *sys.argv[2:]]
try:
    runpy.run_module("mtpinspect", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
else:
    code = 0
heavy = sorted(watched & set(sys.modules))
print(json.dumps({"exit": code, "heavy": heavy}), file=sys.stderr)
"""


def imported(*args: str, env: dict[str, str] | None = None, watched: tuple[str, ...] = HEAVY) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-c", _CHILD, ",".join(watched), *args], capture_output=True, text=True,
                          timeout=180, env=clean_env(env), stdin=subprocess.DEVNULL)
    last = json.loads(done.stderr.strip().splitlines()[-1])
    return last["exit"], last["heavy"]


@pytest.fixture(scope="module")
def hub() -> Iterator[HubStub]:
    with HubStub() as stub:
        stub.add_repo("acme/Base", {"config.json": b'{"architectures": ["Glm4MoeForCausalLM"]}'})
        stub.add_repo("acme/Base-GGUF", {"Base-Q8_0.gguf": TRAINED_GGUF}, base_model=("quantized", "acme/Base"),
                      downloads=10)
        yield stub


def test_help_imports_nothing_heavy() -> None:
    assert imported("--help") == (0, [])


def test_help_imports_no_command() -> None:
    # The command list comes from the CLI's own table: no command module, no inspection, no sources.
    watched = ("mtpinspect.cli.check", "mtpinspect.cli.find", "mtpinspect.inspection", "mtpinspect.sources",
               "mtpinspect.runtime", "mtpinspect.formats")
    assert imported("--help", watched=watched) == (0, [])


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_check_of_a_local_gguf_imports_nothing_heavy(fmt: str) -> None:
    code, heavy = imported("check", str(TRAINED_GGUF), "--no-verify", "--format", fmt)
    assert code == 0 and heavy == []


def test_check_draws_its_tables_with_tabulate_only() -> None:
    # The human format draws tables: tabulate comes in then, and nothing else heavy.
    assert imported("check", str(TRAINED_GGUF), "--no-verify") == (0, ["tabulate"])


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_check_of_a_local_gguf_leaves_the_hub_the_build_and_the_other_commands_out(fmt: str) -> None:
    watched = (*NOT_FOR_A_LOCAL_CHECK, "socket")
    assert imported("check", str(TRAINED_GGUF), "--no-verify", "--format", fmt, watched=watched) == (0, [])


def test_a_table_costs_tabulate_and_not_an_installed_package_lookup() -> None:
    # tabulate 0.10 looks its own version up through importlib.metadata (with email, zipfile and socket) when
    # imported, more time than importing click: pyproject.toml keeps tabulate below 0.10, and this fails above.
    watched = ("importlib.metadata", "email", "zipfile", "socket")
    assert imported("check", str(TRAINED_GGUF), "--no-verify", watched=watched) == (0, [])


def test_an_app_source_loads_its_reader(tmp_path: Path) -> None:
    # The other side of the cut above: an lmstudio: SOURCE does load LM Studio's reader (here to find no
    # such model under an empty home), and still no Hub client.
    code, loaded = imported("check", "lmstudio:acme/none", "--no-verify", "--format", "json",
                            env={"HOME": str(tmp_path)},
                            watched=("mtpinspect.sources.lmstudio", "mtpinspect.sources.fetch"))
    assert code == 2 and loaded == ["mtpinspect.sources.lmstudio"]


def test_rule_modules_load_when_used(tmp_path: Path) -> None:
    rules = ("mtpinspect.inspection.checkpoint_rules", "mtpinspect.inspection.gguf_rules")
    assert imported("check", str(TRAINED_GGUF), "--no-verify", "--format", "json", watched=rules) == (
        0, ["mtpinspect.inspection.gguf_rules"])
    (tmp_path / "config.json").write_text('{"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", '
                                          '"num_hidden_layers": 2, "num_nextn_predict_layers": 1}')
    _, loaded = imported("check", str(tmp_path), "--no-verify", "--format", "json", watched=rules)
    assert "mtpinspect.inspection.checkpoint_rules" in loaded


def test_find_imports_nothing_heavy(hub: HubStub) -> None:
    code, heavy = imported("find", "acme/Base", "--no-verify", "--format", "json", env={"HF_ENDPOINT": hub.url})
    assert code == 0 and heavy == []


def test_find_without_verify_asks_the_hub_but_builds_and_runs_nothing(hub: HubStub) -> None:
    watched = ("mtpinspect.sources.fetch", "mtpinspect.runtime.build", "mtpinspect.runtime.process",
               "mtpinspect.runtime.verify", "mtpinspect.sweep", "mtpinspect.diagnosis")
    code, loaded = imported("find", "acme/Base", "--no-verify", "--format", "json", env={"HF_ENDPOINT": hub.url},
                            watched=watched)
    assert code == 0 and loaded == ["mtpinspect.sources.fetch"]


def test_diagnose_log_imports_nothing_heavy() -> None:
    code, heavy = imported("diagnose", "--log", str(FIXTURES / "vllm_zero_acceptance.log"), "--format", "json")
    assert code in (0, 1) and heavy == []


# What a diagnosis of a log has no use for: the probe's sweep, starting or talking to a server (llama-server's
# launcher, child processes, the HTTP client), psutil (which watches what an engine's command starts) and
# Ollama's store reader (for an Ollama model's run settings), and check's pipeline (reading a model).
NOT_FOR_A_LOG = ("mtpinspect.sweep", "mtpinspect.diagnosis.probe", "mtpinspect.runtime.server",
                 "mtpinspect.runtime.process", "mtpinspect.runtime.workaround_search", "mtpinspect.runtime.engines.base",
                 "http.client", "psutil", "mtpinspect.sources.ollama", "mtpinspect.inspection.pipeline",
                 "mtpinspect.inspection.evidence", "mtpinspect.formats.gguf")


# Low acceptance on vLLM, and an MTP crash of llama-server (whose diagnosis suggests crash workarounds).
@pytest.mark.parametrize("log", [FIXTURES / "vllm_zero_acceptance.log", CRASH_LOG])
def test_diagnose_log_runs_no_server_and_no_sweep(log: Path) -> None:
    code, loaded = imported("diagnose", "--log", str(log), "--format", "json", watched=NOT_FOR_A_LOG)
    assert code == 1 and loaded == []


# The command line as a process runs it (python -m mtpinspect), then reports its garbage collector.
_GC_CHILD = """
import gc, json, runpy, sys
sys.argv = ["mtpinspect", *sys.argv[1:]]
try:
    runpy.run_module("mtpinspect", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
print(json.dumps({"exit": code, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                  "check": "mtpinspect.cli.check" in sys.modules}), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [("check", str(TRAINED_GGUF), "--no-verify", "--format", "json"), ("no-such-command",)])
def test_the_process_freezes_what_start_up_built_and_collects_again(args: tuple[str, ...]) -> None:
    """__main__.entry imports the command's modules with the collector paused, freezes them, and turns the
    collector on again for the command; a name that is no command still gets click's one line."""
    done = subprocess.run([sys.executable, "-c", _GC_CHILD, *args], capture_output=True, text=True, timeout=180,
                          env=clean_env(None), stdin=subprocess.DEVNULL)
    last = json.loads(done.stderr.strip().splitlines()[-1])
    assert last["enabled"] is True and last["frozen"] > 10_000
    if args[0] == "check":
        assert last["exit"] == 0 and last["check"] is True
    else:
        assert last["exit"] == 2 and "No such command 'no-such-command'" in done.stderr

