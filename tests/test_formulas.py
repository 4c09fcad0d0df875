"""The decision math, with expectations computed by hand: expected mean length and its inverse, geometric
means, the break-even crossing, the probe's cost estimate and the sweep's recommendation vote."""

from __future__ import annotations

import pytest

from mtpinspect.diagnosis.probe_result import CostEstimate
from mtpinspect.formulas import acceptance_for_length, crossing, expected_length, geometric_mean
from mtpinspect.sweep.plan import configurations
from mtpinspect.sweep.records import RunRecord
from mtpinspect.sweep.statistics import break_even, recommend, summarize
from mtpinspect.vocabulary import RunStatus


def test_expected_length_is_one_plus_the_powers() -> None:
    assert expected_length(1.0, 3) == 4.0
    assert expected_length(0.0, 4) == 1.0
    assert expected_length(0.5, 2) == pytest.approx(1.75)  # 1 + 0.5 + 0.25
    assert expected_length(0.8, 3) == pytest.approx(2.952)  # 1 + 0.8 + 0.64 + 0.512


def test_acceptance_for_length_inverts_it() -> None:
    assert acceptance_for_length(1.75, 2) == pytest.approx(0.5, abs=1e-9)
    # 1 + a + a^2 + a^3 = 2: the real root of a^3 + a^2 + a - 1, 0.5436890127.
    assert acceptance_for_length(2.0, 3) == pytest.approx(0.5436890127, abs=1e-9)
    assert acceptance_for_length(4.0, 3) == pytest.approx(1.0, abs=1e-9)
    assert acceptance_for_length(4.01, 3) is None  # more than n + 1 tokens per step: out of reach
    assert acceptance_for_length(0.9, 3) == 0.0  # any acceptance does


def test_geometric_mean() -> None:
    assert geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    assert geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert geometric_mean([8.0, 1.0, 1.0]) == pytest.approx(2.0)
    assert geometric_mean([0.0, 4.0]) == pytest.approx(4.0)  # a speedup of 0 is no measurement
    assert geometric_mean([]) is None


def test_crossing_interpolates_where_the_curve_first_rises_through_the_level() -> None:
    assert crossing([(0.2, 0.8), (0.6, 1.2)]) == pytest.approx(0.4)
    assert crossing([(0.0, 0.5), (0.5, 0.9), (1.0, 1.3)]) == pytest.approx(0.5 + 0.1 / 0.4 * 0.5)  # 0.625
    assert crossing([(0.0, 0.5), (1.0, 0.9)]) is None
    assert crossing([(0.0, 1.1), (1.0, 0.9)]) is None  # falls through it: no break-even
    assert crossing([(0.0, 1.0), (1.0, 2.0)]) is None  # already at the level: nothing to cross


def test_probe_cost_estimate() -> None:
    # 3 tokens per step at 1.5x: a step costs 3 / 1.5 = 2 baseline tokens; break-even a solves
    # 1 + a + a^2 + a^3 = 2.
    cost = CostEstimate.of(3, 3.0, 1.5)
    assert cost.step_cost == pytest.approx(2.0)
    assert cost.break_even_acceptance == pytest.approx(0.5436890127, abs=1e-9)
    # 2 tokens per step at 0.5x: a step costs 4 baseline tokens, more than n-max 1 can ever give.
    hopeless = CostEstimate.of(1, 2.0, 0.5)
    assert hopeless.step_cost == pytest.approx(4.0) and hopeless.break_even_acceptance is None


def _run(config: str, n_max: int | None, prompt_class: str, tps: float, repeat: int, *,
         synthetic: float | None = None, accepted: int = 8) -> RunRecord:
    drafting = n_max is not None
    return RunRecord(
        configuration=config, n_max=n_max, synthetic=synthetic, prompt_id=f"{prompt_class}-p", prompt_class=prompt_class,
        repeat=repeat, server_id=config, status=RunStatus.ok, error=None, wall_seconds=1.0, settings={}, finished_at=0.0,
        decode_tokens_per_second=tps, drafted=10 if drafting else 0, accepted=accepted if drafting else 0,
        drafts=10 if drafting else 0, per_position=[accepted / 10] if drafting else [], text="same",
    )


def _series(config: str, n_max: int | None, prompt_class: str, speeds: tuple[float, ...], **kw: object) -> list[RunRecord]:
    return [_run(config, n_max, prompt_class, tps, i, **kw) for i, tps in enumerate(speeds)]  # type: ignore[arg-type]


def test_recommendation_is_the_n_max_that_wins_in_most_classes() -> None:
    classes = ["code", "prose", "extraction"]
    runs = []
    for c in classes:
        runs += _series("baseline", None, c, (10.0, 10.0, 10.0))
    # n-max 1 wins beyond noise in code and prose (1.3x), n-max 2 only in extraction, though by more (2x).
    runs += _series("n-max-1", 1, "code", (13.0, 13.0, 13.0)) + _series("n-max-1", 1, "prose", (13.0, 13.0, 13.0))
    runs += _series("n-max-1", 1, "extraction", (9.0, 9.0, 9.0))
    runs += _series("n-max-2", 2, "code", (12.0, 12.0, 12.0)) + _series("n-max-2", 2, "prose", (12.0, 12.0, 12.0))
    runs += _series("n-max-2", 2, "extraction", (20.0, 20.0, 20.0))
    groups = summarize(runs, [], configurations([1, 2]), classes)
    choice = recommend(groups, classes)
    assert [c.n_max for c in choice.per_class] == [1, 1, 2]
    assert choice.n_max == 1
    assert choice.reason == "n-max 1 is fastest beyond noise in 2 of 3 classes (code 1.30x, prose 1.30x)"


def test_a_tied_vote_goes_to_the_larger_geometric_mean_speedup() -> None:
    classes = ["code", "prose"]
    runs = []
    for c in classes:
        runs += _series("baseline", None, c, (10.0, 10.0))
    # Each n-max wins one class; over both classes n-max 1 has sqrt(1.5 x 0.8) = 1.095x, n-max 2
    # sqrt(1.2 x 1.1) = 1.149x.
    runs += _series("n-max-1", 1, "code", (15.0, 15.0)) + _series("n-max-1", 1, "prose", (8.0, 8.0))
    runs += _series("n-max-2", 2, "code", (12.0, 12.0)) + _series("n-max-2", 2, "prose", (11.0, 11.0))
    choice = recommend(summarize(runs, [], configurations([1, 2]), classes), classes)
    assert [c.n_max for c in choice.per_class] == [1, 2]
    assert choice.n_max == 2


def test_no_winner_names_the_best_geometric_mean() -> None:
    classes = ["code", "prose"]
    runs = []
    for c in classes:
        runs += _series("baseline", None, c, (10.0, 10.0))
    runs += _series("n-max-1", 1, "code", (8.0, 8.0)) + _series("n-max-1", 1, "prose", (5.0, 5.0))  # sqrt(0.4) = 0.63x
    runs += _series("n-max-2", 2, "code", (9.0, 9.0)) + _series("n-max-2", 2, "prose", (4.0, 4.0))  # sqrt(0.36) = 0.60x
    choice = recommend(summarize(runs, [], configurations([1, 2]), classes), classes)
    assert choice.n_max is None
    assert choice.reason.endswith("best was n-max 1 at 0.63x (geometric mean over classes)")


def test_break_even_from_forced_acceptance() -> None:
    configs = configurations([1], [0.5, 1.0])
    runs = _series("baseline", None, "code", (10.0, 10.0))
    # Forced 0.5 measures acceptance 0.4 at 0.8x; forced 1.0 measures 0.8 at 1.2x: 1x is crossed at
    # 0.4 + (1 - 0.8) / (1.2 - 0.8) x (0.8 - 0.4) = 0.6.
    runs += _series("synthetic-0.5-n-max-1", 1, "code", (8.0, 8.0), synthetic=0.5, accepted=4)
    runs += _series("synthetic-1-n-max-1", 1, "code", (12.0, 12.0), synthetic=1.0, accepted=8)
    runs += _series("n-max-1", 1, "code", (9.0, 9.0))
    (curve,) = break_even(summarize(runs, [], configs, ["code"]))
    assert [(p.target, p.acceptance, p.speedup) for p in curve.points] == [
        (0.5, pytest.approx(0.4), pytest.approx(0.8)), (1.0, pytest.approx(0.8), pytest.approx(1.2))]
    assert curve.acceptance == pytest.approx(0.6)
    assert curve.note == "below acceptance 0.60, n-max 1 slows decoding here"
