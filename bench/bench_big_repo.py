"""A repo listing thousands of GGUF files: what its names cost, and `find` / `check --all` under --deadline.

Issue 29 (defect 2): pairing each model's mtp- sidecar walked the whole listing per model, so a repo of
2,000 GGUF files took 46 s (`find`) and 97 s (`check --all`) with `--deadline 5`, and 20,000 did not end in
10 minutes. Two figures per size:

- names: sources/filenames.py NameIndex.of over the listing, then inspection/pairing.py pair_by_name for
  every model (each with an mtp- sidecar named for it, so every name is looked up), in process, no network;
- cli: `mtpinspect find BASE --limit 0` and `check REPO --all`, `--no-verify --no-cache --deadline 5`,
  over the Hub stand-in serving the repo (every file the same tiny GGUF), as whole processes.

    python bench/bench_big_repo.py [--sizes 2000,20000] [--no-cli]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def names_seconds(n: int) -> float:
    from mtpinspect.inspection.pairing import pair_by_name
    from mtpinspect.sources.filenames import NameIndex, group_splits

    files = [f"Model{i}-Q4_K_M.gguf" for i in range(n)] + [f"mtp-Model{i}-Q4_K_M.gguf" for i in range(n)]
    started = time.perf_counter()
    index = NameIndex.of(files)
    for group in group_splits(list(index.mains)).values():
        pair_by_name(index, group)
    return time.perf_counter() - started


def cli_seconds(n: int) -> dict[str, float]:
    from gguf.constants import GGMLQuantizationType, GGUFValueType
    from gguf_factory import _gguf_string, _kv, _tensor_info, raw_gguf
    from hubstub import HubStub

    arch = _kv("general.architecture", GGUFValueType.STRING, _gguf_string("llama"))
    data = raw_gguf([arch], [_tensor_info("blk.0.attn_norm.weight", (64,), GGMLQuantizationType.F32)], tail=256)
    times = {}
    with HubStub() as stub:
        stub.add_repo("base/Model", {"README.md": b"# base\n"})
        stub.add_repo("big/Repo-GGUF", {f"Model{i}-Q4_K_M.gguf": data for i in range(n)},
                      base_model=("quantized", "base/Model"), downloads=1)
        for name, args in (("find", ["find", "base/Model", "--limit", "0"]),
                           ("check --all", ["check", "big/Repo-GGUF", "--all"])):
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "mtpinspect", *args, "--no-verify", "--no-cache", "--deadline", "5"],
                           env={**os.environ, "HF_ENDPOINT": stub.url}, capture_output=True, timeout=900)
            times[name] = time.monotonic() - started
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000")
    parser.add_argument("--no-cli", action="store_true")
    args = parser.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        line = f"{n:>6} GGUF files (+ {n} mtp-): names {names_seconds(n):.2f} s"
        if not args.no_cli:
            line += "".join(f", {k} {v:.1f} s" for k, v in cli_seconds(n).items())
        print(line, flush=True)


if __name__ == "__main__":
    main()
