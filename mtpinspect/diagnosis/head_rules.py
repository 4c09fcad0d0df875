"""Whether the head matches its model, from the copy probe: a foreign, weak or quantized head told apart
from hard text.

Low acceptance has two readings that need opposite fixes: the head is wrong for this model (another
training run's sidecar, a fine-tune's untouched base head, a head quantized too far: change the head), or
the text is hard for any head (leave the head alone). The probe tells them apart with text any head that
matches its trunk drafts nearly all of: the copy class (cases/prompts/sets/head-probe.jsonl: a line to
repeat, already repeated a dozen times; counting, already begun), where the trunk's hidden state carries
the next tokens. Each prompt asks for the repetition and begins it, so a chat model (its request through the
chat template) and a base model (a raw completion) both go on repeating. A head trained on another trunk
cannot read that state, so it fails there too.

The rules, at the probe's smallest n-max, on the copy class pooled over its prompts:

- copy acceptance at least COPY_MATCHES: the head matches this model. Another class below FINE_ACCEPTANCE
  is then hard text -> PROMPT_CLASS (leave the head alone); check's SIDECAR_FOREIGN is refuted (a note);
- below it: the head is at fault, named by check's evidence: SIDECAR_FOREIGN -> HEAD_FOREIGN; a quantized
  or damaged head (LOW_BIT_MTP_HEAD, MTP_QUANTIZED, ..., all-zero weights) -> HEAD_QUANTIZED; neither ->
  HEAD_WEAK (undertrained, another fine-tune's head, or an engine that runs it wrongly).

COPY_MATCHES and its margin come from every head we can make, measured on the real llama-server
(bench/heads.py, bench/README.md "Heads that match, and heads that do not").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mtpinspect.causes import FINE_ACCEPTANCE, Cause
from mtpinspect.diagnosis.advice import FOREIGN_HEAD_FIX, disagreeing_head_fix
from mtpinspect.diagnosis.probe_result import COPY_CLASS, ProbeFigure
from mtpinspect.diagnosis.static import StaticEvidence, head_fix
from mtpinspect.vocabulary import Engine, EvidenceSource

COPY_MATCHES = 0.7


@dataclass(frozen=True)
class HeadJudgement:
    """What the copy probe says of the head: its acceptance there (None: not measured), whether the head
    matches the model, the causes it names, and notes on static evidence it refutes."""

    copy_acceptance: float | None
    matches: bool | None
    causes: list[Cause] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _pooled(figures: Sequence[ProbeFigure]) -> tuple[float, int, int] | None:
    drafted = sum(f.drafted for f in figures)
    accepted = sum(f.accepted for f in figures)
    return (accepted / drafted, accepted, drafted) if drafted else None


def judge_head(static: StaticEvidence | None, ran: Sequence[ProbeFigure], engine: Engine = Engine.llama_cpp) -> HeadJudgement:
    """The copy probe's verdict on the head, from the probe's figures that drafted (``ran``)."""
    first_n = min((f.n_max for f in ran if f.n_max), default=None)
    copy = _pooled([f for f in ran if f.prompt_class == COPY_CLASS and f.n_max == first_n])
    if copy is None:
        return HeadJudgement(None, None)
    rate, accepted, drafted = copy
    others = {f.prompt_class: f for f in ran if f.prompt_class != COPY_CLASS and f.n_max == first_n and f.acceptance is not None}
    copy_line = (f"probe n-max {first_n} {COPY_CLASS}: acceptance {rate:.2f} ({accepted}/{drafted}) on text any head "
                 f"matching its model drafts nearly all of (at least {COPY_MATCHES} on every head made with its trunk)")
    class_lines = tuple(f.line() for _, f in sorted(others.items()))
    if rate >= COPY_MATCHES:
        return HeadJudgement(rate, True, _hard_text(copy_line, rate, others), _refuted(static, rate))
    return HeadJudgement(rate, False, [_wrong_head(static, rate, (copy_line, *class_lines), engine)])


def _hard_text(copy_line: str, rate: float, others: dict[str, ProbeFigure]) -> list[Cause]:
    rates = {c: f.acceptance for c, f in others.items() if f.acceptance is not None}
    hard = {c: a for c, a in rates.items() if a < FINE_ACCEPTANCE}
    if not hard:
        return []
    worst, best = min(rates, key=rates.__getitem__), max(rates, key=rates.__getitem__)
    kinds = f"{best} {rates[best]:.0%}, {worst} {rates[worst]:.0%}" if best != worst else f"{worst} {rates[worst]:.0%}"
    return [Cause("PROMPT_CLASS", 0.8,
                  f"acceptance depends on the kind of text: {kinds}; the head matches this model ({COPY_CLASS} text "
                  f"{rate:.0%}): the text is hard, not the head",
                  (copy_line, *(others[c].line() for c in sorted(rates))),
                  f"leave the head alone; for {worst} expect little gain from MTP or leave it off there; measure your "
                  "own prompts: mtpinspect sweep MODEL --prompts YOUR_PROMPTS.jsonl",
                  (EvidenceSource.probe,))]


def _refuted(static: StaticEvidence | None, rate: float) -> list[str]:
    if static is None or not static.has("SIDECAR_FOREIGN"):
        return []
    return [f"check finds the sidecar's embedding rows unlike the trunk's, but the head drafts {rate:.0%} of "
            f"{COPY_CLASS} text: it matches this model after all (a re-trained embedding with the same head?)"]


def foreign_line(static: StaticEvidence | None) -> str | None:
    """check's SIDECAR_FOREIGN as an evidence line (its embedding-row figures), or None without one."""
    found = static.finding("SIDECAR_FOREIGN") if static is not None else None
    if found is None:
        return None
    return f"check SIDECAR_FOREIGN: {found.evidence[0] if found.evidence else found.message}"


def _wrong_head(static: StaticEvidence | None, rate: float, evidence: tuple[str, ...], engine: Engine) -> Cause:
    weak = f"the head drafts only {rate:.0%} of {COPY_CLASS} text, which a head matching this model drafts nearly all of"
    foreign = foreign_line(static)
    if foreign is not None:
        return Cause("HEAD_FOREIGN", 0.9, f"{weak}: the sidecar's head was trained with another trunk",
                     (*evidence, foreign), FOREIGN_HEAD_FIX, (EvidenceSource.probe, EvidenceSource.static))
    if static is not None and (static.head_defect or static.zero_tensors):
        defects = [f"check {f.code}: {f.message}" for f in static.head_defect] + static.zero_tensors
        return Cause("HEAD_QUANTIZED", 0.8, f"{weak}: the head is quantized or damaged", (*evidence, *defects[:3]),
                     head_fix(static), (EvidenceSource.probe, EvidenceSource.static))
    return Cause("HEAD_WEAK", 0.7,
                 f"{weak}, with nothing wrong in its files: an undertrained head, a head of another fine-tune or revision "
                 "of the same base (its embedding barely differs), or an engine that runs it wrongly",
                 evidence, disagreeing_head_fix(None, engine), (EvidenceSource.probe,))
