"""Running a sweep's visits on any engine (``--engine ... --serve`` or ``--endpoint``): one server per
visit, started from the user's own command or attached at a URL, one measured request per planned run.

The journal, plan, statistics and report are the llama-server sweep's own; only this module knows that
the server is an :class:`~mtpinspect.runtime.engines.base.EngineServer`. Acceptance comes from the
engine's counters scraped around each request (a counter that went down means the server restarted:
what it counted since is the request's), or, for SGLang, from the mean acceptance length it logs or
publishes, with the counts rebuilt from the request's token count.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtpinspect.errors import ServerError
from mtpinspect.runtime.engines.base import (
    AttachedServer,
    CommandServer,
    EngineServer,
    engine_version,
)
from mtpinspect.runtime.engines.spec import EngineSpec, MeanLength
from mtpinspect.runtime.load import LoadMeter
from mtpinspect.runtime.memory import RssSampler, gpu_memory_used
from mtpinspect.runtime.metrics import ImplausibleCounts, Metrics, request_delta
from mtpinspect.runtime.server import Completion, ServerDiedError, ServerStartError
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.options import SweepOptions
from mtpinspect.sweep.plan import Configuration, PlannedRun, Visit
from mtpinspect.sweep.progress import NOTE, RUN_START, SERVER_START, ProgressTracker
from mtpinspect.sweep.records import RunRecord, ServerRecord, cross_check, measured_figures
from mtpinspect.sweep.request import RequestWay
from mtpinspect.sweep.run import SETTLE_TIMEOUT_S, StartFailures, describe, draft_log_line, warmup_tokens
from mtpinspect.vocabulary import RequestKind, RunStatus, ServerStatus

_SETTLE_POLL_S = 0.02
_NO_COUNTS = Metrics(0.0, 0.0, 0.0, {}, 0.0, {})


@dataclass(frozen=True)
class EngineContext:
    """What every visit of an engine sweep shares."""

    options: SweepOptions
    spec: EngineSpec
    settings: dict[str, Any]
    journal: Journal
    log_dir: Path
    # --serve: the template's tokens for MTP configurations and for the baseline.
    tokens: list[str] | None = None
    baseline_tokens: list[str] | None = None
    model_arg: str | None = None  # what {model} stands for
    # --endpoint: where the MTP configuration (and the baseline, with --baseline-endpoint) runs.
    endpoint: str | None = None
    baseline_endpoint: str | None = None
    served_model: str = ""
    starts: StartFailures = field(default_factory=StartFailures)
    versions: list[str] = field(default_factory=list)  # as each started server reported it
    load: LoadMeter = field(default_factory=LoadMeter)  # what other processes use of the CPUs, per run
    request: RequestWay = RequestWay(RequestKind.completion, None, None, "raw completion")

    @property
    def chat(self) -> dict[str, Any] | None:
        """The chat request's extra fields (None: raw completion)."""
        return self.request.chat_extra() if self.request.kind is RequestKind.chat else None

    def server(self, config: Configuration, log_path: Path) -> EngineServer:
        if self.tokens is not None:
            tokens = self.tokens if config.n_max is not None else self.baseline_tokens
            assert tokens is not None
            return CommandServer(self.spec, tokens, n=config.n_max, model=self.model_arg, log_path=log_path,
                                 start_timeout=self.options.startup_timeout)
        url = self.endpoint if config.n_max is not None else self.baseline_endpoint
        assert url is not None
        return AttachedServer(self.spec, url, self.served_model)


@dataclass
class _Cursor:
    log_offset: int
    metrics: Metrics | None


def run_engine_visit(visit: Visit, ctx: EngineContext, tracker: ProgressTracker) -> None:
    """Start (or attach to) the visit's server, warm it up, measure its runs, stop it; journal everything."""
    config = visit.configuration
    server_id = f"{config.id}-{time.time_ns() // 1_000_000}"
    log_path = ctx.log_dir / f"{server_id}.log"
    server = ctx.server(config, log_path)
    record = ServerRecord(
        configuration=config.id, n_max=config.n_max, synthetic=None, server_id=server_id,
        status=ServerStatus.started, reason=None, path=server.url or (ctx.tokens or [""])[0],
        version="", command=[], log_path=str(server.log_path or ""), startup_seconds=None,
        rss_post_load_bytes=None, gpu_memory_post_load_bytes=None, settings=ctx.settings, started_at=time.time(),
    )
    verb = "starting" if ctx.tokens is not None else "measuring the running"
    tracker.emit(SERVER_START, f"{verb} {ctx.spec.engine.value} server", visit=visit)
    began = time.perf_counter()
    try:
        try:
            server.start()
        except ServerStartError as exc:
            ctx.starts.record(config.id, exc.reason)
            _failed_server(record, server, str(exc), visit, ctx, tracker)
            return
        ctx.starts.record(config.id, None)
        record.command, record.path = server.command, server.command[0] if server.command else server.url
        record.version = engine_version(server.url, ctx.spec.engine)
        ctx.versions.append(record.version)
        if config.n_max is None and server.command:
            tracker.emit(NOTE, "baseline ran: " + shlex.join(server.command), visit=visit)
        record.startup_seconds = time.perf_counter() - began
        with _sampler(server.pid) as sampler:
            record.rss_post_load_bytes = sampler.current_bytes() if sampler else None
            record.gpu_memory_post_load_bytes = _gpu(server)
            try:
                cursor = _warm_up(server, visit.runs[0], ctx)
            except ServerError as exc:
                _failed_server(record, server, f"warm-up request failed: {exc}", visit, ctx, tracker)
                return
            if config.n_max is not None and not _reads_acceptance(cursor.metrics, ctx.spec):
                _failed_server(record, server, no_counters_reason(server.url, ctx.spec, cursor.metrics), visit, ctx, tracker)
                return
            if server.pid is not None:
                ctx.load.mark(server.pid)
            ctx.journal.append(record)
            tracker.server_started(record.startup_seconds)
            _measure_runs(server, visit, ctx, tracker, sampler, server_id, cursor)
    finally:
        server.stop()


def no_counters_reason(url: str, spec: EngineSpec, metrics: Metrics | None) -> str:
    """One line: what the server's /metrics holds, when it holds no speculative-decoding figures."""
    if metrics is None:
        found = "no /metrics page"
    else:
        names = sorted({key.split("{", 1)[0] for key in metrics.raw})
        found = f"/metrics with {len(names)} series ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}) but none of speculative decoding"
    return f"{url}: {spec.engine.value} server with {found}; is speculative decoding on ({spec.setting(1).split(' ')[0]} ...)?"


def _reads_acceptance(metrics: Metrics | None, spec: EngineSpec) -> bool:
    if spec.log_reading is not None:
        return True  # SGLang: its log lines, or the gauges once an interval has passed
    return metrics is not None and metrics.has_spec_counters


@contextlib.contextmanager
def _sampler(pid: int | None) -> Iterator[RssSampler | None]:
    if pid is None:
        yield None  # a server we did not start: its memory is not ours to read
        return
    with RssSampler(pid, hz=20) as sampler:
        yield sampler


def _gpu(server: EngineServer) -> dict[str, int] | None:
    if server.pid is None:
        return None  # the endpoint may run on another machine
    used = gpu_memory_used()
    return None if used is None else {str(index): value for index, value in used.items()}


def _failed_server(record: ServerRecord, server: EngineServer, reason: str, visit: Visit, ctx: EngineContext,
                   tracker: ProgressTracker) -> None:
    server.stop()
    record.status, record.reason, record.command = ServerStatus.failed, reason, server.command
    ctx.journal.append(record)
    tracker.server_failed(visit, reason)


def _warm_up(server: EngineServer, first: PlannedRun, ctx: EngineContext) -> _Cursor:
    completion = server.complete(first.prompt.text, max_tokens=warmup_tokens(first.configuration.n_max, ctx.options.n_predict),
                                 seed=ctx.options.seed, timeout=ctx.options.request_timeout, chat=ctx.chat)
    metrics = _settled(server, None, completion.predicted_n)
    if ctx.spec.draft_lines and server.log_path is not None:
        # The warm-up's own line must not be read as the first run's.
        _, offset = draft_log_line(server, 0, expect=metrics is not None and metrics.draft_tokens > 0)
    else:
        _, offset = server.log_since(0)
    return _Cursor(offset, metrics)


def _measure_runs(server: EngineServer, visit: Visit, ctx: EngineContext, tracker: ProgressTracker,
                  sampler: RssSampler | None, server_id: str, cursor: _Cursor) -> None:
    for index, run in enumerate(visit.runs):
        tracker.emit(RUN_START, "measuring", run=run)
        result = measure(server, run, ctx, sampler, server_id, cursor)
        ctx.journal.append(result)
        tracker.run_finished(run, result.wall_seconds, describe(result))
        if result.status == RunStatus.crashed:
            tracker.runs_abandoned(len(visit.runs) - index - 1)
            return


def measure(server: EngineServer, run: PlannedRun, ctx: EngineContext, sampler: RssSampler | None, server_id: str,
            cursor: _Cursor) -> RunRecord:
    """One request with the counters read around it; advances the cursor."""
    config = run.configuration
    base = dict(configuration=config.id, n_max=config.n_max, synthetic=None, prompt_id=run.prompt.id,
                prompt_class=run.prompt.prompt_class, repeat=run.repeat, server_id=server_id, settings=ctx.settings)
    began = time.perf_counter()
    try:
        before = cursor.metrics
        completion = server.complete(run.prompt.text, max_tokens=ctx.options.n_predict, seed=ctx.options.seed,
                                     timeout=ctx.options.request_timeout, chat=ctx.chat)
        after = _settled(server, before, completion.predicted_n)
    except ServerError as exc:
        status = RunStatus.crashed if isinstance(exc, ServerDiedError) else RunStatus.error
        return RunRecord(**base, status=status, error=str(exc), wall_seconds=time.perf_counter() - began,
                         finished_at=time.time(), rss_peak_bytes=_peak(sampler))
    cursor.metrics = after
    # A server at an --endpoint may run on another machine: this machine's load says nothing about it.
    other_load = ctx.load.other_load(server.pid) if server.pid is not None else None
    n_predict = ctx.options.n_predict
    try:
        if ctx.spec.draft_lines and server.log_path is not None:
            offset = cursor.log_offset
            delta, note = request_counts(before, after, completion, config.n_max, ctx.spec, "", n_predict)
            figures = measured_figures(completion, delta)
            log, cursor.log_offset = draft_log_line(server, offset, expect=figures["drafted"] > 0)
            agrees, mismatch = cross_check(figures, log)
            extra = dict(log=log, log_agrees=agrees, log_mismatch="; ".join(m for m in (note, mismatch) if m) or None)
        else:
            text, cursor.log_offset = server.log_since(cursor.log_offset)
            delta, note = request_counts(before, after, completion, config.n_max, ctx.spec, text, n_predict)
            figures = measured_figures(completion, delta)
            extra = dict(log_mismatch=note)
    except ImplausibleCounts as exc:
        # Not a measurement: a failed run with its reason, in the journal, so --resume measures it again.
        return RunRecord(**base, status=RunStatus.error, error=str(exc), wall_seconds=completion.wall_seconds,
                         finished_at=time.time(), rss_peak_bytes=_peak(sampler))
    return RunRecord(**base, status=RunStatus.ok, error=None, wall_seconds=completion.wall_seconds,
                     finished_at=time.time(), rss_peak_bytes=_peak(sampler), gpu_memory_bytes=_gpu(server),
                     other_load=other_load, **extra, **figures)


def request_counts(before: Metrics | None, after: Metrics | None, completion: Completion, n_max: int | None,
                   spec: EngineSpec, log_text: str, max_tokens: int) -> tuple[Metrics, str | None]:
    """The request's draft counts from the counters around it (or the engine's mean length), and a note
    when they were read in a way worth saying (a restart between the scrapes, counts rebuilt).
    ImplausibleCounts when the counters cannot be this request's (metrics.request_delta)."""
    if n_max is None:
        return _NO_COUNTS, None
    if after is not None and after.has_spec_counters:
        # Bounded by what was asked, not by the count the server answered (which may be wrong too).
        delta, restarted = request_delta(before, after, tokens=max_tokens, n_max=n_max)
        note = "the counters went down (the server restarted): read from zero" if restarted else None
        if delta.drafts <= 0 < delta.draft_tokens:
            # vLLM's V0 engine counts no drafts: each verification step drafts the full length.
            delta = dataclasses.replace(delta, drafts=delta.draft_tokens / n_max)
        if after.skipped:
            note = "; ".join([*([note] if note else []), "skipped in /metrics: " + "; ".join(after.skipped[:3])])
        if not restarted and delta.tokens_predicted > completion.predicted_n > 0:
            # A running server may serve others meanwhile; its counters are the server's, not the request's.
            note = (f"the server generated {delta.tokens_predicted:.0f} tokens during this request's "
                    f"{completion.predicted_n}: other requests ran meanwhile and are counted in")
        return delta, note
    reading = spec.log_reading(log_text) if spec.log_reading is not None else None
    source = "its log's accept len"
    if reading is None and after is not None and after.reported_mean_length is not None:
        reading, source = MeanLength(after.reported_mean_length, after.reported_acceptance), "its spec_accept_length gauge"
    if reading is None or reading.mean_length <= 0:
        return _NO_COUNTS, f"{spec.engine.value} reported no acceptance for this request"
    # The first token comes from the prompt's prefill; each verification step after it emits mean-length tokens.
    decoded = max(completion.predicted_n - 1, 0)
    steps = round(decoded / reading.mean_length)
    accepted = max(decoded - steps, 0)
    counts = Metrics(float(steps * n_max), float(accepted), float(steps), {}, float(completion.predicted_n), {})
    return counts, f"counts rebuilt from {source} ({reading.mean_length:.2f}) and {completion.predicted_n} tokens"


def _settled(server: EngineServer, before: Metrics | None, predicted_n: int) -> Metrics | None:
    """A scrape that includes the request's tokens (engines publish their counters a moment later)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    base = before.tokens_predicted if before is not None else 0.0
    while True:
        after = server.counters()
        if after is None:
            return None
        if after.tokens_predicted - base >= predicted_n or after.restarted_since(before or after) \
                or time.monotonic() > deadline:
            return after
        time.sleep(_SETTLE_POLL_S)


def _peak(sampler: RssSampler | None) -> int | None:
    return (sampler.peak_bytes or None) if sampler is not None else None
