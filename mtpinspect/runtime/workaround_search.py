"""Find the change that gets a crashing MTP configuration of llama-server to run, by experiment.

:func:`find_workaround` starts the server with one change of the catalogue (workarounds.py) at a time,
in the catalogue's order (cheapest first: what the change costs in speed), and keeps the first that
starts and decodes with MTP still on: a verified fix, not a guess. Used by `diagnose` (the probe) and
`sweep --workaround auto`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mtpinspect.errors import ServerError
from mtpinspect.runtime.crash import Crash, crash_of
from mtpinspect.runtime.flags import ServerArgs
from mtpinspect.runtime.server import LlamaServer, ServerProcessError
from mtpinspect.runtime.workarounds import Trial, Workaround, WorkaroundSearch

if TYPE_CHECKING:
    from mtpinspect.runtime.find import ServerBinary

# A decode long enough to run several draft and verification steps, short enough for a probe.
CHECK_N_PREDICT = 16
CHECK_PROMPT = "def add(a, b):\n    return a + b\n\n"
_MTP_ON_MARKERS = ("creating MTP draft context", "loading draft model")


def decodes_with_mtp(
    binary: ServerBinary, model: Path, args: ServerArgs, log_path: Path, *, startup_timeout: float = 120.0
) -> tuple[bool, str, Crash | None]:
    """Start the server, decode a few tokens, and check that MTP was on: (ok, outcome, crash)."""
    server = LlamaServer(binary, model, args, log_path=log_path, startup_timeout=startup_timeout)
    try:
        with server:
            server.complete(CHECK_PROMPT, n_predict=CHECK_N_PREDICT, timeout=startup_timeout)
            if not server.alive():
                raise ServerError("llama-server exited after answering")
            log = server.read_log()
    except ServerProcessError as exc:
        crash = crash_of(exc.returncode, server.read_log())
        return False, crash.summary if crash else exc.reason, crash
    except ServerError as exc:
        return False, str(exc), None
    if not any(marker in log for marker in _MTP_ON_MARKERS):
        return False, "started, but without MTP", None
    return True, "starts and decodes", None


def find_workaround(
    binary: ServerBinary,
    model: Path,
    args: ServerArgs,
    log_dir: Path,
    *,
    crash: Crash | None = None,
    mtp_block: int | None = None,
    catalogue: Sequence[Workaround] = tuple(Workaround),
    startup_timeout: float = 120.0,
) -> WorkaroundSearch:
    """Try each applicable change on a crashing MTP command line (``args``), cheapest first; stop at
    the first that starts and decodes. ``crash`` is the crash being worked around, for the record."""
    trials: list[Trial] = []
    for workaround in catalogue:
        changed = workaround.apply(args, mtp_block)
        if changed is None:
            continue
        log_path = log_dir / f"workaround-{len(trials) + 1}.log"
        ok, outcome, _ = decodes_with_mtp(binary, model, changed, log_path, startup_timeout=startup_timeout)
        trials.append(Trial(workaround, changed, ok, outcome))
        if ok:
            break
    return WorkaroundSearch(crash, tuple(trials))
