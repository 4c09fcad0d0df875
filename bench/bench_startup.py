"""How fast the `mtpinspect` command starts, as ratios measured in one run on one machine.

Goals (issue 8):

- `mtpinspect --help` within 3x the time of `python -c "import click"` (the floor of any click CLI);
- `mtpinspect check local.gguf --format json` at most 0.3 s above the check itself, timed in a process
  that has already imported everything (the in-process check).

Each command runs as a fresh process (`python -m mtpinspect ...`, the console script's code path), a
few times, alternating, and the median wall time counts. Peak RSS is measured in one more run, by the
child itself (VmHWM, counted from exec; Linux): a forked child's ru_maxrss would include this script's
memory. The GGUF is the built-in tiny MTP model, so the check itself is a header read.

    python bench/bench_startup.py [--runs 9] [--json FILE]
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


_PEAK = """
import runpy, sys
sys.argv = ["mtpinspect", *sys.argv[1:]]
try:
    {run}
finally:
    with open("/proc/self/status") as status:
        print(next(line.split()[1] for line in status if line.startswith("VmHWM:")), file=sys.stderr)
"""


def _run(argv: list[str]) -> float:
    """Wall seconds of one child process."""
    began = time.perf_counter()
    code = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL).returncode
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit status {code}")
    return time.perf_counter() - began


def _peak_mib(run: str, args: list[str]) -> float:
    done = subprocess.run([sys.executable, "-c", _PEAK.format(run=run), *args], capture_output=True, text=True)
    return int(done.stderr.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per command (median counts)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mtpinspect-bench-startup-") as tmp:
        model = Path(tmp) / "tiny.gguf"
        py = sys.executable
        # Written by the CLI, so that this process stays small (its children start from its image).
        subprocess.run([py, "-m", "mtpinspect", "tiny-model", str(model)], check=True, capture_output=True)
        cli = 'runpy.run_module("mtpinspect", run_name="__main__", alter_sys=True)'
        commands = {
            "import click": ([py, "-c", "import click"], ("import click", [])),
            "mtpinspect --help": ([py, "-m", "mtpinspect", "--help"], (cli, ["--help"])),
            "mtpinspect check local.gguf --format json": (
                [py, "-m", "mtpinspect", "check", str(model), "--format", "json"], (cli, ["check", str(model), "--format", "json"])),
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):  # alternate, so drift hits every command alike
            for name, (argv, _) in commands.items():
                walls[name].append(_run(argv))
        rss = {name: _peak_mib(*peak) for name, (_, peak) in commands.items()}
        in_process = float(subprocess.run([py, "-c", _IN_PROCESS, str(model), str(args.runs)], check=True,
                                          capture_output=True, text=True).stdout)

    from tabulate import tabulate

    median = {name: statistics.median(values) for name, values in walls.items()}
    rows = [[name, f"{median[name]:.3f}", f"{min(walls[name]):.3f}", f"{rss[name]:.0f}"] for name in commands]
    rows.append(["check() in process (after imports)", f"{in_process:.4f}", "", ""])
    print(tabulate(rows, headers=["command", "median s", "min s", "peak RSS MiB"], tablefmt="simple", disable_numparse=True))
    help_ratio = median["mtpinspect --help"] / median["import click"]
    check_over = median["mtpinspect check local.gguf --format json"] - in_process
    print(f"\n--help / import click: {help_ratio:.2f}x (goal <= 3x)")
    print(f"check CLI - in-process check: {check_over:.3f} s (goal <= 0.3 s)")
    if args.json:
        args.json.write_text(json.dumps({"median_seconds": median, "in_process_check_seconds": in_process,
                                         "help_over_click": help_ratio, "check_overhead_seconds": check_over,
                                         "peak_rss_mib": rss}, indent=2))


if __name__ == "__main__":
    main()
