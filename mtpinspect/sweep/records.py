"""What one sweep run and one server start measured, as records for the JSONL journal.

A run's draft figures come from three sources in the server, and all are kept: each response's own
``timings.draft_n`` / ``draft_n_accepted`` (per request, also at concurrency N: the source of the drafted
and accepted counts, pooled over a run's requests), the ``/metrics`` counters scraped before and after
the run (server-wide deltas: the cross-check of the pooled counts, and the source of
mean length = 1 + Δaccepted / Δdrafts and the per-position rates), and the ``draft acceptance ... mean len``
line the server logs when a request ends. :func:`cross_check` compares them at the precision the log prints.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Protocol

from mtpinspect.runtime.crash import Crash
from mtpinspect.runtime.load import OtherLoad
from mtpinspect.runtime.logs import DraftStats, VerifySteps
from mtpinspect.runtime.workarounds import Workaround
from mtpinspect.vocabulary import RunStatus, ServerStatus

RUN_KIND = "run"
SERVER_KIND = "server"
WORKAROUND_KIND = "workaround"


# The log prints acceptance with %0.5f and mean length with %5.2f: half a unit in the last place.
_ACCEPTANCE_TOLERANCE = 0.5e-5 + 1e-9
_MEAN_LENGTH_TOLERANCE = 0.5e-2 + 1e-9


class _Timings(Protocol):
    predicted_per_second: float | None
    prompt_per_second: float | None
    predicted_n: int | None
    draft_n: int | None
    draft_n_accepted: int | None
    text: str
    timings: dict[str, Any]


class _MetricsDelta(Protocol):
    draft_tokens: float
    accepted_tokens: float
    drafts: float

    def per_position_rates(self) -> tuple[float, ...]: ...


@dataclass
class LogFigures:
    """The figures of one ``draft acceptance`` log line."""

    acceptance: float
    accepted: int
    generated: int
    mean_length: float | None
    line: str
    # The request's recurrent-state checkpoint restores ("(restore checkpoint)" step lines, logged with
    # LLAMA_TRACE=1): one per partly rejected draft on a hybrid or recurrent model, 0 on a KV-cache model;
    # None where the log has no step lines (another server, or nothing drafted).
    checkpoint_restores: int | None = None

    @classmethod
    def from_stats(cls, stats: DraftStats, steps: VerifySteps | None = None) -> LogFigures:
        return cls(stats.acceptance, stats.accepted, stats.generated, stats.mean_length, stats.raw_line,
                   None if steps is None else steps.restores)

    @classmethod
    def summed(cls, lines: list[LogFigures], steps: VerifySteps | None = None) -> LogFigures:
        """Concurrent requests' lines as one: counts added; the mean length is per request, so none."""
        accepted, generated = sum(f.accepted for f in lines), sum(f.generated for f in lines)
        return cls(accepted / generated if generated else 0.0, accepted, generated, None,
                   "\n".join(f.line for f in lines), None if steps is None else steps.restores)


@dataclass
class ServerRecord:
    """One server start: its command, how long it took to come up, its memory after loading."""

    configuration: str
    n_max: int | None
    synthetic: float | None
    server_id: str
    status: ServerStatus
    reason: str | None
    path: str
    version: str
    command: list[str]
    log_path: str
    startup_seconds: float | None
    rss_post_load_bytes: int | None
    gpu_memory_post_load_bytes: dict[str, int] | None
    settings: dict[str, Any]
    started_at: float
    # The change made to the configuration's command because it crashed without it (None: as planned).
    workaround: Workaround | None = None
    crash: Crash | None = None  # how the server crashed, when it did (at start, warm-up or a run)
    kind: str = SERVER_KIND

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerRecord:
        """The record of a journal line; MalformedRecord if a field is missing or of the wrong type."""
        return cls(**_typed_fields(cls, data))


@dataclass
class RunRecord:
    """One measured request on one configuration."""

    configuration: str
    n_max: int | None
    synthetic: float | None
    prompt_id: str
    prompt_class: str
    repeat: int
    server_id: str
    status: RunStatus
    error: str | None
    wall_seconds: float
    settings: dict[str, Any]
    finished_at: float
    decode_tokens_per_second: float | None = None
    prompt_tokens_per_second: float | None = None
    prompt_n: int | None = None
    predicted_n: int | None = None
    prompt_ms: float | None = None
    predicted_ms: float | None = None
    drafted: int = 0
    accepted: int = 0
    # The server-wide /metrics deltas over the run: the cross-check of the pooled per-request counts.
    metrics_drafted: int | None = None
    metrics_accepted: int | None = None
    drafts: int = 0
    acceptance: float | None = None
    mean_length: float | None = None
    per_position: list[float] = field(default_factory=list)
    timings_draft_n: int | None = None
    timings_draft_n_accepted: int | None = None
    log: LogFigures | None = None
    log_agrees: bool | None = None
    log_mismatch: str | None = None
    text: str = ""
    rss_peak_bytes: int | None = None
    gpu_memory_bytes: dict[str, int] | None = None
    # The cores other processes kept busy while it ran (runtime/load.py); None for a server at an endpoint.
    other_load: OtherLoad | None = None
    workaround: Workaround | None = None  # as on the ServerRecord of the server that ran it
    crash: Crash | None = None  # status crashed: how the engine died, when its log tells
    # The serving conditions (sweep --method/--concurrency/--temperature); the defaults are a plain sweep's.
    method: str | None = None  # the speculative method (None: the baseline)
    concurrency: int = 1  # requests sent at once, one per slot; the counts above are their sum
    temperature: float = 0.0
    seeds: list[int] = field(default_factory=list)  # one per request
    # Generated tokens of all the run's requests per second of wall time (prompt included): the server's
    # throughput, where decode_tokens_per_second is the mean speed each request saw.
    total_tokens_per_second: float | None = None
    per_request_tokens_per_second: list[float] = field(default_factory=list)
    # timings.prompt_ms per request: the server's prompt time (processing the prompt), as the server reports it.
    per_request_prompt_ms: list[float] = field(default_factory=list)
    # Per request, in the order sent: its prompt (at concurrency N, N different prompts of the class), its
    # own drafted and accepted counts (timings.draft_n / draft_n_accepted), and its time to the first token
    # as the client measured it (sent -> first streamed token: queueing, the prompt, the first decode step).
    per_request_prompt_ids: list[str] = field(default_factory=list)
    per_request_prompt_n: list[int] = field(default_factory=list)  # timings.prompt_n: its prompt's tokens
    per_request_drafted: list[int] = field(default_factory=list)
    per_request_accepted: list[int] = field(default_factory=list)
    per_request_first_token_ms: list[float] = field(default_factory=list)
    kind: str = RUN_KIND

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.configuration, self.prompt_id, self.repeat)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """The record of a journal line; MalformedRecord if a field is missing or of the wrong type."""
        return cls(**_typed_fields(cls, data))


class MalformedRecord(ValueError):
    """A journal line that is JSON but not a record: a field missing or of the wrong type."""


def _typed_fields(cls: type, data: Any) -> dict[str, Any]:
    """The dataclass fields of ``cls`` from a JSON object, each checked against its annotation.

    Keys the dataclass does not know are left out: a newer version may write more.
    """
    if not isinstance(data, dict):
        raise MalformedRecord(f"{cls.__name__}: not an object")
    hints = _hints(cls)
    values = {}
    for spec in dataclasses.fields(cls):
        if spec.name in data:
            values[spec.name] = _typed(data[spec.name], hints[spec.name], spec.name)
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise MalformedRecord(f"{spec.name}: missing")
    return values


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _typed(value: Any, hint: Any, name: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _typed(value, option, name)
            except MalformedRecord:
                continue
    elif hint is Any:
        return value
    elif dataclasses.is_dataclass(hint):
        return hint(**_typed_fields(hint, value))  # type: ignore[operator]
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            pass
    elif origin is list and isinstance(value, list):
        return [_typed(item, args[0], name) for item in value]
    elif origin is tuple and isinstance(value, list):  # tuple[X, ...]: a JSON array
        return tuple(_typed(item, args[0], name) for item in value)
    elif origin is dict and isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _typed(item, args[1], name) for key, item in value.items()}
    elif origin is None and _is_a(value, hint):
        return float(value) if hint is float else value
    raise MalformedRecord(f"{name}: {str(value)[:40]!r} is not {getattr(hint, '__name__', hint)}")


def _is_a(value: Any, hint: Any) -> bool:
    if hint is type(None):
        return value is None
    if hint in (int, float) and isinstance(value, bool):
        return False  # JSON true is not a count
    if hint is float:
        return isinstance(value, (int, float))
    return isinstance(hint, type) and isinstance(value, hint)


@dataclass(frozen=True)
class TrialRecord:
    """One change tried on a crashing configuration, and what happened."""

    workaround: Workaround
    ok: bool
    outcome: str
    args: list[str]  # the llama-server arguments it ran with (the model and port aside)


@dataclass
class WorkaroundRecord:
    """A search for a change that gets a crashing MTP configuration to run (runtime/workarounds.py)."""

    configuration: str
    crash: Crash | None
    trials: list[TrialRecord]
    fix: Workaround | None  # the first change that started and decoded; None when none did
    settings: dict[str, Any]
    finished_at: float
    kind: str = WORKAROUND_KIND

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkaroundRecord:
        """The record of a journal line; MalformedRecord if a field is missing or of the wrong type."""
        return cls(**_typed_fields(cls, data))


def measured_figures(completion: _Timings, delta: _MetricsDelta, per_request: bool | None = None) -> dict[str, Any]:
    """The fields of a finished run that come from the responses and the /metrics delta: drafted and accepted
    pooled from the responses' own counts when they carry them (``per_request``; None: when the timings have
    ``draft_n``), else from the /metrics delta, which is the cross-check either way; the number of drafts
    from /metrics (no response gives it)."""
    timings = completion.timings or {}
    if per_request is None:
        per_request = "draft_n" in timings
    drafted = completion.draft_n if per_request else int(round(delta.draft_tokens))
    accepted = completion.draft_n_accepted if per_request else int(round(delta.accepted_tokens))
    drafted, accepted = int(drafted or 0), int(accepted or 0)
    drafts = int(round(delta.drafts))
    return {
        "decode_tokens_per_second": completion.predicted_per_second,
        "prompt_tokens_per_second": completion.prompt_per_second,
        "prompt_n": timings.get("prompt_n"),
        "predicted_n": completion.predicted_n,
        "prompt_ms": timings.get("prompt_ms"),
        "predicted_ms": timings.get("predicted_ms"),
        "drafted": drafted,
        "accepted": accepted,
        "metrics_drafted": int(round(delta.draft_tokens)),
        "metrics_accepted": int(round(delta.accepted_tokens)),
        "drafts": drafts,
        "acceptance": accepted / drafted if drafted else None,
        "mean_length": 1.0 + accepted / drafts if drafts else None,
        "per_position": list(delta.per_position_rates()),
        "timings_draft_n": completion.draft_n,
        "timings_draft_n_accepted": completion.draft_n_accepted,
        "text": completion.text,
    }


def cross_check(figures: dict[str, Any], log: LogFigures | None) -> tuple[bool | None, str | None]:
    """Do /metrics, the responses' timings and the log line agree? (None: nothing was drafted, no line.)"""
    drafted, accepted = figures["metrics_drafted"], figures["metrics_accepted"]
    problems: list[str] = []
    draft_n = figures["timings_draft_n"] or 0
    draft_n_accepted = figures["timings_draft_n_accepted"] or 0
    if (draft_n, draft_n_accepted) != (drafted, accepted):
        problems.append(f"timings say {draft_n_accepted}/{draft_n} accepted, /metrics {accepted}/{drafted}")
    if log is None:
        if drafted == 0 and not problems:
            return None, None
        if drafted > 0:
            problems.append("no 'draft acceptance' line in the server log for this request")
        return False, "; ".join(problems)
    if (log.accepted, log.generated) != (accepted, drafted):
        problems.append(f"log says {log.accepted}/{log.generated} accepted, /metrics {accepted}/{drafted}")
    if figures["acceptance"] is not None and abs(log.acceptance - figures["acceptance"]) > _ACCEPTANCE_TOLERANCE:
        problems.append(f"log acceptance {log.acceptance:.5f}, /metrics {figures['acceptance']:.5f}")
    mean_length = figures["mean_length"]
    if log.mean_length is not None and (
        mean_length is None or abs(log.mean_length - mean_length) > _MEAN_LENGTH_TOLERANCE
    ):
        shown = "none" if mean_length is None else f"{mean_length:.2f}"
        problems.append(f"log mean len {log.mean_length:.2f}, /metrics {shown}")
    return (not problems), ("; ".join(problems) or None)
