"""The sweep plan: which configurations run, in which order, on which server start.

llama-server fixes the draft length when it starts (per-request ``speculative.n_max`` is compiled
out), so every configuration is its own server process. The baseline runs without ``--spec-type``
(never ``--spec-draft-n-max 0``: the MTP drafter still drafts one token then).

Repeats are rounds over all configurations, and alternate rounds run the configurations in reverse
order, so slow drift (thermal throttling, a background job) does not line up with one configuration.
A *visit* is one server start: the configurations at a round boundary are the same (``... 4 | 4 ...``),
so that server stays up for both rounds and is started once.

``order="grouped"`` instead runs every round of a configuration on one server, so each configuration
starts exactly once, whatever --repeat is: fewer starts (a large model loads once per configuration),
less protection against drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mtpinspect.errors import UsageError
from mtpinspect.runtime.flags import DRAFT_MODEL, MTP_SPEC_TYPE, N_MAX, SPEC_TYPE, SYNTH_RATES, ServerArgs
from mtpinspect.sweep.options import N_MAX_BOUND, REPEAT_BOUND, check_rate
from mtpinspect.sweep.prompts import Prompt

BASELINE_ID = "baseline"
ORDERS = ("rounds", "grouped")


@dataclass(frozen=True)
class Configuration:
    """One llama-server setting: the baseline (``n_max`` None) or draft-mtp with ``n_max`` tokens."""

    n_max: int | None
    # Target per-token acceptance p for a synthetic run (--spec-synth-rates); None for real drafting.
    synthetic: float | None = None

    @property
    def id(self) -> str:
        if self.n_max is None:
            return BASELINE_ID
        if self.synthetic is not None:
            return f"synthetic-{self.synthetic:g}-n-max-{self.n_max}"
        return f"n-max-{self.n_max}"

    @property
    def label(self) -> str:
        if self.n_max is None:
            return "baseline"
        if self.synthetic is not None:
            return f"n-max {self.n_max}, forced p={self.synthetic:g}"
        return f"n-max {self.n_max}"

    def synth_rates(self) -> list[float]:
        """Unconditional per-position acceptance [p, p^2, ..., p^K]: a constant per-token rate p."""
        if self.synthetic is None or self.n_max is None:
            return []
        return [self.synthetic ** (i + 1) for i in range(self.n_max)]

    def server_args(self, mtp_file: str | None) -> ServerArgs:
        """The arguments that make a server run this configuration (model and port come elsewhere)."""
        if self.n_max is None:
            # No -md either: llama-server infers draft-mtp from a draft GGUF when --spec-type is absent.
            return ServerArgs()
        args = [*SPEC_TYPE.spelled(MTP_SPEC_TYPE), *N_MAX.spelled(self.n_max)]
        if mtp_file:
            args += DRAFT_MODEL.spelled(mtp_file)
        if self.synthetic is not None:
            args += SYNTH_RATES.spelled(",".join(f"{rate:.6g}" for rate in self.synth_rates()))
        return ServerArgs.of(args)


@dataclass(frozen=True)
class PlannedRun:
    configuration: Configuration
    prompt: Prompt
    repeat: int

    @property
    def key(self) -> tuple[str, str, int]:
        """What --resume matches on: configuration, prompt and repeat."""
        return (self.configuration.id, self.prompt.id, self.repeat)


@dataclass(frozen=True)
class Visit:
    """One server start and the runs it serves, in order."""

    configuration: Configuration
    runs: tuple[PlannedRun, ...]


@dataclass(frozen=True)
class Plan:
    configurations: tuple[Configuration, ...]
    prompts: tuple[Prompt, ...]
    repeat: int
    visits: tuple[Visit, ...]

    @property
    def total_runs(self) -> int:
        return sum(len(visit.runs) for visit in self.visits)


def configurations(n_max_values: Sequence[int], synthetic: Sequence[float] = ()) -> list[Configuration]:
    """Baseline first, then each n-max, then each (forced acceptance, n-max) pair."""
    if not n_max_values:
        raise UsageError("--n-max: give at least one value (the baseline always runs)")
    for value in n_max_values:
        N_MAX_BOUND.check(value)
    for rate in synthetic:
        check_rate(rate)
    n_max_sorted = sorted(set(n_max_values))
    configs = [Configuration(None)] + [Configuration(n) for n in n_max_sorted]
    configs += [Configuration(n, synthetic=rate) for rate in sorted(set(synthetic)) for n in n_max_sorted]
    return configs


def build_plan(
    configs: Sequence[Configuration],
    prompts: Sequence[Prompt],
    repeat: int,
    done: Iterable[tuple[str, str, int]] = (),
    order: str = "rounds",
) -> Plan:
    """Order the runs into visits; runs whose key is in ``done`` are left out (--resume)."""
    REPEAT_BOUND.check(repeat)
    if not prompts:
        raise UsageError("no prompts to run")
    if order not in ORDERS:
        raise UsageError(f"--order {order}: must be one of {', '.join(ORDERS)}")
    finished = set(done)
    visits: list[Visit] = []
    if order == "grouped":
        schedule = [(config, r) for config in configs for r in range(repeat)]
    else:
        schedule = [(config, r) for r in range(repeat) for config in (configs if r % 2 == 0 else configs[::-1])]
    for config, round_index in schedule:
        runs = tuple(
            run
            for run in (PlannedRun(config, prompt, round_index) for prompt in prompts)
            if run.key not in finished
        )
        if not runs:
            continue
        if visits and visits[-1].configuration == config:
            visits[-1] = Visit(config, visits[-1].runs + runs)
        else:
            visits.append(Visit(config, runs))
    return Plan(tuple(configs), tuple(prompts), repeat, tuple(visits))
