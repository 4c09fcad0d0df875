"""The drift report: per trigger, how many prompts kept their text and how each difference is judged;
and the answer in plain words (what changes output on this engine, whether MTP harms quality, and the
settings under which strings are reproducible)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mtpinspect.drift.compare import Divergence, Judgement, analyse, steps_from
from mtpinspect.drift.plan import Check, Trigger
from mtpinspect.drift.run import PassResult
from mtpinspect.vocabulary import RunStatus


@dataclass
class Comparison:
    trigger: Trigger
    label: str
    change: str
    reference: str  # pass ids
    other: str
    matching: int  # prompts with the same text on both sides
    compared: int  # prompts answered on both sides
    prompts: int
    acceptance: float | None  # the MTP side's accepted / drafted tokens
    divergences: list[Divergence]

    @property
    def breakdowns(self) -> list[Divergence]:
        return [d for d in self.divergences if d.judgement is Judgement.breakdown]


@dataclass
class DriftServer:
    engine: str
    path: str
    version: str
    backend: str
    command: list[str]  # the reference's


@dataclass
class DriftFiles:
    out_dir: str
    journal: str
    report: str
    logs: str


@dataclass
class DriftReport:
    json_schema: ClassVar[str] = "drift"

    model: str
    tiny_model: bool
    server: DriftServer
    settings: dict[str, Any]
    prompts: list[str]
    comparisons: list[Comparison]
    not_measured: list[str]
    answer: str
    determinism_note: str
    failures: list[str]
    files: DriftFiles
    wall_seconds: float
    held: list[str] = field(default_factory=list)  # the settings every server shared
    stopped: str | None = None  # why the run stopped before its last server (two that failed to start alike)


def compare(check: Check, results: Mapping[str, PassResult], prompt_ids: Sequence[str]) -> Comparison:
    """The two passes of a check, prompt by prompt."""
    reference, other = results[check.reference], results[check.other]
    divergences: list[Divergence] = []
    matching = compared = 0
    for prompt_id in prompt_ids:
        a, b = reference.answers.get(prompt_id), other.answers.get(prompt_id)
        if a is None or b is None or a.status != RunStatus.ok or b.status != RunStatus.ok:
            continue
        compared += 1
        found = analyse(prompt_id, a.text, b.text, steps_from(a.probabilities), a.prompt_tokens,
                         steps_from(b.probabilities))
        if found is None:
            matching += 1
        else:
            divergences.append(found)
    acceptance = other.acceptance if check.trigger is Trigger.mtp else None
    return Comparison(check.trigger, check.label, check.change, check.reference, check.other, matching, compared,
                      len(prompt_ids), acceptance, divergences)


def failures_of(results: Mapping[str, PassResult], prompt_ids: Sequence[str], failed_starts: Sequence[str]) -> list[str]:
    """One line per server that did not start and per failed request."""
    lines = list(failed_starts)
    for result in results.values():
        for prompt_id in prompt_ids:
            answer = result.answers.get(prompt_id)
            if answer is not None and answer.status != RunStatus.ok:
                lines.append(f"{result.pass_.id} {prompt_id}: {answer.error}")
    return lines


def _count(c: Comparison) -> str:
    return f"{c.compared - c.matching} of {c.compared}"


def plain_answer(comparisons: Sequence[Comparison], engine: str, held: Sequence[str]) -> str:
    """One paragraph: what changes temperature-0 output here, whether MTP harms quality, and when strings
    are reproducible."""
    measured = [c for c in comparisons if c.compared]
    if not measured:
        return "Nothing could be compared: no pass got answers (see the failures)."
    changed = [c for c in measured if c.matching < c.compared]
    same = [c for c in measured if c.matching == c.compared]
    sentences = []
    if changed:
        sentences.append(f"On this {engine}, temperature-0 text changed with "
                         + "; ".join(f"{c.change} ({_count(c)} prompts)" for c in changed) + ".")
    else:
        sentences.append(f"On this {engine}, no trigger changed temperature-0 text: every pass gave the reference's text.")
    if same:
        sentences.append("Unchanged: " + "; ".join(f"{c.label} ({c.matching} of {c.compared})" for c in same) + ".")
    flips = [d for c in measured for d in c.divergences]
    breakdowns = [(c, d) for c in measured for d in c.breakdowns]
    mtp = [c for c in measured if c.trigger is Trigger.mtp]
    mtp_breakdowns = [(c, d) for c, d in breakdowns if c.trigger is Trigger.mtp]
    ties = [d for d in flips if d.judgement is Judgement.near_tie]
    if flips and len(ties) == len(flips):
        widest = max(d.margin or 0.0 for d in ties)
        sentences.append(f"Every difference was a near-tie: the other side took the baseline's second choice, at "
                         f"most {widest:.4f} nats below its first; the wording changed, not the quality.")
    elif flips:
        sentences.append(f"{len(ties)} of {len(flips)} differences were near-ties (the baseline's second choice, a "
                         "hair below its first)"
                         + (f"; {len(breakdowns)} were breakdowns ("
                            + ", ".join(sorted({f'{k}' for _, d in breakdowns for k in d.breakdown})) + ")"
                            if breakdowns else "")
                         + (f"; {len(flips) - len(ties) - len(breakdowns)} could not be judged (no margin to read)"
                            if len(flips) - len(ties) - len(breakdowns) else "") + ".")
    if mtp:
        if mtp_breakdowns:
            prompts = sorted({d.prompt_id for _, d in mtp_breakdowns})
            sentences.append(f"MTP broke output on {', '.join(prompts)} (an empty answer, a loop, a changed number or "
                             "an early divergence the baseline does not have): that is not drift; run `mtpinspect "
                             "diagnose` on this model and engine.")
        elif all(c.matching == c.compared for c in mtp):
            sentences.append("MTP gave the baseline's text exactly: it does not change output here.")
        else:
            sentences.append("MTP changed wording only, at near-ties, as a changed summation order does: it does not "
                             "harm quality.")
    safe = [c for c in same if c.trigger is not Trigger.control]
    fixed = ", ".join(held) if held else "the same settings"
    control = next((c for c in measured if c.trigger is Trigger.control), None)
    if control is not None and control.matching < control.compared:
        sentences.append("The same server gave different text twice: strings are not reproducible on this engine "
                         "at all; compare meaning, not strings.")
    else:
        sentences.append(f"Strings are reproducible with {fixed}"
                         + (f", and across {', '.join(c.change for c in safe)}" if safe else "")
                         + (f"; not across {', '.join(c.change for c in changed)}" if changed else "") + ".")
    return " ".join(sentences)
