"""``python -m mtpinspect.runtime.watchdog TOKEN``: waits for mtpinspect to exit (its stdin, a pipe only
mtpinspect holds, reaches end of file), then stops every process its ``--serve`` commands started that
is still running (serve_scope.py), and exits. It outlives mtpinspect by the few seconds that takes."""

from __future__ import annotations

import signal
import sys

from mtpinspect.runtime.serve_scope import marked, terminate

_GRACE_S = 10.0


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0]:
        print("usage: python -m mtpinspect.runtime.watchdog TOKEN", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the pipe ends it
    while sys.stdin.buffer.read(4096):
        pass  # nothing is ever written: only end of file matters
    terminate(marked(argv[0], prefix=True), _GRACE_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
