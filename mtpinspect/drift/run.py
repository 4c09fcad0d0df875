"""Running the drift plan: one server per start, its passes over the prompts, every answer journalled.

A pass sends the prompts one by one, or all at once from one thread each, released together so that the
server batches them. Each answer (text, prompt tokens, draft counts and, on reference passes, the top
candidates of every token) is a journal line as soon as its pass has it; a server that fails to start,
or a request that fails, is recorded with its reason and the run goes on, so nothing measured is lost.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from mtpinspect.drift.plan import DriftPlan, Pass, Server
from mtpinspect.errors import ServerError
from mtpinspect.runtime.engines.base import EngineServer
from mtpinspect.runtime.find import ServerBinary
from mtpinspect.runtime.flags import CTX_SIZE, DRAFT_MODEL, MTP_SPEC_TYPE, N_MAX, PARALLEL, SPEC_TYPE, THREADS, ServerArgs
from mtpinspect.runtime.server import Completion, LlamaServer, ServerDiedError, ServerStartError
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.progress import RUN_START, SERVER_START, ProgressTracker
from mtpinspect.sweep.prompts import Prompt
from mtpinspect.sweep.run import StartFailures
from mtpinspect.vocabulary import RunStatus, ServerStatus
from mtpinspect.workers import run_all

SERVER_KIND = "drift-server"
ANSWER_KIND = "drift-answer"
# Top candidates asked per token on reference passes: the first and the second choice.
N_PROBS = 2
# On a shared machine, OpenMP threads that spin while they wait crawl against other work (2 threads ran
# at about 5 tok/s until this was set); it changes how idle threads wait, not how work is split.
QUIET_THREADS = {"OMP_WAIT_POLICY": "passive"}
# Engines publish their counters a moment after the answer (as the sweep waits for them, sweep/run.py).
SETTLE_TIMEOUT_S = 5.0


@dataclass
class ServerStart:
    """A journal line: one server start and how it went."""

    server: str
    status: ServerStatus
    reason: str | None
    command: list[str]
    log_path: str | None
    startup_seconds: float | None
    started_at: float
    kind: Literal["drift-server"] = SERVER_KIND


@dataclass
class Answer:
    """A journal line: one prompt's answer on one pass."""

    pass_id: str
    prompt_id: str
    status: RunStatus
    error: str | None
    text: str
    prompt_tokens: int | None
    generated: int  # tokens the server says it generated
    drafted: int
    accepted: int
    wall_seconds: float
    # Each token and its top candidates (passes that ask for them): llama-server's completion_probabilities,
    # or the OpenAI API's logprobs object (vLLM, SGLang).
    probabilities: list[dict[str, Any]] | dict[str, Any] | None = None
    finished_at: float = field(default_factory=time.time)
    kind: Literal["drift-answer"] = ANSWER_KIND


@dataclass
class PassResult:
    pass_: Pass
    answers: dict[str, Answer]  # by prompt id
    acceptance: float | None = None  # MTP passes: accepted / drafted over the pass


class Session(Protocol):
    """A started server a pass talks to: llama-server launched here, or any engine's."""

    command: list[str]
    log_path: Path | None

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def ask(self, prompt: Prompt, probabilities: bool) -> Completion: ...

    def counted(self) -> tuple[float, float, float] | None: ...


@dataclass(frozen=True)
class Request:
    """What every request of the run holds fixed."""

    n_predict: int
    seed: int
    timeout: float


class LlamaSession:
    """A llama-server this run starts: the server's settings as flags, the user's arguments after them."""

    def __init__(self, binary: ServerBinary, model: Path, server: Server, *, user_args: ServerArgs,
                 mtp_file: str | None, ctx: int, log_path: Path, startup_timeout: float, request: Request) -> None:
        args = [*CTX_SIZE.spelled(ctx), *PARALLEL.spelled(server.slots)]
        if server.threads is not None:
            args += THREADS.spelled(server.threads)
        if server.n_max is not None:
            args += [*SPEC_TYPE.spelled(MTP_SPEC_TYPE), *N_MAX.spelled(server.n_max)]
            if mtp_file:
                args += DRAFT_MODEL.spelled(mtp_file)
        env = QUIET_THREADS if "OMP_WAIT_POLICY" not in os.environ else None
        self._server = LlamaServer(binary, model, ServerArgs.of(args).added(*user_args), log_path=log_path,
                                   startup_timeout=startup_timeout, env=env)
        self._request = request
        self.log_path: Path | None = log_path
        self.command: list[str] = []

    def start(self) -> None:
        self._server.start()
        self.command = self._server.command

    def stop(self) -> None:
        self._server.stop()

    def ask(self, prompt: Prompt, probabilities: bool) -> Completion:
        extra = {"n_probs": N_PROBS} if probabilities else {}
        return self._server.complete(prompt.text, n_predict=self._request.n_predict, seed=self._request.seed,
                                     temperature=0.0, timeout=self._request.timeout, **extra)

    def counted(self) -> tuple[float, float, float] | None:
        return None  # each answer's timings carry its draft counts


class EngineSession:
    """A vLLM, SGLang or llama-server started from the user's command, or running at a URL."""

    def __init__(self, server: EngineServer, request: Request) -> None:
        self._server = server
        self._request = request
        self.log_path = server.log_path
        self.command: list[str] = []

    def start(self) -> None:
        self._server.start()
        self.command = self._server.command or [self._server.url]

    def stop(self) -> None:
        self._server.stop()

    def ask(self, prompt: Prompt, probabilities: bool) -> Completion:
        return self._server.complete(prompt.text, max_tokens=self._request.n_predict, seed=self._request.seed,
                                     timeout=self._request.timeout, logprobs=N_PROBS if probabilities else 0)

    def counted(self) -> tuple[float, float, float] | None:
        """Draft tokens, accepted tokens and generated tokens so far, from the engine's counters."""
        metrics = self._server.counters()
        if metrics is None or not metrics.has_spec_counters:
            return None
        return metrics.draft_tokens, metrics.accepted_tokens, metrics.tokens_predicted


@dataclass(frozen=True)
class _Request:
    """One prompt on one pass, as progress names it (configuration.label, prompt.id, repeat)."""

    configuration: Pass
    prompt: Prompt
    repeat: int = 0


def run_plan(plan: DriftPlan, prompts: Sequence[Prompt], session_of: Callable[[Server], Session],
             journal: Journal, tracker: ProgressTracker) -> tuple[dict[str, PassResult], str | None]:
    """Every pass of the plan, server by server: the results by pass id (a pass whose server did not start
    has no answers), and why the run stopped early (two servers that failed to start alike), or None."""
    results: dict[str, PassResult] = {pass_.id: PassResult(pass_, {}) for pass_ in plan.passes}
    starts = StartFailures()
    for server in plan.servers:
        stopped = starts.stop_reason()
        if stopped:
            return results, stopped
        passes = [p for p in plan.passes if p.server == server]
        session = session_of(server)
        tracker.emit(SERVER_START, f"starting the server ({server.id})", visit=passes[0])
        began = time.perf_counter()
        record = ServerStart(server.id, ServerStatus.started, None, [], str(session.log_path or ""), None, time.time())
        try:
            try:
                session.start()
            except ServerStartError as exc:
                record.status, record.reason, record.command = ServerStatus.failed, str(exc), session.command
                journal.append(record)
                starts.record(server.id, exc.reason)
                tracker.start_failed(passes[0], len(passes) * len(prompts), str(exc))
                continue
            starts.record(server.id, None)
            record.command, record.startup_seconds = session.command, time.perf_counter() - began
            journal.append(record)
            tracker.server_started(record.startup_seconds)
            for pass_ in passes:
                results[pass_.id] = _run_pass(pass_, prompts, session, journal, tracker)
        finally:
            session.stop()
    return results, None


def _run_pass(pass_: Pass, prompts: Sequence[Prompt], session: Session, journal: Journal,
              tracker: ProgressTracker) -> PassResult:
    before = session.counted() if pass_.server.n_max is not None else None
    if pass_.at_once:
        answers = _at_once(pass_, prompts, session, tracker)
    else:
        answers = []
        for prompt in prompts:
            tracker.emit(RUN_START, "asking", run=_Request(pass_, prompt))
            answers.append(_ask(pass_, prompt, session))
            tracker.run_finished(_Request(pass_, prompt), answers[-1].wall_seconds, _describe(answers[-1]))
    for answer in answers:
        journal.append(answer)
    result = PassResult(pass_, {a.prompt_id: a for a in answers})
    if pass_.server.n_max is not None:
        result.acceptance = _acceptance(answers, before, session)
    return result


def _at_once(pass_: Pass, prompts: Sequence[Prompt], session: Session, tracker: ProgressTracker) -> list[Answer]:
    """Every prompt from its own thread, released together: the server puts them in shared batches."""
    gate = threading.Barrier(len(prompts))

    def ask(prompt: Prompt) -> Answer:
        try:
            gate.wait(timeout=30.0)
        except threading.BrokenBarrierError:
            pass  # a thread that was slow to start: send anyway
        return _ask(pass_, prompt, session)

    tracker.emit(RUN_START, f"{len(prompts)} prompts at once", run=_Request(pass_, prompts[0]))
    # Ctrl-C leaves the requests in flight after workers.STOP_WAIT seconds; stopping the server ends them.
    answers = run_all([lambda prompt=prompt: ask(prompt) for prompt in prompts], len(prompts), name="drift")
    for prompt, answer in zip(prompts, answers):
        tracker.run_finished(_Request(pass_, prompt), answer.wall_seconds, _describe(answer))
    return answers


def _ask(pass_: Pass, prompt: Prompt, session: Session) -> Answer:
    began = time.perf_counter()
    try:
        done = session.ask(prompt, pass_.probabilities)
    except ServerError as exc:
        status = RunStatus.crashed if isinstance(exc, ServerDiedError) else RunStatus.error
        return Answer(pass_.id, prompt.id, status, str(exc), "", None, 0, 0, 0, time.perf_counter() - began)
    return Answer(pass_.id, prompt.id, RunStatus.ok, None, done.text, _prompt_tokens(done), done.predicted_n,
                  done.draft_n, done.draft_n_accepted, done.wall_seconds or time.perf_counter() - began,
                  _candidates(done.raw) if pass_.probabilities else None)


def _prompt_tokens(done: Completion) -> int | None:
    """The prompt's token count: llama-server's timings, else the OpenAI API's usage."""
    usage = done.raw.get("usage") if isinstance(done.raw.get("usage"), dict) else {}
    count = done.timings.get("prompt_n") if isinstance(done.timings, dict) else None
    count = count if count is not None else usage.get("prompt_tokens")
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None


def _candidates(raw: dict[str, Any]) -> list[dict[str, Any]] | dict[str, Any] | None:
    """llama-server's completion_probabilities, else choices[0].logprobs of the OpenAI API."""
    found = raw.get("completion_probabilities")
    if isinstance(found, list):
        return found
    choices = raw.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    logprobs = first.get("logprobs")
    return logprobs if isinstance(logprobs, dict) else None


def _acceptance(answers: Sequence[Answer], before: tuple[float, float, float] | None, session: Session) -> float | None:
    """Accepted over drafted tokens of the pass: from the answers' timings (llama-server), else from the
    engine's counters around the pass."""
    drafted = sum(a.drafted for a in answers)
    if drafted:
        return sum(a.accepted for a in answers) / drafted
    if before is None:
        return None
    generated = sum(a.generated for a in answers)
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        after = session.counted()
        if after is None:
            return None
        if after[2] - before[2] >= generated or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    draft_tokens = after[0] - before[0]
    return (after[1] - before[1]) / draft_tokens if draft_tokens > 0 else None


def _describe(answer: Answer) -> str:
    if answer.status != RunStatus.ok:
        return f"{answer.status}: {answer.error}"
    return f"{len(answer.text)} characters"
