"""How fast the `mtpinspect` command starts, as ratios measured in one run on one machine.

Goals (issue 8):

- `mtpinspect --help` within 3x the time of `python -c "import click"` (the floor of any click CLI);
- `mtpinspect check local.gguf --format json` at most 0.3 s above the check itself, timed in a process
  that has already imported everything (the in-process check).

Each command runs as a fresh process (`python -m mtpinspect ...`, the console script's code path), a
few times, alternating, and the median wall time counts. Peak RSS is the child's own (``os.wait4``).
The GGUF is the built-in tiny MTP model, so the check itself is a header read.

    python bench/bench_startup.py [--runs 9] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

_IN_PROCESS = """
import sys, time
import mtpinspect
from mtpinspect.cli._output import Output
mtpinspect.check(sys.argv[1])  # imports and first-use caches
times = []
for _ in range(int(sys.argv[2])):
    began = time.perf_counter()
    mtpinspect.check(sys.argv[1])
    times.append(time.perf_counter() - began)
times.sort()
print(times[len(times) // 2])
"""


def _run(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process."""
    began = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit status {proc.returncode}")
    return wall, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per command (median counts)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    from mtpinspect.tiny_model import write_tiny_model

    with tempfile.TemporaryDirectory(prefix="mtpinspect-bench-startup-") as tmp:
        model = Path(tmp) / "tiny.gguf"
        write_tiny_model(model)
        py = sys.executable
        commands = {
            "import click": [py, "-c", "import click"],
            "mtpinspect --help": [py, "-m", "mtpinspect", "--help"],
            "mtpinspect check local.gguf --format json": [py, "-m", "mtpinspect", "check", str(model), "--format", "json"],
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        rss: dict[str, list[int]] = {name: [] for name in commands}
        for _ in range(args.runs):  # alternate, so drift hits every command alike
            for name, argv in commands.items():
                wall, peak = _run(argv)
                walls[name].append(wall)
                rss[name].append(peak)
        in_process = float(subprocess.run([py, "-c", _IN_PROCESS, str(model), str(args.runs)], check=True,
                                          capture_output=True, text=True).stdout)

    median = {name: statistics.median(values) for name, values in walls.items()}
    rows = [[name, f"{median[name]:.3f}", f"{min(walls[name]):.3f}", f"{max(rss[name]) / 2**20:.0f}"] for name in commands]
    rows.append(["check() in process (after imports)", f"{in_process:.3f}", "", ""])
    print(tabulate(rows, headers=["command", "median s", "min s", "peak RSS MiB"], tablefmt="simple"))
    help_ratio = median["mtpinspect --help"] / median["import click"]
    check_over = median["mtpinspect check local.gguf --format json"] - in_process
    print(f"\n--help / import click: {help_ratio:.2f}x (goal <= 3x)")
    print(f"check CLI - in-process check: {check_over:.3f} s (goal <= 0.3 s)")
    if args.json:
        args.json.write_text(json.dumps({"median_seconds": median, "in_process_check_seconds": in_process,
                                         "help_over_click": help_ratio, "check_overhead_seconds": check_over,
                                         "peak_rss_bytes": {k: max(v) for k, v in rss.items()}}, indent=2))


if __name__ == "__main__":
    main()
