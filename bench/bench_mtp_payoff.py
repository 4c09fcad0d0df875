"""Does MTP pay off on this CPU? A real sweep on the "heavy" tiny model, with a perfect and a 0.5 head.

The default tiny model is so small that llama-server's per-step work (one MTP decode per drafted
token, the batch bookkeeping) outweighs anything a draft saves: every n-max runs at about half the
baseline. The heavy preset (``mtpinspect.tiny_model.spec_for_size("heavy")``) makes the trunk dominate
each decode step, as in a real model, so verifying k+1 tokens in one batch costs little more than one
single-token decode. This script writes the heavy model once per acceptance, runs
``mtpinspect.sweep.run_sweep`` on it (baseline + each n-max), and prints tok/s, speedups, acceptance
and the sweep's recommendation, so the figures in bench/README.md can be reproduced:

    python bench/bench_mtp_payoff.py [--acceptance perfect,0.5] [--n-max 1,2,3] [--repeat 2]
        [--prompts code] [--n-predict 128] [--threads 2] [--size heavy] [--server PATH] [--out DIR]

Timings move with the load on the machine; the load average is printed before and after each sweep.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from mtpinspect.sweep import SweepOptions, SweepReport, run_sweep
from mtpinspect.tiny_model import SIZES, parse_acceptance, spec_for_size, write_tiny_model


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _rows(report: SweepReport) -> list[list[object]]:
    rows = []
    for group in report.results:
        spread = group.tokens_per_second
        rows.append(
            [
                group.prompt_class,
                "baseline" if group.n_max is None else group.n_max,
                None if spread is None else round(spread.median, 1),
                None if spread is None else f"{spread.min:.1f}-{spread.max:.1f}",
                None if group.speedup is None else f"{group.speedup:.2f}x" + (" (noise)" if group.within_noise else ""),
                None if group.acceptance is None else round(group.acceptance, 3),
                None if group.mean_length is None else round(group.mean_length, 2),
            ]
        )
    return rows


def _sweep(acceptance: str, args: argparse.Namespace, out: Path) -> None:
    folder = out / f"acceptance-{acceptance}"
    folder.mkdir(parents=True, exist_ok=True)
    spec = spec_for_size(args.size, acceptance=parse_acceptance(acceptance))
    began = time.perf_counter()
    (model,) = write_tiny_model(folder / f"{args.size}-mtp.gguf", spec)
    written = time.perf_counter() - began
    print(
        f"\n== acceptance {acceptance}: {model} ({model.stat().st_size / 1e6:.1f} MB, written in {written:.1f} s; "
        f"embd {spec.embd}, ff {spec.ff}, {spec.trunk_layers} trunk layers, vocab {spec.vocab})"
    )
    print(f"load average before: {_load()}")
    options = SweepOptions(
        n_max=tuple(int(n) for n in args.n_max.split(",")),
        repeat=args.repeat,
        prompts=args.prompts,
        n_predict=args.n_predict,
        server=args.server,
        server_args=("-t", str(args.threads)),
        out_dir=folder / "sweep",
        plot=False,
    )
    began = time.perf_counter()
    report = run_sweep(model, options)
    print(f"load average after:  {_load()}  (sweep {time.perf_counter() - began:.0f} s, server {report.server.version})")
    headers = ["class", "n-max", "tok/s median", "min-max", "speedup", "acceptance", "mean length"]
    print(tabulate(_rows(report), headers=headers))
    print(f"recommendation: {report.recommendation.reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--acceptance", default="perfect,0.5", help="comma-separated: perfect, none or fractions")
    parser.add_argument("--n-max", default="1,2,3")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--prompts", default="code", help="a built-in class, a file or a directory")
    parser.add_argument("--n-predict", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2, help="llama-server -t")
    parser.add_argument("--size", choices=SIZES, default="heavy")
    parser.add_argument("--server", default=None, help="llama-server (default: the one sweep would find)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-mtp-payoff-"))
    for acceptance in args.acceptance.split(","):
        _sweep(acceptance.strip(), args, out)


if __name__ == "__main__":
    main()
