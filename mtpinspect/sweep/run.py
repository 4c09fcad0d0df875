"""Running a sweep's visits: one llama-server per visit, one measured request per planned run.

Every server start and every run is written to the journal as soon as it is over (a run's line while
the next request runs: the server does not wait on the disk). A server that fails to start, or dies
during a run, is recorded with the reason from its log (and, for a crash, how it crashed) and the
sweep goes on with the next visit; the ``with`` blocks stop the server (and the RSS sampler) whatever
happens, Ctrl-C included. An MTP configuration that
crashes the engine while the baseline does not is retried once with a change found by experiment
(runtime/workaround_search.py), and every record of the retry names that change.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mtpinspect.errors import MtpinspectError, ServerError
from mtpinspect.formats.gguf import read_gguf_header
from mtpinspect.runtime.crash import Crash, crash_of
from mtpinspect.runtime.find import ServerBinary
from mtpinspect.runtime.flags import ServerArgs
from mtpinspect.runtime.http import Cancel
from mtpinspect.runtime.load import LoadMeter
from mtpinspect.runtime.logs import parse_draft_lines, verify_steps
from mtpinspect.runtime.memory import RssSampler, gpu_memory_used
from mtpinspect.runtime.metrics import ImplausibleCounts, Metrics, request_delta
from mtpinspect.runtime.server import Completion, LlamaServer, ServerDiedError, ServerStartError
from mtpinspect.runtime.workaround_search import find_workaround
from mtpinspect.runtime.workarounds import Workaround
from mtpinspect.sources.reader import LocalFileReader
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.options import SweepOptions
from mtpinspect.sweep.plan import PlannedRun, Visit
from mtpinspect.sweep.progress import RUN_START, SERVER_START, ProgressTracker
from mtpinspect.sweep.records import (
    LogFigures,
    RunRecord,
    ServerRecord,
    TrialRecord,
    WorkaroundRecord,
    cross_check,
    measured_figures,
)
from mtpinspect.sweep.request import RequestWay
from mtpinspect.vocabulary import RequestKind, RunStatus, ServerStatus, WorkaroundMode
from mtpinspect.workers import run_all

# The server adds a request's counters and prints its log line when the slot is released, which can
# be a moment after the response was sent.
SETTLE_TIMEOUT_S = 5.0
# Waits for those start short (the line is usually a millisecond behind) and back off to this.
_SETTLE_POLL_S = 0.01
_FIRST_POLL_S = 0.001


@dataclass
class CrashLedger:
    """What one sweep learned about engine crashes. The change that got a crashing MTP configuration
    running is found once by experiment and reused for every configuration that crashes the same way;
    a search that found nothing is not repeated."""

    fix: Workaround | None = None
    searched: bool = False
    baseline_crashed: bool = False
    applied: dict[str, Workaround] = field(default_factory=dict)  # configuration id -> its change


class StartFailures:
    """How each configuration's latest server start went: two that fail alike stop the sweep.

    A server that cannot come up at all (a broken build, a model that does not load, a hung GPU) fails
    every configuration the same way, and each start may cost the whole start timeout. A configuration
    that a retry got running (a crash workaround) no longer counts.
    """

    def __init__(self) -> None:
        self._latest: dict[str, str | None] = {}  # configuration id -> why its last start failed (None: it started)

    def record(self, configuration: str, reason: str | None) -> None:
        self._latest[configuration] = reason

    def stop_reason(self) -> str | None:
        """Why the sweep should stop now, if two configurations failed to start for the same reason."""
        alike: dict[str, list[tuple[str, str]]] = {}
        for configuration, reason in self._latest.items():
            if reason is not None:
                # Ports, PIDs and timings differ between starts that fail alike.
                alike.setdefault(re.sub(r"\d+", "N", reason), []).append((configuration, reason))
        for failed in alike.values():
            if len(failed) >= 2:
                (first, _), (second, reason) = failed[:2]
                return f"{first} and {second} failed to start for the same reason ({reason})"
        return None


@dataclass(frozen=True)
class RunContext:
    """What every visit of one sweep shares: the options, and what was resolved from them."""

    options: SweepOptions
    binary: ServerBinary
    model: Path
    mtp_file: str | None
    server_args: ServerArgs  # the user's, passed to every server after the configuration's own
    settings: dict[str, Any]
    journal: Journal
    log_dir: Path
    crashes: CrashLedger = field(default_factory=CrashLedger)
    starts: StartFailures = field(default_factory=StartFailures)
    load: LoadMeter = field(default_factory=LoadMeter)  # what other processes use of the CPUs, per run
    request: RequestWay = RequestWay(RequestKind.completion, None, None, "raw completion")

    def send(self, server: LlamaServer, text: str, n_predict: int, *, seed: int | None = None,
             temperature: float = 0.0, stream: bool = False, cancel: Cancel | None = None) -> Completion:
        """One request (greedy unless a temperature is given), sent the sweep's way (raw completion or the chat
        endpoint); ``stream`` times its first token as the client sees it."""
        common = dict(n_predict=n_predict, seed=self.options.seed if seed is None else seed, temperature=temperature,
                      timeout=self.options.request_timeout, stream=stream, cancel=cancel)
        if self.request.kind is RequestKind.chat:
            return server.chat(text, **common, **self.request.chat_extra())
        return server.complete(text, **common)


@dataclass(frozen=True)
class _Crashed:
    """A visit cut short by an engine crash: how it crashed, and the runs it did not finish."""

    crash: Crash
    remaining: tuple[PlannedRun, ...]


def run_visit(visit: Visit, ctx: RunContext, tracker: ProgressTracker) -> None:
    """Start the visit's server, warm it up, measure its runs; record everything in the journal. An MTP
    configuration that crashes the engine while the baseline does not is retried once with the change
    that gets it running (``--workaround auto``)."""
    config = visit.configuration
    args = config.server_args(ctx.mtp_file).added(*ctx.server_args)
    applied = ctx.crashes.applied.get(config.id)
    if applied is not None:
        args = applied.apply(args, _mtp_block(ctx.model)) or args
    crashed = _attempt(visit, visit.runs, args, applied, ctx, tracker)
    if crashed is None or applied is not None:
        return
    if config.n_max is None:
        ctx.crashes.baseline_crashed = True
        return
    fix = _workaround(crashed.crash, args, visit, ctx, tracker)
    if fix is not None:
        ctx.crashes.applied[config.id] = fix[0]
        _attempt(visit, crashed.remaining, fix[1], fix[0], ctx, tracker)


def _workaround(
    crash: Crash, args: ServerArgs, visit: Visit, ctx: RunContext, tracker: ProgressTracker
) -> tuple[Workaround, ServerArgs] | None:
    """The change to retry a crashed MTP configuration with: the sweep's known fix, else one found by
    experiment (journalled); None when auto workarounds are off, the baseline crashed too, or none works."""
    ledger = ctx.crashes
    if ctx.options.workaround is not WorkaroundMode.auto or ledger.baseline_crashed:
        return None
    block = _mtp_block(ctx.model)
    if ledger.fix is not None:
        changed = ledger.fix.apply(args, block)
        return (ledger.fix, changed) if changed is not None else None
    if ledger.searched:
        return None
    ledger.searched = True
    tracker.emit(SERVER_START, f"{crash.summary}; looking for a change that avoids it", visit=visit)
    search = find_workaround(ctx.binary, ctx.model, args, ctx.log_dir / f"{visit.configuration.id}-workarounds",
                             crash=crash, mtp_block=block, startup_timeout=ctx.options.startup_timeout)
    ctx.journal.append(WorkaroundRecord(
        configuration=visit.configuration.id,
        crash=crash,
        trials=[TrialRecord(t.workaround, t.ok, t.outcome, list(t.args)) for t in search.trials],
        fix=search.fix.workaround if search.fix else None,
        settings=ctx.settings,
        finished_at=time.time(),
    ))
    if search.fix is None:
        return None
    ledger.fix = search.fix.workaround
    return search.fix.workaround, search.fix.args


def _mtp_block(model: Path) -> int | None:
    """The GGUF block index of the (first) MTP layer: what a head-on-CPU override names."""
    try:
        header = read_gguf_header(LocalFileReader(model))
    except MtpinspectError:
        return None
    arch = header.architecture
    blocks = header.get(f"{arch}.block_count") if arch else None
    nextn = header.get(f"{arch}.nextn_predict_layers") if arch else None
    if isinstance(blocks, int) and isinstance(nextn, int) and 0 < nextn <= blocks:
        return blocks - nextn
    return None


def _attempt(
    visit: Visit,
    runs: Sequence[PlannedRun],
    args: ServerArgs,
    workaround: Workaround | None,
    ctx: RunContext,
    tracker: ProgressTracker,
) -> _Crashed | None:
    """One server for ``runs``: start, warm up, measure. Returns how the engine crashed, if it did."""
    config = visit.configuration
    server_id = f"{config.id}-{time.time_ns() // 1_000_000}"
    # LLAMA_TRACE=1 makes llama-server log each verification step, and on a hybrid or recurrent model each
    # recurrent-state checkpoint it restores (logs.VERIFY_LINE): a line per step, nothing else changes.
    server = LlamaServer(ctx.binary, ctx.model, args, log_path=ctx.log_dir / f"{server_id}.log",
                         startup_timeout=ctx.options.startup_timeout, env={"LLAMA_TRACE": "1"})
    record = ServerRecord(
        configuration=config.id,
        n_max=config.n_max,
        synthetic=config.synthetic,
        server_id=server_id,
        status=ServerStatus.started,
        reason=None,
        path=str(ctx.binary.path),
        version=ctx.binary.version,
        command=[],
        log_path=str(server.log_path),
        startup_seconds=None,
        rss_post_load_bytes=None,
        gpu_memory_post_load_bytes=None,
        settings=ctx.settings,
        started_at=time.time(),
        workaround=workaround,
    )
    tracker.emit(SERVER_START, "starting llama-server" + (f" with {workaround.value}" if workaround else ""), visit=visit)
    began = time.perf_counter()
    try:
        server.start()
    except ServerStartError as exc:
        ctx.starts.record(config.id, exc.reason)
        return _server_failed(record, server, str(exc), runs, visit, ctx, tracker)
    ctx.starts.record(config.id, None)
    record.command = server.command
    record.startup_seconds = time.perf_counter() - began
    try:
        with RssSampler(server.pid, hz=20) as sampler:
            record.rss_post_load_bytes = sampler.current_bytes()
            record.gpu_memory_post_load_bytes = _gpu_keys(gpu_memory_used())
            try:
                cursor = _warm_up(server, runs[0], ctx)
            except ServerError as exc:
                return _server_failed(record, server, f"warm-up request failed: {exc}", runs, visit, ctx, tracker)
            ctx.load.mark(server.pid)  # the first run's window need not reach back into the model's loading
            ctx.journal.append(record)
            tracker.server_started(record.startup_seconds)
            return _measure_runs(server, runs, workaround, visit, ctx, tracker, sampler, server_id, cursor)
    finally:
        server.stop()


def _server_failed(
    record: ServerRecord,
    server: LlamaServer,
    reason: str,
    runs: Sequence[PlannedRun],
    visit: Visit,
    ctx: RunContext,
    tracker: ProgressTracker,
) -> _Crashed | None:
    server.stop()  # a warm-up that failed may leave it running; its return code tells a crash
    record.status, record.reason, record.command = ServerStatus.failed, reason, server.command
    record.crash = crash_of(server.returncode, server.read_log())
    ctx.journal.append(record)
    tracker.server_failed(visit, reason)
    return _Crashed(record.crash, tuple(runs)) if record.crash is not None else None


class _LogSource(Protocol):
    def log_since(self, offset: int) -> tuple[str, int]: ...


@dataclass
class _Cursor:
    """Where the previous request's output ends: in the log, and in the /metrics counters."""

    log_offset: int
    # The settled scrape after the previous request: the next one's "before" (saves a scrape per run).
    metrics: Metrics | None


def warmup_tokens(n_max: int | None, n_predict: int) -> int:
    """How many tokens the discarded first request generates: what a measured run does first.

    By the time /health says ok, llama.cpp's loader has read the weights in (it prefetches the mapped
    file) and llama-server has run a two-token decode of its own. What is still cold is the first prompt
    batch, the first decode step and, with MTP, the drafting: the first token comes from the prompt, the
    next step drafts up to n-max tokens (a draft is capped at the tokens left minus one) and verifies
    them in one batch of n-max + 1. Nothing after that is new to the server.
    """
    return min(n_predict, (n_max or 0) + 2)


# What a method that keeps state across requests is warmed up on: no measured prompt, so its first run does
# not draft from the warm-up's copy of its own answer.
STATE_WARM_UP_TEXT = "Warm-up request: the numbers from one to twelve, in words, are"


def _warm_up(server: LlamaServer, first: PlannedRun, ctx: RunContext) -> _Cursor:
    """The discarded first request."""
    text = STATE_WARM_UP_TEXT if first.configuration.keeps_state else first.prompt.text
    warmup = ctx.send(server, text, warmup_tokens(first.configuration.n_max, ctx.options.n_predict))
    # Let the warm-up's counters and log line land, so the first run does not read them as its own. A
    # fresh server's counters start at zero, so no scrape is needed before it.
    after = _settled(server, 0.0, warmup.predicted_n)
    _, log_offset = draft_log_line(server, 0, expect=after.draft_tokens > 0)
    return _Cursor(log_offset, after)


def _measure_runs(
    server: LlamaServer,
    runs: Sequence[PlannedRun],
    workaround: Workaround | None,
    visit: Visit,
    ctx: RunContext,
    tracker: ProgressTracker,
    sampler: RssSampler,
    server_id: str,
    cursor: _Cursor,
) -> _Crashed | None:
    with _Appender(ctx.journal) as journal:
        for index, run in enumerate(runs):
            tracker.emit(RUN_START, "measuring", run=run)
            result = measure(server, run, ctx, sampler, server_id, cursor)
            result.workaround = workaround
            if result.status == RunStatus.crashed:
                server.stop()
                result.crash = crash_of(server.returncode, server.read_log())
            journal.append(result)
            tracker.run_finished(run, result.wall_seconds, describe(result))
            if result.status == RunStatus.crashed:
                tracker.runs_abandoned(len(runs) - index - 1)
                return _Crashed(result.crash, tuple(runs[index:])) if result.crash is not None else None
    return None


class _Appender:
    """Journal lines written while the next request runs, instead of before it is sent.

    An fsync costs milliseconds, as long as a whole request on a small model, and the server would sit
    idle through it. Lines still land one at a time and in order: ``append`` first waits for the line
    before it, and leaving the block waits for the last one and raises what writing any of them raised.
    A finished run's line is being written from the moment the run ends, so a crash, a kill or Ctrl-C
    still loses only the run in flight (Ctrl-C waits for the line; a kill can only catch its first
    millisecond).
    """

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        # One worker, started once: starting a thread per line costs a context switch on a busy machine.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")
        self._writing: Future[None] | None = None

    def append(self, record: RunRecord) -> None:
        self.wait()
        self._writing = self._writer.submit(self._journal.append, record)

    def wait(self) -> None:
        """Until the last line is on disk; raises what writing it raised."""
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.result()

    def __enter__(self) -> _Appender:
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.wait()
        finally:
            self._writer.shutdown(wait=True)


def measure(
    server: LlamaServer, run: PlannedRun, ctx: RunContext, sampler: RssSampler, server_id: str, cursor: _Cursor
) -> RunRecord:
    """One run (a request, or N at once at concurrency N) with /metrics scraped around it and the server's
    log lines for it; advances the cursor."""
    config = run.configuration
    condition = config.condition
    base = dict(
        configuration=config.id,
        n_max=config.n_max,
        synthetic=config.synthetic,
        prompt_id=run.prompt.id,
        prompt_class=run.prompt.prompt_class,
        repeat=run.repeat,
        server_id=server_id,
        settings=ctx.settings,
        method=config.method.value if config.n_max is not None else None,
        concurrency=condition.concurrency,
        temperature=condition.temperature,
        seeds=run.seeds(ctx.options.seed),
    )
    began = time.perf_counter()
    try:
        before = cursor.metrics or server.metrics()
        cursor.metrics = None  # until this request has settled
        completions, wall = _requests(server, run, ctx)
        predicted = sum(c.predicted_n for c in completions)
        after = _settled(server, before.tokens_predicted, predicted)
    except ServerDiedError as exc:
        return _failed(base, RunStatus.crashed, str(exc), began, sampler)
    except ServerError as exc:
        # Whatever the failed request logged must not be read as the next request's line.
        _, cursor.log_offset = server.log_since(cursor.log_offset)
        return _failed(base, RunStatus.error, str(exc), began, sampler)
    cursor.metrics = after
    other_load = ctx.load.other_load(server.pid)
    try:
        delta, _ = request_delta(before, after, tokens=ctx.options.n_predict * len(completions), n_max=config.n_max)
    except ImplausibleCounts as exc:
        # Not a measurement: a failed run with its reason, in the journal, so --resume measures it again.
        return _failed(base, RunStatus.error, str(exc), began, sampler)
    completion = completions[0] if len(completions) == 1 else _together(completions)
    # llama-server leaves draft_n and draft_n_accepted out of a request's timings when it drafted nothing
    # (tools/server/server-common.cpp, server_slot_stats::to_json): every response counts, zero or not.
    figures = measured_figures(completion, delta, per_request=True)
    log, cursor.log_offset = draft_log_line(server, cursor.log_offset, expect=figures["drafted"] > 0,
                                            count=len(completions))
    cached = sum(int(c.timings.get("cache_n", 0) or 0) for c in completions)
    if cached:
        # The prompt cache was to be off: a request that reused earlier tokens is not measured on its own.
        return _failed(base, RunStatus.error, f"the server reused {cached} cached prompt tokens (timings.cache_n) "
                       "with cache_prompt off: not an independent measurement", began, sampler)
    agrees, mismatch = cross_check(figures, log)
    record = RunRecord(
        **base,
        status=RunStatus.ok,
        error=None,
        wall_seconds=wall,
        finished_at=time.time(),
        log=log,
        log_agrees=agrees,
        log_mismatch=mismatch,
        rss_peak_bytes=sampler.peak_bytes or None,
        gpu_memory_bytes=_gpu_keys(gpu_memory_used()),
        other_load=other_load,
        total_tokens_per_second=predicted / wall if wall > 0 else None,
        per_request_tokens_per_second=[c.predicted_per_second for c in completions],
        per_request_prompt_ms=[float(c.timings.get("prompt_ms", 0.0)) for c in completions],
        per_request_prompt_ids=[p.id for p in run.prompts],
        per_request_prompt_n=[int(c.timings.get("prompt_n", 0)) for c in completions],
        per_request_drafted=[c.draft_n for c in completions],
        per_request_accepted=[c.draft_n_accepted for c in completions],
        per_request_first_token_ms=[c.first_token_seconds * 1000.0 for c in completions
                                    if c.first_token_seconds is not None],
        **figures,
    )
    return record


def _requests(server: LlamaServer, run: PlannedRun, ctx: RunContext) -> tuple[list[Completion], float]:
    """The run's requests, all sent at once (one per slot, each its own prompt), streamed so each one's first
    token is timed, and the wall time until the last answered.

    Whatever stops the run (Ctrl-C, SIGTERM, a failed request) cancels the requests still in flight: their
    sockets are shut, so the threads return at once instead of when the server finishes them."""
    options = ctx.options
    temperature = run.configuration.condition.temperature
    cancel = Cancel()

    def one(text: str, seed: int) -> Completion:
        try:
            return ctx.send(server, text, options.n_predict, seed=seed, temperature=temperature, stream=True,
                            cancel=cancel)
        except BaseException:
            cancel.cancel()
            raise

    seeds = run.seeds(options.seed)
    texts = [p.text for p in run.prompts]
    began = time.perf_counter()
    if len(seeds) == 1:
        return [one(texts[0], seeds[0])], time.perf_counter() - began
    # Ctrl-C or SIGTERM (run_all's on_stop) and a failed request alike shut the sockets of the requests still in
    # flight, so no thread waits for the server to finish an answer nobody will read.
    completions = run_all([lambda text=text, seed=seed: one(text, seed) for text, seed in zip(texts, seeds)],
                          len(seeds), name="request", on_stop=cancel.cancel)
    return completions, time.perf_counter() - began


def _together(completions: Sequence[Completion]) -> Completion:
    """N concurrent answers as one run's figures: per-request speeds averaged (what each user sees), counts
    summed, the first text kept (the determinism check compares it), and the longest prompt time (the
    last request's time to its first token)."""
    timings = {
        "prompt_n": sum(int(c.timings.get("prompt_n", 0)) for c in completions),
        "prompt_ms": max(float(c.timings.get("prompt_ms", 0.0)) for c in completions),
        "predicted_ms": max(float(c.timings.get("predicted_ms", 0.0)) for c in completions),
    }
    return Completion(
        text=completions[0].text,
        timings=timings,
        raw={},
        predicted_per_second=sum(c.predicted_per_second for c in completions) / len(completions),
        prompt_per_second=sum(c.prompt_per_second for c in completions) / len(completions),
        predicted_n=sum(c.predicted_n for c in completions),
        draft_n=sum(c.draft_n for c in completions),
        draft_n_accepted=sum(c.draft_n_accepted for c in completions),
        wall_seconds=max(c.wall_seconds for c in completions),
    )


def describe(record: RunRecord) -> str:
    """One line about a finished run, for progress output."""
    if record.status != RunStatus.ok:
        return f"{record.status}: {record.error}"
    speed = f"{record.decode_tokens_per_second:.1f} tok/s" if record.decode_tokens_per_second else "no timing"
    if record.acceptance is None:
        return speed
    return f"{speed}, acceptance {record.acceptance:.2f}, mean length {record.mean_length or 0:.2f}"


def _settled(server: LlamaServer, predicted_before: float, predicted_n: int) -> Metrics:
    """A scrape that includes the request's counters (they land when the slot is released)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    pause = _FIRST_POLL_S
    while True:
        after = server.metrics()
        if after.tokens_predicted - predicted_before >= predicted_n or time.monotonic() > deadline:
            return after
        time.sleep(pause)
        pause = min(2 * pause, _SETTLE_POLL_S)


def draft_log_line(server: _LogSource, offset: int, *, expect: bool, count: int = 1) -> tuple[LogFigures | None, int]:
    """The request's ``draft acceptance`` line (llama-server's), waiting briefly for it when the request drafted;
    for ``count`` concurrent requests, their lines added up (a slot that drafted nothing logs none)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    pause = _FIRST_POLL_S
    text = ""
    while True:
        new_text, offset = server.log_since(offset)
        text += new_text
        lines = parse_draft_lines(text)
        if len(lines) >= count or not expect or time.monotonic() > deadline:
            if not lines:
                return None, offset
            steps = verify_steps(text)  # the request's step lines come before its acceptance line
            if count == 1:
                return LogFigures.from_stats(lines[-1], steps), offset
            return LogFigures.summed([LogFigures.from_stats(line) for line in lines[-count:]], steps), offset
        time.sleep(pause)
        pause = min(2 * pause, _SETTLE_POLL_S)


def _failed(base: dict[str, Any], status: str, error: str, began: float, sampler: RssSampler) -> RunRecord:
    return RunRecord(
        **base,
        status=status,
        error=error,
        wall_seconds=time.perf_counter() - began,
        finished_at=time.time(),
        rss_peak_bytes=sampler.peak_bytes or None,
    )


def _gpu_keys(used: dict[int, int] | None) -> dict[str, int] | None:
    # JSON object keys are strings; converting here keeps a record equal to its journal line.
    return None if used is None else {str(index): value for index, value in used.items()}
