"""The n-max a command advises (llama-server's --spec-draft-n-max, Ollama's draft_num_predict, LM Studio's
"MTP Max Draft Tokens"), and where its figure comes from, in one place: the commands advise different
figures for one model because they know different things, and each says which it is.

- a rule of thumb (RULE_OF_THUMB_N_MAX): nothing about this model was measured on this machine (check,
  the trained tiny model, diagnose without a probe);
- expected from the design: the constructed tiny model's acceptance is chosen, so the accepted length at
  each n-max is known in advance; its figure is the deepest n-max whose every drafted token still adds
  WORTH_DRAFTING accepted tokens per step (its speed on this machine is not known: a sweep measures it);
- measured: a sweep (or diagnose's probe) ran the baseline and each n-max on this machine; its figure wins,
  "leave MTP off" included (check --sweep-report).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from mtpinspect.vocabulary import NMaxSource

# Two drafted tokens per step: deep enough to gain where the head is good, shallow enough that a head whose
# acceptance falls with the draft position (every real one) does not pay to verify tokens it rarely gets.
RULE_OF_THUMB_N_MAX = 2
# A drafted token pays for its share of the verification when it adds at least this many accepted tokens per
# step (diagnose's NMAX_TOO_HIGH rule reads the same floor from a probe or a log).
WORTH_DRAFTING = 0.35


def sweep_hint(model: str = "MODEL") -> str:
    """How to replace a figure that was not measured by one that is."""
    return f"`mtpinspect sweep {model}` measures the best one on this machine"


@dataclass(frozen=True)
class NMaxAdvice:
    """An advised n-max and where it comes from."""

    json_properties: ClassVar[dict[str, str]] = {"measured": "measured"}

    n_max: int | None  # None: leave MTP off
    source: NMaxSource
    why: str  # the figure's source in words, with what it rests on

    @property
    def measured(self) -> bool:
        return self.source is NMaxSource.measured

    @property
    def said(self) -> str:
        """One line: the figure, then where it comes from."""
        return f"n-max {self.n_max if self.n_max is not None else 'off'}: {self.why}"


def rule_of_thumb(model: str = "MODEL", then: str = "") -> NMaxAdvice:
    """n-max 2, said to be a rule of thumb, with how to measure it on ``model`` (``then``: what to do next)."""
    hint = sweep_hint(model) + (f"; {then}" if then else "")
    return NMaxAdvice(RULE_OF_THUMB_N_MAX, NMaxSource.rule_of_thumb, f"a rule of thumb, nothing measured ({hint})")


def measured_by(by: str) -> str:
    """Where a measured figure comes from: ``by`` names the measurement (the sweep in PATH, diagnose's probe)."""
    return f"measured by {by}"


def measured(n_max: int | None, by: str, reason: str) -> NMaxAdvice:
    """The figure of a measurement on this machine, and its reason."""
    return NMaxAdvice(n_max, NMaxSource.measured, f"{measured_by(by)}: {reason}")


def expected_from_design(mean_lengths: Mapping[int, float], model: str = "MODEL") -> NMaxAdvice:
    """The deepest n-max whose every drafted token adds WORTH_DRAFTING accepted tokens per step, from the
    mean accepted lengths a model's design gives per n-max (1.0 at n-max 0: the step's own token)."""
    chosen, length = 0, 1.0
    stop = None
    for n_max in sorted(mean_lengths):
        gain = (mean_lengths[n_max] - length) / (n_max - chosen)
        if gain < WORTH_DRAFTING:
            stop = f"n-max {n_max} adds {gain:.2f} accepted tokens per drafted token, under {WORTH_DRAFTING}"
            break
        chosen, length = n_max, mean_lengths[n_max]
    if not chosen:
        why = f"expected from the model's design: {stop}"
    else:
        limit = stop or "the deepest listed"
        why = (f"expected from the model's design: up to n-max {chosen} each drafted token adds at least "
               f"{WORTH_DRAFTING} accepted tokens (mean length {length:.2f}); {limit}")
    return NMaxAdvice(chosen or None, NMaxSource.design, f"{why} ({sweep_hint(model)}: speed, not only length)")


def measured_here(report: str) -> str:
    """What a sweep says of its own recommendation: where it comes from, and how check takes it up."""
    return (f"{measured_by('this sweep on this machine')} (check and tiny-model, which measure nothing, print a rule of "
            f"thumb or the tiny model's design instead; `mtpinspect check MODEL.gguf --sweep-report {report}` gives "
            "Ollama and LM Studio this one)")
