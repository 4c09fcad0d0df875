"""Is check's memory estimate (llama.cpp's metadata-only load) within 15% of what sweep measures?

For each size preset of the tiny model (``tiny``, ``heavy``), writes the bundled model, runs
``mtpinspect.sweep.run_sweep`` on it (the baseline and ``--spec-draft-n-max N``; peak RSS of the
real llama-server, sampled at 20 Hz), and runs the verify helper with the same llama-server flags
(``-np 1`` as sweep sets it, ``-c``, and ``--spec-type draft-mtp --spec-draft-n-max N``). Then it
compares the estimate without MTP with the baseline's peak RSS and the estimate with MTP with the
MTP run's.

The estimate is the worst case llama.cpp reserves: its compute buffers are sized for a full
micro-batch (-ub, 512 tokens), so the comparison uses a prompt longer than that (``--prompt-words``
words of plain text, 5 bytes a token for the tiny models' tokenizer). The same sweep with the short
built-in prompts is shown too, where the estimate is an upper bound.

    python bench/bench_memory_estimate.py [--sizes tiny,heavy] [--n-max 3] [--context 4096]
        [--repeat 2] [--prompt-words 700] [--out DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

from mtpinspect.runtime.build_cache import find_helper
from mtpinspect.runtime.verify import verify
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.tiny_model import SIZES, spec_for_size, write_tiny_model

MiB = 2**20
WORDS = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda")


def _peaks(model: Path, prompts: str | Path, args: argparse.Namespace, out: Path) -> dict[str, int]:
    options = SweepOptions(
        n_max=(args.n_max,), repeat=args.repeat, prompts=prompts, n_predict=64,
        server_args=("-c", str(args.context)), out_dir=out, plot=False,
    )
    report = run_sweep(model, options)
    return {("baseline" if g.n_max is None else "mtp"): g.rss_peak_bytes for g in report.results if g.rss_peak_bytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="tiny,heavy")
    parser.add_argument("--n-max", type=int, default=3)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--prompt-words", type=int, default=700)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    helper = find_helper()
    if helper is None:
        sys.exit("the verify helper is not built: run `mtpinspect runtime build`")
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-memory-"))
    out.mkdir(parents=True, exist_ok=True)
    long_prompt = out / "long.txt"
    rng = random.Random(1)
    long_prompt.write_text(" ".join(rng.choice(WORDS) for _ in range(args.prompt_words)), encoding="utf-8")
    rows = []
    for size in args.sizes.split(","):
        if size not in SIZES:
            sys.exit(f"--sizes: {size!r} is not one of {SIZES}")
        (out / size).mkdir(exist_ok=True)
        (model,) = write_tiny_model(out / size / f"{size}-mtp.gguf", spec_for_size(size, acceptance=0.8))
        flags = ["-np", "1", "-c", str(args.context), "--spec-type", "draft-mtp", "--spec-draft-n-max", str(args.n_max)]
        v = verify(helper, ["-m", str(model), *flags])
        assert v.ok and v.memory is not None and v.memory.total_bytes is not None, v.error
        estimate = {"baseline": v.memory.without_mtp_bytes, "mtp": v.memory.total_bytes}
        measured = {
            "long prompt": _peaks(model, long_prompt, args, out / size / "sweep-long"),
            "built-in prompts": _peaks(model, "code", args, out / size / "sweep-code"),
        }
        for config in ("baseline", "mtp"):
            for prompts, peaks in measured.items():
                peak = peaks[config]
                rows.append([
                    size, config if config == "baseline" else f"n-max {args.n_max}", prompts, f"{estimate[config] / MiB:.1f}",
                    f"{peak / MiB:.1f}", f"{(estimate[config] - peak) / peak * 100:+.1f}%",
                ])
        m = v.memory
        print(f"{size}: estimate at -c {m.context}: process {m.process / MiB:.1f} MiB; without MTP weights "
              f"{m.without_mtp.weights / MiB:.1f}, KV {m.without_mtp.kv / MiB:.1f}, compute {m.without_mtp.compute / MiB:.1f}; "
              f"MTP adds {m.mtp_bytes / MiB:.1f} MiB (measured: "
              + ", ".join(f"{(p['mtp'] - p['baseline']) / MiB:.1f} MiB with the {k}" for k, p in measured.items()) + ")")
    print(tabulate(rows, headers=["model", "config", "prompts", "estimate MiB", "peak RSS MiB", "estimate - RSS"]))


if __name__ == "__main__":
    main()
