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

Rounds are independent measurements. A method that keeps state across requests (ngram-mod's n-gram map,
shared by every slot and kept until it fills: llama.cpp common/speculative.cpp, and llama-server has no
call that clears it) would turn rounds 2..N into replays of round 1's answers, so each round of such a
configuration is its own server start, whatever the order. The prompt cache is off in every request
(``cache_prompt`` false, checked per answer in ``timings.cache_n``), which also drops a draft model's and
the MTP head's cached context.

At concurrency N a run's N requests are N different prompts of its class (the run's prompt and the next
ones, cycled where the class has fewer), so concurrent requests are not copies of one another.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.errors import UsageError
from mtpinspect.runtime.bounds import LLAMA_SEED_RANDOM, N_MAX_BOUND, REPEAT_BOUND, check_rate
from mtpinspect.runtime.flags import (
    DRAFT_MODEL,
    DRAFT_SPEC_TYPE,
    N_MAX,
    NGRAM_MOD_N_MAX,
    NGRAM_MOD_N_MIN,
    NGRAM_MOD_N_MIN_DEFAULT,
    NGRAM_SIMPLE_SIZE_M,
    PARALLEL,
    SPEC_TYPE,
    SYNTH_RATES,
    ServerArgs,
)
from mtpinspect.sweep.prompts import Prompt
from mtpinspect.units import duration

BASELINE_ID = "baseline"
ORDERS = ("rounds", "grouped")


class Method(str, enum.Enum):
    """A speculative method llama-server runs (--method): one at a time, each its own configuration."""

    draft_mtp = "draft-mtp"
    ngram_simple = "ngram-simple"
    ngram_mod = "ngram-mod"
    draft = "draft"  # a separate draft model, --method draft:FILE (llama-server's draft-simple with -md FILE)

    @property
    def spec_type(self) -> str:
        return DRAFT_SPEC_TYPE if self is Method.draft else self.value

    @property
    def keeps_state(self) -> str | None:
        """What this method keeps from one request to the next in llama-server (None: nothing once the
        prompt cache is off): what a round must start without."""
        if self is Method.ngram_mod:
            return "its n-gram map, shared by all requests and kept across them (llama-server cannot clear it)"
        return None

    def length_args(self, n_max: int) -> list[str]:
        """The flag that sets this method's draft length to ``n_max``."""
        if self is Method.ngram_simple:
            return NGRAM_SIMPLE_SIZE_M.spelled(n_max)
        if self is Method.ngram_mod:
            # ngram-mod drops drafts shorter than its n-min (default 48): keep n-min <= n-max.
            return [*NGRAM_MOD_N_MAX.spelled(n_max), *NGRAM_MOD_N_MIN.spelled(min(n_max, NGRAM_MOD_N_MIN_DEFAULT))]
        return N_MAX.spelled(n_max)


@dataclass(frozen=True)
class Condition:
    """How the server is loaded while a configuration is measured: requests at once (each on its own
    slot) and sampling temperature. The default (one request, greedy) adds nothing to ids or labels."""

    concurrency: int = 1
    temperature: float = 0.0

    @property
    def suffix(self) -> str:
        parts = ([f"c{self.concurrency}"] if self.concurrency != 1 else []) + (
            [f"t{self.temperature:g}"] if self.temperature != 0.0 else [])
        return "@" + "-".join(parts) if parts else ""

    @property
    def label(self) -> str:
        requests = "1 request" if self.concurrency == 1 else f"{self.concurrency} concurrent"
        return f"{requests}, temperature {self.temperature:g}"

    def server_args(self) -> list[str]:
        # The launcher gives one slot otherwise; N requests at once need N slots to run together.
        return PARALLEL.spelled(self.concurrency) if self.concurrency != 1 else []


@dataclass(frozen=True)
class Configuration:
    """One llama-server setting: the baseline (``n_max`` None) or draft-mtp with ``n_max`` tokens."""

    n_max: int | None
    # Target per-token acceptance p for a synthetic run (--spec-synth-rates); None for real drafting.
    synthetic: float | None = None
    method: Method = Method.draft_mtp
    draft_file: str | None = None  # Method.draft's model
    condition: Condition = Condition()

    @property
    def id(self) -> str:
        return self._method_id() + self.condition.suffix

    def _method_id(self) -> str:
        if self.n_max is None:
            return BASELINE_ID
        if self.synthetic is not None:
            return f"synthetic-{self.synthetic:g}-n-max-{self.n_max}"
        if self.method is Method.draft_mtp:
            return f"n-max-{self.n_max}"
        if self.method is Method.draft:
            return f"draft-{Path(self.draft_file or '').stem}-n-max-{self.n_max}"
        return f"{self.method.value}-n-max-{self.n_max}"

    @property
    def setting(self) -> str:
        """The speculative setting without the condition: what a recommendation names."""
        if self.n_max is None:
            return "off"
        if self.method is Method.draft_mtp:
            return f"n-max {self.n_max}"
        if self.method is Method.draft:
            return f"draft {Path(self.draft_file or '').name} n-max {self.n_max}"
        return f"{self.method.value} n-max {self.n_max}"

    @property
    def label(self) -> str:
        if self.n_max is None:
            base = "baseline"
        elif self.synthetic is not None:
            base = f"n-max {self.n_max}, forced p={self.synthetic:g}"
        else:
            base = self.setting
        return base + (f" ({self.condition.label})" if self.condition != Condition() else "")

    @property
    def keeps_state(self) -> str | None:
        """What the server keeps across this configuration's requests (None: nothing)."""
        return self.method.keeps_state if self.n_max is not None and self.synthetic is None else None

    def synth_rates(self) -> list[float]:
        """Unconditional per-position acceptance [p, p^2, ..., p^K]: a constant per-token rate p."""
        if self.synthetic is None or self.n_max is None:
            return []
        return [self.synthetic ** (i + 1) for i in range(self.n_max)]

    def server_args(self, mtp_file: str | None) -> ServerArgs:
        """The arguments that make a server run this configuration (model and port come elsewhere)."""
        if self.n_max is None:
            # No -md either: llama-server infers draft-mtp from a draft GGUF when --spec-type is absent.
            return ServerArgs.of(self.condition.server_args())
        args = [*self.condition.server_args(), *SPEC_TYPE.spelled(self.method.spec_type),
                *self.method.length_args(self.n_max)]
        if self.method is Method.draft and self.draft_file:
            args += DRAFT_MODEL.spelled(self.draft_file)
        elif self.method is Method.draft_mtp and mtp_file:
            args += DRAFT_MODEL.spelled(mtp_file)
        if self.synthetic is not None:
            args += SYNTH_RATES.spelled(",".join(f"{rate:.6g}" for rate in self.synth_rates()))
        return ServerArgs.of(args)


@dataclass(frozen=True)
class PlannedRun:
    configuration: Configuration
    prompt: Prompt
    repeat: int
    # The prompts of the run's requests at concurrency N: ``prompt`` and the next N-1 of its class, cycled.
    # Empty: the prompt alone.
    together: tuple[Prompt, ...] = ()

    @property
    def prompts(self) -> tuple[Prompt, ...]:
        """One prompt per request sent at once."""
        return self.together or (self.prompt,)

    @property
    def key(self) -> tuple[str, str, int]:
        """What --resume matches on: configuration, prompt and repeat."""
        return (self.configuration.id, self.prompt.id, self.repeat)

    def seeds(self, seed: int) -> list[int]:
        """The seed of each of the run's requests. Greedy: all ``seed`` (the sampler ignores it). Sampling:
        another seed per round and per request, the same in every configuration, so the spread over rounds
        is the spread over seeds and each configuration samples with the same seeds."""
        count = self.configuration.condition.concurrency
        if self.configuration.condition.temperature == 0.0:
            return [seed] * count
        return [(seed + self.repeat * count + i) % LLAMA_SEED_RANDOM for i in range(count)]


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

    @property
    def requests(self) -> int:
        """Measured requests: a run at concurrency N sends N at once."""
        return sum(len(visit.runs) * visit.configuration.condition.concurrency for visit in self.visits)


def configurations(
    n_max_values: Sequence[int],
    synthetic: Sequence[float] = (),
    methods: Sequence[tuple[Method, str | None]] = ((Method.draft_mtp, None),),
    conditions: Sequence[Condition] = (Condition(),),
) -> list[Configuration]:
    """Per condition: baseline first, then each method's n-max, then each (forced acceptance, n-max) pair.

    Conditions and methods multiply the plan; their defaults (one request at temperature 0, draft-mtp)
    give the plan of a sweep without those axes, with the same ids."""
    if not n_max_values:
        raise UsageError("--n-max: give at least one value (the baseline always runs)")
    for value in n_max_values:
        N_MAX_BOUND.check(value)
    for rate in synthetic:
        check_rate(rate)
    if not methods:
        raise UsageError("--method: give at least one method")
    if not conditions:
        raise UsageError("--concurrency/--temperature: give at least one value")
    n_max_sorted = sorted(set(n_max_values))
    _check_names(methods, conditions)
    configs: list[Configuration] = []
    for condition in dict.fromkeys(conditions):
        configs.append(Configuration(None, condition=condition))
        configs += [Configuration(n, method=method, draft_file=file, condition=condition)
                    for method, file in dict.fromkeys(methods) for n in n_max_sorted]
        configs += [Configuration(n, synthetic=rate, condition=condition)
                    for rate in sorted(set(synthetic)) for n in n_max_sorted]
    return configs


def _check_names(methods: Sequence[tuple[Method, str | None]], conditions: Sequence[Condition]) -> None:
    """UsageError, in one line, for two settings that would be recorded under one id (their runs would merge
    into one row and one of them would be lost): draft models with one file name, temperatures that print
    alike."""
    stems: dict[str, str] = {}
    for method, file in dict.fromkeys(methods):
        if method is Method.draft and file:
            stem = Path(file).stem
            if stem in stems and stems[stem] != file:
                raise UsageError(f"--method draft:{stems[stem]},draft:{file}: both draft models are named {stem}, "
                                 "which names their runs; give them different file names (a link will do)")
            stems[stem] = file
    shown: dict[str, float] = {}
    for condition in dict.fromkeys(conditions):
        text = f"{condition.temperature:g}"
        if text in shown and shown[text] != condition.temperature:
            raise UsageError(f"--temperature {shown[text]!r} and {condition.temperature!r}: both are recorded as "
                             f"temperature {text}; give values that differ within 6 significant digits")
        shown[text] = condition.temperature


def conditions(concurrency: Sequence[int], temperatures: Sequence[float]) -> list[Condition]:
    """Every (requests at once, temperature) pair, in the order given."""
    return [Condition(n, t) for n in dict.fromkeys(concurrency) for t in dict.fromkeys(temperatures)]


def parse_method(text: str) -> tuple[Method, str | None]:
    """``draft-mtp``, ``ngram-simple``, ``ngram-mod`` or ``draft:FILE``; UsageError for anything else."""
    name, colon, file = text.strip().partition(":")
    if name == Method.draft.value:
        if not colon or not file:
            raise UsageError(f"--method {text}: a draft model is given as draft:FILE")
        return Method.draft, file
    try:
        method = Method(name)
    except ValueError:
        known = ", ".join([m.value for m in Method if m is not Method.draft] + ["draft:FILE"])
        raise UsageError(f"--method {text}: not a method (one of {known})") from None
    if colon or method is Method.draft:
        raise UsageError(f"--method {text}: only draft takes a file (draft:FILE)")
    return method, None


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
            for run in (PlannedRun(config, prompt, round_index, _together(prompt, prompts, config.condition.concurrency))
                        for prompt in prompts)
            if run.key not in finished
        )
        if not runs:
            continue
        # A method with state across requests starts every round on a fresh server (the module's docstring).
        if visits and visits[-1].configuration == config and config.keeps_state is None:
            visits[-1] = Visit(config, visits[-1].runs + runs)
        else:
            visits.append(Visit(config, runs))
    return Plan(tuple(configs), tuple(prompts), repeat, tuple(visits))


def _together(prompt: Prompt, prompts: Sequence[Prompt], concurrency: int) -> tuple[Prompt, ...]:
    """The prompts of a run's ``concurrency`` requests: ``prompt`` and the ones after it in its class, cycled."""
    if concurrency == 1:
        return ()
    same = [p for p in prompts if p.prompt_class == prompt.prompt_class]
    start = same.index(prompt)
    return tuple(same[(start + i) % len(same)] for i in range(concurrency))


@dataclass(frozen=True)
class PlanSize:
    """How big a plan is, shown before it starts: every axis multiplies it, so it says which one to trim."""

    runs: int
    requests: int
    server_starts: int
    tokens: int  # tokens the requests generate, the bulk of the time on a slow machine
    factors: tuple[tuple[str, int], ...]  # (what, how many) whose product is the full plan's runs
    # From earlier runs of the same model on this machine (with_history), else None: known after the first runs.
    eta_seconds: float | None = None
    eta_basis: str | None = None

    @property
    def line(self) -> str:
        product = " x ".join(f"{count} {what}" for what, count in self.factors)
        trims = [_TRIMS[what] for what, count in sorted(self.factors, key=lambda f: -f[1]) if count > 1 and what in _TRIMS]
        trim = f"; to trim: {', '.join(trims[:3])}" if trims else ""
        eta = (f"ETA about {duration(self.eta_seconds)} ({self.eta_basis})" if self.eta_seconds is not None
               else "the ETA follows the first runs")
        return (f"plan: {self.runs} runs ({product}), {self.requests} requests, {self.server_starts} server starts, "
                f"{self.tokens:,} tokens to generate; {eta}{trim}")

    def with_history(self, seconds_per_token: float | None, seconds_per_start: float | None, basis: str) -> PlanSize:
        """The size with an ETA from earlier measurements: generated tokens and server starts, each at the
        time they took before (the warm-ups and the prompts ride on those averages)."""
        if seconds_per_token is None:
            return self
        eta = self.tokens * seconds_per_token + self.server_starts * (seconds_per_start or 0.0)
        return dataclasses.replace(self, eta_seconds=eta, eta_basis=basis)


_TRIMS = {
    "settings": "fewer --n-max/--method values",
    "conditions": "fewer --concurrency/--temperature values",
    "prompts": "--prompts CLASS (one class)",
    "rounds": "--repeat 1 (no spread)",
}


def plan_size(plan: Plan, n_predict: int) -> PlanSize:
    """The plan's runs, requests, server starts and generated tokens, and the axes that multiply them."""
    condition_count = len({config.condition for config in plan.configurations})
    return PlanSize(
        runs=plan.total_runs,
        requests=plan.requests,
        server_starts=len(plan.visits),
        tokens=plan.requests * n_predict,
        factors=(
            ("settings", len(plan.configurations) // max(condition_count, 1)),
            ("conditions", condition_count),
            ("prompts", len(plan.prompts)),
            ("rounds", plan.repeat),
        ),
    )
