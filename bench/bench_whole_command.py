"""`mtpinspect check LOCAL.gguf --no-verify` as a whole process against the light GGUF readers, in one run.

Goals (issue 34): on a GLM-4.6-shaped header, `check --no-verify` at least as fast as the fastest of
gguf-inspect, hyllama and gguf-parser; on the tiny model, at most 2x `python -c "import click"`.

Each command is a fresh process, the commands alternate (drift hits all alike), and the median of
``--runs`` counts. Beside the wall time, each run's CPU time (user + sys of the child, resource.getrusage)
is kept: on a shared, loaded machine it moves less than the wall time, so it backs a ratio up (node's
helper threads count in hyllama's). The load average is printed when the runs start and end. The files:

- ``glm-4.6``: a GLM-4.6-shaped header (glm4moe, 92 blocks + 1 MTP block, 160 experts, 1,573 tensors, a
  151,552-token BPE vocabulary with merges) over 215 GiB of sparse tensor data (tests/gguf_factory.py);
- ``split``: the same model as 5 shards, as gguf-py's writer splits it (mtpinspect reads every shard's
  header; gguf-inspect and gguf-parser take one file, so they read the first shard, the one with the
  vocabulary; hyllama's script is given all 5);
- ``tiny``: the built-in trained model (mtpinspect/data/trained, 31.6 MiB).

The peers, installed outside the project (their versions are in bench/README.md):

    python -m venv /tmp/peers && /tmp/peers/bin/pip install gguf-inspect==0.1.0 gguf-parser==0.1.1
    npm ci --prefix bench/node
    python bench/bench_whole_command.py --peers /tmp/peers [--runs 11] [--json FILE]

mtpinspect runs as `python -m mtpinspect` with this checkout first on PYTHONPATH, and with its bytecode
written once before the runs (as an installed package has it: pip compiles on install); a machine with
PYTHONDONTWRITEBYTECODE set would otherwise compile every module on every run. The peers run from their
own venv, whose start-up runs no .pth file but setuptools'; an interpreter whose site-packages holds .pth
files that import things at every start (an editable install's finder, a certificate injector's) makes
mtpinspect and the python baselines pay them on every run: ``--no-site`` runs those as ``python -S`` with
the same site-packages on PYTHONPATH, the same libraries without the .pth files. ``--installed VENV`` runs
mtpinspect and the python baselines with VENV's interpreter and no PYTHONPATH: mtpinspect as a user has it
after `pip install .` in a fresh venv (pip compiled its bytecode), beside the peers in theirs:

    python -m venv /tmp/ours && /tmp/ours/bin/pip install .
    python bench/bench_whole_command.py --peers /tmp/peers --installed /tmp/ours

With ``--installed``, mtpinspect also runs as the `mtpinspect` console script of VENV, the command a user
types (it imports mtpinspect directly; `python -m` goes through runpy first).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from gguf_factory import (  # noqa: E402
    BIG_TYPES,
    Glm4MoeDims,
    big_metadata,
    glm4moe_tensors,
    write_gguf,
    write_split_gguf,
)

TINY = ROOT / "mtpinspect" / "data" / "trained" / "tiny-glm-mtp-Q8_0.gguf"
HYLLAMA = ROOT / "bench" / "node" / "hyllama_header.mjs"
# GLM-4.6's config.json: 92 layers of which 3 dense, 160 routed experts (8 used), 1 MTP layer.
GLM_46 = Glm4MoeDims(n_vocab=151_552, n_embd=5120, n_head=96, n_head_kv=8, head_dim=128, n_ff=12288, n_ff_exp=1536,
                     n_expert=160, n_expert_used=8, n_layer=92, n_dense=3, n_nextn=1)
SHARDS = 5
CHECK = "mtpinspect check --no-verify"
SCRIPT_CHECK = "mtpinspect check --no-verify (console script)"


def write_files(folder: Path) -> dict[str, list[Path]]:
    """The three inputs: each a list of files (the first is the one a single-file reader is given)."""
    metadata = big_metadata(GLM_46, name="GLM 4.6", size_label="355B-A32B")
    tensors = glm4moe_tensors(GLM_46, BIG_TYPES)
    glm = write_gguf(folder / "GLM-4.6-Q4_K_M.gguf", arch="glm4moe", metadata=metadata, tensors=tensors)
    split = folder / "split"
    split.mkdir()
    shards = write_split_gguf(split / "GLM-4.6-Q4_K_M.gguf", arch="glm4moe", metadata=metadata, tensors=tensors,
                              n_shards=SHARDS)
    return {"glm-4.6": [glm], "split": shards, "tiny": [TINY]}


def commands(files: list[Path], peers: Path | None, py: list[str], script: Path | None) -> dict[str, list[str]]:
    """What each tool runs on one input (``py``: the interpreter that runs mtpinspect, with its options;
    ``script``: the `mtpinspect` console script pip installed, the command users type, which skips runpy)."""
    first = str(files[0])
    found = {CHECK: [*py, "-m", "mtpinspect", "check", first, "--no-verify"],
             "mtpinspect check --no-verify --format json": [*py, "-m", "mtpinspect", "check", first, "--no-verify",
                                                            "--format", "json"]}
    if script is not None:
        found[SCRIPT_CHECK] = [str(script), "check", first, "--no-verify"]
    inspect_cli = peers / "bin" / "gguf-inspect" if peers else shutil.which("gguf-inspect")
    if inspect_cli and Path(inspect_cli).exists():
        found["gguf-inspect"] = [str(inspect_cli), first]
    if peers and (peers / "bin" / "python").exists():
        found["gguf-parser (PyPI)"] = [str(peers / "bin" / "python"), "-m", "gguf_parser", first]
    if shutil.which("node") and (ROOT / "bench" / "node" / "node_modules" / "hyllama").is_dir():
        found["hyllama"] = ["node", str(HYLLAMA), *map(str, files)]
    return found


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # check: 1 is "MTP not usable", a verdict
        raise SystemExit(f"{' '.join(argv)}: exit status {done.returncode}: {done.stderr.decode()[-500:]}")
    return seconds, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11, help="runs per command (median counts; at least 9)")
    parser.add_argument("--peers", type=Path, help="venv holding gguf-inspect and gguf-parser (default: gguf-inspect on PATH)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--no-site", action="store_true",
                        help="run mtpinspect and the python baselines as `python -S`, the interpreter's site-packages on "
                             "PYTHONPATH: the same libraries without the .pth files this interpreter runs at every start "
                             "(the peers' venv has none of them)")
    parser.add_argument("--installed", type=Path, metavar="VENV",
                        help="run mtpinspect and the python baselines with VENV/bin/python and no PYTHONPATH (mtpinspect "
                             "installed there with `pip install .`), instead of this checkout with this interpreter")
    args = parser.parse_args()
    if args.installed and args.no_site:
        parser.error("--installed and --no-site: choose one")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    script = None
    if args.installed:
        py, ours = [str(args.installed / "bin" / "python")], env
        script = args.installed / "bin" / "mtpinspect"
    else:
        py = [sys.executable, "-S"] if args.no_site else [sys.executable]
        ours = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), *(site.getsitepackages() if args.no_site else []),
                                                       *filter(None, [os.environ.get("PYTHONPATH")])])}
    print(f"mtpinspect and the baselines run as: {' '.join(py)} (PYTHONPATH={ours.get('PYTHONPATH', '')})")

    # `import click, tabulate`: the floor of a command that draws a table with the libraries the guide names.
    baselines = {"python -c pass": [*py, "-c", "pass"],
                 "python -c 'import click'": [*py, "-c", "import click"],
                 "python -c 'import click, tabulate'": [*py, "-c", "import click, tabulate"]}
    with tempfile.TemporaryDirectory(prefix="mtpinspect-bench-whole-") as tmp:
        inputs = write_files(Path(tmp))
        # Each command with its environment: mtpinspect's PYTHONPATH is not the peers' business.
        plan = {(label, name): (argv, ours if name.startswith("mtpinspect") else env)
                for label, files in inputs.items() for name, argv in commands(files, args.peers, py, script).items()}
        plan.update({("-", name): (argv, ours) for name, argv in baselines.items()})
        for argv, argv_env in plan.values():  # warm-up: bytecode written, files in the page cache
            run_once(argv, argv_env)
        walls: dict[tuple[str, str], list[float]] = {key: [] for key in plan}
        cpus: dict[tuple[str, str], list[float]] = {key: [] for key in plan}
        print(f"load average at start: {load_average()}")
        for _ in range(args.runs):
            for key, (argv, argv_env) in plan.items():
                wall, cpu = run_once(argv, argv_env)
                walls[key].append(wall)
                cpus[key].append(cpu)
        print(f"load average at end: {load_average()}\n")

    median = {key: statistics.median(values) for key, values in walls.items()}
    cpu = {key: statistics.median(values) for key, values in cpus.items()}
    click = median[("-", "python -c 'import click'")]
    click_cpu = cpu[("-", "python -c 'import click'")]
    rows = []
    for (label, name), value in median.items():
        peers = [(v, cpu[(lab, n)]) for (lab, n), v in median.items()
                 if lab == label and not n.startswith("mtpinspect") and label != "-"]
        fastest = min(peers) if peers else None
        rows.append([label, name, f"{value:.3f}", f"{min(walls[(label, name)]):.3f}",
                     f"{value / fastest[0]:.2f}" if fastest else "-", f"{value / click:.2f}",
                     f"{cpu[(label, name)]:.3f}", f"{cpu[(label, name)] / click_cpu:.2f}"])
    header = ["file", "command", "median s", "min s", "/ fastest peer", "/ import click", "cpu s", "cpu / click"]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    glm_peers = {n: v for (lab, n), v in median.items() if lab == "glm-4.6" and not n.startswith("mtpinspect")}
    print()
    for check in (CHECK, SCRIPT_CHECK) if script else (CHECK,):
        if glm_peers:
            best = min(glm_peers, key=glm_peers.__getitem__)
            ratio = median[("glm-4.6", check)] / glm_peers[best]
            print(f"glm-4.6: {check} / fastest peer ({best}): {ratio:.2f} (goal <= 1); "
                  f"CPU time / {best}'s: {cpu[('glm-4.6', check)] / cpu[('glm-4.6', best)]:.2f}")
        print(f"tiny: {check} / import click: {median[('tiny', check)] / click:.2f} (goal <= 2); "
              f"CPU time: {cpu[('tiny', check)] / click_cpu:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "median_seconds": {f"{lab}|{n}": v for (lab, n), v in median.items()},
                                         "min_seconds": {f"{lab}|{n}": min(w) for (lab, n), w in walls.items()},
                                         "median_cpu_seconds": {f"{lab}|{n}": v for (lab, n), v in cpu.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
