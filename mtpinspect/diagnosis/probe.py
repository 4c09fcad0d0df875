"""The short probe: the user's own configuration once, then baseline and n-max 1 and 3 on the real
llama-server, with two prompt classes (code, prose-en), one round and a small n_predict.

Two parts, both on the same local GGUF:

- *as given*: when the extra llama-server arguments choose a speculative configuration, one server
  runs with exactly those arguments and serves one request, so a wrong flag, a sidecar left out or
  MTP never enabled shows up in the server's own words;
- *sweep*: :func:`mtpinspect.sweep.run_sweep` measures the baseline and n-max 1 and 3 with the head
  switched on properly (the sidecar passed with -md when there is one), giving acceptance, mean
  length, tok/s and speedup per configuration and prompt class; the classes include the copy class
  (HEAD_PROBE_SET), whose acceptance says whether the head matches the model (head_rules.py).

The probe measures (what it measured: probe_result.py); rank.py interprets. A baseline that does not
run is not a diagnosis but bad input (the model does not load at all): ServerError.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from mtpinspect.diagnosis.probe_result import (
    COPY_CLASS,
    COPY_N_PREDICT,
    HEAD_PROBE_SET,
    PROBE_CLASSES,
    PROBE_N_MAX,
    PROBE_N_PREDICT,
    AsGivenRun,
    CostEstimate,
    ProbeFigure,
    ProbeResult,
    ProbeServer,
)
from mtpinspect.errors import MtpinspectError, ServerError
from mtpinspect.formulas import geometric_mean
from mtpinspect.logread.runs import LogEvidence, read_log
from mtpinspect.runtime.crash import Crash, crash_of
from mtpinspect.runtime.find import VERSION_TIMEOUT_S, ServerBinary, find_server
from mtpinspect.runtime.flags import DRAFT_MODEL, MODEL, SPEC_FLAGS, ServerArgs
from mtpinspect.runtime.server import LlamaServer, ServerProcessError
from mtpinspect.runtime.timeouts import START_TIMEOUT_S
from mtpinspect.runtime.workaround_search import find_workaround
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.plan import BASELINE_ID
from mtpinspect.sweep.prompts import Prompt, load_builtin, load_prompts, load_set
from mtpinspect.sweep.report import SweepReport
from mtpinspect.sweep.statistics import GroupStats
from mtpinspect.vocabulary import Engine, RequestKind


def _work_folder(out_dir: Path | None, stack: ExitStack) -> tuple[Path, str | None]:
    """Where the probe writes its runs, and the folder to report as kept (None: a temporary one, removed)."""
    if out_dir is None:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mtpinspect-diagnose-"))), None
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir, str(out_dir)


def _prompt_set(prompts: str | Path | None) -> list[Prompt]:
    return load_prompts(prompts) if prompts is not None else load_builtin(list(PROBE_CLASSES))


def _copy_set(chosen: Sequence[Prompt]) -> list[Prompt]:
    """The copy class to measure beside ``chosen``: none when the prompts have a class of that name already."""
    if any(p.prompt_class == COPY_CLASS for p in chosen):
        return []
    taken = {p.id for p in chosen}
    return [p for p in load_set(HEAD_PROBE_SET) if p.id not in taken]


def run_probe(
    model: Path,
    settings: ServerArgs,
    *,
    sidecar: Path | None = None,
    sidecar_given: bool = False,
    server: str | Path | None = None,
    n_predict: int = PROBE_N_PREDICT,
    prompts: str | Path | None = None,
    out_dir: Path | None = None,
    start_timeout: float = START_TIMEOUT_S,
    request: RequestKind = RequestKind.auto,
) -> ProbeResult:
    """Run the probe on a local GGUF; ServerError if llama-server cannot run the model even without MTP.
    ``request`` is how its sweep sends the prompts (sweep/request.py: auto is what a chat app sends); the
    as-given run reproduces the flags with a raw completion."""
    binary = find_server(server, build=True, version_timeout=min(VERSION_TIMEOUT_S, start_timeout))
    with ExitStack() as stack:
        out_dir, kept = _work_folder(out_dir, stack)
        prompt_set = _prompt_set(prompts)
        as_given = None
        if settings.sets_spec:
            as_given = _run_as_given(binary, model, settings, sidecar if sidecar_given else None, prompt_set[0].text,
                                     n_predict, out_dir / "as-given.log", start_timeout)
        common = SweepOptions(
            n_max=PROBE_N_MAX, repeat=1, prompts=tuple(prompt_set), n_predict=n_predict, server=binary.path,
            mtp_file=sidecar, out_dir=out_dir / "sweep", server_args=settings.without(*SPEC_FLAGS).args, plot=False,
            startup_timeout=start_timeout, request=request,
        )
        report = run_sweep(model, common)
        _require_baseline(model, report)
        reports = [report]
        copy = _copy_set(prompt_set)
        if copy:  # its own short sweep: n-max 1 only, longer answers
            reports.append(run_sweep(model, replace(common, n_max=PROBE_N_MAX[:1], prompts=tuple(copy),
                                                    n_predict=max(n_predict, COPY_N_PREDICT), out_dir=out_dir / "copy")))
        figures = [_figure(g) for r in reports for g in r.results if g.synthetic is None
                   and (r is report or g.n_max is not None)]
        return ProbeResult(
            server=ProbeServer(str(binary.path), binary.version),
            n_predict=n_predict,
            prompt_classes=list(dict.fromkeys(c for r in reports for c in r.prompt_classes)),
            figures=figures,
            failures=[f"{f.configuration}: {f.reason}" for r in reports for f in r.failures],
            as_given=as_given,
            mtp_logs=[log for r in reports for log in _mtp_logs(r)],
            costs=_costs(figures),
            crashes=[c for r in reports for c in r.crashes],
            out_dir=kept,
            request=report.request,
        )


def probe_endpoint(
    url: str,
    *,
    baseline_url: str | None = None,
    n_max: int | None = None,
    n_predict: int = PROBE_N_PREDICT,
    prompts: str | Path | None = None,
    out_dir: Path | None = None,
) -> tuple[ProbeResult, list[str]]:
    """Measure a running llama-server, vLLM or SGLang server without restarting it (and the baseline's,
    when given): each prompt twice at temperature 0, acceptance per class and position from its counters.
    Returns the probe and the determinism check's lines."""
    with ExitStack() as stack:
        out_dir, kept = _work_folder(out_dir, stack)
        prompt_set = _prompt_set(prompts)
        prompt_set += _copy_set(prompt_set)  # a running server: in the same requests, at its n-max
        # Two rounds: the same prompt twice is the temperature-0 determinism check.
        report = run_sweep(None, SweepOptions(
            n_max=(n_max,) if n_max is not None else (), repeat=2, prompts=tuple(prompt_set), n_predict=n_predict,
            out_dir=out_dir / "sweep", plot=False, endpoint=url, baseline_endpoint=baseline_url,
        ))
        figures = [_figure(g) for g in report.results]
        engine = report.engine.engine if report.engine else Engine.unknown
        label = engine.value if report.engine else "server"
        return ProbeResult(
            server=ProbeServer(url, f"{label} {report.server.version}", engine),
            n_predict=n_predict,
            prompt_classes=list(report.prompt_classes),
            figures=figures,
            failures=[f"{f.configuration}: {f.reason}" for f in report.failures],
            as_given=None,
            costs=_costs(figures),
            out_dir=kept,
        ), determinism_lines(report.results, url, baseline_url, report.determinism_note)


def determinism_lines(groups: Sequence[GroupStats], url: str, baseline_url: str | None, note: str = "") -> list[str]:
    """Per configuration and class: the same prompt twice at temperature 0, and against the baseline; when
    any text differs, ``note`` (the sweep's determinism note for the engine measured) after them."""
    lines = []
    for g in groups:
        where = f"temp-0 determinism on {url if g.n_max is not None else baseline_url}, {g.label}, {g.prompt_class}"
        if g.repeats_identical is not None:
            lines.append(f"{where}: the same prompt twice gave {'identical' if g.repeats_identical else 'DIFFERENT'} text")
        if g.identical_to_baseline is False:
            lines.append(f"{where}: differs from the baseline's text from character {g.first_divergence} "
                         "(a near-tie flipped by batched verification is not a bug by itself; `mtpinspect drift --endpoint "
                         f"{url}` says whether it is one and what else changes text there)")
        elif g.identical_to_baseline:
            lines.append(f"{where}: the baseline's text exactly")
    differs = any(g.identical_to_baseline is False or g.repeats_identical is False for g in groups)
    return lines + ([note] if differs and note else [])


def _run_as_given(
    binary: ServerBinary, model: Path, settings: ServerArgs, sidecar: Path | None, prompt: str, n_predict: int,
    log_path: Path, start_timeout: float,
) -> AsGivenRun:
    args = settings
    # --mtp-file names the sidecar the user runs with; add it the way llama-server takes it.
    if sidecar is not None and settings.draft_model is None:
        args = settings.added(*DRAFT_MODEL.spelled(sidecar))
    server = LlamaServer(binary, model, args, log_path=log_path, startup_timeout=start_timeout)
    failure: str | None = None
    crash: Crash | None = None
    started = False
    try:
        with server:
            started = True
            offset = server.log_since(0)[1]
            server.complete(prompt, n_predict=n_predict, temperature=settings.temperature or 0.0)
            server.wait_for_log(offset)
    except ServerProcessError as exc:
        failure = exc.reason
        crash = crash_of(exc.returncode, server.read_log())
    except ServerError as exc:
        failure = str(exc)
    log = None
    try:
        log = read_log(log_path)
    except MtpinspectError:
        pass  # an empty log: the failure line says what happened
    # A crash of the user's own command: find the change that avoids it, by experiment, on that command.
    search = None
    if crash is not None and settings.sets_spec:
        search = find_workaround(binary, model, args, log_path.parent / "as-given-workarounds", crash=crash,
                                 startup_timeout=start_timeout)
    return AsGivenRun(command=server.command or [str(binary.path), *MODEL.spelled(model), *args], started=started,
                      failure=failure, log=log, crash=crash, workarounds=search)


def _require_baseline(model: Path, report: SweepReport) -> None:
    baseline = [g for g in report.results if g.configuration == BASELINE_ID]
    if baseline and all(g.tokens_per_second is None for g in baseline):
        reason = next((f.reason for f in report.failures if f.configuration == BASELINE_ID), None)
        reason = reason or next((g.error for g in baseline if g.error), "no baseline run finished")
        raise ServerError(f"{model}: llama-server cannot run this model even without MTP: {reason}")


def _figure(group: GroupStats) -> ProbeFigure:
    return ProbeFigure(
        configuration=group.configuration,
        n_max=group.n_max,
        prompt_class=group.prompt_class,
        acceptance=group.acceptance,
        mean_length=group.mean_length,
        tokens_per_second=group.tokens_per_second.median if group.tokens_per_second else None,
        speedup=group.speedup,
        within_noise=group.within_noise,
        per_position=tuple(group.per_position),
        drafted=group.drafted,
        accepted=group.accepted,
        drafts=group.drafts,
        error=group.error,
        workaround=group.workaround,
    )


def _mtp_logs(report: SweepReport) -> list[LogEvidence]:
    logs = []
    for configuration, paths in report.files.server_logs.items():
        if configuration == BASELINE_ID:
            continue
        for path in paths:
            try:
                logs.append(read_log(path))
            except MtpinspectError:
                continue  # a server that wrote nothing: its failure is in the sweep's report
    return logs


def _costs(figures: Sequence[ProbeFigure]) -> list[CostEstimate]:
    """Per n-max, pooled over classes (not the copy class, a check of the head): the geometric mean of
    speedups and the mean of mean lengths."""
    figures = [f for f in figures if f.prompt_class != COPY_CLASS]
    costs = []
    for n_max in sorted({f.n_max for f in figures if f.n_max is not None}):
        mine = [f for f in figures if f.n_max == n_max and f.speedup and f.mean_length]
        speedup = geometric_mean([f.speedup for f in mine if f.speedup])
        if speedup is None:
            continue
        length = sum(f.mean_length or 1.0 for f in mine) / len(mine)
        costs.append(CostEstimate.of(n_max, length, speedup))
    return costs

