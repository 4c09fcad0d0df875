"""What a sweep is asked to do: the typed options of :func:`mtpinspect.sweep.run_sweep`, and the check of
them against the bounds each numeric option must keep (runtime/bounds.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.runtime.bounds import (
    CONCURRENCY_BOUND,
    LONG_PROMPT_BOUND,
    N_MAX_BOUND,
    N_PREDICT_BOUND,
    REPEAT_BOUND,
    SEED_BOUND,
    check_rate,
    check_temperature,
)
from mtpinspect.runtime.build_cache import AUTO
from mtpinspect.runtime.timeouts import START_TIMEOUT_S
from mtpinspect.sweep.prompts import Prompt
from mtpinspect.vocabulary import Engine, Reasoning, RequestKind, WorkaroundMode


@dataclass(frozen=True)
class SweepOptions:
    n_max: tuple[int, ...] = (1, 2, 3, 4)
    repeat: int = 3
    order: str = "rounds"  # or "grouped": all rounds of a configuration on one server start
    # A .txt/.jsonl file, a directory of them, a built-in class name, or the prompts themselves;
    # None: every built-in class.
    prompts: str | Path | Sequence[Prompt] | None = None
    n_predict: int = 128
    seed: int = 42
    server: str | Path | None = None
    build_server: bool = True
    backend: str = AUTO  # the pinned build's (runtime/build.py BACKEND_CHOICES)
    mtp_file: Path | None = None
    out_dir: Path = Path("out/sweep")
    resume: bool = False
    synthetic: tuple[float, ...] = ()
    server_args: tuple[str, ...] = ()
    plot: bool = True
    startup_timeout: float = START_TIMEOUT_S
    request_timeout: float = 600.0
    workaround: WorkaroundMode = WorkaroundMode.auto
    # Any engine (sweep/engine_run.py): its own server command per configuration, with {n} and {port}
    # (and {model}) in it, and the baseline's (None: the template without its speculative options) ...
    engine: Engine | None = None
    serve: str | None = None
    serve_baseline: str | None = None
    # ... or a server already running at a URL (with the baseline's at another); n_max then names its draft
    # length (empty: read from its per-position counters).
    endpoint: str | None = None
    baseline_endpoint: str | None = None
    # How prompts are sent (sweep/request.py): auto is what a chat app sends for the model.
    request: RequestKind = RequestKind.auto
    reasoning: Reasoning = Reasoning.auto
    # Also write each configuration's runs as mtp-bench's --out JSON here (sweep/mtp_bench.py).
    mtp_bench_json: Path | None = None
    # Serving conditions, each an opt-in axis that multiplies the plan (llama-server sweeps only):
    concurrency: tuple[int, ...] = (1,)  # requests at once, on a server with as many slots
    temperature: tuple[float, ...] = (0.0,)  # sampling temperatures; above 0 each round samples with other seeds
    # Speculative methods side by side: draft-mtp, ngram-simple, ngram-mod, draft:FILE (sweep/plan.py Method).
    methods: tuple[str, ...] = ("draft-mtp",)
    # Add a class of prompts of about this many tokens (a document to summarise, code to edit): time to the
    # first token and prompt speed with and without MTP. None: no long prompts.
    long_prompt: int | None = None


def check_bounds(options: SweepOptions) -> None:
    """UsageError for the first numeric option out of its bounds, before anything starts."""
    for value in options.n_max:
        N_MAX_BOUND.check(value)
    N_PREDICT_BOUND.check(options.n_predict)
    REPEAT_BOUND.check(options.repeat)
    SEED_BOUND.check(options.seed)
    for rate in options.synthetic:
        check_rate(rate)
    for value in options.concurrency:
        CONCURRENCY_BOUND.check(value)
    for temperature in options.temperature:
        check_temperature(temperature)
    if options.long_prompt is not None:
        LONG_PROMPT_BOUND.check(options.long_prompt)
