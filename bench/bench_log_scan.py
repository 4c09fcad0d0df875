"""How long `diagnose --log` takes on a large log: the crash scan alone and the whole read_log.

Users paste whole server logs; a day of llama-server or vLLM output runs to tens of MB. This repeats
real corpus logs (cases/logs/) up to --size-mib and times `runtime.crash.crash_in_log` and
`logread.runs.read_log` on them.

    python bench/bench_log_scan.py [--size-mib 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from mtpinspect.logread.runs import read_log
from mtpinspect.runtime.crash import crash_in_log

LOGS = Path(__file__).resolve().parents[1] / "cases" / "logs"
SAMPLES = (
    "vllm-qwen36-27b-autoround-mtp-healthy.log",  # metrics, no crash: every pattern scans the whole text
    "llama.cpp-chained-ngram-mtp-pid-prefix.log",
    "llama.cpp-gemma4-sm-tensor-mtp-fattn-579.log",  # a crash at the end of each copy
    "vllm-qwen36-27b-fp8-mtp-illegal-memory-access.log",
)


def _median_seconds(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in SAMPLES:
            text = (LOGS / name).read_text(encoding="utf-8")
            big = text * max(1, args.size_mib * 2**20 // len(text))
            path = Path(tmp, name)
            path.write_text(big, encoding="utf-8")
            crash = crash_in_log(big)
            rows.append({
                "log": name,
                "MiB": round(len(big) / 2**20),
                "crash scan s": round(_median_seconds(lambda text=big: crash_in_log(text), args.repeat), 2),
                "read_log s": round(_median_seconds(lambda file=path: read_log(file), args.repeat), 2),
                "crash": crash.summary[:50] if crash else "-",
            })
    print(tabulate(rows, headers="keys"))


if __name__ == "__main__":
    main()
