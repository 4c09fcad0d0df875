"""Engine crashes with MTP, on the real llama-server: recognised, and worked around by experiment.

Two crashes of the pinned build reproduce on every machine and stand for the class:
- `-b 2 -ub 2` with `--spec-draft-n-max 3`: the first decode aborts with GGML_ASSERT "batch must be large
  enough to hold the sampled and draft tokens" (tools/server/server-context.cpp), while the same flags
  without MTP serve; dropping -b/-ub is the verified fix;
- an mtp- sidecar of another width: GGML_ASSERT "MTP input row width must match" (common/speculative.cpp)
  at load, which no flag fixes.
A third depends on the CPU: a Q8_0 MTP head crashes at load (SIGSEGV) on CPUs whose ggml build has an
extra buffer type for Q8_0 weights (AMX), and `--no-repack` avoids it. It runs where it reproduces and is
reported as a skip, with the CPU's features, where it does not.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import pytest

from mtpinspect.cli._output import Output
from mtpinspect.cli.sweep import render
from mtpinspect.diagnosis import diagnose
from mtpinspect.jsonable import to_jsonable
from mtpinspect.logread.catalogue import Meaning
from mtpinspect.runtime.crash import CrashKind, crash_in_log, crash_of, signal_name
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.runtime.flags import BATCH, N_MAX, ServerArgs
from mtpinspect.runtime.server import LlamaServer, ServerProcessError
from mtpinspect.runtime.workaround_search import decodes_with_mtp, find_workaround
from mtpinspect.runtime.workarounds import Workaround
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.prompts import Prompt
from mtpinspect.sweep.report import SweepReport
from mtpinspect.tiny_model import TinyModelSpec, mismatched_sidecar, write_tiny_model
from mtpinspect.vocabulary import WorkaroundMode

MTP3 = ["--spec-type", "draft-mtp", "--spec-draft-n-max", "3"]
SMALL_BATCH = ["-b", "2", "-ub", "2"]


@pytest.fixture(scope="module")
def binary() -> ServerBinary:
    return find_server(build=True, progress=print)


def _tiny(tmp_path: Path, **fields: object) -> list[Path]:
    return write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(**fields))  # type: ignore[arg-type]


def _cpu_flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown CPU"
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
    return " ".join(f for f in (flags.group(1).split() if flags else []) if f.startswith(("avx512", "amx"))) or "no AVX-512/AMX"


@pytest.mark.server
def test_small_batch_crash_is_an_assert_and_dropping_the_batch_flags_fixes_it(binary: ServerBinary, tmp_path: Path) -> None:
    (model,) = _tiny(tmp_path)
    args = ServerArgs.of(["-t", "1", *SMALL_BATCH, *MTP3])
    ok, outcome, crash = decodes_with_mtp(binary, model, args, tmp_path / "as-given.log")
    assert not ok and crash is not None, outcome
    assert crash.kind is CrashKind.ASSERT and crash.signal == "SIGABRT"
    assert "batch must be large enough" in crash.message and crash.where == "tools/server/server-context.cpp:508"
    # Without MTP the same batch flags serve: the crash is MTP's.
    with LlamaServer(binary, model, ["-t", "1", *SMALL_BATCH], log_path=tmp_path / "baseline.log") as server:
        assert server.complete("def f(x):", n_predict=16).predicted_n == 16

    search = find_workaround(binary, model, args, tmp_path, crash=crash)
    assert search.fix is not None and search.fix.workaround is Workaround.DEFAULT_BATCH
    assert search.trials == (search.fix,)  # the cheapest change worked, so nothing else ran
    assert not search.fix.args.has(BATCH) and search.fix.args.value(N_MAX) == "3"
    assert search.summary == "verified: starts and decodes without -b/-ub"


@pytest.mark.server
def test_n_max_1_is_found_when_the_batch_is_kept(binary: ServerBinary, tmp_path: Path) -> None:
    (model,) = _tiny(tmp_path)
    catalogue = [w for w in Workaround if w is not Workaround.DEFAULT_BATCH]
    search = find_workaround(binary, model, ServerArgs.of(["-t", "1", *SMALL_BATCH, *MTP3]), tmp_path, catalogue=catalogue)
    # --no-repack, -fa off and -t 1 leave a 2-token batch too small for 1 + 3 tokens; n-max 1 fits.
    assert [t.workaround for t in search.trials] == [Workaround.NO_REPACK, Workaround.FLASH_ATTN_OFF, Workaround.N_MAX_1]
    assert all("GGML_ASSERT" in t.outcome for t in search.trials[:-1])
    assert search.fix is not None and search.fix.workaround is Workaround.N_MAX_1


@pytest.mark.server
def test_a_crash_no_flag_fixes_is_reported_as_such(binary: ServerBinary, tmp_path: Path) -> None:
    main, sidecar = write_tiny_model(tmp_path / "mm.gguf", TinyModelSpec(layout="sidecar", sidecar_from=mismatched_sidecar("embd")))
    args = ServerArgs.of(["-t", "1", "-md", str(sidecar), *MTP3])
    ok, _, crash = decodes_with_mtp(binary, main, args, tmp_path / "as-given.log")
    assert not ok and crash is not None and "MTP input row width must match" in crash.message
    search = find_workaround(binary, main, args, tmp_path, crash=crash)
    assert search.fix is None and search.trials
    assert all(not t.ok and "row width" in t.outcome for t in search.trials)
    assert search.summary.startswith("no single change made it start and decode (tried: --no-repack")


@pytest.mark.server
def test_quantized_head_crash_on_cpus_with_an_extra_buffer_type(binary: ServerBinary, tmp_path: Path) -> None:
    """The crash of issue 12: a Q8_0 head, on a CPU whose ggml build repacks Q8_0 (AMX)."""
    (model,) = write_tiny_model(tmp_path / "q8.gguf", TinyModelSpec(head_type="Q8_0"))
    args = ServerArgs.of(["-t", "1", *MTP3])
    ok, outcome, crash = decodes_with_mtp(binary, model, args, tmp_path / "as-given.log")
    if ok:
        pytest.skip(f"a Q8_0 MTP head does not crash this build on this CPU ({_cpu_flags()}); "
                    "it crashed (SIGSEGV at load) on AVX-512 CPUs with an extra buffer type for Q8_0")
    assert crash is not None, outcome
    search = find_workaround(binary, model, args, tmp_path, crash=crash)
    assert search.fix is not None and search.fix.workaround is Workaround.NO_REPACK, search.summary


@pytest.mark.server
def test_server_error_carries_what_crash_of_needs(binary: ServerBinary, tmp_path: Path) -> None:
    (model,) = _tiny(tmp_path)
    server = LlamaServer(binary, model, ["-t", "1", *SMALL_BATCH, *MTP3], log_path=tmp_path / "s.log")
    with pytest.raises(ServerProcessError) as exc, server:
        server.complete("def f(x):", n_predict=16)
    assert signal_name(exc.value.returncode) == "SIGABRT"
    crash = crash_of(exc.value.returncode, server.read_log())
    assert crash is not None and crash.kind is CrashKind.ASSERT
    # The same log pasted elsewhere, without the return code, is still a crash.
    pasted = crash_in_log(server.read_log())
    assert pasted is not None and pasted.message == crash.message



# -- sweep: survives and explains ---------------------------------------------------------------

SWEEP_PROMPTS = (
    Prompt("c1", "code", "def fibonacci(n: int) -> int:\n    "),
    Prompt("c2", "code", "SELECT name, total FROM orders WHERE"),
)
SCHEMAS = Path(__file__).resolve().parents[1] / "mtpinspect" / "schemas"
SWEEP_SCHEMA = json.loads((SCHEMAS / "sweep.schema.json").read_text(encoding="utf-8"))
DIAGNOSE_SCHEMA = json.loads((SCHEMAS / "diagnose.schema.json").read_text(encoding="utf-8"))


def _sweep(binary: ServerBinary, tmp_path: Path, **changes: object) -> SweepReport:
    (model,) = _tiny(tmp_path)
    options = SweepOptions(**{  # type: ignore[arg-type]
        "n_max": (1, 3), "repeat": 2, "prompts": SWEEP_PROMPTS, "n_predict": 24, "server": binary.path,
        "out_dir": tmp_path / "out", "server_args": ("-t", "1", *SMALL_BATCH), "plot": False, **changes,
    })
    report = run_sweep(model, options)
    jsonschema.validate(to_jsonable(report), SWEEP_SCHEMA)
    return report


@pytest.mark.server
def test_sweep_retries_a_crashing_configuration_with_the_verified_change(binary: ServerBinary, tmp_path: Path) -> None:
    report = _sweep(binary, tmp_path)
    by_config = {g.configuration: g for g in report.results}
    # n-max 1 fits a 2-token batch (1 + 1 tokens) and runs as planned; n-max 3 crashes and is retried.
    assert by_config["n-max-1"].workaround is None and by_config["n-max-1"].runs == 4
    retried = by_config["n-max-3"]
    assert retried.workaround is Workaround.DEFAULT_BATCH and retried.runs == 4 and retried.acceptance == 1.0
    assert "-b" not in retried.command and retried.shown_label == "n-max 3 [without -b/-ub]"
    (entry,) = report.crashes
    assert entry.configuration == "n-max-3" and entry.crash.kind is CrashKind.ASSERT
    assert entry.workaround is Workaround.DEFAULT_BATCH
    assert [t.workaround for t in entry.tried] == [Workaround.DEFAULT_BATCH] and entry.tried[0].ok
    # The journal says which runs were measured with the change, and the crash that made it needed.
    records = Journal(tmp_path / "out" / "runs.jsonl").read().records
    assert {r["workaround"] for r in records if r["kind"] == "run" and r["configuration"] == "n-max-3" and r["status"] == "ok"} == {"without -b/-ub"}
    assert any(r["kind"] == "workaround" and r["fix"] == "without -b/-ub" for r in records)
    # Rounds alternate, so n-max 3 ends round 1 and opens round 2 on one server: one crash, one search,
    # then one start with the change for the runs of both rounds.
    n3_starts = [r for r in records if r["kind"] == "server" and r["configuration"] == "n-max-3"]
    assert [s["workaround"] for s in n3_starts] == [None, "without -b/-ub"]
    assert n3_starts[0]["crash"]["kind"] == "assert" and n3_starts[1]["crash"] is None

    text = io.StringIO()
    render(report, Output("table", stream=text))
    shown = text.getvalue()
    assert "Engine crashes with MTP" in shown and "n-max 3 [without -b/-ub]" in shown
    assert "tried without -b/-ub: starts and decodes" in shown


@pytest.mark.server
def test_sweep_says_mtp_crashes_when_no_change_is_tried(binary: ServerBinary, tmp_path: Path) -> None:
    report = _sweep(binary, tmp_path, n_max=(3,), repeat=1, workaround=WorkaroundMode.off)
    assert report.recommendation.n_max is None
    assert report.recommendation.reason.startswith("leave MTP off: MTP crashes this llama-server build on this machine (n-max 3: SIGABRT: GGML_ASSERT(add_ok")
    assert report.recommendation.reason.endswith("while the baseline runs")
    (entry,) = report.crashes
    assert entry.workaround is None and entry.tried == []
    (group,) = [g for g in report.results if g.configuration == "n-max-3"]
    assert group.runs == 0 and group.crash is not None and "batch must be large enough" in group.crash.message


@pytest.mark.server
def test_sweep_reuses_a_verified_change_for_the_next_crashing_configuration(binary: ServerBinary, tmp_path: Path) -> None:
    report = _sweep(binary, tmp_path, n_max=(2, 3), repeat=1)
    crashes = {c.configuration: c for c in report.crashes}
    assert set(crashes) == {"n-max-2", "n-max-3"}
    assert all(c.workaround is Workaround.DEFAULT_BATCH for c in crashes.values())
    assert len(crashes["n-max-2"].tried) == 1 and crashes["n-max-3"].tried == []  # found once, then reused
    records = Journal(tmp_path / "out" / "runs.jsonl").read().records
    assert sum(1 for r in records if r["kind"] == "workaround") == 1


# -- diagnose: names the crash, finds the fix by experiment, reads crash logs ------------------

CASE_LOGS = Path(__file__).resolve().parents[1] / "cases" / "logs"
# Crashes the thread put on MTP (the ones in runs without MTP are test_log_corpus.py's: a note, no cause).
CRASH_CASES = [e for e in json.loads((CASE_LOGS / "index.json").read_text(encoding="utf-8"))
               if e["kind"] == "crash" and e["expect"]["causes"]]


@pytest.mark.server
def test_diagnose_names_the_crash_and_the_verified_change(binary: ServerBinary, tmp_path: Path) -> None:
    (model,) = _tiny(tmp_path)
    report = diagnose(str(model), server=binary.path, n_predict=24,
                      server_args=("-t", "1", *SMALL_BATCH, *MTP3))
    top = report.causes[0]
    assert top.code == "MTP_ENGINE_CRASH" and top.confidence_word == "high"
    assert "GGML_ASSERT(add_ok" in top.message and "decodes without it" in top.message
    # The fix names the llama-server diagnose was given, the one it verified the change on.
    assert top.fix.startswith(f"verified: starts and decodes without -b/-ub: {binary.path} -m ")
    assert " -b " not in top.fix and "--spec-draft-n-max 3" in top.fix
    given = report.probe.as_given if report.probe else None
    assert given is not None and given.crash is not None and given.workarounds is not None
    assert given.workarounds.fix is not None and given.workarounds.fix.workaround is Workaround.DEFAULT_BATCH
    # The probe's own n-max 3 crashed the same way and was measured with the change.
    assert [c.configuration for c in report.probe.crashes] == ["n-max-3"]
    measured = [f for f in report.probe.figures if f.n_max == 3]
    assert measured and all(f.acceptance == 1.0 for f in measured)
    document = to_jsonable(report)
    jsonschema.validate(document, DIAGNOSE_SCHEMA)
    assert document["probe"]["as_given"]["workarounds"]["summary"] == "verified: starts and decodes without -b/-ub"


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c["file"], marks=pytest.mark.xfail(strict=True, reason=c["expect"]["known_miss"]))
    if "known_miss" in c["expect"] else pytest.param(c, id=c["file"]) for c in CRASH_CASES])
def test_diagnose_log_recognises_real_crash_reports(case: dict) -> None:
    report = diagnose(log_files=[CASE_LOGS / case["file"]])
    assert report.causes, case["file"]
    assert report.causes[0].code == case["expect"]["causes"][0], (case["file"], [c.code for c in report.causes])
    (log,) = report.logs
    # The engine as the thread established it: a known miss that is the engine's alone (the right crash told as
    # another engine's) stays a miss here too.
    assert log.runtime == case["expect"]["runtime"], (case["file"], log.runtime)
    # A native crash (signal, assert, abort, C++ exception, GPU fault), or a Python engine's exception, a backend's
    # kernel failure or the engine's own line that its scheduler or worker died, read from the catalogue of messages;
    # or, where the paste stops before the exception line, the traceback's own frames through the drafting code;
    # or an assert whose own words name a known MTP failure (a QWEN35_MTP graph on a GGUF without nextn layers).
    meanings = {m.meaning for m in log.messages}
    assert log.crash is not None or meanings & {Meaning.exception, Meaning.engine_gap, Meaning.engine_death,
                                                Meaning.mtp_failure} \
        or {Meaning.traceback, Meaning.speculation} <= meanings


def test_crash_log_suggestions_follow_the_signature(tmp_path: Path) -> None:
    # The excerpts alone hold nothing of MTP (no cause, issue 42); under the command the thread gives, they do.
    fattn_log = tmp_path / "fattn.log"
    fattn_log.write_text("$ llama-server -m gemma-4-31B-it.gguf --spec-type draft-mtp\n"
                         + (CASE_LOGS / "llama.cpp-gemma4-sm-tensor-mtp-fattn-579.log").read_text(encoding="utf-8"),
                         encoding="utf-8")
    fattn = diagnose(log_files=[fattn_log]).causes[0]
    assert fattn.code == "MTP_ENGINE_CRASH"
    assert fattn.fix.startswith("try, one change at a time: ")
    assert fattn.fix.removeprefix("try, one change at a time: ").startswith("-fa off, ")  # fattn.cu aborted
    # A vLLM crash gets vLLM's settings, never llama-server flags.
    gpu_log = tmp_path / "gpu.log"
    gpu_log.write_text("vllm serve Qwen/Qwen3.6-27B-FP8 --speculative-config '{\"method\": \"mtp\", "
                       "\"num_speculative_tokens\": 5}'\n"
                       + (CASE_LOGS / "vllm-qwen36-27b-fp8-mtp-illegal-memory-access.log").read_text(encoding="utf-8"),
                       encoding="utf-8")
    gpu = diagnose(log_files=[gpu_log]).causes[0]
    assert gpu.code == "MTP_ENGINE_CRASH" and gpu.fix.startswith("the crash is vLLM's")
    assert diagnose(log_files=[CASE_LOGS / "vllm-qwen36-27b-fp8-mtp-illegal-memory-access.log"]).causes == []
    assert "--enforce-eager" in gpu.fix and "-ot" not in gpu.fix and "--no-repack" not in gpu.fix
