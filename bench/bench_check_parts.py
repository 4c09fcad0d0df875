"""Where the time of `mtpinspect check LOCAL.gguf --no-verify` goes, part by part, in fresh processes.

Issue 34 asks the tiny model's check to take at most 2x `python -c "import click"`; this says what the rest
is made of. Each run is a fresh interpreter that times, with perf_counter and in this order:

- ``click``: `import click`;
- ``other modules``: every module outside mtpinspect, click and tabulate that the check imports (the
  standard library's, platformdirs), found by a first run of the check and imported here ahead of it;
- ``mtpinspect modules``: the check's and the CLI's modules, and within them the time spent building their
  dataclasses (around ``dataclasses._process_class``) and their enums (around ``EnumType.__new__``);
- ``tabulate``: `import tabulate`;
- ``check``: the command itself (`mtpinspect.cli.main`, output to a buffer).

The interpreter's own start is `python -c pass`, timed as a whole process. Run it with the interpreter of
the venv to measure (one where `pip install .` put mtpinspect, as a user has it):

    /tmp/ours/bin/python bench/bench_check_parts.py [--runs 9] [--model FILE.gguf]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

TINY = Path(__file__).resolve().parents[1] / "mtpinspect" / "data" / "trained" / "tiny-glm-mtp-Q8_0.gguf"
OURS = ("mtpinspect", "click", "tabulate")
# The modules a check imports beyond the interpreter's start and click: printed one per line.
_FIND_OTHERS = """
import contextlib, io, sys
before = set(sys.modules)
import click
after_click = set(sys.modules)
from mtpinspect.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["check", sys.argv[1], "--no-verify"])
    except SystemExit:
        pass
ours = ("mtpinspect", "click", "tabulate")
print("\\n".join(sorted(m for m in set(sys.modules) - after_click - before
                        if m.split(".")[0] not in ours and not m.startswith("_") and "._" not in m)))
"""
_PARTS = """
import time
began = time.perf_counter()
import click
clicked = time.perf_counter()
import contextlib, dataclasses, enum, importlib, io, json, sys
for name in sys.argv[2:]:
    importlib.import_module(name)
others = time.perf_counter()
spent = {"dataclasses": 0.0, "enums": 0.0}
def timed(kind, build):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return build(*args, **kwargs)
        finally:
            spent[kind] += time.perf_counter() - start
    return wrapper
dataclasses._process_class = timed("dataclasses", dataclasses._process_class)
enum.EnumType.__new__ = timed("enums", enum.EnumType.__new__)
import mtpinspect.cli, mtpinspect.cli.check, mtpinspect.cli._output, mtpinspect.inspection.pipeline
ours = time.perf_counter()
import tabulate
tabulated = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    try:
        mtpinspect.cli.main(["check", sys.argv[1], "--no-verify"])
    except SystemExit:
        pass
done = time.perf_counter()
print(json.dumps({"click": clicked - began, "other modules": others - clicked, "mtpinspect modules": ours - others,
                  "  of which dataclasses": spent["dataclasses"], "  of which enums": spent["enums"],
                  "tabulate": tabulated - ours, "check": done - tabulated,
                  "mtpinspect modules count": sum(m.startswith("mtpinspect") for m in sys.modules)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh processes (medians count)")
    parser.add_argument("--model", type=Path, default=TINY, help="the GGUF to check (default: the built-in model)")
    args = parser.parse_args()
    py = sys.executable
    others = subprocess.run([py, "-c", _FIND_OTHERS, str(args.model)], check=True, capture_output=True,
                            text=True).stdout.split()
    runs: list[dict[str, float]] = []
    passes: list[float] = []
    for _ in range(args.runs):
        began = time.perf_counter()
        subprocess.run([py, "-c", "pass"], check=True)
        passes.append(time.perf_counter() - began)
        done = subprocess.run([py, "-c", _PARTS, str(args.model), *others], check=True, capture_output=True, text=True)
        runs.append(json.loads(done.stdout))
    print(f"{py}, {args.model.name}, median of {args.runs} fresh processes")
    print(f"{'interpreter (python -c pass, whole process)':45s} {statistics.median(passes) * 1000:6.1f} ms")
    for part in runs[0]:
        value = statistics.median(run[part] for run in runs)
        print(f"{part:45s} {value:6.0f}" if part.endswith("count") else f"{part:45s} {value * 1000:6.1f} ms")
    print(f"other modules: {' '.join(others)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
