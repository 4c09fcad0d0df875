"""`mtpinspect sweep`: measure MTP across --spec-draft-n-max with the real llama-server.

Arguments after ``--`` go to every llama-server unchanged (``-- -ngl 99 -t 8 -c 4096``). Progress goes
to stderr: a redrawn bar with ETA on a terminal, one line per run elsewhere (CI logs stay readable).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from mtpinspect.apps import APP_NAMES
from mtpinspect.cli import EXIT_ERROR
from mtpinspect.cli._args import EndpointUrl, ServerArgsCommand, backend_option, format_option, start_timeout_option
from mtpinspect.cli._output import Output, OutputFormat
from mtpinspect.cli._progress import ProgressBar
from mtpinspect.errors import INTERRUPTED, UsageError
from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.bounds import (
    CONCURRENCY_BOUND,
    LONG_PROMPT_BOUND,
    N_MAX_BOUND,
    N_PREDICT_BOUND,
    REPEAT_BOUND,
    SEED_BOUND,
)
from mtpinspect.runtime.engines import ENGINE_NAMES
from mtpinspect.runtime.n_max import measured_here
from mtpinspect.sources.app_stores import is_app_source
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.api import JOURNAL_NAME
from mtpinspect.sweep.plan import Condition
from mtpinspect.sweep.report import SweepReport
from mtpinspect.sweep.sampling import RECOMMENDED, recommended_temperature
from mtpinspect.sweep.statistics import GroupStats
from mtpinspect.vocabulary import Engine, Reasoning, RequestKind, WorkaroundMode


def _numbers(text: str, kind: type, option: str) -> tuple:
    try:
        values = tuple(kind(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected a comma-separated list of numbers") from None
    if not values:
        raise UsageError(f"{option}: give at least one value")
    return values


def _temperatures(text: str, model: str | None) -> tuple[float, ...]:
    """--temperature values, 'recommended' replaced by the model's own (UsageError when it gives none)."""
    values = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        values += [recommended_temperature(model)] if part == RECOMMENDED else list(_numbers(part, float, "--temperature"))
    if not values:
        raise UsageError("--temperature: give at least one value")
    return tuple(values)


@click.command("sweep", cls=ServerArgsCommand)
@click.argument("model", required=False)
@click.option("--n-max", "n_max", default="1,2,3,4", show_default=True, metavar="LIST",
              help=f"Draft lengths to measure (--spec-draft-n-max), comma-separated, each {N_MAX_BOUND.shown} (a draft "
                   "and the token before it fit one llama-server batch). The baseline always runs.")
@click.option("--repeat", type=int, default=3, show_default=True,
              help=f"Rounds over all configurations ({REPEAT_BOUND.shown}); alternate rounds run them in reverse order.")
@click.option("--order", type=click.Choice(["rounds", "grouped"]), default="rounds", show_default=True,
              help="rounds: interleave configurations round by round (drift control); grouped: all rounds of a "
                   "configuration on one server start (each configuration starts exactly once).")
@click.option("--prompts", metavar="FILE|DIR|CLASS", default=None,
              help="Prompt .txt/.jsonl file, a directory of them, a built-in class "
                   "(code, prose-en, prose-ja, extraction) or set (mtp-bench-categories: one prompt in each of "
                   "mtp-bench's nine categories; use with --request chat --n-predict 192 --repeat 1; head-probe: the "
                   "copy class diagnose measures a head with, text any matching head drafts nearly all of). "
                   "Default: all built-in classes.")
@click.option("--request", "request", type=click.Choice([k.value for k in RequestKind]), default=RequestKind.auto.value,
              show_default=True,
              help="How prompts are sent: chat (/v1/chat/completions, through the model's chat template, as a chat "
                   "app sends them), completion (/completion, raw text continued), auto (chat when the GGUF carries "
                   "a chat template, else completion; with --engine/--serve/--endpoint: completion unless chat, which "
                   "goes through the engine's template). The report says which, and why.")
@click.option("--reasoning", type=click.Choice([r.value for r in Reasoning]), default=Reasoning.auto.value,
              show_default=True,
              help="Chat requests on a template with a reasoning switch (enable_thinking): on or off; auto is on, as "
                   "apps leave it.")
@click.option("--mtp-bench-json", "mtp_bench_json", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR", help="Also write each configuration's runs as mtp-bench's --out JSON (results, aggregate) "
                                  "to DIR/<configuration>.json.")
@click.option("--n-predict", "n_predict", type=int, default=128, show_default=True,
              help=f"Tokens generated per request ({N_PREDICT_BOUND.shown}).")
@click.option("--seed", type=int, default=42, show_default=True,
              help=f"Sampling seed of every request ({SEED_BOUND.shown}, as llama.cpp's seed).")
@click.option("--server", metavar="PATH", default=None,
              help="llama-server to use (default: $LLAMA_SERVER, else the pinned build, cached or built; a llama-server on PATH is not used unless named).")
@backend_option("Backend of the pinned llama-server (built on first use).")
@click.option("--mtp-file", "mtp_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Separate mtp-*.gguf head, passed to MTP configurations as -md.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("out/sweep"),
              show_default=True, help="Directory for runs.jsonl, report.json, sweep.png and server logs.")
@click.option("--resume", is_flag=True,
              help="Keep the runs already in OUT/runs.jsonl (same model and settings) and run only the rest.")
@click.option("--synthetic", metavar="RATES", default=None,
              help="Also measure forced acceptance (e.g. 0.2,0.5,0.8,1.0) with --spec-synth-rates, per n-max, "
                   "and report the break-even acceptance.")
@start_timeout_option
@format_option(csv="one row per configuration and prompt class", schema="sweep")
@click.option("--no-plot", "no_plot", is_flag=True, help="Do not write sweep.png.")
@click.option("--workaround", type=click.Choice([m.value for m in WorkaroundMode]), default=WorkaroundMode.auto.value,
              show_default=True,
              help="auto: when an MTP configuration crashes llama-server and the baseline does not, find the "
                   "smallest change that makes it start and decode (--no-repack, -fa off, ...) and retry once with "
                   "it, marked in the results; off: record the crash and go on.")
@click.option("--engine", type=click.Choice(ENGINE_NAMES), default=None,
              help="The engine --serve starts (llama.cpp, vllm, sglang); with --endpoint it is found from the server.")
@click.option("--serve", metavar="COMMAND", default=None,
              help="Your own server command, started per configuration: {n} is the draft length, {port} a free "
                   "127.0.0.1 port, {model} MODEL. The baseline runs it without its speculative options.")
@click.option("--serve-baseline", "serve_baseline", metavar="COMMAND", default=None,
              help="The baseline's command (with {port}), instead of --serve without its speculative options.")
@click.option("--endpoint", metavar="URL", type=EndpointUrl(), default=None,
              help="Measure a running llama-server, vLLM or SGLang server at URL without restarting it "
                   "(--n-max N: its draft length, else read from its counters).")
@click.option("--baseline-endpoint", "baseline_endpoint", metavar="URL", type=EndpointUrl(), default=None,
              help="With --endpoint: a running server of the same model without speculative decoding.")
@click.option("--concurrency", metavar="LIST", default="1", show_default=True,
              help=f"Requests at once, comma-separated ({CONCURRENCY_BOUND.shown}): each value runs every configuration "
                   "on a server with that many slots (-np) and sends that many different prompts of the class together; "
                   "per-request and total tok/s, acceptance counted per request, and the recommendation per value.")
@click.option("--temperature", metavar="LIST", default="0", show_default=True,
              help="Sampling temperatures, comma-separated; 'recommended' is the model's own (GGUF general.sampling.temp "
                   "or generation_config.json beside it). Above 0 each round samples with other seeds (--repeat "
                   "seeds per prompt), and the min-max range is the spread over them.")
@click.option("--method", "methods", metavar="LIST", default="draft-mtp", show_default=True,
              help="Speculative methods side by side, each at every --n-max: draft-mtp, ngram-simple, ngram-mod, "
                   "draft:FILE (a separate draft model). The recommendation names the best per prompt class.")
@click.option("--long-prompt", "long_prompt", type=int, default=None, metavar="TOKENS",
              help=f"Add a 'long' prompt class of about TOKENS tokens ({LONG_PROMPT_BOUND.shown}; a document to "
                   "summarise, code to edit): time to first token and prompt tok/s with and without MTP.")
@click.pass_context
def command(
    ctx: click.Context,
    model: str | None,
    n_max: str,
    repeat: int,
    order: str,
    prompts: str | None,
    request: str,
    reasoning: str,
    mtp_bench_json: Path | None,
    n_predict: int,
    seed: int,
    server: str | None,
    backend: str,
    mtp_file: Path | None,
    out_dir: Path,
    resume: bool,
    synthetic: str | None,
    start_timeout: float,
    fmt: str,
    no_plot: bool,
    workaround: str,
    engine: str | None,
    serve: str | None,
    serve_baseline: str | None,
    endpoint: str | None,
    baseline_endpoint: str | None,
    concurrency: str,
    temperature: str,
    methods: str,
    long_prompt: int | None,
) -> int:
    """Measure MTP on this machine: baseline and each n-max, with a recommendation.

    \b
    MODEL is a GGUF with an MTP head, or a model of an app: ollama:MODEL[:TAG] (its GGUF blob, and its
    DRAFT blob as the drafter) or lmstudio:PUBLISHER/REPO[:QUANT]; the recommendation is then also
    given as the app's setting (PARAMETER draft_num_predict N; "Max Draft Tokens" N). Without
    MODEL, the built-in trained model is swept: a 33 MB glm4moe whose MTP head learned to draft, so
    acceptance differs by prompt class as a real head's does (a demo that needs no download);
    MODEL builtin:qwen35 is the second one, a 16 MB Qwen3.5-family hybrid trunk (Gated DeltaNet and
    attention layers) trained with the same recipe, whose rejected drafts roll back recurrent state
    (docs/tiny-model.md).
    Extra llama-server arguments follow `--`:
      mtpinspect sweep model.gguf --n-max 1,2,3 -- -ngl 99 -t 8
      mtpinspect sweep ollama:qwen3.6:27b-mtp-q4_K_M -- -ngl 99
    On vLLM or SGLang (or llama-server started your way), with your own command or a running server:
      mtpinspect sweep --engine vllm --serve "vllm serve Qwen/Qwen3-Next-80B-A3B --port {port}
        --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": {n}}'"
      mtpinspect sweep --endpoint http://gpu-box:8000 --n-max 3
    """
    # A running server has one draft length: without --n-max it is read from its counters.
    n_max_given = ctx.get_parameter_source("n_max") is not click.core.ParameterSource.DEFAULT
    options = SweepOptions(
        n_max=_numbers(n_max, int, "--n-max") if endpoint is None or n_max_given else (),
        repeat=repeat,
        order=order,
        prompts=prompts,
        n_predict=n_predict,
        seed=seed,
        server=server,
        backend=backend,
        mtp_file=mtp_file,
        out_dir=out_dir,
        resume=resume,
        synthetic=_numbers(synthetic, float, "--synthetic") if synthetic else (),
        server_args=ctx.meta.get("server_args", ()),
        plot=not no_plot,
        startup_timeout=start_timeout,
        workaround=WorkaroundMode(workaround),
        engine=Engine(engine) if engine else None,
        serve=serve,
        serve_baseline=serve_baseline,
        endpoint=endpoint,
        baseline_endpoint=baseline_endpoint,
        request=RequestKind(request),
        reasoning=Reasoning(reasoning),
        mtp_bench_json=mtp_bench_json,
        concurrency=_numbers(concurrency, int, "--concurrency"),
        temperature=_temperatures(temperature, model),
        methods=tuple(part.strip() for part in methods.split(",") if part.strip()) or ("draft-mtp",),
        long_prompt=long_prompt,
    )
    out = Output(fmt)
    bar = ProgressBar(out.errors)
    try:
        report = run_sweep(Path(model) if model is not None and not is_app_source(model) else model, options,
                           progress=bar)
    except KeyboardInterrupt:
        bar.close()
        out.hint(f"mtpinspect sweep: interrupted; finished runs are in {out_dir / JOURNAL_NAME}, "
                 "run again with --resume to complete them")
        return INTERRUPTED
    bar.close()
    if report.runs.malformed:
        out.warning(f"{report.files.jsonl}: {report.runs.malformed} malformed record(s) skipped "
                    "(a field missing or of the wrong type)", where="mtpinspect sweep")
    render(report, out)
    if report.stopped:
        out.error(report.stopped, where="mtpinspect sweep")
        return EXIT_ERROR
    # Nothing measured (every server failed, or every MTP one) is a failure a script should notice.
    return 0 if report.runs.ok and report.recommendation.measured else 1


# -- rendering ----------------------------------------------------------------------------------


def _origin(origin: str | None) -> str:
    """A llama-server the user named is said to be theirs: its figures are not the pinned build's."""
    return f", {origin}: not the pinned build" if origin in ("--server", "$LLAMA_SERVER") else ""


def render(report: SweepReport, out: Output) -> None:
    """Show a report in the sink's format (json: the document; csv: the summary rows)."""
    out.document(report)
    if out.format is OutputFormat.csv:
        out.table(_csv_rows(report.results), primary=True)
    if out.is_machine:
        _render_machine_load(report, out)
        return
    out.heading(f"MTP sweep of {report.model}")
    server = (f"{report.engine.engine.value} {report.server.version}" if report.engine is not None
              else f"llama-server {report.server.version} ({report.server.backend}{_origin(report.server.origin)})")
    temperature = report.settings["temperature"]
    temperatures = ", ".join(f"{t:g}" for t in temperature) if isinstance(temperature, list) else f"{temperature:g}"
    out.text(
        f"{server}; n_predict {report.settings['n_predict']}, "
        f"seed {report.settings['seed']}, temperature {temperatures}, {report.settings['repeat']} round(s); "
        f"{report.runs.ok} of {report.runs.planned} runs measured"
        + (f", {report.runs.resumed} from an earlier invocation" if report.runs.resumed else "")
    )
    if report.request is not None:
        out.text(f"requests: {report.request.sent} ({report.request.why})")
    _render_machine_load(report, out)
    real = [g for g in report.results if g.synthetic is None]
    sampled = any(g.temperature for g in real)
    over = "prompts, rounds and seeds" if sampled else "prompts and rounds"
    out.table(_summary_rows(real, report.settings), title=f"Decode speed and acceptance (median [min-max] over {over})")
    if report.rounds:
        out.text(f"independent rounds and requests: {report.rounds}")
    if report.engine is None:  # an engine's requests are not streamed: no client TTFT
        out.text(_columns_note(report.settings))
    if report.methods:
        _render_methods(report, out)
    drafting = [g for g in real if g.n_max is not None and g.drafts]
    if drafting:
        out.table(_position_rows(drafting), title="Per-position acceptance (share of verification steps)")
        out.text("expected = 1 + a + ... + a^n with a = the first position's acceptance: the mean length if every "
                 "deeper draft token were accepted as often; a measured mean length below it means acceptance "
                 "decays with the draft position.")
    _render_determinism(report, [g for g in real if not g.temperature], out)
    if report.synthetic is not None:
        _render_synthetic(report, out)
    if report.failures:
        out.table([to_jsonable(f) for f in report.failures], ["configuration", "kind", "count", "reason"], title="Failures")
    if report.crashes:
        _render_crashes(report, out)
    out.heading("Recommendation")
    for choice in report.recommendation.per_class:
        out.text(f"{choice.prompt_class}: {choice.reason}")
    out.text(f"overall: {report.recommendation.reason}")
    for condition in report.recommendation.per_condition:
        out.text(f"at {Condition(condition.concurrency, condition.temperature).label}: {condition.reason}")
    if report.recommendation.summary:
        out.text(f"per condition: {report.recommendation.summary}")
    if report.recommendation.measured and report.engine is None:
        out.text(measured_here(str(report.files.report)))
    if report.engine is not None:
        if report.server.command:
            out.text("the baseline ran: " + shlex.join(report.server.command))
        out.text(f"in {report.engine.engine.value}'s own options: {report.engine.setting}")
        if report.engine.command:
            out.text("your command: " + shlex.join(report.engine.command))
    if report.app is not None:
        out.text(f"in {APP_NAMES[report.app.app]} ({report.app.name}): {report.app.setting}")
        if report.app.command:
            out.text(report.app.command)
    out.heading("Files")
    out.text(f"runs: {report.files.jsonl}\nreport: {report.files.report}"
             + (f"\nplot: {report.files.plot}" if report.files.plot else "") + f"\nserver logs: {report.files.logs}")
    if report.runs.not_run:
        out.text(f"{report.runs.not_run} planned runs did not run; `--resume` with the same --out runs them.")


def _speed(group: GroupStats) -> str | None:
    tps = group.tokens_per_second
    return None if tps is None else f"{tps.median:.1f} [{tps.min:.1f}-{tps.max:.1f}]"


def _mib(value: int | None) -> str | None:
    return None if value is None else f"{value / 2**20:,.0f} MiB"


def _summary_rows(groups: Sequence[GroupStats], settings: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    settings = settings or {}
    concurrent = any(n != 1 for n in settings.get("concurrency", [1]))
    long_prompts = settings.get("long_prompt") is not None
    # Checkpoint restores are shown for a model that has them (hybrid or recurrent), not as a column of 0s.
    recurrent = any(g.checkpoint_restores for g in groups)
    rows = []
    for g in groups:
        speedup = None
        if g.speedup is not None:
            speedup = f"{g.speedup:.2f}x" + (" (noise)" if g.within_noise else "")
        row: dict[str, Any] = {
            "class": g.prompt_class,
            "config": g.shown_label,
            "tok/s": _speed(g) if g.runs else (f"failed: {g.error}" if g.error else "not run"),
        }
        if concurrent:
            row["total tok/s"] = None if g.total_tokens_per_second is None else f"{g.total_tokens_per_second.median:.1f}"
            per = g.per_request_tokens_per_second
            row["per request"] = None if per is None else f"{per.median:.1f} [{per.min:.1f}-{per.max:.1f}]"
        row.update({
            "speedup": speedup,
            "acceptance": g.acceptance,
            "mean len": g.mean_length,
            "expected": g.expected_length,
            "TTFT": None if g.ttft_ms is None else f"{g.ttft_ms.median:.0f} ms",
        })
        if long_prompts or concurrent:
            row["prompt ms"] = None if g.prompt_ms is None else f"{g.prompt_ms.median:.0f}"
        if recurrent:
            row["restores"] = g.checkpoint_restores
        if long_prompts:
            prompt = g.prompt_tokens_per_second
            row["prompt tok/s"] = None if prompt is None else f"{prompt.median:.0f}"
            row["prompt tokens"] = g.prompt_tokens
        row.update({
            "peak RSS": _mib(g.rss_peak_bytes),
            # Sampled text differs from seed to seed and with drafting: only greedy text is compared.
            "same text": None if g.temperature else (g.identical_to_baseline if g.n_max is not None
                                                     else g.repeats_identical),
            "runs": f"{g.runs}" + (f" (+{g.failed} failed)" if g.failed else ""),
        })
        rows.append(row)
    return rows


def _columns_note(settings: dict[str, Any]) -> str:
    """What the table's time columns mean (and, under load, its throughput columns)."""
    concurrent = any(n != 1 for n in settings.get("concurrency", [1]))
    note = "TTFT: time to the first token as this client measured it (sent -> first streamed token)"
    if concurrent or settings.get("long_prompt") is not None:
        note += "; prompt ms: the server's own prompt time (timings.prompt_ms)"
    if concurrent:
        note += "; total tok/s: all of a run's requests together; per request: each request's own decode speed"
    return note + "."


def _render_methods(report: SweepReport, out: Output) -> None:
    rows = []
    for comparison in report.methods:
        for row in comparison.rows:
            rows.append({
                "class": comparison.prompt_class,
                "condition": Condition(comparison.concurrency, comparison.temperature).label,
                "method": row.setting,
                "tok/s": None if row.tokens_per_second is None else f"{row.tokens_per_second:.1f}",
                "speedup": None if row.speedup is None else f"{row.speedup:.2f}x" + (" (noise)" if row.within_noise else ""),
                "acceptance": row.acceptance,
                "mean len": row.mean_length,
                "TTFT": None if row.ttft_ms is None else f"{row.ttft_ms:.0f} ms",
                "peak RSS": _mib(row.rss_peak_bytes),
                "wins": "yes" if row.setting == comparison.winner else None,
            })
    out.table(rows, title="Methods on the same prompts, each on its own server (each method's fastest n-max)")
    out.text("; ".join(f"{c.prompt_class} ({Condition(c.concurrency, c.temperature).label}): {c.winner}"
                       for c in report.methods))


def _position_rows(groups: Sequence[GroupStats]) -> list[dict[str, Any]]:
    return [
        {
            "class": g.prompt_class,
            "config": g.shown_label,
            "per position": ", ".join(f"{rate:.2f}" for rate in g.per_position),
            "mean len": g.mean_length,
            "expected": g.expected_length,
            "log agrees": g.log_agrees,
        }
        for g in groups
    ]


def _csv_rows(groups: Sequence[GroupStats]) -> list[dict[str, Any]]:
    rows = []
    for g in groups:
        tps = g.tokens_per_second
        rows.append({
            "prompt_class": g.prompt_class,
            "configuration": g.configuration,
            "n_max": g.n_max,
            "synthetic": g.synthetic,
            "runs": g.runs,
            "failed": g.failed,
            "tokens_per_second_median": tps.median if tps else None,
            "tokens_per_second_min": tps.min if tps else None,
            "tokens_per_second_max": tps.max if tps else None,
            "speedup": g.speedup,
            "within_noise": g.within_noise,
            "acceptance": g.acceptance,
            "mean_length": g.mean_length,
            "checkpoint_restores": g.checkpoint_restores,
            "first_position_acceptance": g.first_position_acceptance,
            "expected_length": g.expected_length,
            "per_position": ";".join(f"{rate:.6g}" for rate in g.per_position),
            "rss_peak_bytes": g.rss_peak_bytes,
            "identical_to_baseline": g.identical_to_baseline,
            "first_divergence": g.first_divergence,
            "error": g.error,
            "workaround": g.workaround,
            "method": g.method,
            "concurrency": g.concurrency,
            "temperature": g.temperature,
            "ttft_ms_median": g.ttft_ms.median if g.ttft_ms else None,
            "prompt_ms_median": g.prompt_ms.median if g.prompt_ms else None,
            "per_request_tokens_per_second_median": (g.per_request_tokens_per_second.median
                                                     if g.per_request_tokens_per_second else None),
            "total_tokens_per_second_median": g.total_tokens_per_second.median if g.total_tokens_per_second else None,
            "prompt_tokens_per_second_median": g.prompt_tokens_per_second.median if g.prompt_tokens_per_second else None,
            "prompt_tokens": g.prompt_tokens,
        })
    return rows


def _render_determinism(report: SweepReport, groups: Sequence[GroupStats], out: Output) -> None:
    out.heading("Determinism at temperature 0")
    lines = []
    for g in groups:
        if g.n_max is None and g.repeats_identical is not None:
            lines.append(f"{g.prompt_class}: baseline repeats {'identical' if g.repeats_identical else 'DIFFER'}")
        elif g.identical_to_baseline is False:
            lines.append(f"{g.prompt_class}: {g.label} differs from the baseline from character {g.first_divergence}")
    same = [g for g in groups if g.identical_to_baseline]
    if same:
        lines.append(f"{len(same)} MTP configuration/class pairs produced exactly the baseline text")
    out.text("\n".join(lines) if lines else "(no text to compare)")
    out.text(report.determinism_note)


def _render_synthetic(report: SweepReport, out: Output) -> None:
    assert report.synthetic is not None
    rows = [
        {
            "n-max": curve.n_max,
            "forced p": point.target,
            "acceptance": point.acceptance,
            "speedup": None if point.speedup is None else f"{point.speedup:.2f}x",
        }
        for curve in report.synthetic.break_even
        for point in curve.points
    ]
    out.table(rows, title="Synthetic cost curve (--spec-synth-rates: acceptance forced, drafting work real)")
    for curve in report.synthetic.break_even:
        out.text(f"n-max {curve.n_max}: {curve.note}")


def _render_crashes(report: SweepReport, out: Output) -> None:
    out.heading("Engine crashes with MTP")
    for entry in report.crashes:
        if entry.workaround is not None:
            outcome = f"ran {entry.workaround.phrase} (its rows are marked [{entry.workaround.value}])"
        elif entry.tried:
            outcome = "no single change made it start and decode"
        else:
            outcome = "not retried (--workaround off, or the baseline crashed too)"
        out.text(f"{entry.configuration}: {entry.crash.summary}; {outcome}")
        for trial in entry.tried:
            out.text(f"  tried {trial.workaround.value}: {trial.outcome}")


def _render_machine_load(report: SweepReport, out: Output) -> None:
    """The busy-machine warning, before the speeds it concerns (on stderr for csv and json: stdout is data)."""
    load = report.machine_load
    if load is None or load.warning is None:
        return
    if out.is_machine:
        out.warning(load.warning, where="mtpinspect sweep")
        return
    out.heading("Busy machine")
    out.lead(load.warning)
    out.text("busy runs per configuration: "
             + ", ".join(f"{c.configuration} {c.busy_runs} of {c.runs}" for c in load.by_configuration))
