"""The sweep under serving conditions (issues 33, 43): one short sweep per axis, figures printed per condition.

Each axis is a real ``mtpinspect.sweep.run_sweep`` on llama-server: ``--concurrency`` (N different prompts
of the class at once), ``--temperature``, ``--method``, ``--long-prompt`` (client TTFT against the server's
prompt time), and ``rounds``: draft-mtp and ngram-mod over three independent rounds (ngram-mod on a fresh
server per round), with each round's figures per prompt and their round-to-round spread. The model is the built-in trained one (its head drafts as a real head
does, so acceptance depends on the prompt class and on sampling), or with ``--heavy`` the "heavy" tiny
model with a perfect head (its trunk dominates a decode step, as a real model's does, so it shows where
MTP pays on this CPU and where concurrency stops it paying), or with ``--model builtin:qwen35`` the hybrid
built-in model (Gated DeltaNet trunk: recurrent states per sequence, and the checkpoint restores column):

    python bench/bench_serving_axes.py [--axes rounds,concurrency,temperature,methods,long] [--heavy | --model M]
        [--n-max 2] [--repeat 2] [--n-predict 64] [--prompts code] [--server PATH] [--out DIR]

Per row: the condition, the setting, decode tok/s (median [min-max] of the runs' per-request means), each
request's own tok/s (median [min-max] over every request), total tok/s (all requests together), acceptance
(pooled from each request's own counts), client TTFT (sent -> first streamed token) and the server's prompt
time, prompt tok/s, peak RSS; then the recommendation per condition. Timings move with the load on the machine; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from mtpinspect.sweep import SweepOptions, SweepReport, run_sweep
from mtpinspect.tiny_model import spec_for_size, write_tiny_model

AXES = {
    "rounds": dict(methods=("draft-mtp", "ngram-mod"), repeat=3),
    "concurrency": dict(concurrency=(1, 2, 4)),
    "temperature": dict(temperature=(0.0, 0.8)),
    "methods": dict(methods=("draft-mtp", "ngram-simple", "ngram-mod")),
    "long": dict(long_prompt=2000),
}


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _fmt(value: float | None, digits: int = 1) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _spread(spread: object, digits: int = 1) -> str | None:
    if spread is None:
        return None
    return f"{spread.median:.{digits}f} [{spread.min:.{digits}f}-{spread.max:.{digits}f}]"  # type: ignore[attr-defined]


def _rows(report: SweepReport) -> list[list[object]]:
    rows = []
    for g in report.results:
        rows.append([
            g.prompt_class,
            f"c{g.concurrency} t{g.temperature:g}",
            g.setting,
            _spread(g.tokens_per_second),
            None if g.speedup is None else f"{g.speedup:.2f}x" + (" (noise)" if g.within_noise else ""),
            _spread(g.per_request_tokens_per_second),
            _fmt(g.total_tokens_per_second.median if g.total_tokens_per_second else None),
            _fmt(g.acceptance, 3),
            _fmt(g.ttft_ms.median if g.ttft_ms else None, 0),
            _fmt(g.prompt_ms.median if g.prompt_ms else None, 0),
            _fmt(g.prompt_tokens_per_second.median if g.prompt_tokens_per_second else None, 0),
            g.prompt_tokens,
            None if g.rss_peak_bytes is None else f"{g.rss_peak_bytes / 2**20:.0f}",
            g.checkpoint_restores,
        ])
    return rows


def _round_rows(journal: Path) -> list[list[object]]:
    """Per speculative setting and prompt: each round's drafted/accepted and tok/s, and the round-to-round
    spread (max - min) of acceptance and tok/s; a replay of an earlier round shows as a jump."""
    runs = [r for r in map(json.loads, journal.read_text(encoding="utf-8").splitlines())
            if r.get("kind") == "run" and r.get("status") == "ok" and r.get("n_max") is not None]
    rows = []
    for key in sorted({(r["configuration"], r["prompt_id"]) for r in runs}):
        mine = sorted((r for r in runs if (r["configuration"], r["prompt_id"]) == key), key=lambda r: r["repeat"])
        rates = [r["accepted"] / r["drafted"] if r["drafted"] else 0.0 for r in mine]
        speeds = [r["decode_tokens_per_second"] for r in mine]
        rows.append([*key, " ".join(f"{r['accepted']}/{r['drafted']}" for r in mine),
                     " ".join(f"{v:.1f}" for v in speeds), f"{max(rates) - min(rates):.3f}",
                     f"{max(speeds) - min(speeds):.1f}", len({r["server_id"] for r in mine})])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--axes", default=",".join(AXES))
    parser.add_argument("--heavy", action="store_true", help="the heavy tiny model with a perfect head")
    parser.add_argument("--model", default=None, help="a GGUF or a built-in model (builtin:qwen35); default: builtin:glm4moe")
    parser.add_argument("--n-max", default="2")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--n-predict", type=int, default=64)
    parser.add_argument("--prompts", default="code")
    parser.add_argument("--server", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-serving-axes-"))
    out.mkdir(parents=True, exist_ok=True)
    model = args.model
    if args.heavy:
        (model,) = write_tiny_model(out / "heavy-mtp.gguf", spec_for_size("heavy", acceptance="perfect"))
    for axis in args.axes.split(","):
        base = dict(n_max=tuple(int(n) for n in args.n_max.split(",")), repeat=args.repeat)
        options = SweepOptions(**{**base, **AXES[axis]}, prompts=args.prompts,  # type: ignore[arg-type]
                               n_predict=args.n_predict, server=args.server, out_dir=out / axis, plot=False)
        what = "heavy tiny model, perfect head" if args.heavy else (model or "built-in trained model")
        print(f"\n## {axis} ({what}); "
              f"load average before {_load()}", flush=True)
        began = time.perf_counter()
        report = run_sweep(model, options)
        print(tabulate(_rows(report), headers=["class", "condition", "setting", "tok/s", "speedup", "per request",
                                               "total tok/s", "acceptance", "client TTFT ms", "server prompt ms",
                                               "prompt tok/s", "prompt tokens", "peak RSS MiB", "restores"]))
        if report.rounds:
            print(f"rounds: {report.rounds}")
        if axis == "rounds":
            print(tabulate(_round_rows(Path(report.files.jsonl)),
                           headers=["setting", "prompt", "accepted/drafted per round", "tok/s per round",
                                    "acceptance spread", "tok/s spread", "servers"]))
        print(f"overall: {report.recommendation.reason}")
        if report.recommendation.summary:
            print(f"per condition: {report.recommendation.summary}")
        for choice in report.recommendation.per_class:
            print(f"{choice.prompt_class}: {choice.reason}")
        print(f"{report.runs.ok} runs in {time.perf_counter() - began:.0f} s; load average after {_load()}; "
              f"journal {report.files.jsonl}")


if __name__ == "__main__":
    main()
