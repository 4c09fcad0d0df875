"""How much of a sweep's wall time is mtpinspect's own, rather than llama-server's work.

Runs a real sweep on the built-in tiny MTP model and splits its wall time into:

- server request time: the ``prompt_ms + predicted_ms`` llama-server reports for each measured run;
- request overhead: each run's wall time around the HTTP request minus that server time
  (HTTP, JSON, the server's own bookkeeping outside its timers);
- server start-up waits (process start to /health ok) and warm-up requests, reported separately;
- everything else: /metrics scrapes, log reading, journal fsyncs, statistics, report and plot.

The goal (issue 3) is tool overhead <= 5 % of sweep wall time, and exactly one server start per visit
(one per configuration with --repeat 1). The tiny model decodes a request in milliseconds, so these
shares are an upper bound: with a real model the server's time grows and the tool's stays the same.

    python bench/bench_sweep_overhead.py [--server PATH] [--repeat 1] [--n-predict 128] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mtpinspect.sweep.api as api
import mtpinspect.sweep.run as run
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.journal import Journal
from mtpinspect.vocabulary import RunStatus


def _timed(module: Any, name: str, spent: dict[str, float]) -> None:
    """Wrap module.name so the seconds spent in it add up under spent[name]."""
    original: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - began

    setattr(module, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default=None, help="llama-server (default: the one sweep would find)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--n-predict", type=int, default=128)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-sweep-"))

    spent: dict[str, float] = {}
    _timed(run, "_warm_up", spent)
    _timed(api, "write_plot", spent)
    options = SweepOptions(
        n_max=(1, 2, 3, 4), repeat=args.repeat, n_predict=args.n_predict, server=args.server, out_dir=out
    )
    began = time.perf_counter()
    report = run_sweep(None, options)
    wall = time.perf_counter() - began

    records = Journal(out / api.JOURNAL_NAME).read().records
    runs = [r for r in records if r["kind"] == "run" and r["status"] == RunStatus.ok]
    servers = [r for r in records if r["kind"] == "server"]
    server_time = sum((r["prompt_ms"] + r["predicted_ms"]) / 1000.0 for r in runs)
    request_overhead = sum(r["wall_seconds"] for r in runs) - server_time
    startup = sum(r["startup_seconds"] or 0.0 for r in servers)
    warmup = spent.get("_warm_up", 0.0)
    plot = spent.get("write_plot", 0.0)
    rest = wall - server_time - request_overhead - startup - warmup
    configs = len(report.settings["n_max"]) + 1

    def line(label: str, seconds: float) -> None:
        print(f"  {label:<44} {seconds:8.2f} s  {100 * seconds / wall:5.1f} %")

    print(f"sweep of the tiny model: {len(runs)} runs, {configs} configurations, repeat {args.repeat}, "
          f"n_predict {args.n_predict}, {len(report.prompt_classes)} prompt classes")
    print(f"  {'sweep wall time':<44} {wall:8.2f} s  100.0 %")
    line("llama-server request time (prompt+predicted)", server_time)
    line("request overhead (wall - server time)", request_overhead)
    line("server start-up waits", startup)
    line("warm-up requests", warmup)
    line("other tool work (scrapes, journal, report)", rest - plot)
    line("  of which the PNG plot", plot)
    print(f"  tool overhead (request overhead + other): {100 * (request_overhead + rest) / wall:.1f} % of wall time")
    print(f"  server starts: {len(servers)} for {configs} configurations "
          f"({len(servers) / configs:.2f} per configuration)")
    print(f"  output: {out}")


if __name__ == "__main__":
    main()
