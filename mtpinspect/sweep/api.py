"""The public entry point of the sweep: options in, report out.

``run_sweep`` resolves the model (or takes the built-in trained one), finds llama-server, plans the
runs, runs them (journalling each one), then reads the whole journal back and summarises it, so a
report after ``--resume`` covers the earlier invocations' runs too.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from mtpinspect.apps import app_setting, ollama_create_command, ollama_n_max
from mtpinspect.errors import MtpinspectError, OutputError, SourceError, UsageError
from mtpinspect.files import OWN_NAME_HINT, own_folder, writable, write_file
from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.crash import Crash
from mtpinspect.runtime.find import VERSION_TIMEOUT_S, ServerBinary, find_server
from mtpinspect.runtime.flags import CONFIGURATION_FLAGS, DRAFT_MODEL, MODEL, PARALLEL, Flag, ServerArgs
from mtpinspect.runtime.load import OtherLoad
from mtpinspect.sources.app_stores import AppModel, is_app_source
from mtpinspect.sources.filenames import sidecar_ggufs
from mtpinspect.sources.resolve import app_files
from mtpinspect.sweep.engine_run import EngineContext, run_engine_visit
from mtpinspect.sweep.engine_setup import EngineInfo, prepare_engine
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.lock import folder_lock
from mtpinspect.sweep.long_prompt import long_prompts
from mtpinspect.sweep.machine_load import is_busy, summarize_load
from mtpinspect.sweep.model import model_file
from mtpinspect.sweep.mtp_bench import check_bench_folder, write_bench_files
from mtpinspect.sweep.options import SweepOptions, check_bounds
from mtpinspect.sweep.plan import (
    Configuration,
    Method,
    Plan,
    Visit,
    build_plan,
    conditions,
    configurations,
    parse_method,
    plan_size,
)
from mtpinspect.sweep.plot import write_plot
from mtpinspect.sweep.progress import BUILD, NOTE, ProgressCallback, ProgressTracker
from mtpinspect.sweep.prompts import Prompt, check_unique, prompt_set
from mtpinspect.sweep.records import (
    RUN_KIND,
    SERVER_KIND,
    WORKAROUND_KIND,
    MalformedRecord,
    RunRecord,
    ServerRecord,
    WorkaroundRecord,
)
from mtpinspect.sweep.report import (
    AppRecommendation,
    EngineCrash,
    Failure,
    RunCounts,
    ServerInfo,
    SweepFiles,
    SweepReport,
    Synthetic,
)
from mtpinspect.sweep.request import RequestWay, model_template, resolve, resolve_engine
from mtpinspect.sweep.run import RunContext, run_visit
from mtpinspect.sweep.statistics import (
    Recommendation,
    break_even,
    compare_methods,
    determinism_note,
    independence,
    recommend_per_condition,
    summarize,
)
from mtpinspect.vocabulary import App, RequestKind, RunStatus, ServerStatus

JOURNAL_NAME = "runs.jsonl"
REPORT_NAME = "report.json"
PLOT_NAME = "sweep.png"
LOGS_NAME = "logs"

_Context = TypeVar("_Context", RunContext, EngineContext)



def run_sweep(
    model: Path | str | None, options: SweepOptions, *, progress: ProgressCallback | None = None
) -> SweepReport:
    """Measure the baseline and every n-max on ``model``: a GGUF, a model of an app (``ollama:NAME``,
    ``lmstudio:PUBLISHER/REPO``: its GGUF, with its drafter unless ``options.mtp_file`` names one), or None
    for the built-in trained model.

    The sweep holds its output folder: a second sweep into it fails with OutputError."""
    check_bounds(options)
    with folder_lock(Path(options.out_dir)):
        _own_names_writable(Path(options.out_dir))
        return _run_sweep(model, options, progress)


def _own_names_writable(out_dir: Path) -> None:
    """Every name the sweep gives its own files in OUT is new, or a regular file (the logs folder a folder):
    a symbolic link planted there (to the user's file or folder) is refused before any server starts, as
    at write time, never written through (one rule: files.writable with OWN_NAME_HINT)."""
    for name in (JOURNAL_NAME, REPORT_NAME, PLOT_NAME):
        writable(out_dir / name, link_hint=OWN_NAME_HINT)
    own_folder(out_dir / LOGS_NAME)


def _run_sweep(model: Path | str | None, options: SweepOptions, progress: ProgressCallback | None) -> SweepReport:
    if any(v is not None for v in (options.engine, options.serve, options.serve_baseline, options.endpoint,
                                   options.baseline_endpoint)):
        return _run_engine_sweep(None if model is None else str(model), options, progress)
    app: AppModel | None = None
    if isinstance(model, str) and is_app_source(model):
        if tuple(options.methods) != ("draft-mtp",):
            # The recommendation becomes the app's MTP setting, which another method's n-max is not.
            raise UsageError(f"--method {','.join(options.methods)}: {model} is swept for its app's MTP setting; "
                             "compare methods on its GGUF file")
        files = app_files(model)
        model, app = files.model, files.app
        if options.mtp_file is None and files.sidecar is not None and not ServerArgs.of(options.server_args).has(DRAFT_MODEL):
            options = dataclasses.replace(options, mtp_file=files.sidecar)
    server_args, mtp_file = split_server_args(options.server_args, options.mtp_file)
    if tuple(options.concurrency) != (1,) and server_args.has(PARALLEL):
        raise UsageError(f"{server_args.present([PARALLEL])[0]}: --concurrency sets the slots per configuration")
    configs = configurations(options.n_max, options.synthetic, _methods(options.methods),
                             conditions(options.concurrency, options.temperature))
    prompts = prompt_set(options.prompts) + (long_prompts(options.long_prompt) if options.long_prompt else [])
    check_unique(prompts)
    out_dir = Path(options.out_dir)
    model_path, tiny = model_file(model)
    request = resolve(model_template(model_path), options.request, options.reasoning)
    settings = {
        "model": str(model_path),
        "mtp_file": mtp_file,
        "n_predict": options.n_predict,
        "seed": options.seed,
        "server_args": list(server_args.args),
        **_request_settings(request),
    }
    # What the run ids do not name: a resumed sweep with another long prompt or draft model measures anew.
    # Only when used, so a plain sweep's journal still matches.
    if options.long_prompt is not None:
        settings["long_prompt"] = options.long_prompt
    draft_files = sorted({c.draft_file for c in configs if c.draft_file})
    if draft_files:
        settings["draft_files"] = draft_files
    if options.mtp_bench_json is not None:
        check_bench_folder(Path(options.mtp_bench_json), configs)
    journal = Journal(out_dir / JOURNAL_NAME)
    history = _history(journal, settings)  # read before a fresh sweep sets the journal aside
    if not options.resume:
        journal.set_aside()
    runs_before, _, _, _ = _matching(journal, settings, configs, prompts, options.repeat)
    done = {r.key for r in runs_before if r.status == RunStatus.ok}
    plan = build_plan(configs, prompts, options.repeat, done, order=options.order)
    tracker = ProgressTracker(plan, progress)
    tracker.emit(NOTE, plan_size(plan, options.n_predict).with_history(*history).line)
    binary = find_server(
        options.server,
        build=options.build_server,
        backend=options.backend,
        progress=lambda message: tracker.emit(BUILD, message),
        version_timeout=min(VERSION_TIMEOUT_S, options.startup_timeout),
    )
    binary.require_mtp()
    context = RunContext(
        options=options,
        binary=binary,
        model=model_path,
        mtp_file=mtp_file,
        server_args=server_args,
        settings=settings,
        journal=journal,
        log_dir=out_dir / LOGS_NAME,
        request=request,
    )
    stopped = _visit_all(plan, run_visit, context, tracker)
    report = build_report(journal, settings, configs, prompts, options, binary, tiny, resumed=len(done), app=app)
    report.request = request
    _export_mtp_bench(report, journal, settings, configs, prompts, options)
    return _finish(report, stopped, options, journal)


def _request_settings(request: RequestWay) -> dict[str, str]:
    """The journal's record of how requests were sent: runs sent another way are another sweep's. Raw
    completion adds nothing, so journals from before --request existed still resume."""
    if request.kind is RequestKind.completion:
        return {}
    return {"request": request.kind.value, "reasoning": request.reasoning.value if request.reasoning else "none"}


def _visit_all(plan: Plan, run: Callable[[Visit, _Context, ProgressTracker], None], context: _Context,
               tracker: ProgressTracker) -> str | None:
    """Run the plan's visits in order; why it stopped early (a configuration that keeps failing to start),
    or None when every visit ran."""
    for index, visit in enumerate(plan.visits):
        run(visit, context, tracker)
        reason = context.starts.stop_reason()
        if reason and index + 1 < len(plan.visits):
            return reason
    return None


def _run_engine_sweep(model: str | None, options: SweepOptions, progress: ProgressCallback | None) -> SweepReport:
    """The sweep on any engine: the user's server command per configuration, or a running server."""
    request = resolve_engine(options.request, options.reasoning)
    axes = [name for name, value, default in (("--concurrency", options.concurrency, (1,)),
                                              ("--temperature", options.temperature, (0.0,)),
                                              ("--method", options.methods, ("draft-mtp",))) if tuple(value) != default]
    if axes:
        raise UsageError(f"{axes[0]}: measured on llama-server started by the sweep only, not with "
                         "--engine/--serve/--endpoint")
    setup = prepare_engine(model, options)
    setup.settings.update(_request_settings(request))
    prompts = prompt_set(options.prompts)
    out_dir = Path(options.out_dir)
    if options.mtp_bench_json is not None:
        check_bench_folder(Path(options.mtp_bench_json), setup.configs)
    journal = Journal(out_dir / JOURNAL_NAME)
    if not options.resume:
        journal.set_aside()
    runs_before, _, _, _ = _matching(journal, setup.settings, setup.configs, prompts, options.repeat)
    done = {r.key for r in runs_before if r.status == RunStatus.ok}
    plan = build_plan(setup.configs, prompts, options.repeat, done, order=options.order)
    tracker = ProgressTracker(plan, progress)
    context = dataclasses.replace(setup.context(options, journal, out_dir / LOGS_NAME), request=request)
    stopped = _visit_all(plan, run_engine_visit, context, tracker)
    report = build_report(journal, setup.settings, setup.configs, prompts, options, setup.info, False,
                          resumed=len(done))
    report.request = request
    _export_mtp_bench(report, journal, setup.settings, setup.configs, prompts, options)
    report.engine = setup.recommendation(report.recommendation.n_max)
    version = next((v for v in reversed(context.versions) if v), setup.info.version)
    report.server = dataclasses.replace(report.server, version=version or "unknown")
    return _finish(report, stopped, options, journal)


def _export_mtp_bench(report: SweepReport, journal: Journal, settings: dict, configs: list[Configuration],
                      prompts: list[Prompt], options: SweepOptions) -> None:
    """--mtp-bench-json: the report's runs (the latest of each) as mtp-bench's JSON, one file per configuration."""
    if options.mtp_bench_json is None:
        return
    runs, _, _, _ = _matching(journal, settings, configs, prompts, options.repeat)
    written = write_bench_files(_latest(runs), configs, Path(options.mtp_bench_json))
    report.files = dataclasses.replace(report.files, mtp_bench=written)


def _finish(report: SweepReport, stopped: str | None, options: SweepOptions, journal: Journal) -> SweepReport:
    """The report and plot written next to the journal."""
    out_dir = journal.path.parent
    if stopped:
        report.stopped = f"{stopped}; stopped with {report.runs.not_run} planned runs not run"
    try:
        if options.plot:
            write_file(Path(report.files.plot or out_dir / PLOT_NAME), lambda path: write_plot(report, path),
                       link_hint=OWN_NAME_HINT)
        text = _json(report)
        write_file(Path(report.files.report), lambda path: path.write_text(text, encoding="utf-8"), link_hint=OWN_NAME_HINT)
    except OutputError as exc:
        raise OutputError(f"{exc}; the report is not written, the runs are in {journal.path}") from None
    return report


def build_report(
    journal: Journal,
    settings: dict,
    configs: list[Configuration],
    prompts: list[Prompt],
    options: SweepOptions,
    binary: ServerBinary | EngineInfo,
    tiny: bool,
    *,
    resumed: int,
    app: AppModel | None = None,
) -> SweepReport:
    """Summarise every journal record made with these settings."""
    runs, servers, searches, malformed = _matching(journal, settings, configs, prompts, options.repeat)
    contents = journal.read()
    ignored = len(contents.records) - len(runs) - len(servers) - len(searches) - malformed
    latest = _latest(runs)
    classes = list(dict.fromkeys(p.prompt_class for p in prompts))
    groups = summarize(latest, servers, configs, classes)
    recommendation = recommend_per_condition(groups, classes)
    if not recommendation.measured and settings["mtp_file"] is None and "engine" not in settings:
        recommendation = dataclasses.replace(recommendation, reason=recommendation.reason + _sidecar_hint(settings["model"]))
    planned = len(configs) * len(prompts) * options.repeat
    ok = sum(1 for r in latest if r.status == RunStatus.ok)
    failed = sum(1 for r in latest if r.status != RunStatus.ok)
    out_dir = journal.path.parent
    baseline_server = next((s for s in reversed(servers) if s.n_max is None and s.command), None)
    return SweepReport(
        model=settings["model"],
        tiny_model=tiny,
        settings={
            **settings,
            "repeat": options.repeat,
            "order": options.order,
            "n_max": sorted(set(options.n_max)),
            "synthetic": sorted(set(options.synthetic)),
            "prompts": _prompt_source(options.prompts, classes),
            "temperature": 0.0 if tuple(options.temperature) == (0.0,) else sorted(set(options.temperature)),
            "workaround": options.workaround,
            "concurrency": sorted(set(options.concurrency)),
            "methods": list(dict.fromkeys(options.methods)),
            "long_prompt": options.long_prompt,
        },
        server=ServerInfo(
            path=str(binary.path),
            version=binary.version,
            backend=binary.backend,
            command=baseline_server.command if baseline_server else [],
            origin=binary.origin if isinstance(binary, ServerBinary) else None,
        ),
        prompt_classes=classes,
        results=groups,
        recommendation=recommendation,
        synthetic=Synthetic(break_even(groups)) if options.synthetic else None,
        failures=_failures(latest, servers),
        crashes=_crashes(runs, servers, searches),
        runs=RunCounts(
            planned=planned,
            ok=ok,
            failed=failed,
            not_run=max(planned - ok - failed, 0),
            resumed=resumed,
            ignored=ignored,
            damaged_lines=contents.damaged_lines,
            malformed=malformed,
        ),
        files=SweepFiles(
            out_dir=str(out_dir),
            jsonl=str(journal.path),
            report=str(out_dir / REPORT_NAME),
            plot=str(out_dir / PLOT_NAME) if options.plot else None,
            logs=str(out_dir / LOGS_NAME),
            server_logs=_server_logs(servers),
        ),
        determinism_note=determinism_note(settings.get("engine"), binary.backend),
        machine_load=summarize_load(latest),
        app=_in_app(app, recommendation),
        rounds=independence(configs, latest, settings.get("engine")),
        methods=compare_methods(groups, classes),
    )


def _sidecar_hint(model: str) -> str:
    """An mtp- sidecar beside a model whose MTP runs failed: the likely reason, and how to pass it."""
    folder = Path(model).parent
    try:
        names = [p.name for p in folder.iterdir()]
    except OSError:
        return ""
    own = f"mtp-{Path(model).name}"
    sidecars = sorted(sidecar_ggufs(names), key=lambda name: (name != own, name))
    if not sidecars:
        return ""
    return f"; {folder / sidecars[0]} beside the model looks like its MTP head: pass it with --mtp-file"


def _in_app(app: AppModel | None, recommendation: Recommendation) -> AppRecommendation | None:
    """The recommendation as the app's own setting (and, for Ollama, the Modelfile that sets it)."""
    if app is None:
        return None
    n_max = recommendation.n_max
    setting = app_setting(app.app, n_max)
    if recommendation.workaround is not None:
        setting += (f" (measured {recommendation.workaround.phrase}: this llama-server crashed without it; the app's "
                    "own llama.cpp build may not)")
    command = None
    if app.app is App.ollama:
        if ollama_n_max(app) == (n_max or 0):
            setting += " (its Modelfile already does)"
        else:
            command = ollama_create_command(app.name, app.name, n_max or 0)
    return AppRecommendation(app.app, app.name, setting, command)


def _prompt_source(source: str | Path | Sequence[Prompt] | None, classes: list[str]) -> str:
    if source is None:
        return "built-in"
    if isinstance(source, (str, Path)):
        return str(source)
    return f"given: {', '.join(classes)}"


def _server_logs(servers: list[ServerRecord]) -> dict[str, list[str]]:
    logs: dict[str, list[str]] = {}
    for server in servers:
        logs.setdefault(server.configuration, []).append(server.log_path)
    return logs


def _history(journal: Journal, settings: dict) -> tuple[float | None, float | None, str]:
    """Seconds per generated token and per server start of the earlier runs in the journal with the same
    settings (model, n_predict, server arguments, request way) on a quiet machine: what an ETA before the
    first run can rest on. Runs of other settings, or taken while other work kept the cores busy (a first
    ETA of 26 minutes for a sweep that took 75 s), say nothing about this one: then no ETA until its first runs."""
    if not journal.path.is_file():
        return None, None, ""
    wanted = json.loads(json.dumps(settings))  # as the journal holds it (lists, not tuples)
    try:
        records = [r for r in journal.read().records if r.get("settings") == wanted]
    except MtpinspectError:
        return None, None, ""
    runs = [r for r in records if r.get("kind") == RUN_KIND and r.get("status") == RunStatus.ok and _quiet(r)
            and isinstance(r.get("wall_seconds"), (int, float)) and isinstance(r.get("predicted_n"), int)]
    tokens = sum(r["predicted_n"] for r in runs)
    starts = [r["startup_seconds"] for r in records if r.get("kind") == SERVER_KIND
              and isinstance(r.get("startup_seconds"), (int, float))]
    if not tokens:
        return None, None, ""
    per_start = sum(starts) / len(starts) if starts else None
    return (sum(r["wall_seconds"] for r in runs) / tokens, per_start,
            f"from {len(runs)} earlier runs of these settings on a quiet machine, in {journal.path.name}")


def _quiet(record: dict) -> bool:
    """A run record taken while other work left the cores alone (machine_load.py's rule); unknown is not quiet."""
    load = record.get("other_load")
    try:
        return isinstance(load, dict) and not is_busy(OtherLoad(float(load["cores_used"]), float(load["window_seconds"]),
                                                                 int(load["cores"])))
    except (KeyError, TypeError, ValueError):
        return False


def _methods(names: Sequence[str]) -> list[tuple[Method, str | None]]:
    """--method values parsed, a draft model's file resolved (SourceError when it is not there)."""
    methods = []
    for name in names:
        method, file = parse_method(name)
        if file is not None:
            if not Path(file).expanduser().is_file():
                raise SourceError(f"--method {name}: {file}: no such draft model file")
            file = str(Path(file).expanduser().resolve())
        methods.append((method, file))
    return methods


def split_server_args(server_args: Sequence[str], mtp: Path | None, reserved_flags: Sequence[Flag] = (),
                      why: str = "the sweep sets this per configuration; use --n-max / --synthetic / MODEL",
                      ) -> tuple[ServerArgs, str | None]:
    """Extra llama-server arguments, with a ``-md FILE`` among them taken out as the MTP file (given as
    ``mtp`` too: they must agree). UsageError for a flag the measurement sets itself (``reserved_flags``
    besides the configuration's and the model)."""
    args = ServerArgs.of(server_args)
    # Passed through, these would make every configuration's server the same.
    reserved = args.present([*CONFIGURATION_FLAGS, MODEL, *reserved_flags])
    if reserved:
        raise UsageError(f"{reserved[0]}: {why}")
    mtp_file = str(mtp) if mtp is not None else None
    draft = args.draft_model
    if draft is not None:
        if mtp_file is not None and mtp_file != draft:
            raise UsageError(f"{args.present([DRAFT_MODEL])[0]} {draft}: conflicts with --mtp-file {mtp_file}")
        mtp_file = draft
        # Given to the baseline, a draft GGUF would switch MTP on (llama-server infers the type).
        args = args.without(DRAFT_MODEL)
    if mtp_file is not None:
        if not Path(mtp_file).is_file():
            raise SourceError(f"{mtp_file}: no such MTP file")
        mtp_file = str(Path(mtp_file).resolve())
    return args, mtp_file


def _matching(
    journal: Journal, settings: dict, configs: list[Configuration], prompts: list[Prompt], repeat: int
) -> tuple[list[RunRecord], list[ServerRecord], list[WorkaroundRecord], int]:
    """The journal's records of this sweep (these settings, within its plan), and how many records of
    these settings were malformed (a field missing or mistyped) and skipped."""
    ids = {config.id for config in configs}
    planned = {(config, prompt.id, r) for config in ids for prompt in prompts for r in range(repeat)}
    runs: list[RunRecord] = []
    servers: list[ServerRecord] = []
    searches: list[WorkaroundRecord] = []
    malformed = 0
    for record in journal.read().records:
        if record.get("settings") != settings:
            continue
        try:
            if record.get("kind") == RUN_KIND:
                run = RunRecord.from_dict(record)
                if run.key in planned:
                    runs.append(run)
            elif record.get("kind") == SERVER_KIND:
                server = ServerRecord.from_dict(record)
                if server.configuration in ids:
                    servers.append(server)
            elif record.get("kind") == WORKAROUND_KIND:
                search = WorkaroundRecord.from_dict(record)
                if search.configuration in ids:
                    searches.append(search)
        except MalformedRecord:
            malformed += 1
    return runs, servers, searches, malformed


def _crashes(runs: list[RunRecord], servers: list[ServerRecord], searches: list[WorkaroundRecord]) -> list[EngineCrash]:
    """Per MTP configuration that crashed: the first crash, the change it then ran with, what was tried."""
    first: dict[str, Crash] = {}
    for record in [*servers, *runs]:
        if record.crash is not None and record.n_max is not None and record.workaround is None:
            first.setdefault(record.configuration, record.crash)
    crashes = []
    for configuration, crash in first.items():
        fixed = next((s.workaround for s in servers if s.configuration == configuration and s.workaround
                      and s.status is ServerStatus.started), None)
        tried = [t for w in searches if w.configuration == configuration for t in w.trials]
        crashes.append(EngineCrash(configuration, crash, fixed, tried))
    return crashes


def _latest(runs: list[RunRecord]) -> list[RunRecord]:
    """One record per run key: the finished one, else the last attempt (a resumed retry replaces a crash)."""
    chosen: dict[tuple[str, str, int], RunRecord] = {}
    for run in runs:
        current = chosen.get(run.key)
        if current is None or current.status != RunStatus.ok:
            chosen[run.key] = run
    return list(chosen.values())


def _failures(runs: list[RunRecord], servers: list[ServerRecord]) -> list[Failure]:
    counted: dict[tuple[str, str, str], int] = {}
    for server in servers:
        if server.status is not ServerStatus.started:
            key = (server.configuration, "start", server.reason or "unknown")
            counted[key] = counted.get(key, 0) + 1
    for run in runs:
        if run.status != RunStatus.ok:
            key = (run.configuration, run.status, run.error or "unknown")
            counted[key] = counted.get(key, 0) + 1
    return [Failure(config, kind, reason, count) for (config, kind, reason), count in counted.items()]


def _json(report: SweepReport) -> str:
    return json.dumps(to_jsonable(report), indent=2, ensure_ascii=False) + "\n"
