"""The `mtpinspect` command line: parses arguments, calls the typed API, renders through one sink.

Each command lives in its own module (package: check = inspection/, find = inspection/census.py, sweep =
sweep/, drift = drift/, diagnose = diagnosis/, runtime = runtime/, tiny-model = tiny_model.py and trained_model.py,
train = training/), imported only when that command runs, so `mtpinspect --help` and `check` on a
local file start at once. Errors that are the user's (a missing
repo, a corrupt GGUF, a wrong flag) become one line on stderr and exit status 2.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any

import click

from mtpinspect import __version__
from mtpinspect.errors import INTERRUPTED, MtpinspectError

EXIT_ERROR = 2

# name -> (module under mtpinspect.cli, one-line help for the command list).
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "Read a few kilobytes of a model (Hub repo, GGUF, local snapshot) and say whether its MTP "
                       "head is there, intact, and supported by llama.cpp, vLLM, SGLang."),
    "find": ("find", "List a base model's derivatives on the Hub (quantizations, fine-tunes...) and tell which keep "
                     "a working MTP head, for which engine."),
    "sweep": ("sweep", "Measure MTP on this machine with the real llama-server across --spec-draft-n-max."),
    "drift": ("drift", "Why temperature-0 output changed with MTP on (MTP, batching, a restart, threads), and "
                       "whether each change is a near-tie or a breakdown."),
    "diagnose": ("diagnose", "Explain zero or low MTP acceptance (or a slowdown) and say what to change."),
    "runtime": ("runtime", "Show, build or rebuild the llama-server that sweep uses and check's verify helper."),
    "tiny-model": ("tiny_model", "Write a tiny GGUF with an MTP head whose draft acceptance you choose, or the trained one."),
    "train": ("train", "Train the built-in model's trunk and MTP head again on this CPU (the train extra)."),
}


def command_module(name: str) -> ModuleType | None:
    """The module of the command called ``name``, imported; None when no command is called so."""
    if name not in COMMANDS:
        return None
    return importlib.import_module(f"mtpinspect.cli.{COMMANDS[name][0]}")


class LazyGroup(click.Group):
    """A group whose commands are imported when invoked; the command list comes from COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = command_module(name)
        if module is None:
            return None
        command: click.Command = module.command
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ClosedPipe from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The short help of each command without importing it.
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mtpinspect")
def cli() -> None:
    """Will a model's MTP / NextN head work for speculative decoding?"""


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line and exit 2 for user errors, never a traceback for them."""
    from mtpinspect.cli._output import GuardedStdout, StdoutError

    stdout, sys.stdout = sys.stdout, GuardedStdout(sys.stdout)  # type: ignore[assignment]
    try:
        result = cli.main(args=argv, prog_name="mtpinspect", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        _say("hint", "mtpinspect: interrupted")
        return INTERRUPTED
    except ClosedPipe:
        # `mtpinspect check X | head`: the reader has all it wanted. Exit as a program killed by SIGPIPE
        # would (128 + 13), quietly, and let nothing left in the buffer complain at exit.
        _drop_stdout()
        return 128 + 13
    except click.ClickException as exc:
        # Click's usage errors are several lines; users get one that names the command and the flag.
        ctx = getattr(exc, "ctx", None)
        _say("error", exc.format_message(), where=ctx.command_path if ctx else "mtpinspect")
        return EXIT_ERROR
    except MtpinspectError as exc:
        _say("error", str(exc))
        if isinstance(exc, StdoutError):
            _drop_stdout()
        return EXIT_ERROR
    finally:
        sys.stdout = stdout
    return result if isinstance(result, int) else 0


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the text still buffered does not fail again as the program exits."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass


class ClosedPipe(Exception):
    """stdout or stderr was closed by its reader (click would turn the BrokenPipeError into exit 1)."""


def _say(kind: str, message: str, **where: str) -> None:
    from mtpinspect.cli._output import Output  # only when there is something to say

    try:
        getattr(Output(), kind)(message, **where)
    except OSError:
        pass  # stderr is gone too (a closed terminal, a closed pipe): nobody is there to read it
