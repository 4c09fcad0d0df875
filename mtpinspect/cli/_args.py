"""Options and argument handling that several commands share, declared once."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click

from mtpinspect.cli._output import Output, OutputFormat
from mtpinspect.sources.policy import MAX_SECONDS, RETRY_AFTER_CAP, FetchPolicy

F = TypeVar("F", bound=Callable[..., Any])


class Seconds(click.FloatRange):
    """A number of seconds: finite (FloatRange lets nan through every bound, and inf means no bound), and at
    most MAX_SECONDS (a week; 1e10 overflowed the socket and lock timeouts)."""

    name = "seconds"

    def __init__(self, min: float | None = None, max: float = MAX_SECONDS) -> None:  # noqa: A002 - click's names
        super().__init__(min=min, max=max)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        # Finite first: inf would otherwise read as merely out of range, nan would pass the range.
        if not math.isfinite(click.FLOAT.convert(value, param, ctx)):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        return super().convert(value, param, ctx)


class EndpointUrl(click.ParamType):
    """--endpoint and --baseline-endpoint: the URL as the tool keeps it (runtime/engines/base.py's
    endpoint_url: its password masked from here on, vLLM's printed /v1 taken off, said on stderr)."""

    name = "url"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from mtpinspect.runtime.engines.base import endpoint_url

        url, note = endpoint_url(str(value))
        if note:
            click.echo(f"note: {note}", err=True)
        return url


class ServerArgsCommand(click.Command):
    """Takes everything after ``--`` as llama-server arguments (``ctx.meta["server_args"]``), so a
    positional MODEL can stay optional and the server's own flags never reach our parser."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            split = args.index("--")
            ctx.meta["server_args"] = tuple(args[split + 1 :])
            args = args[:split]
        return super().parse_args(ctx, args)


def format_option(csv: str, schema: str | None = None) -> Callable[[F], F]:
    """--format: ``csv`` says what the CSV holds, ``schema`` names the JSON schema the json follows.

    Eager, so that --codes (which prints before the command runs) can render in the chosen format.
    """
    json = f"json ({schema}.schema.json)" if schema else "json"
    return click.option(
        "--format", "fmt", type=click.Choice([f.value for f in OutputFormat]), default="table", show_default=True,
        is_eager=True, help=f"Output format: table for people; {json}, csv ({csv}) or md.",
    )


def codes_option(what: str, catalogue: Callable[[], Sequence[Mapping[str, Any]]]) -> Callable[[F], F]:
    """--codes: print a catalogue of codes (one row each) in the chosen format and exit."""

    def show(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if not value or ctx.resilient_parsing:
            return
        rows = list(catalogue())
        out = Output(ctx.params.get("fmt", OutputFormat.table))
        out.table(rows, list(rows[0]), primary=True)
        out.document(rows)
        ctx.exit(0)

    return click.option("--codes", is_flag=True, expose_value=False, callback=show,
                        help=f"Print the catalogue of {what} codes and exit.")


def backend_option(help_text: str) -> Callable[[F], F]:
    """--backend of the pinned build: auto (CUDA where an NVIDIA GPU and the CUDA toolkit are), cpu or cuda."""
    from mtpinspect.runtime.build_cache import AUTO, BACKEND_CHOICES  # the build module only for the commands that build

    return click.option(
        "--backend", type=click.Choice(BACKEND_CHOICES), default=AUTO, show_default=True,
        help=f"{help_text} auto: cuda on a machine with an NVIDIA GPU and the CUDA toolkit (nvcc), else cpu.",
    )


def start_timeout_option(func: F) -> F:
    """--start-timeout: how long each llama-server may take to come up (sweep and diagnose)."""
    from mtpinspect.runtime.timeouts import SILENCE_TIMEOUT_S, START_TIMEOUT_S

    return click.option(
        "--start-timeout", "start_timeout", type=Seconds(min=1), default=START_TIMEOUT_S, show_default=True,
        metavar="SECONDS",
        help="How long a llama-server may take to load the model and answer (also bounds `--version`). One that "
             f"exits, or neither logs nor uses CPU for {SILENCE_TIMEOUT_S:g} s, fails sooner; two configurations that "
             "fail to start for the same reason stop the run.",
    )(func)
def hub_options(command: F) -> F:
    """--timeout, --retries and --deadline (or MTPINSPECT_TIMEOUT, _RETRIES, _DEADLINE) and --no-cache, given
    to the command as one ``policy`` (a FetchPolicy) that bounds its Hub requests."""
    default = FetchPolicy()

    @functools.wraps(command)
    def with_policy(*args: Any, timeout: float, retries: int, deadline: float, cache: bool, **kwargs: Any) -> Any:
        policy = FetchPolicy(timeout=timeout, deadline=deadline, retries=retries, cache=cache)
        return command(*args, policy=policy, **kwargs)

    options = [
        click.option("--timeout", type=Seconds(min=0.1), default=default.timeout, show_default=True,
                     envvar="MTPINSPECT_TIMEOUT", show_envvar=True, metavar="SECONDS",
                     help="Longest wait for the Hub to connect, or to send the next bytes of an answer."),
        click.option("--retries", type=click.IntRange(min=0, max=10), default=default.retries, show_default=True,
                     envvar="MTPINSPECT_RETRIES", show_envvar=True,
                     help="Retries of a Hub read after HTTP 429, 502, 503, 504 or a dropped connection, waiting "
                          f"1, 2, 4... s, or what Retry-After asks (up to {RETRY_AFTER_CAP:g} s)."),
        click.option("--deadline", type=Seconds(min=1), default=default.deadline, show_default=True,
                     envvar="MTPINSPECT_DEADLINE", show_envvar=True, metavar="SECONDS",
                     help="Longest time all the Hub requests of the command may take together."),
        click.option("--cache/--no-cache", "cache", default=default.cache, show_default=True,
                     help="Reuse (and keep) the headers and small files read from the Hub, by repo, commit, file and "
                          "ETag, in headers/ of the cache folder (MTPINSPECT_CACHE_DIR, else ~/.cache/mtpinspect): "
                          "a second check of the same revision makes only the listing request."),
    ]
    for option in reversed(options):
        with_policy = option(with_policy)
    return with_policy  # type: ignore[return-value]
