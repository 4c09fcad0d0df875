"""drift's pure parts: where two texts part, the token and candidates there, the judgement, the plan and the
plain answer (no server)."""

from __future__ import annotations

import pytest

from mtpinspect.drift.compare import (
    NEAR_TIE_NATS,
    BreakdownKind,
    Candidate,
    Judgement,
    TokenStep,
    analyse,
    first_difference,
    loop_period,
    steps_of,
    token_at,
)
from mtpinspect.drift.options import context_size
from mtpinspect.drift.plan import REFERENCE, Trigger, build_plan
from mtpinspect.drift.report import Comparison, plain_answer


def _steps(*tokens: tuple[str, list[tuple[str, float]]]) -> list[TokenStep]:
    return [TokenStep(t, len(t.encode()), tuple(Candidate(c, lp) for c, lp in top)) for t, top in tokens]


def test_first_difference() -> None:
    assert first_difference("abc", "abc") is None
    assert first_difference("abc", "abd") == 2
    assert first_difference("abc", "abcdef") == 3  # one is the other's start
    assert first_difference("", "x") == 0


def test_loop_period_finds_a_repeated_tail_and_not_prose() -> None:
    assert loop_period("intro: " + "ab" * 30) == 2
    assert loop_period("The cat sat on the mat and then went out for a long walk in the park.") is None
    assert loop_period("x" * 10) is None  # too short to call a loop
    assert loop_period("prefix " + "one two three " * 4) == len("one two three ")


def test_a_flip_to_the_second_choice_a_hair_below_is_a_near_tie() -> None:
    steps = _steps(("The", [("The", -0.1), ("A", -3.0)]), (" cat", [(" cat", -0.1), (" dog", -5.0)]),
                   (" sat", [(" sat", -0.1), (" lay", -4.0)]), (" on", [(" on", -0.1), (" by", -4.0)]),
                   (" the", [(" the", -0.1), (" a", -4.0)]), (" mat", [(" mat", -0.693), (" rug", -0.695)]))
    found = analyse("p1", "The cat sat on the mat.", "The cat sat on the rug.", steps, prompt_tokens=100)
    assert found is not None
    assert (found.char, found.token, found.context_position) == (19, 5, 105)
    assert [c.token for c in found.candidates] == [" mat", " rug"]
    assert found.margin == pytest.approx(0.002)
    assert found.took_second is True
    assert found.judgement is Judgement.near_tie and found.breakdown == []


def test_a_confident_token_changed_early_is_a_breakdown() -> None:
    steps = _steps(("The", [("The", -0.01), ("A", -6.0)]), (" cat", [(" cat", -0.01), (" dog", -6.0)]))
    found = analyse("p1", "The cat", "The dog", steps)
    assert found is not None
    assert found.margin == pytest.approx(5.99) and found.margin > NEAR_TIE_NATS
    assert found.judgement is Judgement.breakdown and found.breakdown == [BreakdownKind.early]


def test_a_wide_margin_later_on_is_unexplained_not_a_near_tie() -> None:
    steps = _steps(*[(w, [(w, -0.01), (" x", -3.0)]) for w in ["a", " b", " c", " d", " e", " f"]])
    found = analyse("p1", "a b c d e f", "a b c d e x", steps)
    assert found is not None and found.token == 5 and found.took_second is True
    assert found.judgement is Judgement.unexplained


def test_empty_loop_and_number_are_breakdowns() -> None:
    empty = analyse("p", "some answer", "")
    assert empty is not None and BreakdownKind.empty in empty.breakdown and empty.judgement is Judgement.breakdown
    looped = analyse("p", "a story that goes on and ends well.", "a story that " + "again " * 10)
    assert looped is not None and looped.breakdown == [BreakdownKind.loop]
    # A loop the baseline has too is not the other side's breakdown.
    both = analyse("p", "x " + "ab" * 30, "y " + "ab" * 30)
    assert both is not None and BreakdownKind.loop not in both.breakdown
    number = analyse("p", "The total is 1250 EUR.", "The total is 1290 EUR.")
    assert number is not None and number.breakdown == [BreakdownKind.number]


def test_token_positions_count_bytes_so_a_multibyte_text_maps_right() -> None:
    steps = _steps(("う", []), ("って", []), ("いる", []))
    assert token_at(steps, "うっている", 1) == (1, 1)
    assert token_at(steps, "うっている", 3) == (2, 3)
    assert token_at(steps, "うっている", 5) is None  # past the tokens


def test_a_flip_inside_a_shared_first_character_is_placed_on_the_token_that_parted() -> None:
    """Measured on CPU (-t 1 vs -t 2): the baseline wrote ' ' then '1', the other side ' -' then '1'. The text
    parts at the '-', inside the other side's token; the flip is the token before, at a near-tie."""
    steps = _steps(("[", [("[", -0.01), ("(", -5.0)]), (" ", [(" ", -1.138046), (" -", -1.150462)]),
                   ("1", [("1", -0.01), ("2", -5.0)]), ("]", [("]", -0.01), (")", -5.0)]))
    baseline, other = "[ 1]", "[ -1]"
    for other_steps in (None, _steps(("[", []), (" -", []), ("1", []), ("]", []))):
        found = analyse("ex-log", baseline, other, steps, 256, other_steps)
        assert found is not None
        assert (found.char, found.token, found.context_position) == (2, 1, 257)
        assert found.took_second is True and found.margin == pytest.approx(0.012416)
        # A number follows the flip, but the flip is a near-tie: the model nearly wrote it anyway.
        assert found.judgement is Judgement.near_tie and found.breakdown == [BreakdownKind.number]


def test_steps_of_reads_llama_server_n_probs() -> None:
    raw = [{"id": 222, "token": "\n", "bytes": [10], "logprob": -0.08,
            "top_logprobs": [{"id": 222, "token": "\n", "bytes": [10], "logprob": -0.08},
                             {"id": 1338, "token": "The", "bytes": [84, 104, 101], "logprob": -5.9}]}]
    steps = steps_of(raw)
    assert steps == [TokenStep("\n", 1, (Candidate("\n", -0.08), Candidate("The", -5.9)))]
    assert steps_of(None) is None and steps_of([{"no": "token"}]) is None


def test_plan_holds_everything_but_the_trigger() -> None:
    plan = build_plan((3, 1, 3), slots=12, threads=(1, 2), probabilities=True, restart=None, baseline=None)
    by_id = {p.id: p for p in plan.passes}
    checks = {c.trigger: c for c in plan.checks}
    assert [c.other for c in plan.checks if c.trigger is Trigger.mtp] == ["n-max-1", "n-max-3"]
    batch = checks[Trigger.batch]
    assert by_id[batch.reference].server == by_id[batch.other].server  # the same server: only batching differs
    assert by_id[batch.other].at_once and not by_id[batch.reference].at_once
    assert by_id[checks[Trigger.control].other].server == by_id[REFERENCE].server
    assert by_id[checks[Trigger.restart].other].server != by_id[REFERENCE].server
    assert by_id[checks[Trigger.threads].other].server.threads == 2 and by_id[REFERENCE].server.threads == 1
    # MTP passes never ask for n_probs (it changes llama-server's draft counts); baseline passes do.
    assert not by_id["n-max-1"].probabilities and by_id[REFERENCE].probabilities
    endpoint = build_plan((3,), slots=4, threads=None, probabilities=True, restart="not ours", baseline="no baseline",
                          own_slots=False)
    assert not any(p.probabilities for p in endpoint.passes)  # every pass asks the MTP server
    assert {c.trigger for c in endpoint.checks} == {Trigger.control, Trigger.batch}
    assert len(endpoint.not_measured) == 2


def test_context_holds_every_slot() -> None:
    assert context_size(1, 200) == 8192
    assert context_size(16, 1000) == 24320  # 16 x (1000 + 512) = 24192, up to the next 256


def _comparison(trigger: Trigger, matching: int, divergences: list) -> Comparison:
    return Comparison(trigger, str(trigger), f"the {trigger} change", "a", "b", matching, 12, 12,
                      0.9 if trigger is Trigger.mtp else None, divergences)


def test_plain_answer_says_near_ties_and_where_strings_hold() -> None:
    tie = analyse("p1", "The cat sat on the mat.", "The cat sat on the rug.",
                  _steps(*[(w, [(w, -0.1), (" rug", -0.104)]) for w in ["The", " cat", " sat", " on", " the", " mat"]]))
    assert tie is not None and tie.judgement is Judgement.near_tie
    text = plain_answer([_comparison(Trigger.control, 12, []), _comparison(Trigger.mtp, 12, []),
                         _comparison(Trigger.batch, 10, [tie, tie])], "llama-server (cpu)", ["-t 1"])
    assert "the batch change (2 of 12 prompts)" in text
    assert "Every difference was a near-tie" in text
    assert "MTP gave the baseline's text exactly" in text
    assert "Strings are reproducible with -t 1" in text and "not across the batch change" in text


def test_plain_answer_sends_an_mtp_breakdown_to_diagnose() -> None:
    broken = analyse("p2", "some answer", "")
    assert broken is not None
    text = plain_answer([_comparison(Trigger.control, 12, []), _comparison(Trigger.mtp, 11, [broken])], "vllm", [])
    assert "MTP broke output on p2" in text and "mtpinspect diagnose" in text


def test_the_determinism_note_fits_the_engine_and_backend_and_points_to_drift() -> None:
    from mtpinspect.sweep.statistics import determinism_note

    cpu = determinism_note(None, "cpu")
    assert "thread count" in cpu and "ggml_compute_forward_flash_attn_ext_f16" in cpu and "GGML_FA_TILE_Q" in cpu
    assert determinism_note("llama.cpp", "cpu") == cpu
    gpu = determinism_note(None, "cuda")
    assert "llama.cpp picks different kernels" in gpu and "ggml-cpu" not in gpu
    vllm = determinism_note("vllm", "vllm")
    assert "vLLM's GPU kernels" in vllm and "llama.cpp" not in vllm
    assert all("`mtpinspect drift`" in note for note in (cpu, gpu, vllm))
