"""The `mtpinspect` command and `python -m mtpinspect`: signal handlers first, then the command line.

A signal can come at any moment, even while the command line is still being imported (a script's
timeout, a closed terminal, an SSH session that drops), so the handlers are set before that import,
and the import runs where an interrupt ends the program with one line instead of a traceback.
SIGHUP and SIGQUIT end it like SIGTERM and Ctrl-C: every llama-server and temporary folder it made
is cleaned up by the ``with`` blocks that own them.

The command's modules are imported before the command line is parsed, with the garbage collector paused,
and then frozen (gc.freeze): they live as long as the process, and a full collection while a big header
is parsed walked all of them again for nothing (0.04 s of a 0.41 s `check` of a GLM-4.6-shaped GGUF;
bench/README.md). Collection is on again for the command itself. Only here, in a process of mtpinspect's
own: a program that calls ``mtpinspect.cli.main`` keeps its collector as it was.

A command stopped by Ctrl-C may leave a worker thread behind, still inside a read from a server that answers
nothing (mtpinspect/workers.py): the process then ends without tearing the interpreter down around it,
which crashed it (issue 47).
"""

from __future__ import annotations

import contextlib
import gc
import signal
import sys

from mtpinspect.errors import INTERRUPTED
from mtpinspect.workers import exit_process


def _terminate(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def entry() -> None:
    for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):  # SIGHUP and SIGQUIT do not exist on Windows
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _terminate)
    gc.disable()
    try:
        from mtpinspect.cli import command_module, main

        if len(sys.argv) > 1:
            # A module that fails to import: main() imports it again and says why in its own words.
            with contextlib.suppress(Exception):
                command_module(sys.argv[1])
    except KeyboardInterrupt:
        sys.stderr.write("mtpinspect: interrupted\n")
        sys.exit(INTERRUPTED)
    finally:
        gc.enable()
        gc.freeze()
    exit_process(main())


if __name__ == "__main__":
    entry()
