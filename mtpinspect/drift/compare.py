"""Where two temperature-0 texts of one prompt part, and what kind of change it is (pure functions).

The reference side is the baseline as the user runs it; its top candidates at every generated token
come with it (llama-server's ``n_probs``). At the first differing character this finds the baseline's
token there, its two best candidates and their log-probabilities, and whether the other side went on
with the second one. A near-tie flip (the second choice, a hair below the first) is a wording change:
the last bits of the logits moved, as a changed summation order moves them. A breakdown is a change
that no such flip explains: an empty answer, a loop the baseline does not have, a divergence at the
very start, or a changed number, where the two sides did not part at a measured near-tie.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mtpinspect.vocabulary import Word

# A change in the last bits of the logits moves log-probabilities by about 1e-3 nats (measured on CPU
# llama-server, docs/drift.md); the flips it causes were 0.0002-0.012 nats apart. A GPU's reductions
# differ more, so the bound leaves room; a flip between candidates further apart is not a near-tie.
NEAR_TIE_NATS = 0.05
# "Within the first few tokens": a divergence this early that is not a measured near-tie is a breakdown.
EARLY_TOKENS = 4
# A loop: the text ends in a unit of at most LOOP_MAX_PERIOD characters repeated LOOP_MIN_REPEATS times,
# over at least LOOP_MIN_CHARS characters (so that "1000" or "---" is not one).
LOOP_MAX_PERIOD = 80
LOOP_MIN_REPEATS = 3
LOOP_MIN_CHARS = 32
# How much of each text a divergence quotes around where they part.
EXCERPT_CHARS = 40


class Judgement(Word):
    near_tie = "near-tie"  # wording: the other side took the baseline's second choice, a hair below its first
    breakdown = "breakdown"  # signs of BreakdownKind, not at a measured near-tie: worth `mtpinspect diagnose`
    unexplained = "unexplained"  # neither: the margin could not be read, or the flip was not between the top two


class BreakdownKind(Word):
    empty = "empty"  # the other side answered nothing
    loop = "loop"  # the other side ends in a loop the baseline does not have
    early = "early"  # parted within the first EARLY_TOKENS tokens, and not at a measured near-tie
    number = "number"  # parted inside a number: a changed figure or final answer


@dataclass(frozen=True)
class Candidate:
    token: str
    logprob: float


@dataclass(frozen=True)
class TokenStep:
    """One generated token of the reference side: its bytes and the top candidates at that position."""

    token: str
    size: int  # its length in UTF-8 bytes (a token may be part of a character)
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True)
class Divergence:
    prompt_id: str
    char: int  # first differing character
    token: int | None  # index of the generated token that differs (None: the reference's tokens are unknown)
    context_position: int | None  # prompt tokens + token: where the KV cache was when it parted
    candidates: list[Candidate]  # the baseline's best candidates at that token
    margin: float | None  # first minus second log-probability (nats)
    took_second: bool | None  # the other side went on with the baseline's second choice
    judgement: Judgement
    breakdown: list[BreakdownKind]  # signs seen; a breakdown unless the divergence is a measured near-tie
    baseline_excerpt: str
    other_excerpt: str


def steps_of(probabilities: Sequence[Mapping[str, Any]] | None) -> list[TokenStep] | None:
    """llama-server's ``completion_probabilities`` (``n_probs``) as token steps; None when absent or unreadable."""
    if not probabilities:
        return None
    steps = []
    for item in probabilities:
        if not isinstance(item, Mapping) or not isinstance(item.get("token"), str):
            return None
        raw = item.get("bytes")
        size = len(raw) if isinstance(raw, list) else len(item["token"].encode("utf-8"))
        top = item.get("top_logprobs") or item.get("top_probs") or []
        candidates = tuple(
            Candidate(c["token"], float(c["logprob"])) for c in top
            if isinstance(c, Mapping) and isinstance(c.get("token"), str) and isinstance(c.get("logprob"), (int, float))
        )
        steps.append(TokenStep(item["token"], size, candidates))
    return steps


def steps_of_openai(logprobs: Mapping[str, Any] | None) -> list[TokenStep] | None:
    """The OpenAI completions API's ``logprobs`` (vLLM, SGLang, llama-server's /v1): ``tokens`` and
    ``top_logprobs`` (one {token: logprob} per token) as token steps; None when absent or unreadable."""
    if not isinstance(logprobs, Mapping):
        return None
    tokens, tops = logprobs.get("tokens"), logprobs.get("top_logprobs")
    if not isinstance(tokens, list) or not isinstance(tops, list) or len(tokens) != len(tops) or not tokens:
        return None
    steps = []
    for token, top in zip(tokens, tops):
        if not isinstance(token, str) or not isinstance(top, Mapping):
            return None
        ranked = sorted(((t, float(lp)) for t, lp in top.items() if isinstance(lp, (int, float))), key=lambda c: -c[1])
        steps.append(TokenStep(token, len(token.encode("utf-8")), tuple(Candidate(t, lp) for t, lp in ranked)))
    return steps


def steps_from(candidates: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None) -> list[TokenStep] | None:
    """Token steps from what an answer carried: llama-server's list, or the OpenAI API's logprobs object."""
    if isinstance(candidates, Mapping):
        return steps_of_openai(candidates)
    return steps_of(candidates)


def first_difference(a: str, b: str) -> int | None:
    """The index of the first character where the texts differ (the shorter one's length when one is the
    other's start); None when they are equal."""
    if a == b:
        return None
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return index
    return min(len(a), len(b))


def token_starts(steps: Sequence[TokenStep], text: str) -> list[int]:
    """The character where each generated token starts in ``text`` (a token may start inside a character)."""
    data = text.encode("utf-8")
    starts, offset = [], 0
    for step in steps:
        starts.append(len(data[:offset].decode("utf-8", errors="ignore")))
        offset += step.size
    return starts


def token_at(steps: Sequence[TokenStep], text: str, char: int) -> tuple[int, int] | None:
    """The generated token holding character ``char`` of ``text`` and the character where it starts."""
    target = len(text[:char].encode("utf-8"))
    offset = 0
    for index, step in enumerate(steps):
        if offset + step.size > target:
            start = len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))
            return index, start
        offset += step.size
    return None


def parting_token(steps: Sequence[TokenStep], baseline: str, other: str, char: int,
                  other_steps: Sequence[TokenStep] | None = None) -> tuple[int, bool | None] | None:
    """The generated token where the two sides parted, and whether the other took the baseline's second choice.

    The text can part after the tokens do: ``' '`` then ``'1'`` against ``' -'`` then ``'1'`` part at the
    second character, inside the other side's first token. With the other side's tokens the first differing
    token is exact; from its text alone, the token whose second candidate the other text goes on with and
    that reaches past the first differing character is taken (a few tokens back at most), else the token
    holding that character.
    """
    if other_steps is not None:
        for index, (mine, theirs) in enumerate(zip(steps, other_steps)):
            if mine.token != theirs.token:
                second = mine.candidates[1].token if len(mine.candidates) > 1 else None
                return index, (theirs.token == second) if second is not None else None
    found = token_at(steps, baseline, char)
    if found is None:
        return None
    index, start = found
    starts = token_starts(steps, baseline)
    for back in range(index, max(-1, index - _LOOK_BACK - 1), -1):
        candidates = steps[back].candidates
        if len(candidates) > 1 and other.startswith(candidates[1].token, starts[back]) \
                and starts[back] + len(candidates[1].token) > char:
            return back, True
    return index, _took_second(other[start:], steps[index].candidates)


# How many tokens before the one holding the first differing character a flip may have started.
_LOOK_BACK = 3


def loop_period(text: str) -> int | None:
    """The period of the loop the text ends in, or None."""
    n = len(text)
    for period in range(1, min(LOOP_MAX_PERIOD, n // LOOP_MIN_REPEATS) + 1):
        run = period
        while run < n and text[n - 1 - (run - period)] == text[n - 1 - run]:
            run += 1
        if run >= max(LOOP_MIN_REPEATS * period, LOOP_MIN_CHARS):
            return period
    return None


def _in_number(text: str, char: int) -> bool:
    return (char < len(text) and text[char].isdigit()) or (0 < char <= len(text) and text[char - 1].isdigit()
                                                            and char < len(text) and text[char] in ".,")


def _took_second(tail: str, candidates: Sequence[Candidate]) -> bool | None:
    if len(candidates) < 2:
        return None
    first, second = candidates[0].token, candidates[1].token
    if tail.startswith(second) and (not tail.startswith(first) or len(second) > len(first)):
        return True
    return False


def _excerpt(text: str, char: int) -> str:
    start = max(0, char - EXCERPT_CHARS // 2)
    return ("..." if start else "") + text[start:char + EXCERPT_CHARS // 2] + ("..." if char + EXCERPT_CHARS // 2 < len(text) else "")


def analyse(prompt_id: str, baseline: str, other: str, steps: Sequence[TokenStep] | None = None,
            prompt_tokens: int | None = None, other_steps: Sequence[TokenStep] | None = None) -> Divergence | None:
    """Where ``other`` parts from ``baseline`` and the judgement; None when the texts are equal.

    A flip at a measured near-tie is judged a near-tie whatever follows it (a loop, another number): what
    follows is the model's own continuation of a text it nearly chose anyway. The signs of a breakdown are
    still listed; they make a breakdown when the divergence is not a measured near-tie.
    """
    char = first_difference(baseline, other)
    if char is None:
        return None
    found = parting_token(steps, baseline, other, char, other_steps) if steps else None
    token, took_second = found if found is not None else (None, None)
    candidates = list(steps[token].candidates[:2]) if steps and token is not None else []
    margin = candidates[0].logprob - candidates[1].logprob if len(candidates) == 2 else None
    near_tie = margin is not None and margin <= NEAR_TIE_NATS and took_second is True
    kinds: list[BreakdownKind] = []
    if not other.strip() and baseline.strip():
        kinds.append(BreakdownKind.empty)
    if loop_period(other) is not None and loop_period(baseline) is None:
        kinds.append(BreakdownKind.loop)
    if token is not None and token < EARLY_TOKENS and not near_tie:
        kinds.append(BreakdownKind.early)
    if _in_number(baseline, char) or _in_number(other, char):
        kinds.append(BreakdownKind.number)
    judgement = Judgement.near_tie if near_tie else Judgement.breakdown if kinds else Judgement.unexplained
    return Divergence(
        prompt_id=prompt_id,
        char=char,
        token=token,
        context_position=None if token is None or prompt_tokens is None else prompt_tokens + token,
        candidates=candidates,
        margin=margin,
        took_second=took_second,
        judgement=judgement,
        breakdown=kinds,
        baseline_excerpt=_excerpt(baseline, char),
        other_excerpt=_excerpt(other, char),
    )
