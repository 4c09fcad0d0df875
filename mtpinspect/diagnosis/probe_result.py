"""What a probe measured: its figures per configuration and prompt class, the run of the user's own
arguments, the cost estimates, and the probe's fixed settings (probe.py runs it; rank.py and head_rules.py
read it). Nothing here starts a server, so a diagnosis from logs alone reads these types without the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from mtpinspect.formulas import acceptance_for_length
from mtpinspect.jsonable import json_field
from mtpinspect.vocabulary import Engine

if TYPE_CHECKING:
    from mtpinspect.logread.runs import LogEvidence
    from mtpinspect.runtime.crash import Crash
    from mtpinspect.runtime.workarounds import Workaround, WorkaroundSearch
    from mtpinspect.sweep.report import EngineCrash
    from mtpinspect.sweep.request import RequestWay

PROBE_N_MAX = (1, 3)
PROBE_CLASSES = ("code", "prose-en")
PROBE_N_PREDICT = 64
# Measured beside any prompts: text any head matching its model drafts nearly all of (head_rules.py), at
# n-max 1 with 128 tokens a prompt: the first 64 tokens of a repetition are the least regular, and at 64 the
# built-in model's Q2_K head (0.81 at 128) fell to the level of its TQ1_0 head (0.60 at 128; bench/README.md).
HEAD_PROBE_SET = "head-probe"
COPY_CLASS = "copy"
COPY_N_PREDICT = 128


def fmt(value: float | None, spec: str = ".2f") -> str:
    """A figure of an evidence line: '-' when not measured."""
    return "-" if value is None else format(value, spec)


@dataclass(frozen=True)
class ProbeFigure:
    """One configuration on one prompt class."""

    configuration: str
    n_max: int | None  # None: the baseline
    prompt_class: str
    acceptance: float | None
    mean_length: float | None
    tokens_per_second: float | None  # median decode tok/s
    speedup: float | None
    within_noise: bool | None
    per_position: tuple[float, ...]
    drafted: int
    accepted: int
    drafts: int
    error: str | None
    workaround: Workaround | None = None  # measured with this change: the configuration crashed without it

    def line(self) -> str:
        """The figure as an evidence line."""
        label = "baseline" if self.n_max is None else f"n-max {self.n_max}"
        if self.error and not self.drafted and self.tokens_per_second is None:
            return f"probe {label} {self.prompt_class}: failed: {self.error}"
        speed = f"{fmt(self.tokens_per_second, '.1f')} tok/s"
        if self.n_max is None:
            return f"probe {label} {self.prompt_class}: {speed}"
        return (f"probe {label} {self.prompt_class}: acceptance {fmt(self.acceptance)} ({self.accepted}/{self.drafted}), "
                f"mean length {fmt(self.mean_length)}, {speed}, speedup {fmt(self.speedup)}x")


@dataclass(frozen=True)
class CostEstimate:
    """What one verification step costs here, from the measured speedup and mean length.

    A step emits ``mean_length`` tokens in the time of ``mean_length / speedup`` baseline tokens, so
    MTP pays off only when the mean length exceeds that step cost. The break-even per-token
    acceptance solves 1 + a + ... + a^n = step cost (None when even perfect drafts cannot reach it).
    An estimate: it assumes a step costs the same whatever is accepted (`sweep --synthetic` measures it).
    """

    n_max: int
    mean_length: float
    speedup: float
    step_cost: float
    break_even_acceptance: float | None

    @classmethod
    def of(cls, n_max: int, mean_length: float, speedup: float) -> CostEstimate:
        cost = mean_length / speedup
        return cls(n_max, mean_length, speedup, cost, acceptance_for_length(cost, n_max))


@dataclass(frozen=True)
class AsGivenRun:
    """The user's own server arguments, run once."""

    json_properties: ClassVar[dict[str, str]] = {"drafted": "drafted", "accepted": "accepted", "acceptance": "acceptance"}

    command: list[str]
    started: bool
    failure: str | None
    log: LogEvidence | None = json_field(omit=True)
    crash: Crash | None = None  # the run crashed the engine
    # For a crash: the changes tried on the user's own command, one at a time, and the one that worked.
    workarounds: WorkaroundSearch | None = None

    @property
    def drafted(self) -> int | None:
        return self.log.drafted if self.log else None

    @property
    def accepted(self) -> int | None:
        return self.log.accepted if self.log else None

    @property
    def acceptance(self) -> float | None:
        return self.log.acceptance if self.log else None


@dataclass(frozen=True)
class ProbeServer:
    path: str  # the llama-server binary, or the URL of the running server measured
    version: str
    engine: Engine = Engine.llama_cpp  # whose terms the fixes are said in


@dataclass
class ProbeResult:
    server: ProbeServer
    n_predict: int
    prompt_classes: list[str]
    figures: list[ProbeFigure] = json_field(name="results")
    failures: list[str]  # "configuration: reason"
    as_given: AsGivenRun | None
    mtp_logs: list[LogEvidence] = json_field(omit=True, default_factory=list)  # the sweep's MTP servers' logs
    costs: list[CostEstimate] = json_field(name="cost_estimates", default_factory=list)
    # Probe configurations that crashed the engine, and the change the probe then measured them with.
    crashes: list[EngineCrash] = json_field(default_factory=list)
    out_dir: str | None = None
    # How the probe's sweep sent its prompts (chat template or raw completion) and why; None at an --endpoint.
    request: RequestWay | None = None

    def mtp_figures(self) -> list[ProbeFigure]:
        return [f for f in self.figures if f.n_max is not None]

    def baseline(self, prompt_class: str) -> ProbeFigure | None:
        return next((f for f in self.figures if f.n_max is None and f.prompt_class == prompt_class), None)
