"""Figures per configuration and prompt class, the recommendation, and the synthetic break-even.

Speed is summarised by median, min and max over the class's runs (prompts x repeats): medians resist
one slow outlier, and min-max ranges make "within noise" a plain overlap test, which is what a reader
can check by eye. Draft figures are pooled counts (Σaccepted / Σdrafted), so long and short runs weigh
by the work they did, as the server's own counters do.
"""

from __future__ import annotations

import dataclasses
import statistics as stats
from collections.abc import Sequence
from dataclasses import dataclass, field

from mtpinspect.formulas import crossing, expected_length, geometric_mean
from mtpinspect.jsonable import json_field
from mtpinspect.runtime.crash import Crash
from mtpinspect.runtime.workarounds import Workaround
from mtpinspect.sweep.plan import BASELINE_ID, Condition, Configuration
from mtpinspect.sweep.records import RunRecord, ServerRecord
from mtpinspect.vocabulary import RunStatus, ServerStatus

# Said after every note: the command that measures which of it holds on the user's own engine.
DRIFT_POINTER = ("`mtpinspect drift` measures which trigger changes the text on this engine (MTP, batching, a "
                 "restart, the thread count) and whether each flip is a near-tie or a breakdown.")
DETERMINISM_NOTE = (
    "Different outputs at temperature 0 are expected, not a bug: verifying a draft runs the model on "
    "several tokens at once, and llama.cpp picks different kernels for different batch sizes, so logits "
    "differ in the last bits and a near-tie can flip (llama.cpp #23335)."
)
# What the pinned llama.cpp's CPU backend does (measured with `mtpinspect drift`, docs/drift.md): one
# build and one set of settings give the same bits every time, restarts included; the thread count and how
# prompts are batched change them; MTP's verification by itself does not.
CPU_DETERMINISM_NOTE = (
    "On CPU, llama-server's temperature-0 text is bit-reproducible for one build and one set of settings, "
    "restarts included (ggml-cpu splits work by thread index and does no autotuning). It changes with the "
    "thread count: past 256 context tokens, flash attention for one decoded token splits the KV range into "
    "one chunk per thread (ggml/src/ggml-cpu/ops.cpp, ggml_compute_forward_flash_attn_ext_f16; n_kv is "
    "padded to 256 in src/llama-kv-cache.cpp), while MTP's verification of several tokens never takes that "
    "path, so with -t 1 MTP gives the baseline's text and with more threads it may not. It changes with "
    "batching: 64 or more query rows take a tiled kernel (GGML_FA_TILE_Q), fewer a per-row one, so prompts "
    "sent together or cut by -ub differ in the last bits. Near-ties flip; the wording changes, not the quality."
)
# The same fact in the words of the engine measured: a vLLM or SGLang sweep has no llama.cpp kernels.
_ENGINE_DETERMINISM = {
    "vllm": ("Different outputs at temperature 0 are expected, not a bug: verifying a draft runs the model on "
             "several tokens at once, and vLLM's GPU kernels reduce in a different order for different batch "
             "shapes, so logits differ in the last bits and a near-tie can flip (vLLM does not promise "
             "batch-invariant results by default)."),
    "sglang": ("Different outputs at temperature 0 are expected, not a bug: verifying a draft runs the model on "
               "several tokens at once, and SGLang's GPU kernels reduce in a different order for different "
               "batch shapes, so logits differ in the last bits and a near-tie can flip (SGLang is not "
               "deterministic by default)."),
}


def determinism_note(engine: str | None, backend: str | None = None) -> str:
    """Why texts may differ at temperature 0, for the engine and backend measured (llama.cpp when no engine
    is named; its CPU backend has its own, measured facts), and the command that measures it here."""
    if engine in (None, "", "llama.cpp") and backend == "cpu":
        return f"{CPU_DETERMINISM_NOTE} {DRIFT_POINTER}"
    return f"{_ENGINE_DETERMINISM.get(engine or '', DETERMINISM_NOTE)} {DRIFT_POINTER}"


@dataclass(frozen=True)
class Spread:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread | None:
        return cls(stats.median(values), min(values), max(values)) if values else None

    def overlaps(self, other: Spread) -> bool:
        return self.min <= other.max and other.min <= self.max


@dataclass
class GroupStats:
    """One configuration on one prompt class."""

    configuration: str
    label: str
    n_max: int | None
    synthetic: float | None
    prompt_class: str
    runs: int
    failed: int
    error: str | None
    # A configuration that measured nothing keeps the keys in JSON, with nulls.
    tokens_per_second: Spread | None = json_field(when_none={"median": None, "min": None, "max": None})
    prompt_tokens_per_second: Spread | None
    speedup: float | None
    within_noise: bool | None
    acceptance: float | None
    mean_length: float | None
    # Acceptance of the first draft position: the per-token rate when nothing earlier can break the chain.
    first_position_acceptance: float | None
    # 1 + a + ... + a^n with a = first_position_acceptance: the mean length if deeper positions were
    # accepted as often, each given the previous one. A measured mean length below it is decay with depth.
    expected_length: float | None
    per_position: list[float]
    drafted: int
    accepted: int
    drafts: int
    # Recurrent-state checkpoints the server restored (a partly rejected draft on a hybrid or recurrent
    # model, each followed by a replay), from its traced step lines; None where no run's log has them.
    checkpoint_restores: int | None
    rss_peak_bytes: int | None
    rss_post_load_bytes: int | None
    gpu_memory_bytes: int | None
    repeats_identical: bool | None
    identical_to_baseline: bool | None
    first_divergence: int | None
    log_agrees: bool | None
    command: list[str] = field(default_factory=list)
    # The change its runs were measured with, because the configuration crashed the engine without it.
    workaround: Workaround | None = None
    # How the engine crashed, when the configuration measured nothing because it crashed.
    crash: Crash | None = None
    # The serving conditions (sweep --method/--concurrency/--temperature); the defaults are a plain sweep's.
    method: str | None = None  # None for the baseline
    setting: str = ""  # the speculative setting without the condition ("n-max 2", "ngram-simple n-max 3", "off")
    concurrency: int = 1
    temperature: float = 0.0
    # Time to the first token as the client measured it (request sent -> first streamed token: queueing,
    # tokenization, the prompt and the first decode step), over every request of every run; None where no
    # request was streamed (never the server's prompt time).
    ttft_ms: Spread | None = None
    # The server's own prompt time (timings.prompt_ms: processing the prompt), over every request.
    prompt_ms: Spread | None = None
    # Each request's own decode tok/s, over every request of every run (at concurrency N, N per run).
    per_request_tokens_per_second: Spread | None = None
    # All the run's requests' generated tokens per second of wall time (the server's throughput).
    total_tokens_per_second: Spread | None = None
    prompt_tokens: int | None = None  # the longest prompt of the class, in tokens (timings.prompt_n per request)

    @property
    def shown_label(self) -> str:
        """The label with the change its runs needed, e.g. "n-max 3 [--no-repack]"."""
        return f"{self.label} [{self.workaround.value}]" if self.workaround else self.label


@dataclass(frozen=True)
class ClassRecommendation:
    prompt_class: str
    n_max: int | None
    speedup: float | None
    reason: str
    workaround: Workaround | None = None  # run the recommended n-max with this change
    method: str | None = None  # the speculative method of the recommended n-max (None: off)


@dataclass(frozen=True)
class Recommendation:
    n_max: int | None
    reason: str
    per_class: list[ClassRecommendation]
    workaround: Workaround | None = None
    # False: no baseline or no MTP configuration was measured, so None is "no recommendation", not "leave
    # MTP off" (every MTP start failed is not evidence that MTP is slower).
    measured: bool = True
    method: str | None = None  # the speculative method of the recommended n-max (None: off)
    # With --concurrency/--temperature: the recommendation under each condition, and all in one line
    # ("at 1 request, temperature 0: n-max 2; at 4 concurrent, temperature 0: off").
    per_condition: list[ConditionRecommendation] = field(default_factory=list)
    summary: str | None = None


@dataclass(frozen=True)
class ConditionRecommendation:
    concurrency: int
    temperature: float
    setting: str  # "n-max 2", "ngram-simple n-max 3", "off", or "no measurement"
    n_max: int | None
    method: str | None
    reason: str


@dataclass(frozen=True)
class CostPoint:
    target: float
    acceptance: float | None
    speedup: float | None


@dataclass(frozen=True)
class BreakEven:
    """Where forced acceptance makes n-max pay off on this machine (None: no crossing measured)."""

    n_max: int
    acceptance: float | None
    note: str
    points: list[CostPoint]


def first_divergence(a: str, b: str) -> int | None:
    """Offset of the first differing character, None when the texts are identical."""
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def summarize(
    runs: Sequence[RunRecord], servers: Sequence[ServerRecord], configs: Sequence[Configuration], classes: Sequence[str]
) -> list[GroupStats]:
    """Stats for every (configuration, class) pair, baseline first, in plan order; each compared with the
    baseline of its own class under its own condition (requests at once, temperature)."""
    groups: list[GroupStats] = []
    baseline: dict[tuple[Condition, str], GroupStats] = {}
    for config in configs:
        config_servers = [s for s in servers if s.configuration == config.id]
        for prompt_class in classes:
            mine = [r for r in runs if r.configuration == config.id and r.prompt_class == prompt_class]
            group = _group(config, prompt_class, mine, config_servers)
            if config.n_max is None:
                baseline[(config.condition, prompt_class)] = group
            else:
                _compare(group, baseline.get((config.condition, prompt_class)))
            groups.append(group)
    _attach_determinism(groups, runs)
    return groups


def _group(
    config: Configuration,
    prompt_class: str,
    runs: list[RunRecord],
    servers: list[ServerRecord],
) -> GroupStats:
    ok = [r for r in runs if r.status == RunStatus.ok]
    failed = [r for r in runs if r.status != RunStatus.ok]
    failed_starts = [s for s in servers if s.status is not ServerStatus.started]
    drafted = sum(r.drafted for r in ok)
    accepted = sum(r.accepted for r in ok)
    drafts = sum(r.drafts for r in ok)
    acceptance = accepted / drafted if drafted else None
    positions = max((len(r.per_position) for r in ok), default=0)
    per_position = [
        sum(r.per_position[i] * r.drafts for r in ok if i < len(r.per_position)) / drafts for i in range(positions)
    ] if drafts else []
    started = [s for s in servers if s.status is ServerStatus.started]
    crashes = [c for c in (*(r.crash for r in failed), *(s.crash for s in failed_starts)) if c is not None]
    gpu = [sum(r.gpu_memory_bytes.values()) for r in ok if r.gpu_memory_bytes]
    checks = [r.log_agrees for r in ok if r.log_agrees is not None]
    restores = [r.log.checkpoint_restores for r in ok if r.log is not None and r.log.checkpoint_restores is not None]
    return GroupStats(
        configuration=config.id,
        label=config.label,
        n_max=config.n_max,
        synthetic=config.synthetic,
        prompt_class=prompt_class,
        runs=len(ok),
        failed=len(failed),
        error=(failed[-1].error if failed else None) or (failed_starts[-1].reason if failed_starts and not ok else None),
        tokens_per_second=Spread.of([r.decode_tokens_per_second for r in ok if r.decode_tokens_per_second]),
        prompt_tokens_per_second=Spread.of([r.prompt_tokens_per_second for r in ok if r.prompt_tokens_per_second]),
        speedup=None,
        within_noise=None,
        acceptance=acceptance,
        mean_length=1.0 + accepted / drafts if drafts else None,
        first_position_acceptance=per_position[0] if per_position else None,
        expected_length=expected_length(per_position[0], config.n_max) if per_position and config.n_max else None,
        per_position=per_position,
        drafted=drafted,
        accepted=accepted,
        drafts=drafts,
        checkpoint_restores=sum(restores) if restores else None,
        rss_peak_bytes=max((r.rss_peak_bytes for r in ok if r.rss_peak_bytes), default=None),
        rss_post_load_bytes=max((s.rss_post_load_bytes for s in started if s.rss_post_load_bytes), default=None),
        gpu_memory_bytes=max(gpu, default=None),
        repeats_identical=_repeats_identical(ok),
        identical_to_baseline=None,
        first_divergence=None,
        log_agrees=all(checks) if checks else None,
        command=started[-1].command if started else (servers[-1].command if servers else []),
        workaround=next((r.workaround for r in ok if r.workaround), None),
        crash=crashes[0] if crashes and not ok else None,
        method=config.method.value if config.n_max is not None else None,
        setting=config.setting,
        concurrency=config.condition.concurrency,
        temperature=config.condition.temperature,
        ttft_ms=Spread.of([ms for r in ok for ms in r.per_request_first_token_ms]),
        prompt_ms=Spread.of([ms for r in ok for ms in r.per_request_prompt_ms]
                            or [r.prompt_ms for r in ok if r.prompt_ms is not None]),
        per_request_tokens_per_second=Spread.of([v for r in ok for v in r.per_request_tokens_per_second if v]
                                                or [r.decode_tokens_per_second for r in ok
                                                    if r.decode_tokens_per_second]),
        total_tokens_per_second=Spread.of([r.total_tokens_per_second for r in ok if r.total_tokens_per_second]),
        prompt_tokens=max((n for r in ok for n in (r.per_request_prompt_n or
                                                   ([r.prompt_n // r.concurrency] if r.prompt_n else []))),
                          default=None),
    )


def _compare(group: GroupStats, baseline: GroupStats | None) -> None:
    """Speedup and noise against the baseline of the same class; output identity for real drafting."""
    if baseline is None or baseline.tokens_per_second is None or group.tokens_per_second is None:
        return
    group.speedup = group.tokens_per_second.median / baseline.tokens_per_second.median
    group.within_noise = group.tokens_per_second.overlaps(baseline.tokens_per_second)


def _attach_determinism(groups: list[GroupStats], runs: Sequence[RunRecord]) -> None:
    """identical_to_baseline and first_divergence per group (synthetic runs' output is not valid text)."""
    for group in groups:
        if group.n_max is None or group.synthetic is not None:
            continue
        # Sampled text is compared with the baseline's under the same seed: it must match too.
        baseline_texts = _texts(runs, BASELINE_ID + Condition(group.concurrency, group.temperature).suffix)
        offsets: list[int | None] = []
        for run in runs:
            if run.configuration != group.configuration or run.prompt_class != group.prompt_class or run.status != RunStatus.ok:
                continue
            reference = baseline_texts.get(run.prompt_id)
            if reference:
                offsets.append(first_divergence(reference[0], run.text))
        if offsets:
            diverged = [o for o in offsets if o is not None]
            group.identical_to_baseline = not diverged
            group.first_divergence = min(diverged) if diverged else None


def _texts(runs: Sequence[RunRecord], config_id: str) -> dict[str, list[str]]:
    texts: dict[str, list[str]] = {}
    for run in sorted((r for r in runs if r.configuration == config_id and r.status == RunStatus.ok), key=lambda r: r.repeat):
        texts.setdefault(run.prompt_id, []).append(run.text)
    return texts


def _repeats_identical(ok: list[RunRecord]) -> bool | None:
    by_prompt: dict[str, set[str]] = {}
    for run in ok:
        by_prompt.setdefault(run.prompt_id, set()).add(run.text)
    if not any(len([r for r in ok if r.prompt_id == p]) > 1 for p in by_prompt):
        return None
    return all(len(texts) == 1 for texts in by_prompt.values())


@dataclass(frozen=True)
class MethodRow:
    """One method's best setting on one class under one condition, beside the others on the same prompts."""

    method: str  # "off" for the baseline
    setting: str
    tokens_per_second: float | None  # median decode tok/s per request
    speedup: float | None
    within_noise: bool | None
    acceptance: float | None
    mean_length: float | None
    ttft_ms: float | None  # median client-measured time to the first token
    rss_peak_bytes: int | None


@dataclass(frozen=True)
class MethodComparison:
    """MTP, a draft model and n-gram drafting on the same prompts, each on its own server (one class, one
    condition): each method's fastest n-max, and the winner."""

    prompt_class: str
    concurrency: int
    temperature: float
    rows: list[MethodRow]
    winner: str  # the fastest setting beyond noise, or "off"


def compare_methods(groups: Sequence[GroupStats], classes: Sequence[str]) -> list[MethodComparison]:
    """Per class and condition, when more than one method was measured: every method's fastest n-max."""
    if len({g.method for g in groups if g.method is not None and g.synthetic is None}) < 2:
        return []
    comparisons = []
    for concurrency, temperature in dict.fromkeys((g.concurrency, g.temperature) for g in groups):
        for prompt_class in classes:
            mine = [g for g in groups if (g.concurrency, g.temperature, g.prompt_class) ==
                    (concurrency, temperature, prompt_class) and g.synthetic is None]
            rows = []
            for method in dict.fromkeys(g.method for g in mine):
                candidates = [g for g in mine if g.method == method]
                best = max(candidates, key=lambda g: g.tokens_per_second.median if g.tokens_per_second else -1.0)
                rows.append(MethodRow(
                    method=method or "off", setting=best.setting,
                    tokens_per_second=best.tokens_per_second.median if best.tokens_per_second else None,
                    speedup=best.speedup, within_noise=best.within_noise, acceptance=best.acceptance,
                    mean_length=best.mean_length, ttft_ms=best.ttft_ms.median if best.ttft_ms else None,
                    rss_peak_bytes=best.rss_peak_bytes))
            paying = [r for r in rows if r.method != "off" and r.speedup is not None and r.speedup > 1.0
                      and not r.within_noise]
            winner = max(paying, key=lambda r: r.speedup or 0.0).setting if paying else "off"
            comparisons.append(MethodComparison(prompt_class, concurrency, temperature, rows, winner))
    return comparisons


def independence(configs: Sequence[Configuration], runs: Sequence[RunRecord], engine: str | None = None) -> str:
    """How the report's rounds and requests were kept apart, in words: the methods that started each round on
    a fresh server and why, the prompt cache, and how concurrent requests differ."""
    if engine:
        return (f"{engine}: measured as its server runs; rounds share a server start, and its prefix cache, where "
                "it is on, may serve an earlier round's prompt (start it with prefix caching off to rule that out)")
    parts = []
    stateful = [c for c in configs if c.keeps_state]
    if stateful:
        settings = ", ".join(dict.fromkeys(c.setting for c in stateful))
        parts.append(f"{settings}: a fresh llama-server for every round, warmed up on a text that is no measured "
                     f"prompt, because the method keeps {stateful[0].keeps_state}; within a round the prompts run in "
                     "the same order every round")
    if any(not c.keeps_state for c in configs):
        parts.append(f"every {'other ' if stateful else ''}setting: the rounds share a server start where they "
                     "meet, as nothing is kept across requests once the prompt cache is off")
    parts.append("every request sent with cache_prompt false, and a run whose answer reused cached prompt tokens "
                 "(timings.cache_n) is failed")
    if any(c.condition.concurrency > 1 for c in configs):
        cycled = [r for r in runs if len(set(r.per_request_prompt_ids)) < len(r.per_request_prompt_ids)]
        parts.append("at --concurrency N the N requests are N different prompts of the class"
                     + (f" (cycled in {len(cycled)} runs: the class has fewer prompts than N)" if cycled else ""))
    return "; ".join(parts)


def recommend(groups: Sequence[GroupStats], classes: Sequence[str]) -> Recommendation:
    """The setting (method and n-max) to use per class, and overall: the one that wins beyond noise in the
    most classes. ``groups`` are of one condition."""
    per_class = [_recommend_class(groups, prompt_class) for prompt_class in classes]
    winners = [c for c in per_class if c.n_max is not None]
    if not winners:
        best = _best_overall(groups, classes)
        if best is None and (crash := _crash_of_mtp(groups)) is not None:
            return Recommendation(None, f"leave MTP off: {crash}", per_class)
        if best is None and (unmeasured := _unmeasured(groups)) is not None:
            return Recommendation(None, f"no measurement: {unmeasured}", per_class, measured=False)
        detail = f"; best was {_setting_of(groups, best[0])} at {best[1]:.2f}x (geometric mean over classes)" if best else ""
        return Recommendation(None, f"leave MTP off: no setting beats the baseline beyond noise{detail}", per_class)
    votes: dict[tuple[str | None, int], int] = {}
    for choice in winners:
        assert choice.n_max is not None
        key = (choice.method, choice.n_max)
        votes[key] = votes.get(key, 0) + 1
    means = {key: _geometric_mean_speedup(groups, classes, key) for key in votes}
    chosen = max(votes, key=lambda key: (votes[key], means[key] or 0.0))
    wins = ", ".join(f"{c.prompt_class} {c.speedup:.2f}x" for c in winners if (c.method, c.n_max) == chosen)
    workaround = next((c.workaround for c in winners if (c.method, c.n_max) == chosen and c.workaround), None)
    needs = f" with {workaround.value} (this build crashes without it)" if workaround else ""
    reason = (f"{_setting_of(groups, chosen)}{needs} is fastest beyond noise in {votes[chosen]} of {len(classes)} "
              f"classes ({wins})")
    return Recommendation(chosen[1], reason, per_class, workaround, method=chosen[0])


def recommend_per_condition(groups: Sequence[GroupStats], classes: Sequence[str]) -> Recommendation:
    """:func:`recommend` under each condition (requests at once, temperature); the overall recommendation is
    the one at a single greedy request when that was measured, else the first condition's, and carries
    every condition's in ``per_condition`` and in one line."""
    order = list(dict.fromkeys((g.concurrency, g.temperature) for g in groups))
    if len(order) <= 1:
        return recommend(groups, classes)
    results = {key: recommend([g for g in groups if (g.concurrency, g.temperature) == key], classes) for key in order}
    per_condition = [
        ConditionRecommendation(n, t, _short(r, groups), r.n_max, r.method, r.reason) for (n, t), r in results.items()
    ]
    summary = "; ".join(f"at {Condition(c.concurrency, c.temperature).label}: {c.setting}" for c in per_condition)
    summary += "".join(_stops_paying(per_condition))
    main = results.get((1, 0.0), results[order[0]])
    return dataclasses.replace(main, per_condition=per_condition, summary=summary)


def _stops_paying(per_condition: Sequence[ConditionRecommendation]) -> list[str]:
    """Per temperature, the fewest requests at once from which no speculative setting pays any more, after
    fewer requests where one did: the batch a verification step adds to is already full."""
    notes = []
    for temperature in dict.fromkeys(c.temperature for c in per_condition):
        ladder = sorted((c for c in per_condition if c.temperature == temperature), key=lambda c: c.concurrency)
        paid = False
        for index, choice in enumerate(ladder):
            if choice.n_max is not None:
                paid = True
            elif paid and choice.setting == "off" and all(c.n_max is None for c in ladder[index:]):
                notes.append(f"; speculative decoding stops paying from {choice.concurrency} concurrent requests"
                             f" at temperature {temperature:g}")
                break
    return notes


def _short(recommendation: Recommendation, groups: Sequence[GroupStats]) -> str:
    if recommendation.n_max is None:
        return "off" if recommendation.measured else "no measurement"
    return _setting_of(groups, (recommendation.method, recommendation.n_max))


def _setting_of(groups: Sequence[GroupStats], key: tuple[str | None, int]) -> str:
    """How people read a (method, n-max) pair: the group's setting ("n-max 2", "ngram-mod n-max 3")."""
    return next((g.setting for g in groups if (g.method, g.n_max) == key and g.setting), f"n-max {key[1]}")


def _unmeasured(groups: Sequence[GroupStats]) -> str | None:
    """Why there is nothing to compare (no baseline, or no MTP configuration, ran), or None."""
    baselines = [g for g in groups if g.n_max is None]
    if not any(g.tokens_per_second is not None for g in baselines):
        failed = next((g for g in baselines if g.error), None)
        return f"no baseline run finished ({failed.error})" if failed else "no baseline run finished"
    mtp = [g for g in groups if g.n_max is not None and g.synthetic is None]
    if not any(g.tokens_per_second is not None for g in mtp):
        failed = next((g for g in mtp if g.error), None)
        return f"no MTP configuration ran ({failed.label}: {failed.error})" if failed else "no MTP configuration ran"
    return None


def _real_mtp(groups: Sequence[GroupStats], prompt_class: str) -> list[GroupStats]:
    return [g for g in groups if g.prompt_class == prompt_class and g.n_max is not None and g.synthetic is None]


def _recommend_class(groups: Sequence[GroupStats], prompt_class: str) -> ClassRecommendation:
    baseline = next((g for g in groups if g.prompt_class == prompt_class and g.n_max is None), None)
    if baseline is None or baseline.tokens_per_second is None:
        why = baseline.error if baseline is not None and baseline.error else "no baseline run finished"
        return ClassRecommendation(prompt_class, None, None, f"no recommendation: {why}")
    measured = [g for g in _real_mtp(groups, prompt_class) if g.speedup is not None]
    if not measured:
        crash = _crash_of_mtp([g for g in groups if g.prompt_class == prompt_class])
        if crash is not None:
            return ClassRecommendation(prompt_class, None, None, f"leave MTP off: {crash}")
        failed = next((g for g in _real_mtp(groups, prompt_class) if g.error), None)
        why = f" ({failed.label}: {failed.error})" if failed else ""
        return ClassRecommendation(prompt_class, None, None, f"no measurement: no MTP configuration ran{why}")
    best = max(measured, key=lambda g: g.speedup or 0.0)
    assert best.speedup is not None and best.tokens_per_second is not None
    figures = (
        f"{best.speedup:.2f}x ({best.tokens_per_second.median:.1f} vs "
        f"{baseline.tokens_per_second.median:.1f} tok/s), acceptance {_fmt(best.acceptance)}"
    )
    if best.speedup > 1.0 and not best.within_noise:
        needs = f" (this build crashes without {best.workaround.value})" if best.workaround else ""
        return ClassRecommendation(prompt_class, best.n_max, best.speedup, f"{best.shown_label}: {figures}{needs}",
                                   best.workaround, best.method)
    verdict = "within noise" if best.within_noise else "slower"
    return ClassRecommendation(
        prompt_class,
        None,
        best.speedup,
        f"leave MTP off: no setting beats the baseline beyond noise (best {best.shown_label}: {figures}, {verdict})",
    )


def _crash_of_mtp(groups: Sequence[GroupStats]) -> str | None:
    """When MTP configurations crashed the engine and the baseline ran: that, in one phrase."""
    baseline_ran = any(g.n_max is None and g.runs for g in groups)
    crashed = [g for g in groups if g.n_max is not None and g.synthetic is None and g.crash is not None]
    if not baseline_ran or not crashed:
        return None
    first = crashed[0]
    assert first.crash is not None
    return f"MTP crashes this llama-server build on this machine ({first.label}: {first.crash.summary}) while the baseline runs"


def _geometric_mean_speedup(groups: Sequence[GroupStats], classes: Sequence[str],
                            key: tuple[str | None, int]) -> float | None:
    return geometric_mean([
        g.speedup
        for prompt_class in classes
        for g in _real_mtp(groups, prompt_class)
        if (g.method, g.n_max) == key and g.speedup is not None
    ])


def _best_overall(groups: Sequence[GroupStats], classes: Sequence[str]) -> tuple[tuple[str | None, int], float] | None:
    keys = sorted({(g.method, g.n_max) for g in groups if g.n_max is not None and g.synthetic is None},
                  key=lambda key: (key[0] or "", key[1]))
    means = [(key, m) for key in keys if (m := _geometric_mean_speedup(groups, classes, key)) is not None]
    return max(means, key=lambda item: item[1]) if means else None


def break_even(groups: Sequence[GroupStats]) -> list[BreakEven]:
    """Per n-max: speedup against measured forced acceptance, and where it crosses 1.0."""
    results: list[BreakEven] = []
    for n_max in sorted({g.n_max for g in groups if g.synthetic is not None and g.n_max is not None}):
        points = []
        for target in sorted({g.synthetic for g in groups if g.n_max == n_max and g.synthetic is not None}):
            mine = [g for g in groups if g.n_max == n_max and g.synthetic == target]
            drafted = sum(g.drafted for g in mine)
            points.append(
                CostPoint(
                    target=target,
                    acceptance=sum(g.accepted for g in mine) / drafted if drafted else None,
                    speedup=geometric_mean([g.speedup for g in mine if g.speedup is not None]),
                )
            )
        results.append(_crossing(n_max, points))
    return results


def _crossing(n_max: int, points: list[CostPoint]) -> BreakEven:
    curve = sorted(
        ((p.acceptance, p.speedup) for p in points if p.acceptance is not None and p.speedup is not None),
        key=lambda xy: xy[0],
    )
    if not curve:
        return BreakEven(n_max, None, "no synthetic run finished", points)
    acceptance = crossing(curve)
    if acceptance is not None:
        return BreakEven(n_max, acceptance, f"below acceptance {acceptance:.2f}, n-max {n_max} slows decoding here", points)
    if all(s >= 1.0 for _, s in curve):
        return BreakEven(n_max, None, f"faster than baseline at every forced acceptance measured (from {curve[0][0]:.2f})", points)
    if all(s < 1.0 for _, s in curve):
        return BreakEven(n_max, None, f"slower than baseline even at forced acceptance {curve[-1][0]:.2f}", points)
    return BreakEven(n_max, None, "speedup does not rise with acceptance here (noise?): no single break-even", points)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
