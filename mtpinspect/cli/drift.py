"""`mtpinspect drift`: what changes temperature-0 output on this engine, and does it matter?

Arguments after ``--`` go to every llama-server unchanged (``-- -ngl 99``). Progress goes to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mtpinspect.cli import EXIT_ERROR
from mtpinspect.cli._args import EndpointUrl, ServerArgsCommand, backend_option, format_option, start_timeout_option
from mtpinspect.cli._output import Output
from mtpinspect.cli._progress import ProgressBar
from mtpinspect.drift import DriftOptions, DriftReport, run_drift
from mtpinspect.drift.api import JOURNAL_NAME
from mtpinspect.drift.compare import Divergence, Judgement
from mtpinspect.drift.options import DEFAULT_N_PREDICT, SLOTS_BOUND, THREADS_BOUND
from mtpinspect.errors import INTERRUPTED, UsageError
from mtpinspect.runtime.bounds import N_MAX_BOUND, N_PREDICT_BOUND, SEED_BOUND
from mtpinspect.runtime.engines import ENGINE_NAMES
from mtpinspect.sources.app_stores import is_app_source
from mtpinspect.vocabulary import Engine


def _n_max(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"--n-max {text!r}: expected a comma-separated list of numbers") from None
    if not values:
        raise UsageError("--n-max: give at least one value")
    return values


@click.command("drift", cls=ServerArgsCommand)
@click.argument("model", required=False)
@click.option("--n-max", "n_max", default="1,3", show_default=True, metavar="LIST",
              help=f"MTP draft lengths compared with the baseline (--spec-draft-n-max), each {N_MAX_BOUND.shown}.")
@click.option("--prompts", metavar="FILE|DIR|CLASS", default=None,
              help="Prompt .txt/.jsonl file, a directory of them, or a built-in class. Default: the 12 built-in prompts.")
@click.option("--n-predict", "n_predict", type=int, default=DEFAULT_N_PREDICT, show_default=True,
              help=f"Tokens generated per request ({N_PREDICT_BOUND.shown}). On CPU the thread count and MTP act only "
                   "past context position 256: fewer tokens may hide them.")
@click.option("--seed", type=int, default=42, show_default=True, help=f"Seed of every request ({SEED_BOUND.shown}).")
@click.option("--slots", type=int, default=None,
              help=f"Prompts sent at once in the batching check, each on its own slot (-np), {SLOTS_BOUND.shown}. "
                   "Default: one per prompt.")
@click.option("--threads", type=int, default=None,
              help=f"CPU: the thread count compared with -t 1 ({THREADS_BOUND.shown}; 0: no thread check). Every other "
                   "server runs -t 1. Default: this machine's cores.")
@click.option("--server", metavar="PATH", default=None,
              help="llama-server to use (default: $LLAMA_SERVER, else the pinned build, cached or built).")
@backend_option("Backend of the pinned llama-server (built on first use).")
@click.option("--mtp-file", "mtp_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Separate mtp-*.gguf head, passed to MTP servers as -md.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("out/drift"),
              show_default=True, help="Directory for drift.jsonl (every answer), drift.json and server logs.")
@start_timeout_option
@format_option(csv="one row per trigger", schema="drift")
@click.option("--engine", type=click.Choice(ENGINE_NAMES), default=None,
              help="The engine --serve starts (llama.cpp, vllm, sglang); with --endpoint it is found from the server.")
@click.option("--serve", metavar="COMMAND", default=None,
              help="Your own server command: {n} is the draft length, {port} a free 127.0.0.1 port, {model} MODEL. "
                   "The baseline (and its restart) runs it without its speculative options.")
@click.option("--serve-baseline", "serve_baseline", metavar="COMMAND", default=None,
              help="The baseline's command (with {port}), instead of --serve without its speculative options.")
@click.option("--endpoint", metavar="URL", type=EndpointUrl(), default=None,
              help="A running server with MTP on (--n-max N: its draft length). A restart is not measured.")
@click.option("--baseline-endpoint", "baseline_endpoint", metavar="URL", type=EndpointUrl(), default=None,
              help="With --endpoint: a running server of the same model without MTP (else MTP vs baseline is not measured).")
@click.pass_context
def command(ctx: click.Context, model: str | None, n_max: str, prompts: str | None, n_predict: int, seed: int,
            slots: int | None, threads: int | None, server: str | None, backend: str, mtp_file: Path | None,
            out_dir: Path, start_timeout: float, fmt: str, engine: str | None, serve: str | None,
            serve_baseline: str | None, endpoint: str | None, baseline_endpoint: str | None) -> int:
    """Why did temperature-0 output change when MTP went on, and does it matter?

    \b
    Runs each trigger alone on this machine and engine, everything else held fixed: the same server
    twice (the control), a restart, MTP at each n-max vs the baseline, the prompts all at once vs one
    by one, and on CPU the thread count. For each prompt that differs: where (character and token), the
    baseline's top candidates there, whether the other side took its second choice, and a judgement:
    a near-tie (wording) or a breakdown (empty, a loop, an early divergence, a changed number).
    MODEL is as for `sweep`: a GGUF, ollama:MODEL, lmstudio:PUBLISHER/REPO, or nothing for the
    built-in trained model (1 min 15 s on 2 free cores, 4-5 minutes on busy ones). Other engines:
      mtpinspect drift --engine vllm --serve "vllm serve Qwen/Qwen3-Next-80B-A3B --port {port}
        --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": {n}}'"
      mtpinspect drift --endpoint http://gpu-box:8000 --n-max 3 --baseline-endpoint http://gpu-box:8001
    """
    n_max_given = ctx.get_parameter_source("n_max") is not click.core.ParameterSource.DEFAULT
    options = DriftOptions(
        n_max=_n_max(n_max) if endpoint is None or n_max_given else (),
        prompts=prompts, n_predict=n_predict, seed=seed, slots=slots, threads=threads, server=server,
        backend=backend, mtp_file=mtp_file, out_dir=out_dir, server_args=ctx.meta.get("server_args", ()),
        startup_timeout=start_timeout, engine=Engine(engine) if engine else None, serve=serve,
        serve_baseline=serve_baseline, endpoint=endpoint, baseline_endpoint=baseline_endpoint,
    )
    out = Output(fmt)
    bar = ProgressBar(out.errors, name="drift")
    try:
        report = run_drift(Path(model) if model is not None and not is_app_source(model) else model, options,
                           progress=bar)
    except KeyboardInterrupt:
        bar.close()
        out.hint(f"mtpinspect drift: interrupted; the answers so far are in {out_dir / JOURNAL_NAME}")
        return INTERRUPTED
    bar.close()
    render(report, out)
    if report.stopped:
        out.error(report.stopped, where="mtpinspect drift")
        return EXIT_ERROR
    if not any(c.compared for c in report.comparisons):
        return 1  # nothing measured: a script must notice
    # A breakdown is what a script must notice; near-tie drift is not a failure.
    return 1 if any(c.breakdowns for c in report.comparisons) else 0


# -- rendering ----------------------------------------------------------------------------------


def render(report: DriftReport, out: Output) -> None:
    out.document(report)
    rows = _trigger_rows(report)
    if out.is_machine:
        out.table(rows, primary=True)
        return
    out.heading(f"Temperature-0 drift of {report.model}")
    out.text(f"{report.server.engine} {report.server.version} ({report.server.backend}); {len(report.prompts)} prompts, "
             f"n_predict {report.settings['n_predict']}, seed {report.settings['seed']}, temperature 0; "
             f"held fixed: {', '.join(report.held)}; {report.wall_seconds:.0f} s")
    out.table(rows, ["trigger", "change", "same text", "acceptance", "differences"], title="Triggers")
    if report.not_measured:
        out.table([{"trigger": line.split(": ", 1)[0], "why": line.split(": ", 1)[-1]} for line in report.not_measured],
                  title="Not measured")
    divergences = [(c.label, d) for c in report.comparisons for d in c.divergences]
    if divergences:
        out.table([_divergence_row(label, d) for label, d in divergences],
                  title="Where the texts part (the baseline's two best candidates at that token)")
    out.heading("Answer")
    out.lead(report.answer)
    out.text(report.determinism_note)
    if report.failures:
        out.table([{"failure": f} for f in report.failures], title="Failures")
    out.heading("Files")
    out.text(f"answers: {report.files.journal}\nreport: {report.files.report}\nserver logs: {report.files.logs}")


def _trigger_rows(report: DriftReport) -> list[dict[str, Any]]:
    rows = []
    for c in report.comparisons:
        kinds: dict[str, int] = {}
        for d in c.divergences:
            kinds[str(d.judgement)] = kinds.get(str(d.judgement), 0) + 1
        rows.append({
            "trigger": c.label,
            "kind": str(c.trigger),
            "change": c.change,
            "same text": f"{c.matching} / {c.compared}" + (f" (of {c.prompts})" if c.compared < c.prompts else ""),
            "matching": c.matching,
            "compared": c.compared,
            "acceptance": None if c.acceptance is None else f"{c.acceptance:.3f}",
            "differences": ", ".join(f"{n} {k}" for k, n in kinds.items()) or None,
        })
    return rows


def _candidates(d: Divergence) -> str | None:
    if not d.candidates:
        return None
    return " / ".join(f"{c.token!r} {c.logprob:.6f}" for c in d.candidates)


def _divergence_row(label: str, d: Divergence) -> dict[str, Any]:
    return {
        "trigger": label,
        "prompt": d.prompt_id,
        "char": d.char,
        "token": d.token,
        "context": d.context_position,
        "candidates": _candidates(d),
        "margin": None if d.margin is None else f"{d.margin:.4f}",
        "2nd?": None if d.took_second is None else ("yes" if d.took_second else "no"),
        "judgement": str(d.judgement) + (f" ({'then ' if d.judgement is Judgement.near_tie else ''}"
                                         f"{', '.join(map(str, d.breakdown))})" if d.breakdown else ""),
    }
