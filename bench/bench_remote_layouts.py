"""Time to verdict of a remote `check`, per repo layout, through the Hub stand-in with added latency.

The layouts are those of tests/remote_layouts.py (a single GGUF, a 5-shard split GGUF, a 163-shard
DeepSeek-V3-like checkpoint with its MTP layer in the last shard or over the last 4), served by the
loopback Hub stand-in (tests/hubstub.py) with the LFS redirect on: every read of a weight file is a 302
from the Hub, then the bytes from a second loopback origin, as on the real Hub. Each request waits
--latency-ms before it is answered. For each layout and latency it runs:

- `mtpinspect.check(SOURCE)` in this process, with the header cache bypassed (the median of --repeat
  runs, after one warm-up run; the best too: the machine is shared, and load only ever adds time);
- the same with the header cache warm ("mtpinspect cached": a second check of the same revision);
- with --cli, `python -m mtpinspect check SOURCE --no-cache --format json` (HF_ENDPOINT set; includes
  start-up);
- for GGUF layouts, @huggingface/gguf's ggufAllShards on the same file (node bench/node/gguf_remote.mjs;
  install it first with `npm ci --prefix bench/node`); its time is measured inside node.

mtpinspect runs without llama.cpp's verify step (--no-verify): it is local work after the reads, the
same for every latency. The header cache lives in a temporary MTPINSPECT_CACHE_DIR, never the user's.

From the stand-in's request log: requests (Hub + CDN, the redirects among them), sequential waves,
most requests in flight, bytes sent. And whether the report's own `requests`/`waves`/`bytes_read` equal
what the server saw.

    python bench/bench_remote_layouts.py [--latency-ms 0,50,150] [--layout NAME ...] [--repeat 3]
                                         [--cli] [--no-js] [--no-lfs-redirect] [--json out.json]
                                         [--workdir DIR]
    python bench/bench_remote_layouts.py --compare BEFORE.json [BEFORE2.json ...] AFTER.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import quote

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = ROOT / "bench" / "node"
sys.path.insert(0, str(ROOT / "tests"))

import huggingface_hub  # noqa: E402
from hubstub import HubStub, RequestRecord, traffic  # noqa: E402
from remote_layouts import LAYOUTS, Layout  # noqa: E402

import mtpinspect  # noqa: E402
from mtpinspect.cache_dir import CACHE_ENV  # noqa: E402
from mtpinspect.sources.policy import FetchPolicy  # noqa: E402

MB = 1_000_000
# "mtpinspect": check() in this process; "mtpinspect cached": the same with the header cache warm.
Reader = Literal["mtpinspect", "mtpinspect cached", "mtpinspect CLI", "@huggingface/gguf"]


@dataclass
class Run:
    """One reader on one layout at one latency: the server's view, the time, and the reader's own count."""

    layout: str
    latency_ms: int
    reader: Reader
    requests: int  # every HTTP request the stand-in answered, Hub and CDN
    hub_requests: int
    redirects: int
    waves: int
    max_in_flight: int
    bytes: int
    seconds: float  # the median of the repeats (all of them in seconds_all)
    seconds_best: float
    seconds_all: list[float]
    report_requests: int | None = None  # what the reader says it did (mtpinspect only)
    report_waves: int | None = None
    report_bytes: int | None = None
    verdict: str = ""
    round_trips: float | None = None  # (seconds - seconds at 0 ms) / latency: the sequential round trips paid

    @property
    def accounting(self) -> str:
        if self.report_requests is None:
            return "-"
        problems = []
        if self.report_requests != self.requests:
            problems.append(f"requests {self.report_requests} vs {self.requests}")
        if self.report_waves != self.waves:
            problems.append(f"waves {self.report_waves} vs {self.waves}")
        if self.report_bytes != self.bytes:
            problems.append(f"bytes {self.report_bytes:,} vs {self.bytes:,}")
        return "; ".join(problems) or "exact"


def _server_view(records: list[RequestRecord]) -> dict[str, int]:
    seen = traffic(records)
    return {
        "requests": seen.requests,
        "hub_requests": sum(1 for r in records if r.origin == "hub"),
        "redirects": seen.redirects,
        "waves": seen.waves,
        "max_in_flight": seen.max_in_flight,
        "bytes": seen.bytes,
    }


def _summary(views: list[dict[str, int]], seconds: list[float], what: str) -> dict[str, Any]:
    """The median time of the repeats and the best, with the server's view. Request patterns should not
    vary between repeats (waves can, at 0 ms: the server may answer requests sent together one after the
    other); say so when they do, and give the median repeat's."""
    if any(v != views[0] for v in views[1:]):
        print(f"note: {what}: the request pattern varied between repeats: {views}", file=sys.stderr)
    median = sorted(range(len(seconds)), key=seconds.__getitem__)[len(seconds) // 2]
    return {**views[median], "seconds": statistics.median(seconds), "seconds_best": min(seconds), "seconds_all": seconds}


def run_in_process(stub: HubStub, layout: Layout, latency_ms: int, repeat: int, *, cached: bool = False) -> Run:
    policy = FetchPolicy(cache=cached)
    if cached:
        mtpinspect.check(layout.source, endpoint=stub.url, verify=False, policy=policy)  # fills the header cache
    views, seconds = [], []
    for _ in range(repeat):
        stub.reset_counters()
        start = time.perf_counter()
        report = mtpinspect.check(layout.source, endpoint=stub.url, verify=False, policy=policy)
        seconds.append(time.perf_counter() - start)
        views.append(_server_view(stub.requests(layout.repo_id)))
    _expect_mtp(report.mtp_layers, layout)
    reader: Reader = "mtpinspect cached" if cached else "mtpinspect"
    return Run(
        layout.name, latency_ms, reader, **_summary(views, seconds, f"{layout.name} ({reader}) at {latency_ms} ms"),
        report_requests=report.requests, report_waves=report.waves,
        report_bytes=report.bytes_read, verdict=f"{report.layout}, {report.mtp_layers} MTP layer(s), exit {report.exit_code}",
    )  # fmt: skip


def run_cli(stub: HubStub, layout: Layout, latency_ms: int, repeat: int) -> Run:
    env = {**os.environ, "HF_ENDPOINT": stub.url, "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_TOKEN", None)
    views, seconds = [], []
    for _ in range(repeat):
        stub.reset_counters()
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "mtpinspect", "check", layout.source, "--no-cache", "--no-verify", "--format", "json"],
            capture_output=True, text=True, env=env, timeout=600,
        )  # fmt: skip
        seconds.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{layout.name}: mtpinspect check exited {done.returncode}: {done.stderr.strip()}")
        views.append(_server_view(stub.requests(layout.repo_id)))
    doc = json.loads(done.stdout)
    _expect_mtp(doc["mtp_layers"], layout)
    return Run(
        layout.name, latency_ms, "mtpinspect CLI", **_summary(views, seconds, f"{layout.name} CLI at {latency_ms} ms"),
        report_requests=doc["requests"], report_waves=doc["waves"],
        report_bytes=doc["bytes_read"], verdict=f"{doc['layout']}, {doc['mtp_layers']} MTP layer(s), exit {done.returncode}",
    )  # fmt: skip


def run_js(stub: HubStub, layout: Layout, latency_ms: int, repeat: int) -> Run:
    assert layout.gguf_entry is not None
    url = f"{stub.url}/{layout.repo_id}/resolve/main/{quote(layout.gguf_entry)}"
    views, seconds = [], []
    for _ in range(repeat):
        stub.reset_counters()
        done = subprocess.run(
            ["node", str(NODE_DIR / "gguf_remote.mjs"), url], capture_output=True, text=True, cwd=NODE_DIR, timeout=600
        )
        if done.returncode != 0:
            raise RuntimeError(f"{layout.name}: @huggingface/gguf failed: {done.stderr.strip()[-2000:]}")
        result = json.loads(done.stdout)
        seconds.append(result["seconds"])
        views.append(_server_view(stub.requests(layout.repo_id)))
    return Run(
        layout.name, latency_ms, "@huggingface/gguf", **_summary(views, seconds, f"{layout.name} JS at {latency_ms} ms"),
        verdict=f"{result['arch']}, {result['shards']} shard(s), {result['tensors']} tensors",
    )  # fmt: skip


def _expect_mtp(mtp_layers: int, layout: Layout) -> None:
    # Every layout has one MTP layer: a check that finds another count is measuring a broken layout.
    if mtp_layers != 1:
        raise RuntimeError(f"{layout.name}: check found {mtp_layers} MTP layers, expected 1")


def _js_ready() -> str | None:
    """Why @huggingface/gguf cannot run, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (NODE_DIR / "node_modules" / "@huggingface" / "gguf").is_dir():
        return "run `npm ci --prefix bench/node` first"
    return None


def add_round_trips(runs: list[Run]) -> None:
    """Seconds beyond the 0 ms run, in units of the added latency: how many round trips were paid in sequence."""
    base = {(r.layout, r.reader): r.seconds for r in runs if r.latency_ms == 0}
    for run in runs:
        if run.latency_ms > 0 and (run.layout, run.reader) in base:
            run.round_trips = round((run.seconds - base[run.layout, run.reader]) / (run.latency_ms / 1000), 1)


def table(runs: list[Run]) -> str:
    rows = [
        [
            r.layout, r.latency_ms, r.reader, f"{r.requests} ({r.redirects})", r.waves, r.max_in_flight,
            f"{r.bytes / MB:.2f}", f"{r.seconds:.3f}", f"{r.seconds_best:.3f}", "-" if r.round_trips is None else r.round_trips,
            r.accounting,
        ]
        for r in runs
    ]  # fmt: skip
    headers = ["layout", "ms", "reader", "requests (302s)", "waves", "max in flight", "MB", "median s", "best s", "RTTs",
               "report vs server"]
    return tabulate(rows, headers, disable_numparse=True)


def compare(before: list[Path], after: Path) -> str:
    """A Markdown table of --json results, before (one or more files) and after, run by run (layout, latency,
    reader): the counts, and the median time and round trips recomputed from every repeat's time (older
    results kept only the best)."""
    sides = [[r for path in before for r in json.loads(path.read_text())["runs"]], json.loads(after.read_text())["runs"]]
    medians = [{(r["layout"], r["latency_ms"], r["reader"]): statistics.median(r["seconds_all"]) for r in side} for side in sides]
    runs = [{(r["layout"], r["latency_ms"], r["reader"]): r for r in side} for side in sides]

    def cell(side: int, key: tuple[str, int, str]) -> tuple[str, ...]:
        r = runs[side].get(key)
        if r is None:
            return ("-",) * 5
        base = medians[side].get((key[0], 0, key[2]))
        rtts = "-" if key[1] == 0 or base is None else f"{(medians[side][key] - base) / (key[1] / 1000):.1f}"
        return (f"{r['requests']} ({r['redirects']})", str(r["waves"]), f"{r['bytes'] / MB:.2f}", f"{medians[side][key]:.3f}", rtts)

    order = {name: i for i, name in enumerate(LAYOUTS)}
    readers = {name: i for i, name in enumerate(get_args(Reader))}
    keys = sorted(set(runs[0]) | set(runs[1]), key=lambda k: (order.get(k[0], 99), k[1], readers.get(k[2], 99)))
    lines = ["| layout | ms | reader | requests (302s) | waves | MB | median s | RTTs |", "|---|---|---|---|---|---|---|---|"]
    for key in keys:
        old, new = cell(0, key), cell(1, key)
        pairs = [a if a == b else f"{a} -> {b}" for a, b in zip(old, new)]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(pairs) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", nargs="+", type=Path, metavar="FILE",
                        help="BEFORE [BEFORE...] AFTER: print a Markdown table of --json results, before -> after, and exit")
    parser.add_argument("--latency-ms", default="0,50,150", help="comma-separated added latencies per request")
    parser.add_argument("--layout", action="append", choices=sorted(LAYOUTS), help="repeatable; default: all")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cli", action="store_true", help="also time the CLI (includes interpreter start-up)")
    parser.add_argument("--no-js", action="store_true", help="skip @huggingface/gguf")
    parser.add_argument("--no-lfs-redirect", action="store_true", help="serve weight files from the Hub origin itself")
    parser.add_argument("--json", type=Path, help="write the runs here")
    parser.add_argument("--workdir", type=Path, help="where the stand-in files go (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.compare:
        if len(args.compare) < 2:
            parser.error("--compare takes BEFORE [BEFORE...] AFTER")
        print(compare(args.compare[:-1], args.compare[-1]))
        return 0
    latencies = [int(x) for x in args.latency_ms.split(",")]
    names = args.layout or list(LAYOUTS)
    js_problem = None if args.no_js else _js_ready()
    if js_problem:
        print(f"note: skipping @huggingface/gguf: {js_problem}", file=sys.stderr)

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-remote-"))
    workdir.mkdir(parents=True, exist_ok=True)
    # The header cache of these runs (in process and the CLI's): a fresh folder, never the user's.
    cache = Path(tempfile.mkdtemp(prefix="bench-remote-cache-"))
    os.environ[CACHE_ENV] = str(cache)
    runs: list[Run] = []
    try:
        layouts = [LAYOUTS[name](workdir) for name in names]
        with HubStub(lfs_redirect=not args.no_lfs_redirect) as stub:
            for layout in layouts:
                stub.add_repo(layout.repo_id, layout.files)
                # Warm-up: imports, connections.
                mtpinspect.check(layout.source, endpoint=stub.url, verify=False, policy=FetchPolicy(cache=False))
            for latency in latencies:
                stub.latency = latency / 1000
                for layout in layouts:
                    runs.append(run_in_process(stub, layout, latency, args.repeat))
                    runs.append(run_in_process(stub, layout, latency, args.repeat, cached=True))
                    if args.cli:
                        runs.append(run_cli(stub, layout, latency, args.repeat))
                    if layout.gguf_entry and not args.no_js and not js_problem:
                        runs.append(run_js(stub, layout, latency, args.repeat))
                    print(f"done: {layout.name} at {latency} ms", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    add_round_trips(runs)
    order = {name: i for i, name in enumerate(names)}
    runs.sort(key=lambda r: (order[r.layout], r.latency_ms))
    print(table(runs))
    if args.json:
        doc = {
            "environment": _environment(js_problem),
            "lfs_redirect": not args.no_lfs_redirect,
            "layouts": {layout.name: layout.description for layout in layouts},
        }
        doc["runs"] = [{**asdict(r), "accounting": r.accounting} for r in runs]
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


def _environment(js_problem: str | None) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "huggingface_hub": huggingface_hub.__version__,
        "mtpinspect": mtpinspect.__version__,
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }
    if not js_problem:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True)
        package = json.loads((NODE_DIR / "node_modules" / "@huggingface" / "gguf" / "package.json").read_text())
        env |= {"node": node.stdout.strip(), "@huggingface/gguf": package["version"]}
    return env


if __name__ == "__main__":
    sys.exit(main())
