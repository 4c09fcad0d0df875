"""The `mtpinspect` command and `python -m mtpinspect`: signal handlers first, then the command line.

A signal can come at any moment, even while the command line is still being imported (a script's
timeout, a closed terminal, an SSH session that drops), so the handlers are set before that import,
and the import runs where an interrupt ends the program with one line instead of a traceback.
SIGHUP and SIGQUIT end it like SIGTERM and Ctrl-C: every llama-server and temporary folder it made
is cleaned up by the ``with`` blocks that own them.
"""

from __future__ import annotations

import signal
import sys

from mtpinspect.errors import INTERRUPTED


def _terminate(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def entry() -> None:
    for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):  # SIGHUP and SIGQUIT do not exist on Windows
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _terminate)
    try:
        from mtpinspect.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("mtpinspect: interrupted\n")
        sys.exit(INTERRUPTED)
    sys.exit(main())


if __name__ == "__main__":
    entry()
