"""How much of a sweep's wall time is mtpinspect's own, rather than llama-server's work.

Runs real sweeps on the built-in tiny MTP model (or ``--size heavy``) and splits each one's wall time between the server's
work and the tool's, using the server's own clock where it has one:

server's work
- measured requests: the ``prompt_ms + predicted_ms`` llama-server reports for each measured run;
- loading: process start to its "listening on" log line (llama-server stamps every log line with the
  time since it started), per server start;

the tool's own share: everything else, in these parts
- warm-ups: the discarded first request per server start, its scrapes and log read (of which the
  server's own time for the request, from its "total time" log line, is shown apart);
- start-up latency: from the server being ready (its log) to the tool noticing (its /health poll);
- per-request overhead: each measured run's wall time around the HTTP request minus the server time;
- between requests: /metrics scrapes, the log line, the journal, stopping servers, the report;
- the PNG plot, and writing the tiny model (a sweep of the user's own model does not write one).

"tool's own share" counts all of these; "as first defined" is the narrower figure this benchmark
printed before (per-request overhead + between requests + plot + tiny model: no warm-ups, no start-up
latency). The goal is <= 5 %. On the tiny model a request takes 15-120 ms on a 2-core machine
(llama-server's speed on it swings 5-10x with the load), so the tool's fixed costs (the PNG, the
server starts) make these shares an upper bound that moves with the server's speed. The per-run and
per-start milliseconds are the figures that carry over to a real model; ``--size heavy`` measures on
a model whose decode outweighs llama-server's per-step work, as a real model's does.

Each invocation runs ``--runs`` sweeps; the table gives the median and the range. The load average
is printed before and after: on a shared machine llama-server's times swing with it, so compare
before/after figures measured alternately in the same session.

    python bench/bench_sweep_overhead.py [--repeat 1] [--order rounds|grouped] [--runs 3]
        [--n-predict 128] [--threads N] [--size tiny|heavy] [--server PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mtpinspect.sweep.api as api
import mtpinspect.sweep.run as run
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.api import TINY_ACCEPTANCE
from mtpinspect.sweep.journal import Journal
from mtpinspect.tiny_model import SIZES, spec_for_size, write_tiny_model
from mtpinspect.vocabulary import RunStatus

# llama.cpp's log prefix: minutes.seconds.milliseconds.microseconds since the process started.
_STAMP = re.compile(r"^(\d+)\.(\d+)\.(\d+)\.(\d+) ")
_TOTAL_MS = re.compile(r"total time =\s*([\d.]+) ms")
TOOL = "tool's own share"
WARMUP_MEDIAN = "warm-up server time per start"
BETWEEN = "  between requests (scrapes, log, journal, stop, report)"


def _timed(module: Any, name: str, spent: dict[str, float]) -> Callable[[], None]:
    """Wrap module.name so the seconds spent in it add up under spent[name]; returns the undo."""
    original: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - began

    setattr(module, name, wrapper)
    return lambda: setattr(module, name, original)


def _stamp(line: str) -> float | None:
    match = _STAMP.match(line)
    if match is None:
        return None
    minutes, seconds, millis, micros = (int(part) for part in match.groups())
    return minutes * 60 + seconds + millis / 1e3 + micros / 1e6


def _server_log(path: Path) -> tuple[float, float]:
    """From one server's log: seconds from process start to "listening on", and the warm-up's server time."""
    ready, warmup = 0.0, 0.0
    with path.open(encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if not ready and "listening on" in line:
                ready = _stamp(line) or 0.0
            total = _TOTAL_MS.search(line)
            if total is not None:  # the first request a server serves is the warm-up
                warmup = float(total.group(1)) / 1000.0
                break
    return ready, warmup


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def measure_once(model: Path | None, options: SweepOptions) -> dict[str, float]:
    """One sweep (None: of the built-in tiny model), its wall time split into parts (seconds), plus counts."""
    spent: dict[str, float] = {}
    undo = [_timed(run, "_warm_up", spent), _timed(api, "write_plot", spent), _timed(api, "_model", spent)]
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    try:
        run_sweep(model, options)
        wall = time.perf_counter() - began
    finally:
        for restore in undo:
            restore()
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)

    records = Journal(options.out_dir / api.JOURNAL_NAME).read().records
    runs = [r for r in records if r["kind"] == "run" and r["status"] == RunStatus.ok]
    servers = [r for r in records if r["kind"] == "server" and r["startup_seconds"] is not None]
    request_server = sum((r["prompt_ms"] + r["predicted_ms"]) / 1000.0 for r in runs)
    request_overhead = sum(r["wall_seconds"] for r in runs) - request_server
    loads = [_server_log(Path(s["log_path"])) for s in servers]
    load = sum(ready for ready, _ in loads)
    warmup_server = sum(warm for _, warm in loads)
    startup = sum(s["startup_seconds"] for s in servers)
    warmup = spent.get("_warm_up", 0.0)
    plot = spent.get("write_plot", 0.0)
    tiny = spent.get("_model", 0.0)
    between = wall - request_server - request_overhead - startup - warmup - plot - tiny
    tool = wall - request_server - load
    return {
        "wall": wall,
        "server: measured requests": request_server,
        "server: loading": load,
        TOOL: tool,
        "  warm-ups": warmup,
        "    of which the server's time": warmup_server,
        "  start-up latency (ready -> noticed)": startup - load,
        "  per-request overhead (HTTP)": request_overhead,
        BETWEEN: between,
        "  PNG plot": plot,
        "  writing the tiny model": tiny,
        "as first defined (no warm-ups, start-up)": request_overhead + between + plot + tiny,
        "tool process CPU seconds": (cpu_after.ru_utime + cpu_after.ru_stime)
        - (cpu_before.ru_utime + cpu_before.ru_stime),
        "runs": len(runs),
        "server starts": len(servers),
        # Per start, the median: one warm-up caught in a burst of load outweighs the sum of the others.
        WARMUP_MEDIAN: statistics.median(warm for _, warm in loads) if loads else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default=None, help="llama-server (default: the one sweep would find)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--order", default="rounds", choices=("rounds", "grouped"))
    parser.add_argument("--runs", type=int, default=3, help="sweeps to run; the table gives median and range")
    parser.add_argument("--n-predict", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None, help="llama-server -t (default: its own)")
    parser.add_argument("--size", default="tiny", choices=SIZES,
                        help="tiny: the sweep's own demo model; heavy: a model whose decode outweighs the "
                             "server's per-step work, as a real one's does (written once, not timed)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    server_args = ("-t", str(args.threads)) if args.threads else ()
    model = None
    if args.size != "tiny":
        out.mkdir(parents=True, exist_ok=True)
        (model,) = write_tiny_model(out / f"{args.size}-mtp.gguf", spec_for_size(args.size, acceptance=TINY_ACCEPTANCE))

    measured: list[dict[str, float]] = []
    for index in range(args.runs):
        options = SweepOptions(
            n_max=(1, 2, 3, 4), repeat=args.repeat, order=args.order, n_predict=args.n_predict,
            server=args.server, server_args=server_args, out_dir=out / f"sweep-{index}",
        )
        load_before = _load()
        parts = measure_once(model, options)
        measured.append(parts)
        share = 100 * parts[TOOL] / parts["wall"]
        print(f"sweep {index + 1}/{args.runs}: {parts['wall']:.2f} s, tool's own share {share:.1f} %, "
              f"load average {load_before} -> {_load()}", flush=True)

    first = measured[0]
    print(f"\nsweep of the {args.size} model: {first['runs']:.0f} runs, {first['server starts']:.0f} server starts, "
          f"repeat {args.repeat}, order {args.order}, n_predict {args.n_predict}, "
          f"llama-server -t {args.threads or 'default'}; {args.runs} sweeps, median [min-max]")
    print(f"  {'':<50} {'seconds':>22}  {'% of wall':>20}")
    for key in first:
        if key in ("runs", "server starts", WARMUP_MEDIAN):
            continue
        seconds = [m[key] for m in measured]
        shares = [100 * m[key] / m["wall"] for m in measured]
        share = "" if key == "wall" else (
            f"{statistics.median(shares):6.1f} [{min(shares):.1f}-{max(shares):.1f}]"
        )
        print(f"  {key:<50} {statistics.median(seconds):8.3f} [{min(seconds):.3f}-{max(seconds):.3f}]  {share:>20}")
    def spread(values: list[float]) -> str:
        return f"{1000 * statistics.median(values):.1f} ms [{1000 * min(values):.1f}-{1000 * max(values):.1f}]"

    per_run = [(m["  per-request overhead (HTTP)"] + m[BETWEEN]) / m["runs"] for m in measured]
    per_start = [(m["  warm-ups"] - m["    of which the server's time"] + m["  start-up latency (ready -> noticed)"])
                 / m["server starts"] for m in measured]
    print(f"  per run, HTTP + between requests (fixed costs spread over the runs): {spread(per_run)}")
    print(f"  per server start, the tool's part (start-up latency + the warm-up beyond the server's time): "
          f"{spread(per_start)}; the warm-up's server time, median per start: {spread([m[WARMUP_MEDIAN] for m in measured])}")
    print(f"  output: {out}")


if __name__ == "__main__":
    main()
