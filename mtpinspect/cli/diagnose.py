"""`mtpinspect diagnose [MODEL] [--log FILE ...] [-- llama-server args]`: why is MTP acceptance zero or low?"""

from __future__ import annotations

from pathlib import Path

import click

from mtpinspect.causes import CAUSES, MECHANISM_WEIGHT
from mtpinspect.cli._args import EndpointUrl, ServerArgsCommand, codes_option, format_option, hub_options, start_timeout_option
from mtpinspect.cli._output import Output
from mtpinspect.diagnosis import DiagnosisReport
from mtpinspect.runtime.bounds import N_PREDICT_BOUND
from mtpinspect.sources.policy import FetchPolicy
from mtpinspect.vocabulary import RequestKind


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{value:.0%}"


def render(report: DiagnosisReport, out: Output) -> None:
    out.document(report)
    out.text(report.verdict)
    out.table(
        [
            {
                "rank": i,
                "code": c.code,
                "confidence": f"{c.confidence:.2f} {c.confidence_word}",
                "evidence": "\n".join([c.message, *c.evidence]),
                "fix": c.fix,
            }
            for i, c in enumerate(report.causes, start=1)
        ],
        ["rank", "code", "confidence", "evidence", "fix"],
        title="Causes, most likely first",
        primary=True,
    )
    probe = report.probe
    if probe is not None:
        out.table(
            [
                {
                    "configuration": ("baseline" if f.n_max is None else f"n-max {f.n_max}")
                    + (f" [{f.workaround.value}]" if f.workaround else ""),
                    "class": f.prompt_class,
                    "acceptance": _pct(f.acceptance),
                    "mean length": f.mean_length,
                    "tok/s": f.tokens_per_second,
                    "speedup": None if f.speedup is None else f"{f.speedup:.2f}x",
                    "error": f.error,
                }
                for f in probe.figures
            ],
            ["configuration", "class", "acceptance", "mean length", "tok/s", "speedup", "error"],
            title=(f"Measured at {probe.server.path}: {probe.server.version}, n_predict {probe.n_predict}, two rounds"
                   if report.endpoint else
                   f"Probe: llama-server {probe.server.version}, n_predict {probe.n_predict}, one round"),
        )
        if probe.request is not None:
            out.text(f"probe requests: {probe.request.sent} ({probe.request.why})")
        if probe.as_given is not None:
            given = probe.as_given
            state = given.failure or (f"ran; acceptance {_pct(given.log.acceptance)}" if given.log and given.log.drafted
                                      else "ran; no draft tokens")
            out.text(f"as given: {' '.join(given.command)}\n  -> {state}")
            if given.workarounds is not None:
                tried = "".join(f"\n  tried {t.workaround.value}: {t.outcome}" for t in given.workarounds.trials)
                out.text(f"  {given.workarounds.summary}{tried}")
        if probe.out_dir:
            out.text(f"probe files: {probe.out_dir}")
    else:
        out.text(f"probe: not run ({report.probe_skipped})")
    check = report.static.report if report.static else None
    if check is not None:
        out.table(
            [{"severity": f.severity, "code": f.code, "message": f.message} for f in check.findings],
            ["severity", "code", "message"],
            title=f"Static findings (check): {check.verdict}",
        )
    if report.logs:
        out.table(
            [{"log": log.path, "format": "\n".join(log.formats) or log.kind, "drafted": log.drafted,
              "accepted": log.accepted, "acceptance": _pct(log.acceptance),
              "mean length": None if log.mean_length is None else f"{log.mean_length:.2f}",
              "lacks": ", ".join(log.missing) or None, "failure": log.failure} for log in report.logs],
            ["log", "format", "drafted", "accepted", "acceptance", "mean length", "lacks", "failure"],
            title="Logs",
        )
    for note in report.notes:
        out.text(f"note: {note}")


def _cause_codes() -> list[dict[str, object]]:
    return [{"code": code, "mechanism": kind.mechanism, "weight": MECHANISM_WEIGHT[kind.mechanism], "meaning": kind.meaning}
            for code, kind in CAUSES.items()]


@click.command("diagnose", cls=ServerArgsCommand)
@click.argument("model", required=False)
@click.option("--mtp-file", metavar="F", help="The mtp- sidecar GGUF the run uses (default: found beside MODEL).")
@click.option("--server", metavar="PATH", help="llama-server for the probe (default: $LLAMA_SERVER, else the pinned build, cached or built).")
@click.option("--log", "logs", multiple=True, metavar="FILE",
              help="Log of a run made elsewhere, whole or a fragment: llama-server stderr, a vLLM or SGLang log (also "
                   "`vllm bench serve` output) or traceback, Ollama's or LM Studio's log or error line, a shell's crash "
                   "line under the command, a usage listing, a saved /metrics page, or mtp-bench's printed rows and "
                   "Aggregate JSON or its --out file. Read by what its lines say; refused only when no line means "
                   "anything. Repeatable.")
@click.option("--no-probe", is_flag=True, help="Do not run llama-server; use static evidence and logs only.")
@click.option("--n-predict", "n_predict", type=click.IntRange(N_PREDICT_BOUND.low, N_PREDICT_BOUND.high), default=64, show_default=True,
              help="Tokens generated per probe request.")
@click.option("--prompts", metavar="FILE|DIR", help="Probe prompts (.txt/.jsonl) instead of the built-in code and prose-en (the copy class is measured beside them, unless they have a class named copy).")
@click.option("--request", "request", type=click.Choice([k.value for k in RequestKind]), default=RequestKind.auto.value,
              show_default=True,
              help="How the probe sends its prompts: chat (through the model's chat template), completion (raw "
                   "text), auto (chat when the GGUF carries a chat template, as a chat app does).")
@click.option("--probe-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the probe's files (server logs, runs.jsonl) here (default: a temporary folder, removed).")
@click.option("--revision", help="Branch, tag or commit of a Hub repo MODEL.")
@click.option("--token", help="Hugging Face token (default: HF_TOKEN or the saved login).")
@click.option("--endpoint", metavar="URL", type=EndpointUrl(),
              help="A running llama-server, vLLM or SGLang server: measured where it runs (never restarted), each "
                   "prompt twice at temperature 0, acceptance per class and position from its counters.")
@click.option("--baseline-endpoint", "baseline_endpoint", metavar="URL", type=EndpointUrl(),
              help="With --endpoint: the same model served without speculative decoding (speedup, same text).")
@click.option("--n-max", "n_max", type=click.IntRange(1, None), default=None,
              help="With --endpoint: its draft length (read from the counters of vLLM 0.8 and later otherwise).")
@hub_options
@start_timeout_option
@format_option(csv="causes", schema="diagnose")
@codes_option("cause", _cause_codes)
@click.pass_context
def command(
    ctx: click.Context,
    model: str | None,
    mtp_file: str | None,
    server: str | None,
    logs: tuple[str, ...],
    no_probe: bool,
    n_predict: int,
    prompts: str | None,
    request: str,
    probe_dir: Path | None,
    revision: str | None,
    token: str | None,
    start_timeout: float,
    fmt: str,
    policy: FetchPolicy,
    endpoint: str | None,
    baseline_endpoint: str | None,
    n_max: int | None,
) -> int:
    """Explain zero or low MTP acceptance, or MTP that makes decoding slower, and say what to change.

    \b
    MODEL is anything `check` takes (local GGUF, Hub repo, REPO:QUANT, snapshot folder, ollama:NAME,
    lmstudio:PUBLISHER/REPO). For a local GGUF, and for an app's model, a short probe runs on the real
    llama-server: the extra arguments after `--` once as given (when they set --spec-type, -md or
    --spec-draft-n-max), then baseline and n-max 1 and 3 on code and prose-en prompts and on the copy
    class (text any head that matches its model drafts nearly all of: it tells a foreign or weak head
    from hard text). For an Ollama
    model the run is the one Ollama starts: its Modelfile's temperature (Ollama's 0.8 when unset),
    num_ctx and draft_num_predict (no --spec-type when unset) come before the extra arguments, and
    the fixes are said as Modelfile settings. MODEL may be omitted when --log files describe a run
    made elsewhere.
    \b
    Examples:
      mtpinspect diagnose model.gguf -- --spec-type mtp -t 8
      mtpinspect diagnose --log vllm.log
      mtpinspect diagnose unsloth/Qwen3.5-2B-MTP-GGUF:Q4_K_M --log server.log
      mtpinspect diagnose ollama:qwen3.6:27b-mtp-q4_K_M -- -t 8
      mtpinspect diagnose --endpoint http://gpu-box:8000 --baseline-endpoint http://gpu-box:8001
    \b
    Exit status: 0 when no cause of low acceptance or slowdown is found, 1 when causes are found,
    2 on bad input (missing file, unreadable log, a model llama-server cannot run at all).
    """
    from mtpinspect.diagnosis import diagnose

    report = diagnose(
        model,
        mtp_file=mtp_file,
        server=server,
        server_args=ctx.meta.get("server_args", ()),
        log_files=logs,
        probe=not no_probe,
        revision=revision,
        token=token,
        n_predict=n_predict,
        prompts=prompts,
        probe_dir=probe_dir,
        policy=policy,
        start_timeout=start_timeout,
        endpoint=endpoint,
        baseline_endpoint=baseline_endpoint,
        n_max=n_max,
        request=RequestKind(request),
    )
    render(report, Output(fmt))
    return report.exit_code
