"""The sweep under serving conditions (issue 33): one short sweep per axis, figures printed per condition.

Each axis is a real ``mtpinspect.sweep.run_sweep`` on llama-server: ``--concurrency``, ``--temperature``,
``--method`` and ``--long-prompt``. The model is the built-in trained one (its head drafts as a real head
does, so acceptance depends on the prompt class and on sampling), or with ``--heavy`` the "heavy" tiny
model with a perfect head (its trunk dominates a decode step, as a real model's does, so it shows where
MTP pays on this CPU and where concurrency stops it paying):

    python bench/bench_serving_axes.py [--axes concurrency,temperature,methods,long] [--heavy]
        [--n-max 2] [--repeat 2] [--n-predict 64] [--prompts code] [--server PATH] [--out DIR]

Per row: the condition, the setting, decode tok/s (median [min-max], each request's own), total tok/s (all
requests together), acceptance, time to first token, prompt tok/s, peak RSS; then the recommendation per
condition. Timings move with the load on the machine; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from mtpinspect.sweep import SweepOptions, SweepReport, run_sweep
from mtpinspect.tiny_model import spec_for_size, write_tiny_model

AXES = {
    "concurrency": dict(concurrency=(1, 2, 4)),
    "temperature": dict(temperature=(0.0, 0.8)),
    "methods": dict(methods=("draft-mtp", "ngram-simple", "ngram-mod")),
    "long": dict(long_prompt=2000),
}


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _fmt(value: float | None, digits: int = 1) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _rows(report: SweepReport) -> list[list[object]]:
    rows = []
    for g in report.results:
        tps = g.tokens_per_second
        rows.append([
            g.prompt_class,
            f"c{g.concurrency} t{g.temperature:g}",
            g.setting,
            None if tps is None else f"{tps.median:.1f} [{tps.min:.1f}-{tps.max:.1f}]",
            None if g.speedup is None else f"{g.speedup:.2f}x" + (" (noise)" if g.within_noise else ""),
            _fmt(g.total_tokens_per_second.median if g.total_tokens_per_second else None),
            _fmt(g.acceptance, 3),
            _fmt(g.ttft_ms.median if g.ttft_ms else None, 0),
            _fmt(g.prompt_tokens_per_second.median if g.prompt_tokens_per_second else None, 0),
            g.prompt_tokens,
            None if g.rss_peak_bytes is None else f"{g.rss_peak_bytes / 2**20:.0f}",
        ])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--axes", default=",".join(AXES))
    parser.add_argument("--heavy", action="store_true", help="the heavy tiny model with a perfect head")
    parser.add_argument("--n-max", default="2")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--n-predict", type=int, default=64)
    parser.add_argument("--prompts", default="code")
    parser.add_argument("--server", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-serving-axes-"))
    out.mkdir(parents=True, exist_ok=True)
    model = None
    if args.heavy:
        (model,) = write_tiny_model(out / "heavy-mtp.gguf", spec_for_size("heavy", acceptance="perfect"))
    for axis in args.axes.split(","):
        options = SweepOptions(n_max=tuple(int(n) for n in args.n_max.split(",")), repeat=args.repeat,
                               prompts=args.prompts, n_predict=args.n_predict, server=args.server,
                               out_dir=out / axis, plot=False, **AXES[axis])  # type: ignore[arg-type]
        print(f"\n## {axis} ({'heavy tiny model, perfect head' if args.heavy else 'built-in trained model'}); "
              f"load average before {_load()}", flush=True)
        began = time.perf_counter()
        report = run_sweep(model, options)
        print(tabulate(_rows(report), headers=["class", "condition", "setting", "tok/s", "speedup", "total tok/s",
                                               "acceptance", "TTFT ms", "prompt tok/s", "prompt tokens",
                                               "peak RSS MiB"]))
        print(f"overall: {report.recommendation.reason}")
        if report.recommendation.summary:
            print(f"per condition: {report.recommendation.summary}")
        for choice in report.recommendation.per_class:
            print(f"{choice.prompt_class}: {choice.reason}")
        print(f"{report.runs.ok} runs in {time.perf_counter() - began:.0f} s; load average after {_load()}; "
              f"journal {report.files.jsonl}")


if __name__ == "__main__":
    main()
