"""What a drift run is asked to do: the typed options of :func:`mtpinspect.drift.run_drift` and their bounds
(the numeric bounds it shares with the sweep are in the one table of them, runtime/bounds.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.runtime.bounds import N_MAX_BOUND, N_PREDICT_BOUND, SEED_BOUND, Bound
from mtpinspect.runtime.build_cache import AUTO
from mtpinspect.runtime.timeouts import START_TIMEOUT_S
from mtpinspect.sweep.prompts import Prompt
from mtpinspect.vocabulary import Engine

# 200 tokens: on CPU, thread count and MTP only act past context position 256 (docs/drift.md), which
# the built-in prompts (60-150 tokens) reach only with about 200 generated tokens.
DEFAULT_N_PREDICT = 200
DEFAULT_N_MAX = (1, 3)


@dataclass(frozen=True)
class DriftOptions:
    n_max: tuple[int, ...] = DEFAULT_N_MAX
    # A .txt/.jsonl file, a directory of them, a built-in class name, or the prompts; None: the built-in set.
    prompts: str | Path | Sequence[Prompt] | None = None
    n_predict: int = DEFAULT_N_PREDICT
    seed: int = 42
    # Prompts sent at once in the batching check, each on its own slot; None: one per prompt (up to the bound).
    slots: int | None = None
    # CPU: the thread count compared with -t 1 (every other server runs -t 1); None: this machine's cores,
    # 0: no thread check.
    threads: int | None = None
    server: str | Path | None = None
    build_server: bool = True
    backend: str = AUTO
    mtp_file: Path | None = None
    out_dir: Path = Path("out/drift")
    server_args: tuple[str, ...] = ()
    startup_timeout: float = START_TIMEOUT_S
    request_timeout: float = 600.0
    # Any engine, as `sweep` takes it: the user's server command ({n}, {port}, {model}) or running servers.
    engine: Engine | None = None
    serve: str | None = None
    serve_baseline: str | None = None
    endpoint: str | None = None
    baseline_endpoint: str | None = None


SLOTS_BOUND = Bound("--slots", 1, 64, "one llama-server slot per prompt sent at once, each with its own context")
THREADS_BOUND = Bound("--threads", 0, 1024, "compared with -t 1; 0 leaves the thread check out")
PROMPTS_BOUND = Bound("prompts", 1, 64, "every prompt runs on every pass, and all of them at once in the batching check")
# The context each slot gets: the generated tokens and a prompt of up to this many tokens.
PROMPT_ALLOWANCE = 512


def check_bounds(options: DriftOptions) -> None:
    """UsageError for the first numeric option out of its bounds, before anything starts."""
    for value in options.n_max:
        N_MAX_BOUND.check(value)
    N_PREDICT_BOUND.check(options.n_predict)
    SEED_BOUND.check(options.seed)
    if options.slots is not None:
        SLOTS_BOUND.check(options.slots)
    if options.threads is not None:
        THREADS_BOUND.check(options.threads)


def context_size(slots: int, n_predict: int) -> int:
    """-c for every server of the run (held fixed): room for each slot's prompt and answer, in 256-token steps."""
    need = slots * (n_predict + PROMPT_ALLOWANCE)
    return max(8192, -(-need // 256) * 256)
