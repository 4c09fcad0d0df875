"""Speculative-decoding counters from a server's Prometheus `/metrics` page.

llama-server (`llamacpp:` prefix, with --metrics; tools/server/server-context.cpp) and vLLM (`vllm:`) expose counters of drafts, draft
tokens and accepted tokens (with or without the `_total` suffix, depending on version); SGLang
(`sglang:`) exposes only gauges of the acceptance rate and length. Counters from two scrapes around
one request give that request's exact figures: mean length = 1 + Δaccepted / Δdrafts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mtpinspect.errors import FormatError

# name{labels} value [timestamp]
_SAMPLE_RE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\S+)?\s*$")
_POSITION_RE = re.compile(r'position="([^"]*)"')
# Draft positions an engine numbers (0 to n-1; n at most a few dozen). A label beyond this, or one of
# 5,000 digits (int() refuses those), is no engine's: the sample is skipped and named.
MAX_POSITION = 1023
# Skipped samples named per page, at most.
_SKIPPED_NAMED = 8
# One verification step more than the tokens a request generated: the step that ended it.
_STEP_MARGIN = 1

_PREFIXES = ("llamacpp", "vllm", "sglang")


def _number(text: str) -> float:
    lowered = text.lower()
    if lowered in ("nan", "+nan", "-nan"):
        return math.nan
    if lowered in ("+inf", "inf"):
        return math.inf
    if lowered == "-inf":
        return -math.inf
    return float(text)


def _parse_samples(text: str) -> dict[str, float]:
    samples: dict[str, float] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE_RE.match(line)
        if match is None:
            raise FormatError(f"metrics page: line {number} is not a Prometheus sample: {line[:80]!r}")
        name, labels, value = match.groups()
        try:
            samples[name + (labels or "")] = _number(value)
        except ValueError:
            raise FormatError(f"metrics page: line {number}: {value!r} is not a number") from None
    return samples


def _base(key: str) -> str:
    """Sample name without labels and without the `_total` suffix, so both naming styles compare equal."""
    name = key.split("{", 1)[0]
    return name[: -len("_total")] if name.endswith("_total") else name


def _sum(samples: dict[str, float], names: tuple[str, ...]) -> float | None:
    # vLLM labels its series by model and engine: the total over label sets is the figure.
    values = [v for k, v in samples.items() if _base(k) in names]
    return float(sum(values)) if values else None


def _mean(samples: dict[str, float], name: str) -> float | None:
    # SGLang reports one gauge per data-parallel rank: their mean is the server's figure.
    values = [v for k, v in samples.items() if _base(k) == name and not math.isnan(v)]
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Metrics:
    """Counters from one scrape (or the difference of two, see :meth:`delta`)."""

    draft_tokens: float
    accepted_tokens: float
    drafts: float
    accepted_per_pos: dict[int, float]
    tokens_predicted: float
    raw: dict[str, float]
    source: str = "llamacpp"
    # SGLang publishes only running averages, not counters.
    reported_acceptance: float | None = None
    reported_mean_length: float | None = None
    has_spec_counters: bool = True
    # Samples of the page that were skipped, each named with why (a position label no engine writes).
    skipped: tuple[str, ...] = ()

    @property
    def acceptance(self) -> float | None:
        if self.draft_tokens > 0:
            return self.accepted_tokens / self.draft_tokens
        return self.reported_acceptance

    @property
    def mean_length(self) -> float | None:
        """Tokens emitted per verification step, the target's own token included."""
        if self.drafts > 0:
            return 1.0 + self.accepted_tokens / self.drafts
        return self.reported_mean_length

    def has(self, counter: str) -> bool:
        """Whether the page holds this counter (e.g. "spec_decode_num_drafts"); missing counters read as 0."""
        name = f"{self.source}:{counter}"
        return any(_base(key) == name for key in self.raw)

    def per_position_rates(self) -> tuple[float, ...]:
        """Per draft position, the share of verification steps that accepted it."""
        if self.drafts <= 0:
            return ()
        return tuple(self.accepted_per_pos[i] / self.drafts for i in sorted(self.accepted_per_pos))

    def restarted_since(self, before: Metrics) -> bool:
        """A counter went down: the server restarted between the two scrapes (counters start at zero)."""
        pairs = [(self.draft_tokens, before.draft_tokens), (self.accepted_tokens, before.accepted_tokens),
                 (self.drafts, before.drafts), (self.tokens_predicted, before.tokens_predicted)]
        return any(now < then for now, then in pairs)

    def delta(self, before: Metrics) -> Metrics:
        """What happened between an earlier scrape and this one (counters subtract; gauges keep this value)."""
        positions = set(self.accepted_per_pos) | set(before.accepted_per_pos)
        return Metrics(
            draft_tokens=self.draft_tokens - before.draft_tokens,
            accepted_tokens=self.accepted_tokens - before.accepted_tokens,
            drafts=self.drafts - before.drafts,
            accepted_per_pos={
                p: self.accepted_per_pos.get(p, 0.0) - before.accepted_per_pos.get(p, 0.0) for p in sorted(positions)
            },
            tokens_predicted=self.tokens_predicted - before.tokens_predicted,
            raw={k: v - before.raw.get(k, 0.0) for k, v in self.raw.items()},
            source=self.source,
            reported_acceptance=self.reported_acceptance,
            reported_mean_length=self.reported_mean_length,
            has_spec_counters=self.has_spec_counters,
            skipped=self.skipped,
        )

    def implausible(self, tokens: int, n_max: int | None) -> str | None:
        """Why these counts (a delta) cannot be one request's of ``tokens`` tokens at draft length
        ``n_max``, or None: a count that is negative or not finite, more accepted than drafted, more
        verification steps than tokens, more draft tokens than n_max per step."""
        counts = {"draft tokens": self.draft_tokens, "accepted tokens": self.accepted_tokens, "drafts": self.drafts,
                  "tokens generated": self.tokens_predicted,
                  **{f"accepted at position {p}": v for p, v in self.accepted_per_pos.items()}}
        for name, value in counts.items():
            if not math.isfinite(value) or value < 0:
                return f"{name} changed by {value:g} during the request (a counter went down or is not a count)"
        if self.accepted_tokens > self.draft_tokens:
            return f"{self.accepted_tokens:g} tokens accepted of {self.draft_tokens:g} drafted"
        if n_max is not None:
            steps = tokens + _STEP_MARGIN
            if self.drafts > steps or self.draft_tokens > steps * n_max:
                return (f"{self.drafts:g} drafts of {self.draft_tokens:g} tokens for a request of {tokens} tokens at "
                        f"n-max {n_max} (at most {steps} of {steps * n_max}): more than one request can draft")
        return None


def _source(samples: dict[str, float]) -> str:
    for prefix in _PREFIXES:
        if any(k.startswith(prefix + ":") for k in samples):
            return prefix
    return "unknown"


class ImplausibleCounts(FormatError):
    """Counters around a request that cannot be that request's: the run is a failed measurement."""


def request_delta(before: Metrics | None, after: Metrics, *, tokens: int, n_max: int | None) -> tuple[Metrics, bool]:
    """The one rule for a request's counts from the scrapes around it: the difference, or ``after``
    itself when a counter went down (the server restarted: counted from zero; the flag says so);
    ImplausibleCounts with the reason when the result cannot belong to one request."""
    restarted = before is None or after.restarted_since(before)
    delta = after if restarted else after.delta(before)
    problem = delta.implausible(tokens, n_max)
    if problem is not None:
        read = " (read from zero: a counter went down between the scrapes)" if restarted and before is not None else ""
        raise ImplausibleCounts(f"counters that cannot be one request's: {problem}{read}")
    return delta, restarted


def parse_metrics(text: str) -> Metrics:
    """Parse a Prometheus text page from llama-server, vLLM or SGLang; missing counters read as 0."""
    samples = _parse_samples(text)
    source = _source(samples)
    p = source + ":"
    draft_tokens = _sum(samples, (p + "spec_decode_num_draft_tokens",))
    accepted = _sum(samples, (p + "spec_decode_num_accepted_tokens",))
    drafts = _sum(samples, (p + "spec_decode_num_drafts",))
    per_pos: dict[int, float] = {}
    skipped: list[str] = []
    for key, value in samples.items():
        if _base(key) == p + "spec_decode_num_accepted_tokens_per_pos":
            match = _POSITION_RE.search(key)
            if match is None:
                continue
            label = match.group(1)
            if not (label.isdigit() and label.isascii() and len(label) <= 4 and int(label) <= MAX_POSITION):
                if len(skipped) >= _SKIPPED_NAMED:
                    continue  # a page of a million such lines names a few, not all
                skipped.append(f"{key[:80]}{'...' if len(key) > 80 else ''} (position {label[:20]!r}"
                               f"{f' of {len(label):,} characters' if len(label) > 20 else ''} is no draft position)")
                continue
            position = int(label)
            per_pos[position] = per_pos.get(position, 0.0) + value
    predicted = _sum(samples, (p + "tokens_predicted", p + "generation_tokens"))
    return Metrics(
        draft_tokens=draft_tokens or 0.0,
        accepted_tokens=accepted or 0.0,
        drafts=drafts or 0.0,
        accepted_per_pos=dict(sorted(per_pos.items())),
        tokens_predicted=predicted or 0.0,
        raw=samples,
        source=source,
        reported_acceptance=_mean(samples, "sglang:spec_accept_rate"),
        reported_mean_length=_mean(samples, "sglang:spec_accept_length"),
        has_spec_counters=draft_tokens is not None,
        skipped=tuple(skipped),
    )
