"""The public entry point of drift: options in, report out.

``run_drift`` resolves the model and the engine as ``sweep`` does (a GGUF, ``ollama:``/``lmstudio:``, the
built-in trained model; or ``--engine ... --serve`` / ``--endpoint``), plans the passes, runs them
(journalling every answer), compares each trigger's two passes, and writes report.json.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import time
from pathlib import Path

import psutil

from mtpinspect.drift.options import PROMPTS_BOUND, SLOTS_BOUND, DriftOptions, check_bounds, context_size
from mtpinspect.drift.plan import REFERENCE, DriftPlan, Server, build_plan
from mtpinspect.drift.report import DriftFiles, DriftReport, DriftServer, compare, failures_of, plain_answer
from mtpinspect.drift.run import EngineSession, LlamaSession, Request, Session, run_plan
from mtpinspect.errors import OutputError, UsageError
from mtpinspect.files import OWN_NAME_HINT, own_folder, writable, write_file
from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.find import VERSION_TIMEOUT_S, find_server
from mtpinspect.runtime.flags import CTX_SIZE, DRAFT_MODEL, PARALLEL, THREADS, ServerArgs
from mtpinspect.sources.app_stores import is_app_source
from mtpinspect.sources.resolve import app_files
from mtpinspect.sweep.api import split_server_args
from mtpinspect.sweep.engine_setup import prepare_engine
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.lock import folder_lock
from mtpinspect.sweep.model import model_file
from mtpinspect.sweep.options import SweepOptions
from mtpinspect.sweep.plan import Configuration
from mtpinspect.sweep.progress import BUILD, ProgressCallback, ProgressTracker
from mtpinspect.sweep.prompts import prompt_set
from mtpinspect.sweep.statistics import determinism_note
from mtpinspect.vocabulary import ServerStatus

JOURNAL_NAME = "drift.jsonl"
REPORT_NAME = "drift.json"
LOGS_NAME = "logs"
_RESERVED_WHY = "drift sets this on every server it starts (use --threads, --slots, --n-max, MODEL)"


def run_drift(model: Path | str | None, options: DriftOptions | None = None, *,
              progress: ProgressCallback | None = None) -> DriftReport:
    """Measure what changes temperature-0 output of ``model`` (a GGUF, ``ollama:NAME``, ``lmstudio:...``, or
    None for the built-in trained model; or the engine ``options`` name) and judge every difference."""
    options = options if options is not None else DriftOptions()
    check_bounds(options)
    out_dir = Path(options.out_dir)
    with folder_lock(out_dir):
        for name in (JOURNAL_NAME, REPORT_NAME):
            writable(out_dir / name, link_hint=OWN_NAME_HINT)
        own_folder(out_dir / LOGS_NAME)  # its server logs are never written through a planted link
        return _run(model, options, progress, out_dir)


def _run(model: Path | str | None, options: DriftOptions, progress: ProgressCallback | None, out_dir: Path) -> DriftReport:
    began = time.perf_counter()
    prompts = prompt_set(options.prompts)
    PROMPTS_BOUND.check(len(prompts))
    slots = options.slots if options.slots is not None else min(len(prompts), SLOTS_BOUND.high)
    journal = Journal(out_dir / JOURNAL_NAME)
    log_dir = out_dir / LOGS_NAME
    request = Request(options.n_predict, options.seed, options.request_timeout)
    engine_given = any(v is not None for v in (options.engine, options.serve, options.serve_baseline,
                                               options.endpoint, options.baseline_endpoint))
    if engine_given:
        setup = _engine(None if model is None else str(model), options, slots, log_dir, request)
    else:
        setup = _llama(model, options, slots, log_dir, request, progress)
    journal.set_aside()
    tracker = ProgressTracker((len(setup.plan.passes) * len(prompts), len(setup.plan.servers)), progress)
    results, stopped = run_plan(setup.plan, prompts, setup.session_of, journal, tracker)
    ids = [p.id for p in prompts]
    comparisons = [compare(check, results, ids) for check in setup.plan.checks]
    starts = [r for r in _read_starts(journal) if r.get("status") == ServerStatus.failed]
    failures = failures_of(results, ids, [f"{r.get('server')}: {r.get('reason')}" for r in starts])
    reference = next((r for r in _read_starts(journal) if r.get("server") in (REFERENCE, "mtp-endpoint")), {})
    report = DriftReport(
        model=setup.model,
        tiny_model=setup.tiny,
        server=dataclasses.replace(setup.server, command=list(reference.get("command") or [])),
        settings=setup.settings,
        prompts=ids,
        comparisons=comparisons,
        not_measured=list(setup.plan.not_measured),
        answer=plain_answer(comparisons, setup.engine_words, setup.held),
        determinism_note=determinism_note(setup.server.engine, setup.server.backend),
        failures=failures,
        files=DriftFiles(str(out_dir), str(journal.path), str(out_dir / REPORT_NAME), str(log_dir)),
        wall_seconds=time.perf_counter() - began,
        held=setup.held,
        stopped=f"{stopped}; the servers after them were not started" if stopped else None,
    )
    text = json.dumps(to_jsonable(report), indent=2, ensure_ascii=False) + "\n"
    try:
        write_file(out_dir / REPORT_NAME, lambda path: path.write_text(text, encoding="utf-8"), link_hint=OWN_NAME_HINT)
    except OutputError as exc:
        raise OutputError(f"{exc}; the report is not written, the answers are in {journal.path}") from None
    return report


def _read_starts(journal: Journal) -> list[dict]:
    return [r for r in journal.read().records if r.get("kind") == "drift-server"]


@dataclasses.dataclass
class _Setup:
    plan: DriftPlan
    session_of: object  # Callable[[Server], Session]
    model: str
    tiny: bool
    server: DriftServer
    settings: dict
    held: list[str]
    engine_words: str


def _llama(model: Path | str | None, options: DriftOptions, slots: int, log_dir: Path, request: Request,
           progress: ProgressCallback | None) -> _Setup:
    """The experiment on llama-server started here (the pinned build unless --server names another)."""
    mtp = options.mtp_file
    if isinstance(model, str) and is_app_source(model):
        files = app_files(model)
        model = files.model
        if mtp is None and files.sidecar is not None and not ServerArgs.of(options.server_args).has(DRAFT_MODEL):
            mtp = files.sidecar
    user_args, mtp_file = split_server_args(options.server_args, mtp, (THREADS, PARALLEL, CTX_SIZE), _RESERVED_WHY)
    path, tiny = model_file(None if model is None else Path(model))
    binary = find_server(options.server, build=options.build_server, backend=options.backend,
                         progress=(lambda message: progress(_build_event(message))) if progress else None,
                         version_timeout=min(VERSION_TIMEOUT_S, options.startup_timeout))
    binary.require_mtp()
    cpu = binary.backend == "cpu"
    threads = None
    not_threads = None
    if cpu:
        other = options.threads if options.threads is not None else (psutil.cpu_count(logical=False) or os.cpu_count() or 1)
        if other > 1:
            threads = (1, other)
        else:
            not_threads = "the thread count: " + ("--threads 0" if options.threads == 0 else "this machine has one core")
    plan = build_plan(options.n_max, slots=slots, threads=threads, probabilities=True, restart=None, baseline=None)
    if not_threads:
        plan = dataclasses.replace(plan, not_measured=(*plan.not_measured, not_threads))
    ctx = context_size(slots, options.n_predict)

    def session_of(server: Server) -> Session:
        return LlamaSession(binary, path, server, user_args=user_args, mtp_file=mtp_file, ctx=ctx,
                            log_path=log_dir / f"{server.id}-{time.time_ns() // 1_000_000}.log",
                            startup_timeout=options.startup_timeout, request=request)

    held = [f"-c {ctx}"] + (["-t 1"] if cpu else []) + ["one request at a time on one slot", "the same build"]
    if user_args:
        held.append("your arguments " + shlex.join(user_args))
    settings = {"engine": "llama.cpp", "n_predict": options.n_predict, "seed": options.seed, "n_max": sorted(set(options.n_max)),
                "slots": slots, "threads": list(threads) if threads else None, "ctx_size": ctx,
                "server_args": list(user_args), "mtp_file": mtp_file, "temperature": 0.0,
                "prompts": _prompt_source(options.prompts)}
    return _Setup(plan, session_of, str(path), tiny,
                  DriftServer("llama.cpp", str(binary.path), binary.version, binary.backend, []), settings, held,
                  f"llama-server ({binary.backend})")


def _engine(model: str | None, options: DriftOptions, slots: int, log_dir: Path, request: Request) -> _Setup:
    """The experiment on any engine: the user's server command, or servers already running."""
    if options.threads:
        raise UsageError("--threads: the thread check is for llama-server started here; with --serve or --endpoint "
                         "the server's options are its own")
    setup = prepare_engine(model, SweepOptions(
        n_max=options.n_max, n_predict=options.n_predict, seed=options.seed, server_args=options.server_args,
        mtp_file=options.mtp_file, startup_timeout=options.startup_timeout, engine=options.engine,
        serve=options.serve, serve_baseline=options.serve_baseline, endpoint=options.endpoint,
        baseline_endpoint=options.baseline_endpoint))
    context = setup.context(SweepOptions(startup_timeout=options.startup_timeout), Journal(log_dir / "unused"), log_dir)
    endpoint = options.endpoint is not None
    baseline = ("the server at --endpoint runs MTP; give the same model without it as --baseline-endpoint"
                if endpoint and options.baseline_endpoint is None else None)
    restart = "a running server (--endpoint) is not this tool's to restart" if endpoint else None
    mtp_n = [c.n_max for c in setup.configs if c.n_max is not None]
    plan = build_plan(tuple(mtp_n), slots=slots, threads=None, probabilities=True, restart=restart, baseline=baseline,
                      own_slots=False)

    def session_of(server: Server) -> Session:
        # Without a baseline endpoint every pass asks the one running server, MTP on.
        n = mtp_n[0] if baseline is not None else server.n_max
        return EngineSession(context.server(Configuration(n), log_dir / f"{server.id}-{time.time_ns() // 1_000_000}.log"),
                             request)

    engine = setup.spec.engine.value
    held = ["one request at a time", "the same command" if not endpoint else "the same running server"]
    settings = {"engine": engine, "n_predict": options.n_predict, "seed": options.seed, "n_max": mtp_n,
                "slots": slots, "threads": None, "ctx_size": None, "server_args": [], "mtp_file": None,
                "temperature": 0.0, "prompts": _prompt_source(options.prompts),
                "serve": options.serve, "serve_baseline": options.serve_baseline,
                "endpoint": setup.settings.get("endpoint"), "baseline_endpoint": setup.settings.get("baseline_endpoint")}
    return _Setup(plan, session_of, str(setup.settings["model"]), False,
                  DriftServer(engine, setup.info.path, setup.info.version, setup.info.backend, []), settings, held,
                  f"{engine} server")


def _prompt_source(source: object) -> str:
    if source is None:
        return "built-in"
    if isinstance(source, (str, Path)):
        return str(source)
    return "given"


def _build_event(message: str):  # noqa: ANN202 - a ProgressEvent
    from mtpinspect.sweep.progress import ProgressEvent

    return ProgressEvent(BUILD, 0, 0, 0.0, None, None, None, None, message)
