"""Time and round trips of `mtpinspect find`: a census of a model tree on the Hub stand-in with added latency.

The tree is tests/census_tree.py's: the base and 32 quantized derivatives (GGUF repos with two
quantizations each, split GGUFs, sidecars, FP8 / NVFP4 checkpoints, a gated repo) over two pages of the
model search. For each --latency-ms it runs `mtpinspect.find(BASE, limit=None)` (every derivative
judged, without llama.cpp's verify step: local work, the same at every latency):

- cold: with an empty header cache (a fresh MTPINSPECT_CACHE_DIR);
- warm: again, with the cache the cold run filled ("a repeated census").

From the stand-in's log: requests, file reads (requests for a file of a repo: what the header cache
should spare), most requests in flight, bytes, and the sequential round trips: the longest chain of
requests each sent after the one before it was answered (at 0 ms it also counts requests the client's
own parsing kept apart; with latency it is the round trips the census waited for one after another).
The best of --repeat runs is kept (the machine is shared: load only ever adds time).

    python bench/bench_find.py [--latency-ms 0,100] [--repeat 3] [--lfs-redirect] [--json out.json]
                               [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from census_tree import QUANTIZED, serve_tree  # noqa: E402
from hubstub import HubStub, RequestRecord  # noqa: E402

import mtpinspect  # noqa: E402
from mtpinspect.cache_dir import CACHE_ENV  # noqa: E402


def sequential(records: list[RequestRecord]) -> int:
    """The longest chain of requests, each started after the one before it ended."""
    ordered = sorted(records, key=lambda r: r.start)
    depth: list[int] = []
    for i, record in enumerate(ordered):
        depth.append(1 + max((depth[j] for j in range(i) if ordered[j].end <= record.start), default=0))
    return max(depth, default=0)


def one_run(stub: HubStub, base: str, cache: Path) -> dict[str, float | int]:
    os.environ[CACHE_ENV] = str(cache)
    stub.reset_counters()
    start = time.perf_counter()
    census = mtpinspect.find(base, limit=None, verify=False, endpoint=stub.url)
    seconds = time.perf_counter() - start
    records = stub.requests()
    assert len(census.derivatives) == QUANTIZED, f"{len(census.derivatives)} derivatives judged"
    traffic = stub.traffic()
    return {"seconds": round(seconds, 3), "requests": len(records),
            "file_reads": sum(1 for r in records if r.path is not None), "round_trips": sequential(records),
            "max_in_flight": traffic.max_in_flight,
            "bytes": traffic.bytes, "usable": sum(1 for d in census.derivatives if d.usable)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", default="0,100", help="comma-separated added latencies per request")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lfs-redirect", action="store_true", help="send weight files to the CDN origin with a 302")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--workdir", type=Path, help="where the tree's files are written (default: a temporary folder)")
    args = parser.parse_args(argv)
    latencies = sorted({float(x) / 1000 for x in args.latency_ms.split(",")})
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-find-") as scratch:
        workdir = args.workdir or Path(scratch) / "tree"
        workdir.mkdir(parents=True, exist_ok=True)
        with HubStub(lfs_redirect=args.lfs_redirect) as stub:
            tree = serve_tree(stub, workdir)
            for latency in latencies:
                stub.latency = latency
                cold, warm = [], []
                for i in range(args.repeat):
                    cache = Path(scratch) / f"cache-{latency}-{i}"
                    cold.append(one_run(stub, tree.base, cache))
                    warm.append(one_run(stub, tree.base, cache))
                for kind, runs in (("cold", cold), ("warm", warm)):
                    best = min(runs, key=lambda r: r["seconds"])
                    rows.append({"latency_ms": round(latency * 1000), "run": kind, **best})
    print(tabulate(rows, headers="keys", tablefmt="github"))
    if args.json:
        args.json.write_text(json.dumps({"derivatives": QUANTIZED, "results": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
