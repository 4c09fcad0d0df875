"""mtp-bench's method against `mtpinspect sweep`, on the same llama-server build, model and prompts.

Each pair runs both sides (alternating which goes first, so drift on a shared machine falls on both):

- *method*: llama-server started with the sweep's own command for n-max N (the pinned build, the built-in
  model, ``--spec-type draft-mtp --spec-draft-n-max N -np 1 -t T``), then bench/mtp_bench_method.py as a
  process against it (nine chat requests, 192 tokens, seed 42, ``--temperature 0`` as the sweep is greedy;
  no warm-up, as mtp-bench has none); once more with no temperature sent (mtp-bench exactly: the server's
  default sampling), for the difference sampling makes;
- *sweep*: ``run_sweep`` with ``request=chat``, the ``mtp-bench-categories`` set, ``n_predict`` 192,
  ``repeat`` 1, n-max N (and the baseline it always runs), exported with ``mtp_bench_json``.

Printed: per category, both sides' acceptance and decode tok/s (the server's ``predicted_per_second``),
the aggregates, and each side's overhead: the method's process wall time beyond its requests (Python
start, client), the sweep's wall time beyond its requests (two server starts and warm-ups, /metrics
scrapes, log reading, journal, report).

    python bench/bench_mtp_bench_head_to_head.py [--pairs 2] [--n-max 3] [--threads 2] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mtpinspect.formats import mtp_bench
from mtpinspect.runtime.find import find_server
from mtpinspect.runtime.server import LlamaServer
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.plan import Configuration
from mtpinspect.trained_model import SHIPPED_GGUF
from mtpinspect.vocabulary import RequestKind

METHOD = Path(__file__).resolve().parent / "mtp_bench_method.py"


def method_side(n_max: int, threads: int, work: Path, temperature: float | None) -> dict[str, Any]:
    binary = find_server(build=False)
    args = Configuration(n_max).server_args(None).added("-t", str(threads))
    server = LlamaServer(binary, SHIPPED_GGUF, args, log_path=work / "method-server.log")
    server.start()
    try:
        out = work / f"method-{temperature}.json"
        command = [sys.executable, str(METHOD), "--url", server.url, "--out", str(out)]
        if temperature is not None:
            command += ["--temperature", str(temperature)]
        began = time.perf_counter()
        printed = subprocess.run(command, capture_output=True, text=True, check=True, timeout=900).stdout
        wall = time.perf_counter() - began
    finally:
        server.stop()
    # Its printed rows and Aggregate are what diagnose --log reads: the parse must give what it wrote.
    run = mtp_bench.parse(printed)
    document = json.loads(out.read_text(encoding="utf-8"))
    assert run.totals() == (document["aggregate"]["total_draft"], document["aggregate"]["total_draft_accepted"])
    return {"document": document, "printed": printed, "process_wall_s": wall,
            "overhead_s": wall - sum(r["wall_s"] for r in document["results"])}


def sweep_side(n_max: int, threads: int, work: Path) -> dict[str, Any]:
    bench = work / "sweep-mtp-bench"
    options = SweepOptions(n_max=(n_max,), repeat=1, prompts="mtp-bench-categories", n_predict=192,
                           request=RequestKind.chat, out_dir=work / "sweep", plot=False, order="grouped",
                           server_args=("-t", str(threads)), mtp_bench_json=bench)
    began = time.perf_counter()
    report = run_sweep(None, options)
    wall = time.perf_counter() - began
    assert report.runs.ok == report.runs.planned, report.failures
    documents = {Path(p).stem: json.loads(Path(p).read_text(encoding="utf-8")) for p in report.files.mtp_bench}
    requests = sum(r["wall_s"] for d in documents.values() for r in d["results"])
    return {"document": documents[Configuration(n_max).id], "baseline": documents["baseline"], "wall_s": wall,
            "overhead_s": wall - requests, "runs": 2 * len(documents[Configuration(n_max).id]["results"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--n-max", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    pairs = []
    for index in range(args.pairs):
        with tempfile.TemporaryDirectory(prefix="mtp-bench-h2h-") as folder:
            work = Path(folder)
            sides: dict[str, Any] = {}
            order = ["method", "sweep"] if index % 2 == 0 else ["sweep", "method"]
            for side in order:
                if side == "method":
                    sides["method"] = method_side(args.n_max, args.threads, work, 0.0)
                else:
                    sides["sweep"] = sweep_side(args.n_max, args.threads, work)
            sides["method_default_sampling"] = method_side(args.n_max, args.threads, work, None)
            pairs.append(sides)
            print(f"pair {index + 1}: method first" if order[0] == "method" else f"pair {index + 1}: sweep first",
                  flush=True)
    summary = summarize(pairs)
    print(json.dumps(summary, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps({"pairs": pairs, "summary": summary}, indent=2) + "\n", encoding="utf-8")


def summarize(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    names = [r["name"] for r in pairs[0]["method"]["document"]["results"]]

    def per(side: str, name: str, key: str) -> list[float]:
        return [next(r[key] for r in p[side]["document"]["results"] if r["name"] == name) or 0.0 for p in pairs]

    categories = {}
    for name in names:
        m_rate, s_rate = per("method", name, "accept_rate"), per("sweep", name, "accept_rate")
        m_tok, s_tok = per("method", name, "predicted_per_second"), per("sweep", name, "predicted_per_second")
        categories[name] = {
            "accept_rate_method": m_rate, "accept_rate_sweep": s_rate,
            "accept_rate_default_sampling": per("method_default_sampling", name, "accept_rate"),
            "tok_s_method_median": statistics.median(m_tok), "tok_s_sweep_median": statistics.median(s_tok),
            "tok_s_ratio_sweep_over_method": statistics.median(s_tok) / statistics.median(m_tok),
        }

    def agg(side: str, key: str) -> list[Any]:
        return [p[side]["document"]["aggregate"][key] for p in pairs]

    return {
        "categories": categories,
        "aggregate_accept_rate": {"method": agg("method", "aggregate_accept_rate"), "sweep": agg("sweep", "aggregate_accept_rate"),
                                  "method_default_sampling": agg("method_default_sampling", "aggregate_accept_rate")},
        "total_draft": {"method": agg("method", "total_draft"), "sweep": agg("sweep", "total_draft")},
        "aggregate_throughput_tok_s": {"method": agg("method", "aggregate_throughput_tok_s"),
                                       "sweep": agg("sweep", "aggregate_throughput_tok_s")},
        "overhead_s": {"method_process": [p["method"]["overhead_s"] for p in pairs],
                       "method_process_wall_s": [p["method"]["process_wall_s"] for p in pairs],
                       "sweep": [p["sweep"]["overhead_s"] for p in pairs],
                       "sweep_wall_s": [p["sweep"]["wall_s"] for p in pairs],
                       "sweep_runs": pairs[0]["sweep"]["runs"]},
    }


if __name__ == "__main__":
    main()
