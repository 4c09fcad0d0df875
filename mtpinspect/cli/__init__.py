"""The `mtpinspect` command line: parses arguments, calls the typed API, renders through one sink.

Each command group lives in its own module and is registered here. Errors that are the user's
(a missing repo, a corrupt GGUF, a wrong flag) become one line on stderr and exit status 2.
"""

from __future__ import annotations

import signal
import sys

import click

from mtpinspect import __version__
from mtpinspect.cli._output import Output
from mtpinspect.errors import MtpinspectError

EXIT_ERROR = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mtpinspect")
def cli() -> None:
    """Will a model's MTP / NextN head work for speculative decoding?

    \b
    check       read a few kilobytes of a model (Hub repo, GGUF, local snapshot) and say
                whether its MTP head is there, intact, and supported by llama.cpp, vLLM, SGLang
    sweep       measure MTP on this machine with the real llama-server across --spec-draft-n-max
    diagnose    explain zero or low MTP acceptance (or a slowdown) and say what to change
    runtime     show, build or rebuild the llama-server that sweep uses
    tiny-model  write a tiny GGUF with an MTP head whose draft acceptance you choose
    """


def _register() -> None:
    # Imported here so that `mtpinspect --help` stays fast and each group stays in its own module.
    from mtpinspect.cli import check, diagnose, runtime, sweep, tiny_model

    for module in (check, sweep, diagnose, runtime, tiny_model):
        cli.add_command(module.command)


_register()


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line and exit 2 for user errors, never a traceback for them."""
    out = Output()
    try:
        result = cli.main(args=argv, prog_name="mtpinspect", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        out.hint("mtpinspect: interrupted")
        return 130
    except click.ClickException as exc:
        # Click's usage errors are several lines; users get one that names the command and the flag.
        ctx = getattr(exc, "ctx", None)
        out.error(exc.format_message(), where=ctx.command_path if ctx else "mtpinspect")
        return EXIT_ERROR
    except MtpinspectError as exc:
        out.error(str(exc))
        return EXIT_ERROR
    return result if isinstance(result, int) else 0


def _terminate(signum: int, _frame: object) -> None:
    # A plain `kill` must clean up like Ctrl-C: every llama-server we started is stopped by `with` blocks.
    raise KeyboardInterrupt(f"signal {signum}")


def entry() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())
