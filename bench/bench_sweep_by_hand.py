"""Does a sweep measure the speed a user gets? Its tok/s against the same llama-server driven by hand.

Each pair runs one sweep of the built-in tiny MTP model (``mtpinspect.sweep.run_sweep``: baseline and
n-max 1..4, the 12 built-in prompts, n_predict 128) and drives the very same servers by hand: the
commands from the sweep's journal (on a new port), started with ``subprocess``, /health polled, one
discarded first request as a careful user sends, then one ``POST /completion`` per prompt with the body
the sweep sends, and nothing else (no /metrics scrapes, no log reading, no RSS sampler, no journal).
Pairs alternate which side runs first, so drift on a shared machine falls on both.

Per configuration it prints the median decode tok/s (``timings.predicted_per_second``) of each side
over all pairs, and the ratio sweep / by hand; 1.00 means the sweep's own work does not slow the server
it measures. It also prints each side's median time around a request beyond the server's own time.

    python bench/bench_sweep_by_hand.py [--pairs 3] [--n-predict 128] [--threads N] [--server PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mtpinspect.runtime.server import free_port
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.sweep.api import TINY_ACCEPTANCE, TINY_MODEL_NAME
from mtpinspect.sweep.journal import Journal
from mtpinspect.sweep.prompts import load_builtin
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model
from mtpinspect.vocabulary import RunStatus

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_WARMUP_TOKENS = 16
_READY_TIMEOUT_S = 120.0


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _post(url: str, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    began = time.perf_counter()
    with _OPENER.open(request, timeout=600) as response:
        payload = json.loads(response.read())
    return payload, time.perf_counter() - began


def _ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited with {proc.returncode} before it was ready")
        try:
            with _OPENER.open(url + "/health", timeout=2) as response:
                if json.loads(response.read()).get("status") == "ok":
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.05)
    raise SystemExit(f"llama-server not ready after {_READY_TIMEOUT_S:g} s")


def by_hand(command: list[str], prompts: list[str], n_predict: int, seed: int, log: Path) -> list[tuple[float, float]]:
    """(decode tok/s, seconds around the request beyond the server's own) per prompt."""
    port = free_port()
    command = list(command)
    command[command.index("--port") + 1] = str(port)
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            _ready(url, proc)
            body = {"n_predict": n_predict, "seed": seed, "temperature": 0.0, "cache_prompt": False}
            _post(url + "/completion", {**body, "prompt": prompts[0], "n_predict": _WARMUP_TOKENS})
            measured = []
            for prompt in prompts:
                payload, wall = _post(url + "/completion", {**body, "prompt": prompt})
                timings = payload["timings"]
                measured.append((timings["predicted_per_second"],
                                 wall - (timings["prompt_ms"] + timings["predicted_ms"]) / 1000.0))
            return measured
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--n-predict", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None, help="llama-server -t (default: its own)")
    parser.add_argument("--server", default=None, help="llama-server (default: the one sweep would find)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-by-hand-"))
    prompts = [prompt.text for prompt in load_builtin()]
    sweep_side: dict[str, list[tuple[float, float]]] = {}
    hand_side: dict[str, list[tuple[float, float]]] = {}
    seed = SweepOptions().seed

    out.mkdir(parents=True, exist_ok=True)
    model = out / TINY_MODEL_NAME
    write_tiny_model(model, TinyModelSpec(acceptance=TINY_ACCEPTANCE))  # the sweep's own demo model
    commands: list[tuple[str, list[str]]] = []

    def sweep(folder: Path) -> None:
        options = SweepOptions(n_max=(1, 2, 3, 4), repeat=1, n_predict=args.n_predict, server=args.server,
                               server_args=("-t", str(args.threads)) if args.threads else (), out_dir=folder,
                               plot=False)
        run_sweep(model, options)
        records = Journal(folder / "runs.jsonl").read().records
        if not commands:
            commands.extend((r["configuration"], r["command"]) for r in records if r["kind"] == "server")
        for run in (r for r in records if r["kind"] == "run" and r["status"] == RunStatus.ok):
            server_seconds = (run["prompt_ms"] + run["predicted_ms"]) / 1000.0
            sweep_side.setdefault(run["configuration"], []).append(
                (run["decode_tokens_per_second"], run["wall_seconds"] - server_seconds))

    def hand(folder: Path) -> None:
        for configuration, command in commands:
            measured = by_hand(command, prompts, args.n_predict, seed, folder / f"by-hand-{configuration}.log")
            hand_side.setdefault(configuration, []).extend(measured)

    for pair in range(args.pairs):
        folder = out / f"pair-{pair}"
        folder.mkdir(parents=True, exist_ok=True)
        load_before = _load()
        # The first sweep gives the commands; after that the sides take turns at going first.
        if pair % 2 == 0:
            sweep(folder)
            hand(folder)
        else:
            hand(folder)
            sweep(folder)
        print(f"pair {pair + 1}/{args.pairs}: load average {load_before} -> {_load()}", flush=True)

    print(f"\ndecode tok/s, median over {args.pairs} pairs x {len(prompts)} prompts "
          f"(llama-server -t {args.threads or 'default'}, n_predict {args.n_predict})")
    print(f"  {'configuration':<14} {'sweep':>10} {'by hand':>10} {'ratio':>7}   {'request overhead (ms) sweep / by hand':>40}")
    ratios = []
    for configuration, runs in sweep_side.items():
        hand_runs = hand_side.get(configuration, [])
        if not hand_runs:
            continue
        swept = statistics.median(speed for speed, _ in runs)
        manual = statistics.median(speed for speed, _ in hand_runs)
        ratios.append(swept / manual)
        overhead = (1000 * statistics.median(extra for _, extra in runs),
                    1000 * statistics.median(extra for _, extra in hand_runs))
        print(f"  {configuration:<14} {swept:10.1f} {manual:10.1f} {swept / manual:7.3f}   "
              f"{overhead[0]:18.2f} / {overhead[1]:.2f}")
    geometric = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"  ratio of medians, geometric mean over configurations: {geometric:.3f} "
          f"(range {min(ratios):.3f}-{max(ratios):.3f})")
    print(f"  output: {out}")


if __name__ == "__main__":
    main()
