"""mtp-bench's format (rows, Aggregate JSON, --out file), the sweep's chat requests and nine-category set, its
mtp-bench export read back, and `diagnose --log` on mtp-bench output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import FormatError, UsageError
from mtpinspect.formats import mtp_bench
from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.prompts import builtin_classes, load_builtin, load_prompts
from mtpinspect.sweep.records import RunRecord
from mtpinspect.sweep.request import REASONING_SWITCH, SERVER_FALLBACK, resolve
from mtpinspect.trained_model import SHIPPED_GGUF
from mtpinspect.vocabulary import LogKind, Reasoning, RequestKind, RunStatus

SCHEMAS = Path(__file__).resolve().parents[1] / "mtpinspect" / "schemas"
BENCH_SCHEMA = json.loads((SCHEMAS / "mtp-bench.schema.json").read_text(encoding="utf-8"))
SWEEP_SCHEMA = json.loads((SCHEMAS / "sweep.schema.json").read_text(encoding="utf-8"))
DIAGNOSE_SCHEMA = json.loads((SCHEMAS / "diagnose.schema.json").read_text(encoding="utf-8"))
NINE = ["code_python", "code_cpp", "explain_concept", "summarize", "qa_factual", "translation", "creative_short",
        "stepwise_math", "long_code_review"]
# The keys mtp-bench.py writes (its later copies, with concurrency): what scripts that read its files use.
RESULT_KEYS = {"name", "wall_s", "predicted_n", "predicted_per_second", "draft_n", "draft_n_accepted", "accept_rate"}
AGGREGATE_KEYS = {"total_draft", "total_draft_accepted", "aggregate_accept_rate", "wall_s_total", "concurrency",
                  "batch_wall_s", "aggregate_throughput_tok_s"}

# As mtp-bench prints a run: a row per prompt (one failed), a summary line, then the aggregate indented.
PRINTED = """\
$ python mtp-bench.py --url http://127.0.0.1:8080
  code_python        pred= 192 draft= 171 acc= 140 rate=0.819 tok/s=41.2
  code_cpp           pred= 192 draft= 168 acc= 131 rate=0.780 tok/s=39.8
  explain_concept    pred= 192 draft= 150 acc=  96 rate=0.640 tok/s=33.0
  summarize          pred=  61 draft=  48 acc=  30 rate=0.625 tok/s=31.9
  qa_factual         pred= 140 draft= 120 acc=  80 rate=0.667 tok/s=34.1
  translation        ERROR: <urlopen error [Errno 111] Connection refused>
  creative_short     pred=  40 draft=  36 acc=  15 rate=0.417 tok/s=25.5
  stepwise_math      pred= 192 draft= 165 acc= 129 rate=0.782 tok/s=38.7
  long_code_review   pred= 192 draft= 170 acc= 118 rate=0.694 tok/s=35.0

Concurrency=1 repeat=1  aggregate=33.9 tok/s  mean per-stream=34.4 tok/s
Aggregate: {
  "n_requests": 9,
  "n_failed": 1,
  "concurrency": 1,
  "repeat": 1,
  "total_predicted": 1201,
  "total_draft": 1028,
  "total_draft_accepted": 739,
  "aggregate_accept_rate": 0.7189,
  "wall_s_total": 36.1,
  "batch_wall_s": 36.12,
  "aggregate_throughput_tok_s": 33.25,
  "mean_request_tok_s": 34.9
}
Wrote out.json
"""


def test_printed_rows_and_aggregate_are_read() -> None:
    run = mtp_bench.parse(PRINTED)
    assert run.source == "rows+aggregate" and [r.name for r in run.results] == NINE
    failed = [r for r in run.results if r.error]
    assert [r.name for r in failed] == ["translation"] and "Connection refused" in (failed[0].error or "")
    assert run.aggregate is not None and run.aggregate.concurrency == 1 and run.aggregate.batch_wall_s == 36.12
    assert run.totals() == (1028, 739)
    # The rows add up to the aggregate, failed request left out.
    categories = run.by_category()
    assert sum(d for d, _ in categories.values()) == 1028 and sum(a for _, a in categories.values()) == 739
    assert categories["creative_short"] == (36, 15) and "translation" not in categories


def test_early_copies_repeats_and_rows_alone() -> None:
    # An early copy: a one-line aggregate without the concurrency keys; rows of a repeated run ("name x3").
    text = ("  code_python x3     pred= 576 draft= 500 acc= 400 rate=0.800 tok/s=40.0\n"
            'Aggregate: {"total_draft": 500, "total_draft_accepted": 400, "aggregate_accept_rate": 0.8, "wall_s_total": 14.2}\n')
    run = mtp_bench.parse(text)
    assert run.results[0].name == "code_python" and run.results[0].requests == 3
    assert run.aggregate is not None and run.aggregate.concurrency is None and run.aggregate.wall_s_total == 14.2
    rows_only = mtp_bench.parse(PRINTED.split("\nConcurrency")[0])
    assert rows_only.aggregate is None and rows_only.source == "rows" and rows_only.totals() == (1028, 739)


def test_out_json_round_trip_keeps_mtp_benchs_keys() -> None:
    run = mtp_bench.parse(PRINTED)
    results = run.results
    doc = mtp_bench.to_json(mtp_bench.BenchRun(results, mtp_bench.aggregate_of(results, 1, 36.0), "json"))
    jsonschema.validate(doc, BENCH_SCHEMA)
    assert set(doc) == {"results", "aggregate"} and AGGREGATE_KEYS <= set(doc["aggregate"])
    assert all(RESULT_KEYS <= set(item) for item in doc["results"])
    assert doc["aggregate"]["n_failed"] == 1 and doc["aggregate"]["total_draft"] == 1028
    again = mtp_bench.parse(json.dumps(doc))
    assert again.source == "json" and again.totals() == run.totals() and again.by_category() == run.by_category()


@pytest.mark.parametrize(("text", "message"), [
    ("hello\nworld\n", "no mtp-bench rows"),
    ('{"results": [], "aggregate": {"total_draft": 5, "total_draft_accepted": 9}}', "exceeds total_draft"),
    ('{"results": [], "aggregate": {"total_draft": "many", "total_draft_accepted": 1}}', '"total_draft" is \'many\''),
    ('{"results": {}, "aggregate": {}}', 'expected an object with "results" and "aggregate"'),
    ("  code_python pred= 1 draft= 1 acc= 1 rate=1.000 tok/s=1.0\nAggregate: {broken\n", "not followed by a JSON object"),
])
def test_bad_mtp_bench_output_is_one_line(text: str, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        mtp_bench.parse(text, "pasted.txt")


def test_pasted_output_gives_a_diagnosis(tmp_path: Path) -> None:
    pasted = tmp_path / "mtp-bench.txt"
    pasted.write_text(PRINTED, encoding="utf-8")
    report = diagnose(log_files=[pasted], probe=False)
    log = report.logs[0]
    assert log.kind is LogKind.mtp_bench and (log.drafted, log.accepted) == (1028, 739) and not report.causes
    assert any("creative_short: 15 accepted of 36 drafted (41.7%)" in note and "aggregate 739 of 1028" in note
               for note in report.notes)
    # The same run with every draft rejected: the head is blamed, with each category as evidence.
    zero = tmp_path / "zero.json"
    doc = mtp_bench.to_json(mtp_bench.parse(PRINTED))
    for item in doc["results"]:
        item["draft_n_accepted"] = 0
    doc["aggregate"]["total_draft_accepted"] = 0
    zero.write_text(json.dumps(doc), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mtpinspect", "diagnose", "--log", str(zero), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    jsonschema.validate(document, DIAGNOSE_SCHEMA)
    top = document["causes"][0]
    assert top["code"] == "HEAD_DISAGREES"
    assert any("code_cpp: 0 accepted of 168 drafted" in line for line in top["evidence"])


def test_a_log_that_is_not_mtp_bench_is_read_as_before(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("draft acceptance rate = 0.50000 (   10 accepted /    20 generated)\n", encoding="utf-8")
    report = diagnose(log_files=[log], probe=False)
    assert report.logs[0].kind is LogKind.llama_server and report.logs[0].drafted == 20


def test_nine_category_set_is_named_not_default() -> None:
    nine = load_prompts("mtp-bench-categories")
    assert [p.id for p in nine] == NINE and [p.prompt_class for p in nine] == NINE
    assert "mtp-bench-categories" not in builtin_classes()
    assert not {p.prompt_class for p in load_builtin()} & set(NINE)


def test_request_way_follows_the_template() -> None:
    auto = Reasoning.auto
    raw = resolve(None, RequestKind.auto, auto)
    assert raw.kind is RequestKind.completion and raw.template is None and "no chat template" in raw.why
    fallback = resolve(None, RequestKind.chat, auto)
    assert fallback.kind is RequestKind.chat and fallback.template == SERVER_FALLBACK and fallback.chat_extra() == {}
    thinking = "{% if enable_thinking %}<think>{% endif %}{{ messages[0].content }}"
    on = resolve(thinking, RequestKind.auto, auto)
    assert on.kind is RequestKind.chat and on.reasoning is Reasoning.on
    assert on.chat_extra() == {"chat_template_kwargs": {REASONING_SWITCH: True}}
    assert resolve(thinking, RequestKind.chat, Reasoning.off).chat_extra() == {"chat_template_kwargs": {REASONING_SWITCH: False}}
    with pytest.raises(UsageError, match="no reasoning switch"):
        resolve("{{ messages[0].content }}", RequestKind.chat, Reasoning.off)
    with pytest.raises(UsageError, match="goes with chat requests"):
        resolve(thinking, RequestKind.completion, Reasoning.on)


@pytest.mark.parametrize(("args", "message"), [
    (["--reasoning", "on"], "--reasoning on: goes with chat requests (--request chat)"),
    (["--request", "chat", "--reasoning", "off"], "--reasoning off: the model's chat template has no reasoning switch"),
    (["--prompts", "mtp-bench-categorie"], "nor a built-in class (code, extraction, prose-en, prose-ja) or set (head-probe, mtp-bench-categories)"),
    (["--reasoning", "on", "--endpoint", "http://127.0.0.1:9"], "--reasoning on: goes with chat requests (--request chat)"),
])
def test_request_options_refused_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    # The built-in model has no chat template: checked before any server starts.
    proc = subprocess.run([sys.executable, "-m", "mtpinspect", "sweep", *args, "--out", str(tmp_path / "out"), "--no-plot"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# -- on the real llama-server ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server_binary() -> ServerBinary:
    return find_server(build=True, progress=print)


def _runs(out: Path) -> list[RunRecord]:
    return [RunRecord.from_dict(r) for r in Journal(out / "runs.jsonl").read().records if r["kind"] == "run"]


@pytest.mark.server
def test_nine_categories_through_the_chat_endpoint_exported_as_mtp_bench(server_binary: ServerBinary,
                                                                          tmp_path: Path) -> None:
    out, bench = tmp_path / "out", tmp_path / "bench"
    options = SweepOptions(n_max=(2,), repeat=1, prompts="mtp-bench-categories", n_predict=16, server=server_binary.path,
                           out_dir=out, plot=False, request=RequestKind.chat, mtp_bench_json=bench,
                           server_args=("-t", "1"))
    report = run_sweep(None, options)
    assert report.runs.ok == 18 and report.prompt_classes == NINE
    assert report.request is not None and report.request.kind is RequestKind.chat
    assert report.request.template == SERVER_FALLBACK and report.settings["request"] == "chat"
    # The chat template wrapped each prompt: more prompt tokens than the text alone (checked on the raw run below).
    chat_prompt_n = {r.prompt_id: r.prompt_n for r in _runs(out) if r.configuration == "baseline"}
    jsonschema.validate(to_jsonable(report), SWEEP_SCHEMA)
    assert sorted(Path(p).name for p in report.files.mtp_bench) == ["baseline.json", "n-max-2.json"]

    # Read back with mtp-bench's own keys, as a script that reads its --out file does.
    doc = json.loads((bench / "n-max-2.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, BENCH_SCHEMA)
    assert [r["name"] for r in doc["results"]] == NINE
    assert all(RESULT_KEYS <= set(r) for r in doc["results"]) and AGGREGATE_KEYS <= set(doc["aggregate"])
    runs = {r.prompt_id: r for r in _runs(out) if r.configuration == "n-max-2" and r.status == RunStatus.ok}
    for item in doc["results"]:
        assert (item["draft_n"], item["draft_n_accepted"]) == (runs[item["name"]].drafted, runs[item["name"]].accepted)
    aggregate = doc["aggregate"]
    assert aggregate["total_draft"] == sum(r["draft_n"] for r in doc["results"]) > 0
    assert aggregate["total_draft_accepted"] == sum(r["draft_n_accepted"] for r in doc["results"])
    assert aggregate["concurrency"] == 1 and aggregate["batch_wall_s"] == pytest.approx(aggregate["wall_s_total"], abs=0.02)
    assert json.loads((bench / "baseline.json").read_text(encoding="utf-8"))["aggregate"]["total_draft"] == 0

    # The exported file is a log diagnose reads.
    diagnosis = diagnose(log_files=[bench / "n-max-2.json"], probe=False)
    assert diagnosis.logs[0].drafted == aggregate["total_draft"]

    # The default on the built-in model (no chat template): raw completion, with the reason said.
    raw_out = tmp_path / "raw"
    raw = run_sweep(None, SweepOptions(n_max=(2,), repeat=1, prompts="mtp-bench-categories", n_predict=16,
                                       server=server_binary.path, out_dir=raw_out, plot=False,
                                       server_args=("-t", "1"), order="grouped"))
    assert raw.request is not None and raw.request.kind is RequestKind.completion and "no chat template" in raw.request.why
    assert "request" not in raw.settings
    raw_prompt_n = {r.prompt_id: r.prompt_n for r in _runs(raw_out) if r.configuration == "baseline"}
    assert all((chat_prompt_n[name] or 0) > (raw_prompt_n[name] or 0) for name in NINE)


@pytest.mark.server
def test_reasoning_switch_reaches_the_template(server_binary: ServerBinary, tmp_path: Path) -> None:
    # The built-in model with a GLM-style template that has a reasoning switch: off adds an empty think block.
    model = tmp_path / "templated.gguf"
    template = ("{%- for m in messages -%}{{ '<|' + m.role + '|>\\n' + m.content }}{%- endfor -%}"
                "{%- if add_generation_prompt -%}{{ '<|assistant|>' }}"
                "{%- if enable_thinking is defined and not enable_thinking -%}{{ '\\n<think></think>' }}{%- endif -%}"
                "{{ '\\n' }}{%- endif -%}")
    subprocess.run([sys.executable, "-m", "gguf.scripts.gguf_new_metadata", str(SHIPPED_GGUF), str(model),
                    "--chat-template", template, "--force"], check=True, capture_output=True, timeout=120)
    prompts = tmp_path / "one.jsonl"
    prompts.write_text(json.dumps({"id": "q", "class": "qa", "prompt": "What is a hash table?"}) + "\n", encoding="utf-8")
    prompt_n = {}
    for reasoning in (Reasoning.auto, Reasoning.off):
        out = tmp_path / reasoning.value
        report = run_sweep(model, SweepOptions(n_max=(1,), repeat=1, prompts=prompts, n_predict=8, out_dir=out,
                                               server=server_binary.path, plot=False, reasoning=reasoning,
                                               server_args=("-t", "1")))
        assert report.request is not None and report.request.kind is RequestKind.chat  # auto: the GGUF has a template
        assert report.request.reasoning is (Reasoning.on if reasoning is Reasoning.auto else Reasoning.off)
        assert report.runs.ok == 2
        prompt_n[reasoning] = next(r.prompt_n for r in _runs(out) if r.configuration == "baseline")
    assert (prompt_n[Reasoning.off] or 0) > (prompt_n[Reasoning.auto] or 0)

    # diagnose's probe sends its prompts as a chat app would too, and says so.
    diagnosis = diagnose(str(model), server=server_binary.path, n_predict=8, prompts=prompts, server_args=("-t", "1"))
    assert diagnosis.probe is not None and diagnosis.probe.request is not None
    assert diagnosis.probe.request.kind is RequestKind.chat and diagnosis.probe.request.reasoning is Reasoning.on
    jsonschema.validate(to_jsonable(diagnosis), DIAGNOSE_SCHEMA)
    raw = diagnose(str(model), server=server_binary.path, n_predict=8, prompts=prompts, server_args=("-t", "1"),
                   request=RequestKind.completion)
    assert raw.probe is not None and raw.probe.request is not None and raw.probe.request.kind is RequestKind.completion


@pytest.mark.server
def test_cli_says_how_it_sent_and_writes_mtp_bench_json(server_binary: ServerBinary, tmp_path: Path) -> None:
    prompts = tmp_path / "one.jsonl"
    prompts.write_text(json.dumps({"id": "code_python", "class": "code_python",
                                   "prompt": "Write a Python function that reverses a list."}) + "\n", encoding="utf-8")
    bench = tmp_path / "bench"
    proc = subprocess.run([sys.executable, "-m", "mtpinspect", "sweep", "--request", "chat", "--prompts", str(prompts),
                           "--n-max", "1", "--repeat", "1", "--n-predict", "8", "--out", str(tmp_path / "out"),
                           "--server", str(server_binary.path), "--no-plot", "--mtp-bench-json", str(bench), "--", "-t", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"requests: chat (/v1/chat/completions) through {SERVER_FALLBACK}" in proc.stdout
    doc = mtp_bench.parse((bench / "n-max-1.json").read_text(encoding="utf-8"))
    assert [r.name for r in doc.results] == ["code_python"] and doc.results[0].predicted_n == 8


def test_one_quoted_row_does_not_make_a_page_mtp_bench_output() -> None:
    page = "The rows look like `code_python  pred= 192 draft= 171 acc= 140 rate=0.819 tok/s=41.2` in a paste.\n"
    assert not mtp_bench.looks_like(page)
    assert not mtp_bench.looks_like(PRINTED.splitlines()[1] + "\n")  # a single row alone is not a run either
    assert mtp_bench.looks_like("\n".join(PRINTED.splitlines()[1:3]))
    assert mtp_bench.looks_like(PRINTED.split("Concurrency=")[1])  # the Aggregate alone


_AGG = ('{{"total_draft": {drafted}, "total_draft_accepted": 10, "aggregate_accept_rate": 0.5, "wall_s_total": 1.0}}')


@pytest.mark.parametrize(("aggregate", "message"), [
    (_AGG.format(drafted="NaN"), "not a number mtp-bench writes"),
    (_AGG.format(drafted="Infinity"), "not a number mtp-bench writes"),
    (_AGG.format(drafted="1e400"), "out of range"),
    (_AGG.format(drafted="9" * 5000), "an integer of 5000 digits"),
    ('{"total_draft": ' + "[" * 100_000 + "]" * 100_000 + ', "total_draft_accepted": 1}', "nested too deeply"),
    ('{"total_draft": 20, "total_draft_accepted": 10, "aggregate_accept_rate": 5.0}', "above 1"),
])
@pytest.mark.parametrize("shape", ["printed", "out"])
def test_hostile_numbers_are_one_line_exit_2(tmp_path: Path, aggregate: str, message: str, shape: str) -> None:
    # Issue 42: NaN, Infinity, 1e400, 5,000-digit integers and 100k-deep arrays gave tracebacks.
    text = ("  code_python pred= 1 draft= 1 acc= 1 rate=1.000 tok/s=1.0\n  code_cpp pred= 1 draft= 1 acc= 1 rate=1.000 "
            f"tok/s=1.0\nAggregate: {aggregate}\n") if shape == "printed" else '{"results": [], "aggregate": ' + aggregate + "}"
    pasted = tmp_path / "bench.txt"
    pasted.write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mtpinspect", "diagnose", "--log", str(pasted)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr


def test_malformed_rows_are_skipped_and_named_and_acceptance_stays_a_share(tmp_path: Path) -> None:
    pasted = tmp_path / "bench.txt"
    pasted.write_text("  code_python pred= 100 draft= 80 acc= 60 rate=0.750 tok/s=1.2.3\n"
                      f"  code_cpp pred= 100 draft= {'9' * 5000} acc= 60 rate=0.750 tok/s=30.0\n"
                      "  explain pred= 100 draft= 10 acc= 100 rate=10.000 tok/s=30.0\n"
                      "  summarize pred= 100 draft= 80 acc= 40 rate=0.500 tok/s=30.0\n"
                      "  translate pred= 100 draft= 80 acc= 60 rate=0.750 tok/s=31.0\n", encoding="utf-8")
    report = diagnose(log_files=[pasted], probe=False)
    (log,) = report.logs
    assert (log.drafted, log.accepted) == (160, 100) and log.acceptance is not None and log.acceptance <= 1
    skipped = [n for n in report.notes if "skipped mtp-bench" in n]
    assert [n.split("line ")[1].split(":")[0] for n in skipped] == ["1", "2", "3"]
    assert "acc=100 above draft=10" in skipped[2]
