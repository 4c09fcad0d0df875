"""Sweep pieces that need no server: plan order, prompt files, the journal, statistics, option errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mtpinspect.cli.sweep import ProgressBar, command
from mtpinspect.errors import FormatError, SourceError, UsageError
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.plan import BASELINE_ID, Configuration, build_plan, configurations
from mtpinspect.sweep.progress import BUILD, RUN_DONE, RUN_START, SERVER_FAILED, ProgressEvent
from mtpinspect.sweep.prompts import Prompt, builtin_classes, load_builtin, load_prompts
from mtpinspect.sweep.records import LogFigures, RunRecord, cross_check
from mtpinspect.sweep.statistics import first_divergence, recommend, summarize
from mtpinspect.vocabulary import RunStatus

PROMPTS = [Prompt("a", "code", "def f():"), Prompt("b", "prose", "Once upon a time")]


def test_rounds_alternate_order_and_merge_at_the_boundary() -> None:
    configs = configurations([2, 1])
    plan = build_plan(configs, PROMPTS, repeat=3)
    order = [visit.configuration.id for visit in plan.visits]
    # Round 0: baseline, 1, 2; round 1 reversed (2 shares the boundary server), round 2 forward again.
    assert order == ["baseline", "n-max-1", "n-max-2", "n-max-1", "baseline", "n-max-1", "n-max-2"]
    assert plan.total_runs == 3 * 3 * len(PROMPTS)
    assert [run.repeat for run in plan.visits[2].runs] == [0, 0, 1, 1]
    assert [visit.runs[0].repeat for visit in plan.visits] == [0, 0, 0, 1, 1, 2, 2]


def test_grouped_order_starts_each_configuration_once() -> None:
    configs = configurations([2, 1])
    plan = build_plan(configs, PROMPTS, repeat=3, order="grouped")
    assert [visit.configuration.id for visit in plan.visits] == ["baseline", "n-max-1", "n-max-2"]
    assert [run.repeat for run in plan.visits[0].runs] == [r for r in range(3) for _ in PROMPTS]
    assert plan.total_runs == 3 * 3 * len(PROMPTS)
    with pytest.raises(UsageError, match="--order sideways"):
        build_plan(configs, PROMPTS, repeat=1, order="sideways")


def test_resume_leaves_finished_runs_and_empty_visits_out() -> None:
    configs = configurations([1])
    full = build_plan(configs, PROMPTS, repeat=1)
    done = [run.key for run in full.visits[0].runs] + [full.visits[1].runs[0].key]
    rest = build_plan(configs, PROMPTS, repeat=1, done=done)
    assert [visit.configuration.id for visit in rest.visits] == ["n-max-1"]
    assert [run.prompt.id for run in rest.visits[0].runs] == ["b"]


def test_server_arguments_per_configuration() -> None:
    baseline, one = configurations([1])
    # The baseline gets no --spec-type and no -md (a draft GGUF alone would switch MTP on).
    assert baseline.id == BASELINE_ID and baseline.server_args("mtp-x.gguf").args == ()
    assert one.server_args("mtp-x.gguf").args == ("--spec-type", "draft-mtp", "--spec-draft-n-max", "1", "-md", "mtp-x.gguf")
    synth = Configuration(3, synthetic=0.5)
    assert synth.synth_rates() == [0.5, 0.25, 0.125]
    assert synth.server_args(None).args[-2:] == ("--spec-synth-rates", "0.5,0.25,0.125")


@pytest.mark.parametrize(("n_max", "synthetic"), [([0], []), ([], []), ([1], [1.5])])
def test_impossible_configurations(n_max: list[int], synthetic: list[float]) -> None:
    with pytest.raises(UsageError):
        configurations(n_max, synthetic)


def test_builtin_prompt_classes() -> None:
    assert builtin_classes() == ["code", "extraction", "prose-en", "prose-ja"]
    prompts = load_builtin()
    for name in builtin_classes():
        mine = [p for p in prompts if p.prompt_class == name]
        assert len(mine) >= 3 and all(len(p.text) > 80 for p in mine)
    assert len({p.id for p in prompts}) == len(prompts)
    assert any("\u3001" in p.text for p in prompts if p.prompt_class == "prose-ja")
    assert load_prompts("code") == [p for p in prompts if p.prompt_class == "code"]


def test_prompt_files_and_directories(tmp_path: Path) -> None:
    (tmp_path / "story.txt").write_text("It was a dark and stormy night.", encoding="utf-8")
    lines = [{"id": "q1", "category": "qa", "prompt": "Why?"}, {"prompt": "How?"}]
    (tmp_path / "set.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("ignored", encoding="utf-8")
    prompts = load_prompts(tmp_path)
    assert [(p.id, p.prompt_class) for p in prompts] == [("q1", "qa"), ("set-2", "set"), ("story", "story")]
    assert load_prompts(tmp_path / "story.txt")[0].text.startswith("It was")


@pytest.mark.parametrize(
    ("name", "content", "error", "needle"),
    [
        ("bad.jsonl", '{"prompt": "ok"}\n{not json\n', FormatError, "bad.jsonl:2"),
        ("bad.jsonl", '{"text": "no prompt key"}\n', FormatError, '"prompt"'),
        ("empty.txt", "  \n", FormatError, "empty prompt file"),
        ("bin.txt", b"\xff\xfe\x00", FormatError, "not UTF-8"),
    ],
)
def test_bad_prompt_files(tmp_path: Path, name: str, content: str | bytes, error: type, needle: str) -> None:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(error) as caught:
        load_prompts(path)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_missing_prompts_and_duplicate_ids(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="nowhere"):
        load_prompts(tmp_path / "nowhere")
    (tmp_path / "x.jsonl").write_text('{"id": "same", "prompt": "a"}\n', encoding="utf-8")
    (tmp_path / "y.jsonl").write_text('{"id": "same", "prompt": "b"}\n', encoding="utf-8")
    with pytest.raises(FormatError, match="same"):
        load_prompts(tmp_path)


def test_journal_survives_a_line_cut_short(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.jsonl")
    journal.append({"kind": "run", "n": 1})
    with journal.path.open("a", encoding="utf-8") as stream:
        stream.write('{"kind": "run", "n": 2, "te')  # a writer killed mid-line
    journal.append({"kind": "run", "n": 3})
    contents = journal.read()
    assert [r["n"] for r in contents.records] == [1, 3]
    assert contents.damaged_lines == 1


def test_first_divergence() -> None:
    assert first_divergence("abcdef", "abcdef") is None
    assert first_divergence("abcdef", "abXdef") == 2
    assert first_divergence("abc", "abcdef") == 3


def _run(config: str, n_max: int | None, tps: float, repeat: int, text: str = "same") -> RunRecord:
    return RunRecord(
        configuration=config, n_max=n_max, synthetic=None, prompt_id="p", prompt_class="code", repeat=repeat,
        server_id=config, status=RunStatus.ok, error=None, wall_seconds=1.0, settings={}, finished_at=0.0,
        decode_tokens_per_second=tps, drafted=10 if n_max else 0, accepted=8 if n_max else 0,
        drafts=10 if n_max else 0, per_position=[0.8] if n_max else [], text=text,
    )


def test_speedup_noise_and_recommendation() -> None:
    configs = configurations([1, 2])
    runs = [_run("baseline", None, tps, i) for i, tps in enumerate((10.0, 11.0, 12.0))]
    runs += [_run("n-max-1", 1, tps, i) for i, tps in enumerate((15.0, 16.0, 17.0))]  # clear win
    runs += [_run("n-max-2", 2, tps, i, text="sa!") for i, tps in enumerate((11.5, 13.0, 14.0))]  # overlaps
    groups = summarize(runs, [], configs, ["code"])
    by_id = {g.configuration: g for g in groups}
    assert by_id["n-max-1"].speedup == pytest.approx(16.0 / 11.0) and by_id["n-max-1"].within_noise is False
    assert by_id["n-max-2"].within_noise is True
    assert by_id["baseline"].repeats_identical is True
    assert by_id["n-max-1"].identical_to_baseline is True
    assert by_id["n-max-2"].identical_to_baseline is False and by_id["n-max-2"].first_divergence == 2
    choice = recommend(groups, ["code"])
    assert choice.n_max == 1 and "code 1.45x" in choice.reason
    slower = [r for r in runs if r.configuration == "baseline"]
    slower += [_run("n-max-1", 1, tps, i) for i, tps in enumerate((5.0, 6.0, 7.0))]
    off = recommend(summarize(slower, [], configs, ["code"]), ["code"])
    assert off.n_max is None and off.reason.startswith("leave MTP off: no setting beats the baseline beyond noise")


def test_cross_check_names_each_disagreement() -> None:
    figures = {"drafted": 40, "accepted": 30, "drafts": 12, "acceptance": 0.75, "mean_length": 1 + 30 / 12,
               "timings_draft_n": 40, "timings_draft_n_accepted": 30, "metrics_drafted": 40, "metrics_accepted": 30}
    line = LogFigures(0.75, 30, 40, 3.5, "draft acceptance = 0.75000 (30 accepted / 40 generated), mean len = 3.50")
    assert cross_check(figures, line) == (True, None)
    bad = LogFigures(0.7, 28, 40, 3.33, "...")
    agrees, why = cross_check(figures, bad)
    assert agrees is False and "28/40" in why and "mean len 3.33" in why
    assert cross_check({**figures, "drafted": 0, "accepted": 0, "drafts": 0, "acceptance": None, "mean_length": None,
                        "timings_draft_n": 0, "timings_draft_n_accepted": 0, "metrics_drafted": 0,
                        "metrics_accepted": 0}, None) == (None, None)
    # The pooled per-request counts against the server-wide counters: a request counted twice shows.
    agrees, why = cross_check({**figures, "metrics_drafted": 48, "metrics_accepted": 36}, line)
    assert agrees is False and "timings say 30/40 accepted, /metrics 36/48" in why
    assert cross_check(figures, None)[0] is False


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--n-max", "0"], "--n-max 0: must be within 1..2047"),
        (["--n-max", "one"], "comma-separated"),
        (["--synthetic", "2"], "within [0, 1]"),
        (["--", "--spec-type", "draft-mtp"], "sets this per configuration"),
        (["missing.gguf"], "no such model file"),
    ],
)
def test_option_errors_are_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    with pytest.raises((UsageError, SourceError)) as caught:
        command.main(args + ["--out", str(tmp_path), "--server", "/nonexistent/llama-server"], standalone_mode=False)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _build_events(total: int) -> list[ProgressEvent]:
    """What a first sweep reports while llama-server is built: messages, then cmake's percentages."""
    said = ["building llama-server from llama-cpp-python==0.3.36 ...; full log: /c/build-cpu.log",
            "downloading llama-cpp-python==0.3.36 (source distribution) with pip"]
    steps = [f"[{p:3d}%] Building CXX object f{p}.o" for p in range(0, 101, 4)]
    done = ["built llama-server (cpu) in 7m05s; cached in /c/llama-server/0.3.36-0c1e570-cpu"]
    return [ProgressEvent(BUILD, 0, total, float(i), None, None, None, None, m) for i, m in enumerate(said + steps + done)]


def test_a_build_before_the_sweep_is_shown_as_a_build_not_as_a_bar_at_zero() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream)
    for event in _build_events(180):
        bar(event)
    lines = stream.getvalue().splitlines()
    assert not any("sweep [" in line or "0/180" in line for line in lines)
    assert lines[0].startswith("llama-server: building llama-server") and lines[-1].startswith("llama-server: built ")
    # In a log: one line per tenth of the build, with the time so far.
    steps = [line for line in lines if "Building CXX" in line]
    assert [line.split("]")[0] for line in steps] == [f"llama-server: [{p:3d}%" for p in (0, 12, 20, 32, 40, 52, 60, 72, 80, 92, 100)]
    assert steps[1].endswith("(5s)")
    # On a terminal the compile steps overwrite each other; the bar appears with the first run.
    terminal = _Terminal()
    bar = ProgressBar(terminal)
    for event in _build_events(180):
        bar(event)
    bar(ProgressEvent(RUN_START, 0, 180, 30.0, None, "baseline", "p1", 0, "baseline: p1"))
    shown = terminal.getvalue()
    assert shown.count("\n") == 3  # the two messages and the closing line stay; steps were redrawn in place
    assert "0/180" in shown.rsplit("\n", 1)[1] and "0/180" not in shown.rsplit("\n", 1)[0]


def test_progress_lines_for_logs_that_are_not_a_terminal() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream)
    bar(ProgressEvent(RUN_START, 0, 4, 0.1, None, "n-max 2", "p1", 0, "n-max 2: p1"))
    bar(ProgressEvent(RUN_DONE, 1, 4, 2.0, 150.0, "n-max 2", "p1", 0, "41.0 tok/s, acceptance 0.90"))
    bar(ProgressEvent(SERVER_FAILED, 3, 4, 3.0, 75.0, "n-max 3", None, None, "model doesn't contain MTP layers\x1b[2J"))
    bar.close()
    lines = stream.getvalue().splitlines()
    # One line per finished step (starts are not repeated), readable in CI logs, escapes neutralised.
    assert lines == [
        "sweep [1/4] n-max 2 p1 round 1: 41.0 tok/s, acceptance 0.90 (ETA 2m30s)",
        "sweep [3/4] n-max 3: model doesn't contain MTP layers\\x1b[2J (ETA 1m15s)",
    ]


def test_an_eta_before_the_first_run_comes_only_from_quiet_runs_of_the_same_settings(tmp_path: Path) -> None:
    """A second sweep's first ETA (26 minutes) came from a busy earlier run of other settings, and the sweep
    took 75 s. Only runs of the same settings on a quiet machine give one; otherwise none until the first runs."""
    from mtpinspect.sweep.api import _history

    settings = {"model": "/m.gguf", "mtp_file": None, "n_predict": 64, "seed": 42, "server_args": []}
    other = {**settings, "n_predict": 512}

    def run(with_settings: dict, cores_used: float) -> dict:
        return {"kind": "run", "status": "ok", "settings": with_settings, "wall_seconds": 6.4, "predicted_n": 64,
                "other_load": {"cores_used": cores_used, "window_seconds": 6.4, "cores": 2}}

    journal = Journal(tmp_path / "runs.jsonl")
    journal.append(run(other, 0.0))  # quiet, but other settings
    journal.append(run(settings, 1.3))  # these settings, on a busy machine
    assert _history(journal, settings) == (None, None, "")
    journal.append(run(settings, 0.1))
    per_token, _, basis = _history(journal, settings)
    assert per_token == 0.1 and basis == "from 1 earlier runs of these settings on a quiet machine, in runs.jsonl"
