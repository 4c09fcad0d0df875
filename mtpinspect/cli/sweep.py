"""`mtpinspect sweep`: measure MTP across --spec-draft-n-max with the real llama-server.

Arguments after ``--`` go to every llama-server unchanged (``-- -ngl 99 -t 8 -c 4096``). Progress goes
to stderr: a redrawn bar with ETA on a terminal, one line per run elsewhere (CI logs stay readable).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import click

from mtpinspect.cli._output import Output, OutputFormat, format_option_help, sanitize
from mtpinspect.errors import UsageError
from mtpinspect.runtime.build import BACKENDS
from mtpinspect.sweep import SweepOptions, render, run_sweep
from mtpinspect.sweep.api import JOURNAL_NAME
from mtpinspect.sweep.progress import RUN_DONE, RUN_START, SERVER_FAILED, ProgressEvent

_BAR_WIDTH = 24


def _numbers(text: str, kind: type, option: str) -> tuple:
    try:
        values = tuple(kind(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected a comma-separated list of numbers") from None
    if not values:
        raise UsageError(f"{option}: give at least one value")
    return values


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _describe(event: ProgressEvent) -> str:
    if event.prompt_id is not None and event.repeat is not None:
        where = f"{event.configuration} {event.prompt_id} round {event.repeat + 1}"
        return f"{where}: {event.message}" if event.phase == RUN_DONE else where
    return f"{event.configuration}: {event.message}" if event.configuration else event.message


class ProgressBar:
    """Draws sweep progress on a stream: redrawn in place on a TTY, one line per event otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._drawn = False

    def __call__(self, event: ProgressEvent) -> None:
        if self.tty:
            self._draw(event)
        elif event.phase != RUN_START:
            eta = f" (ETA {_duration(event.eta_seconds)})" if event.done else ""
            self.stream.write(sanitize(f"sweep [{event.done}/{event.total}] {_describe(event)}") + eta + "\n")
            self.stream.flush()

    def _draw(self, event: ProgressEvent) -> None:
        filled = int(_BAR_WIDTH * event.done / event.total) if event.total else _BAR_WIDTH
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        if event.phase == SERVER_FAILED:
            # Failures stay on screen; the bar is redrawn below them.
            self.stream.write("\r\x1b[K" + sanitize(_describe(event)) + "\n")
        label = sanitize(_describe(event))[:80]
        self.stream.write(f"\r[{bar}] {event.done}/{event.total} ETA {_duration(event.eta_seconds)}  {label}\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


class _SweepCommand(click.Command):
    """Takes everything after ``--`` as llama-server arguments, so MODEL stays optional."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            split = args.index("--")
            ctx.meta["server_args"] = tuple(args[split + 1 :])
            args = args[:split]
        return super().parse_args(ctx, args)


@click.command("sweep", cls=_SweepCommand)
@click.argument("model", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--n-max", "n_max", default="1,2,3,4", show_default=True, metavar="LIST",
              help="Draft lengths to measure (--spec-draft-n-max), comma-separated. The baseline always runs.")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Rounds over all configurations; alternate rounds run them in reverse order.")
@click.option("--prompts", metavar="FILE|DIR|CLASS", default=None,
              help="Prompt .txt/.jsonl file, a directory of them, or a built-in class "
                   "(code, prose-en, prose-ja, extraction). Default: all built-in classes.")
@click.option("--n-predict", "n_predict", type=click.IntRange(min=2), default=128, show_default=True,
              help="Tokens generated per request.")
@click.option("--seed", type=int, default=42, show_default=True, help="Sampling seed of every request.")
@click.option("--server", metavar="PATH", default=None,
              help="llama-server to use (default: $LLAMA_SERVER, PATH, cache, else build the pinned one).")
@click.option("--backend", type=click.Choice(BACKENDS), default="cpu", show_default=True,
              help="Backend of the pinned build when none is found.")
@click.option("--mtp-file", "mtp_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Separate mtp-*.gguf head, passed to MTP configurations as -md.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("out/sweep"),
              show_default=True, help="Directory for runs.jsonl, report.json, sweep.png and server logs.")
@click.option("--resume", is_flag=True,
              help="Keep the runs already in OUT/runs.jsonl (same model and settings) and run only the rest.")
@click.option("--synthetic", metavar="RATES", default=None,
              help="Also measure forced acceptance (e.g. 0.2,0.5,0.8,1.0) with --spec-synth-rates, per n-max, "
                   "and report the break-even acceptance.")
@click.option("--format", "fmt", type=click.Choice([f.value for f in OutputFormat]), default="table",
              help=format_option_help("json follows mtpinspect/schemas/sweep.schema.json."))
@click.option("--no-plot", "no_plot", is_flag=True, help="Do not write sweep.png.")
@click.pass_context
def command(
    ctx: click.Context,
    model: Path | None,
    n_max: str,
    repeat: int,
    prompts: str | None,
    n_predict: int,
    seed: int,
    server: str | None,
    backend: str,
    mtp_file: Path | None,
    out_dir: Path,
    resume: bool,
    synthetic: str | None,
    fmt: str,
    no_plot: bool,
) -> int:
    """Measure MTP on this machine: baseline and each n-max, with a recommendation.

    \b
    MODEL is a GGUF with an MTP head; without it, the built-in tiny MTP model is written to OUT and
    swept (a demo that needs no download). Extra llama-server arguments follow `--`:
      mtpinspect sweep model.gguf --n-max 1,2,3 -- -ngl 99 -t 8
    """
    options = SweepOptions(
        n_max=_numbers(n_max, int, "--n-max"),
        repeat=repeat,
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
    )
    bar = ProgressBar(sys.stderr)
    try:
        report = run_sweep(model, options, progress=bar)
    except KeyboardInterrupt:
        bar.close()
        click.echo(
            f"mtpinspect sweep: interrupted; finished runs are in {out_dir / JOURNAL_NAME}, "
            "run again with --resume to complete them",
            err=True,
        )
        return 130
    bar.close()
    render(report, Output(fmt))
    # Nothing measured at all (every server failed) is a failure a script should notice.
    return 0 if report.runs.ok else 1
