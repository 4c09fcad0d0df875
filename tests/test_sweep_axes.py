"""The sweep's serving-condition axes (issue 33): --concurrency, --temperature, --method, --long-prompt.

Pure tests of the plan and the recommendation per condition first, then short sweeps on the real
llama-server with tiny models of known acceptance.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cliproc import error_line, run_cli
from gguf_factory import write_gguf
from matplotlib import image as mpimg

from mtpinspect.errors import UsageError
from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.long_prompt import LONG_CLASS, long_prompts
from mtpinspect.sweep.plan import (
    Condition,
    Configuration,
    Method,
    PlannedRun,
    build_plan,
    conditions,
    configurations,
    parse_method,
    plan_size,
)
from mtpinspect.sweep.prompts import Prompt
from mtpinspect.sweep.records import RunRecord, ServerRecord
from mtpinspect.sweep.sampling import recommended_temperature
from mtpinspect.sweep.statistics import GroupStats, Spread, recommend_per_condition
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model
from mtpinspect.trained_model import SHIPPED_GGUF
from mtpinspect.vocabulary import RunStatus

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "mtpinspect" / "schemas" / "sweep.schema.json").read_text(encoding="utf-8")
)
N_PREDICT = 12
PROMPTS = [Prompt("p1", "code", "def fibonacci(n):"), Prompt("p2", "code", "SELECT name FROM")]


# -- the plan (pure) ------------------------------------------------------------------------------


def test_default_axes_leave_the_plan_as_before() -> None:
    configs = configurations([1, 2])
    assert [c.id for c in configs] == ["baseline", "n-max-1", "n-max-2"]
    assert [c.label for c in configs] == ["baseline", "n-max 1", "n-max 2"]
    assert list(configs[0].server_args(None)) == []
    assert list(configs[1].server_args(None)) == ["--spec-type", "draft-mtp", "--spec-draft-n-max", "1"]
    plan = build_plan(configs, PROMPTS, 2)
    assert (plan.total_runs, plan.requests) == (12, 12)


def test_concurrency_gives_every_configuration_its_slots_and_its_own_baseline() -> None:
    configs = configurations([2], conditions=conditions([1, 4], [0.0]))
    assert [c.id for c in configs] == ["baseline", "n-max-2", "baseline@c4", "n-max-2@c4"]
    assert list(configs[2].server_args(None)) == ["-np", "4"]
    assert list(configs[3].server_args(None))[:2] == ["-np", "4"]
    assert configs[3].label == "n-max 2 (4 concurrent, temperature 0)"
    plan = build_plan(configs, PROMPTS, 1)
    assert (plan.total_runs, plan.requests) == (8, 2 * 1 + 2 * 1 + 2 * 4 + 2 * 4)


def test_methods_set_their_own_draft_length_flag() -> None:
    methods = [parse_method(m) for m in ("draft-mtp", "ngram-simple", "ngram-mod", "draft:/models/small.gguf")]
    configs = configurations([3, 64], methods=methods)
    by_id = {c.id: list(c.server_args("/models/mtp.gguf")) for c in configs}
    assert by_id["n-max-3"] == ["--spec-type", "draft-mtp", "--spec-draft-n-max", "3", "-md", "/models/mtp.gguf"]
    assert by_id["ngram-simple-n-max-3"] == ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-m", "3"]
    # ngram-mod drops drafts under its n-min (48 by default): n-min follows a smaller n-max.
    assert by_id["ngram-mod-n-max-3"] == ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-max", "3",
                                          "--spec-ngram-mod-n-min", "3"]
    assert by_id["ngram-mod-n-max-64"][-1] == "48"
    assert by_id["draft-small-n-max-3"] == ["--spec-type", "draft-simple", "--spec-draft-n-max", "3",
                                            "-md", "/models/small.gguf"]


@pytest.mark.parametrize("text", ["mtp", "draft", "draft:", "ngram-mod:x.gguf", "eagle"])
def test_a_method_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--method"):
        parse_method(text)


def test_seeds_differ_by_round_and_request_under_sampling_only() -> None:
    greedy = Configuration(2, condition=Condition(2, 0.0))
    sampled = Configuration(2, condition=Condition(2, 0.7))
    baseline = Configuration(None, condition=Condition(2, 0.7))
    assert PlannedRun(greedy, PROMPTS[0], 3).seeds(42) == [42, 42]
    assert PlannedRun(sampled, PROMPTS[0], 0).seeds(42) == [42, 43]
    assert PlannedRun(sampled, PROMPTS[0], 1).seeds(42) == [44, 45]
    # Every configuration samples a round with the same seeds, so their texts can be compared.
    assert PlannedRun(baseline, PROMPTS[1], 1).seeds(42) == PlannedRun(sampled, PROMPTS[0], 1).seeds(42)


def test_the_plan_size_names_the_axes_and_how_to_trim() -> None:
    configs = configurations([1, 2], methods=[(Method.draft_mtp, None), (Method.ngram_simple, None)],
                             conditions=conditions([1, 4], [0.0, 0.7]))
    size = plan_size(build_plan(configs, PROMPTS, 3), n_predict=64)
    assert size.runs == 5 * 4 * 2 * 3
    assert size.requests == 5 * 2 * 2 * 3 * (1 + 4)
    assert size.tokens == size.requests * 64
    assert "120 runs (5 settings x 4 conditions x 2 prompts x 3 rounds)" in size.line
    assert "to trim: fewer --n-max/--method values, fewer --concurrency/--temperature values, --repeat 1" in size.line


def test_long_prompts_are_about_the_tokens_asked_for() -> None:
    prompts = long_prompts(2000)
    assert {p.prompt_class for p in prompts} == {LONG_CLASS}
    assert [p.id for p in prompts] == ["long-summarise", "long-code"]
    for prompt in prompts:
        assert 2000 * 4 <= len(prompt.text) < 2000 * 4 + 2000
        assert prompt.text.isascii()


def _group(n: int, t: float, n_max: int | None, tps: float, method: str | None = "draft-mtp") -> GroupStats:
    setting = "off" if n_max is None else (f"n-max {n_max}" if method == "draft-mtp" else f"{method} n-max {n_max}")
    spread = Spread(tps, tps * 0.99, tps * 1.01)
    return GroupStats(
        configuration=setting + Condition(n, t).suffix, label=setting, n_max=n_max, synthetic=None,
        prompt_class="code", runs=3, failed=0, error=None, tokens_per_second=spread, prompt_tokens_per_second=None,
        speedup=None, within_noise=None, acceptance=None, mean_length=None, first_position_acceptance=None,
        expected_length=None, per_position=[], drafted=0, accepted=0, drafts=0, checkpoint_restores=None, rss_peak_bytes=None,
        rss_post_load_bytes=None, gpu_memory_bytes=None, repeats_identical=None, identical_to_baseline=None,
        first_divergence=None, log_agrees=None, method=method if n_max else None, setting=setting, concurrency=n,
        temperature=t,
    )


def _compared(groups: list[GroupStats]) -> list[GroupStats]:
    for group in groups:
        base = next(g for g in groups if g.n_max is None and (g.concurrency, g.temperature) ==
                    (group.concurrency, group.temperature))
        if group.n_max is not None:
            assert group.tokens_per_second is not None and base.tokens_per_second is not None
            group.speedup = group.tokens_per_second.median / base.tokens_per_second.median
            group.within_noise = group.tokens_per_second.overlaps(base.tokens_per_second)
    return groups


def test_the_recommendation_is_per_condition_and_names_the_method() -> None:
    groups = _compared([
        _group(1, 0.0, None, 100), _group(1, 0.0, 2, 150), _group(1, 0.0, 2, 120, "ngram-simple"),
        _group(4, 0.0, None, 300), _group(4, 0.0, 2, 250), _group(4, 0.0, 2, 330, "ngram-simple"),
        _group(8, 0.0, None, 400), _group(8, 0.0, 2, 300), _group(8, 0.0, 2, 350, "ngram-simple"),
    ])
    recommendation = recommend_per_condition(groups, ["code"])
    assert (recommendation.n_max, recommendation.method) == (2, "draft-mtp")
    assert recommendation.summary == ("at 1 request, temperature 0: n-max 2; at 4 concurrent, temperature 0: "
                                      "ngram-simple n-max 2; at 8 concurrent, temperature 0: off; speculative "
                                      "decoding stops paying from 8 concurrent requests at temperature 0")
    assert [(c.concurrency, c.n_max, c.method) for c in recommendation.per_condition] == [
        (1, 2, "draft-mtp"), (4, 2, "ngram-simple"), (8, None, None)]
    jsonschema.validate(to_jsonable(recommendation), SCHEMA["properties"]["recommendation"] | {"$defs": SCHEMA["$defs"]})


def test_one_condition_keeps_the_recommendation_as_before() -> None:
    recommendation = recommend_per_condition(_compared([_group(1, 0.0, None, 100), _group(1, 0.0, 3, 150)]), ["code"])
    assert recommendation.per_condition == [] and recommendation.summary is None
    assert recommendation.reason.startswith("n-max 3 is fastest beyond noise in 1 of 1 classes")


def test_the_recommended_temperature_comes_from_the_gguf_first(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "model.gguf", arch="glm4moe", metadata={"general.sampling.temp": 0.6})
    (tmp_path / "generation_config.json").write_text('{"temperature": 1.0}', encoding="utf-8")
    assert recommended_temperature(model) == pytest.approx(0.6)


def test_the_recommended_temperature_comes_from_generation_config(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    os.symlink(SHIPPED_GGUF.resolve(), model)
    with pytest.raises(UsageError, match="recommends none"):
        recommended_temperature(model)
    (tmp_path / "generation_config.json").write_text('{"temperature": 0.6, "top_p": 0.95}', encoding="utf-8")
    assert recommended_temperature(model) == 0.6


# -- bad input (the CLI, exit 2, one line) --------------------------------------------------------------


@pytest.mark.parametrize(("args", "needles"), [
    (["--concurrency", "0"], ["--concurrency 0", "1..64"]),
    (["--concurrency", "two"], ["--concurrency", "comma-separated"]),
    (["--temperature", "-1"], ["--temperature -1"]),
    (["--temperature", "recommended"], ["recommends none"]),
    (["--method", "mtp"], ["--method mtp", "draft-mtp"]),
    (["--method", "draft:/nonexistent/draft.gguf"], ["/nonexistent/draft.gguf", "no such draft model"]),
    (["--long-prompt", "10"], ["--long-prompt 10"]),
    (["--concurrency", "1,2", "--", "-np", "4"], ["-np", "--concurrency"]),
])
def test_bad_axis_values_are_one_line(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    error_line(run_cli("sweep", "--out", str(tmp_path / "out"), "--server", "/nonexistent/llama-server", *args),
               *needles)


# -- the real llama-server ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server_binary() -> ServerBinary:
    return find_server(build=True, progress=print)


def _records(out: Path) -> tuple[list[RunRecord], list[ServerRecord]]:
    records = Journal(out / "runs.jsonl").read().records
    return ([RunRecord.from_dict(r) for r in records if r["kind"] == "run"],
            [ServerRecord.from_dict(r) for r in records if r["kind"] == "server"])


def _options(binary: ServerBinary, out: Path, **changes: Any) -> SweepOptions:
    base = dict(n_max=(2,), repeat=1, prompts=PROMPTS[:1], n_predict=N_PREDICT, server=binary.path, out_dir=out,
                plot=False)
    return SweepOptions(**{**base, **changes})


@pytest.mark.server
def test_concurrent_requests_on_as_many_slots(server_binary: ServerBinary, tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "perfect.gguf", TinyModelSpec(acceptance="perfect"))[0]
    out = tmp_path / "out"
    report = run_sweep(model, _options(server_binary, out, concurrency=(1, 3)))
    jsonschema.validate(to_jsonable(report), SCHEMA)
    runs, servers = _records(out)
    assert all(r.status == RunStatus.ok for r in runs) and len(runs) == 4
    three = [r for r in runs if r.concurrency == 3]
    assert {r.configuration for r in three} == {"baseline@c3", "n-max-2@c3"}
    for run in three:
        assert len(run.per_request_tokens_per_second) == 3 and len(run.seeds) == 3
        assert run.predicted_n == 3 * N_PREDICT
        assert run.total_tokens_per_second is not None and run.total_tokens_per_second > 0
    mtp = next(r for r in three if r.n_max == 2)
    # The perfect head: every draft token of the three requests accepted, in /metrics, timings and the log.
    assert mtp.drafted > 0 and mtp.accepted == mtp.drafted and mtp.log_agrees is True
    assert mtp.log is not None and mtp.log.generated == mtp.drafted
    assert all("-np" in s.command and s.command[s.command.index("-np") + 1] == "3"
               for s in servers if s.configuration.endswith("@c3"))
    assert [(c.concurrency, c.temperature) for c in report.recommendation.per_condition] == [(1, 0.0), (3, 0.0)]
    assert report.recommendation.summary is not None and "at 3 concurrent, temperature 0: " in report.recommendation.summary
    group = next(g for g in report.results if g.configuration == "n-max-2@c3")
    assert group.ttft_ms is not None and group.total_tokens_per_second is not None and group.rss_peak_bytes


@pytest.mark.server
def test_sampling_with_a_seed_per_round(server_binary: ServerBinary, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = run_sweep(None, _options(server_binary, out, temperature=(0.9,), repeat=2))
    jsonschema.validate(to_jsonable(report), SCHEMA)
    runs, _ = _records(out)
    assert all(r.status == RunStatus.ok and r.temperature == 0.9 for r in runs) and len(runs) == 4
    seeds = {(r.configuration, r.repeat): r.seeds for r in runs}
    assert seeds == {("baseline@t0.9", 0): [42], ("baseline@t0.9", 1): [43],
                     ("n-max-2@t0.9", 0): [42], ("n-max-2@t0.9", 1): [43]}
    group = next(g for g in report.results if g.configuration == "n-max-2@t0.9")
    assert group.temperature == 0.9 and group.runs == 2 and group.drafted > 0
    assert report.settings["temperature"] == [0.9]


@pytest.mark.server
def test_methods_side_by_side(server_binary: ServerBinary, tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "none.gguf", TinyModelSpec(acceptance="none"))[0]
    draft = tmp_path / "draft.gguf"
    shutil.copyfile(model, draft)  # the target itself as its draft model: every greedy draft is right
    out = tmp_path / "out"
    methods = ("draft-mtp", "ngram-simple", "ngram-mod", f"draft:{draft}")
    report = run_sweep(model, _options(server_binary, out, methods=methods, plot=True))
    jsonschema.validate(to_jsonable(report), SCHEMA)
    assert report.files.plot is not None and mpimg.imread(report.files.plot).shape[2] in (3, 4)
    runs, servers = _records(out)
    assert all(r.status == RunStatus.ok for r in runs), [r.error for r in runs]
    by_config = {r.configuration: r for r in runs}
    assert set(by_config) == {"baseline", "n-max-2", "ngram-simple-n-max-2", "ngram-mod-n-max-2", "draft-draft-n-max-2"}
    assert by_config["n-max-2"].drafted > 0 and by_config["n-max-2"].accepted == 0  # the head that never agrees
    assert by_config["draft-draft-n-max-2"].drafted > 0
    assert by_config["draft-draft-n-max-2"].accepted == by_config["draft-draft-n-max-2"].drafted
    spec_types = {s.configuration: s.command[s.command.index("--spec-type") + 1]
                  for s in servers if "--spec-type" in s.command}
    assert spec_types == {"n-max-2": "draft-mtp", "ngram-simple-n-max-2": "ngram-simple",
                          "ngram-mod-n-max-2": "ngram-mod", "draft-draft-n-max-2": "draft-simple"}
    assert {g.method for g in report.results} == {None, "draft-mtp", "ngram-simple", "ngram-mod", "draft"}
    choice = report.recommendation.per_class[0]
    assert choice.method in (None, "draft-mtp", "ngram-simple", "ngram-mod", "draft")
    # One table of the methods on the same prompts, each with its client TTFT and peak memory (issue 43).
    (table,) = report.methods
    assert [r.method for r in table.rows] == ["off", "draft-mtp", "ngram-simple", "ngram-mod", "draft"]
    assert all(r.ttft_ms and r.rss_peak_bytes and r.tokens_per_second for r in table.rows)
    assert next(r for r in table.rows if r.method == "draft").acceptance == 1.0
    assert table.winner in {r.setting for r in table.rows}


@pytest.mark.server
def test_long_prompts_time_to_first_token(server_binary: ServerBinary, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = run_sweep(None, _options(server_binary, out, long_prompt=1500, n_predict=4))
    jsonschema.validate(to_jsonable(report), SCHEMA)
    assert report.prompt_classes == ["code", LONG_CLASS]
    long_groups = [g for g in report.results if g.prompt_class == LONG_CLASS]
    assert [g.configuration for g in long_groups] == ["baseline", "n-max-2"]
    for group in long_groups:
        assert group.runs == 2 and group.prompt_tokens is not None and group.prompt_tokens > 1000
        assert group.ttft_ms is not None and group.prompt_tokens_per_second is not None
    short = next(g for g in report.results if g.prompt_class == "code" and g.n_max is None)
    assert short.ttft_ms is not None and long_groups[0].ttft_ms is not None
    assert long_groups[0].ttft_ms.median > short.ttft_ms.median  # a thousand tokens take longer than four


def test_no_stop_is_named_when_mtp_only_pays_under_load() -> None:
    groups = _compared([_group(1, 0.0, None, 100), _group(1, 0.0, 2, 90), _group(4, 0.0, None, 100),
                        _group(4, 0.0, 2, 150)])
    recommendation = recommend_per_condition(groups, ["code"])
    assert recommendation.summary == "at 1 request, temperature 0: off; at 4 concurrent, temperature 0: n-max 2"
    assert recommendation.n_max is None  # the single greedy request's recommendation stays the overall one


def test_a_report_that_recommends_another_method_gives_apps_no_mtp_n_max(tmp_path: Path) -> None:
    from mtpinspect.errors import FormatError
    from mtpinspect.jsonable import schema_header
    from mtpinspect.sweep.report import read_recommendation

    path = tmp_path / "report.json"
    document = {**schema_header("sweep"), "model": "m.gguf",
                "recommendation": {"n_max": 3, "reason": "ngram-mod n-max 3 is fastest", "measured": True,
                                   "method": "ngram-mod"}}
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FormatError, match="recommends ngram-mod, not an MTP n-max"):
        read_recommendation(path)
    document["recommendation"]["method"] = "draft-mtp"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert read_recommendation(path).n_max == 3


def test_an_eta_before_the_first_run_from_earlier_runs() -> None:
    size = plan_size(build_plan(configurations([2]), PROMPTS, 1), n_predict=10)
    assert "the ETA follows the first runs" in size.line
    assert size.with_history(None, 1.0, "x") == size
    timed = size.with_history(0.5, 2.0, "from 4 earlier runs in runs.jsonl")
    assert timed.eta_seconds == 4 * 10 * 0.5 + 2 * 2.0  # 4 requests of 10 tokens, 2 server starts
    assert "ETA about 24s (from 4 earlier runs in runs.jsonl)" in timed.line
