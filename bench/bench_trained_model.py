"""What the built-in trained model does with the pinned llama-server on this CPU, per class of held-out text.

For each variant of the model (the shipped Q8_0 head; the MTP block re-quantized by llama-quantize to
Q4_0, Q3_K, Q2_K, TQ1_0; the shipped trunk with the `mtp-` sidecar of a differently seeded training run):
  - `mtpinspect sweep` (the tool itself: baseline and --spec-draft-n-max 1..4) on prompts cut from the
    held-out documents of each class (never trained on): acceptance, mean accepted length, tok/s against
    the baseline;
  - `mtpinspect diagnose` on the variant (its probe on the real llama-server): the causes it names.
For the shipped model also:
  - the same n-max-1 loop replayed in PyTorch on the GGUF's own weights (training/evaluate.py,
    ``replay_n_max_1``), per class, beside llama-server's figure: they must agree within 2 points, which
    checks the conversion end to end;
  - teacher-forced figures on held-out text (agreement with the trunk's next-next token, main accuracy,
    share of distinct greedy tokens, entropy), so a degenerate model cannot pass for a trained one.

    python bench/bench_trained_model.py [--other-sidecar mtp-seed1.gguf] [--prompts-per-class 12]
        [--n-predict 128] [--repeat 1] [--out DIR] [--json bench/results/trained-model.json]

Needs the train extra (torch) for the PyTorch replay and the corpus (fetched as `mtpinspect train` does).
The sidecar of another seed comes from a second `mtpinspect train --seed 1` run, converted with the
pinned converter's --mtp (`tiny-model --trained --layout sidecar` makes the shipped trunk's own pair).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from mtpinspect.cache_dir import cache_dir
from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.trained_model import SHIPPED_GGUF, checkpoint_tensors, config, write_gguf

HEAD_TYPES = ("Q4_0", "Q3_K", "Q2_K", "TQ1_0")
CLASSES = ("code", "prose-en", "prose-ja")


def _prompts(per_class: int, chars: int, out: Path) -> Path:
    """Prompts cut from held-out documents: the first ``chars`` characters of each, ending at a line break."""
    from mtpinspect.training.corpus import CLASSES as CORPUS
    from mtpinspect.training.corpus import documents, fetch

    rows = []
    for cls in CORPUS:
        docs = [d for d in documents(cls, fetch(cls, cache_dir() / "training" / "debs")) if d.held_out]
        step = max(1, len(docs) // per_class)
        for i, doc in enumerate(docs[::step][:per_class]):
            cut = doc.text[:chars]
            cut = cut[: cut.rfind("\n") + 1] or cut
            rows.append({"id": f"{cls.name}-{i}", "class": cls.name, "prompt": cut})
    path = out / "held-out-prompts.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _sweep(model: Path, prompts: Path, args: argparse.Namespace, out: Path, n_max: list[int],
           mtp_file: Path | None = None) -> list[dict]:
    options = SweepOptions(n_max=tuple(n_max), repeat=args.repeat, prompts=str(prompts), n_predict=args.n_predict,
                           server_args=("-t", str(args.threads)), out_dir=out, plot=False, mtp_file=mtp_file)
    report = run_sweep(model, options)
    rows = []
    for group in report.results:
        rows.append({
            "class": group.prompt_class, "n_max": group.n_max,
            "tok_s": None if group.tokens_per_second is None else round(group.tokens_per_second.median, 1),
            "speedup": None if group.speedup is None else round(group.speedup, 3),
            "acceptance": None if group.acceptance is None else round(group.acceptance, 4),
            "mean_length": None if group.mean_length is None else round(group.mean_length, 3),
        })
    return rows


def _diagnose(model: Path, mtp_file: Path | None) -> list[str]:
    from mtpinspect.diagnosis import diagnose

    report = diagnose(str(model), mtp_file=str(mtp_file) if mtp_file else None, server_args=("-t", "2"))
    return [f"{c.code} ({c.confidence_word})" for c in report.causes] or ["no cause found"]


def replay_by_class(model, tok, prompts: Path, n_predict: int) -> dict[str, tuple[int, int]]:
    """(drafted, accepted) per class of PyTorch's replay of llama-server's greedy n-max-1 loop on the prompts
    (training/evaluate.replay_n_max_1), for either built-in model's trunk and head."""
    from mtpinspect.training.evaluate import replay_n_max_1

    stop = {tok.convert_tokens_to_ids("<|endoftext|>")}
    rows = [json.loads(line) for line in prompts.read_text(encoding="utf-8").splitlines()]
    counts: dict[str, tuple[int, int]] = {}
    for cls in CLASSES:
        drafted = accepted = 0
        for row in (r for r in rows if r["class"] == cls):
            run = replay_n_max_1(model, tok(row["prompt"], add_special_tokens=False)["input_ids"], n_predict, stop)
            drafted, accepted = drafted + run.drafted, accepted + run.accepted
        counts[cls] = (drafted, accepted)
    return counts


def _replay(prompts: Path, n_predict: int) -> dict[str, dict]:
    """n-max-1 acceptance per class from PyTorch on the shipped GGUF's weights, and teacher-forced figures."""
    import numpy as np
    import torch

    from mtpinspect.training.checkpoint import from_published
    from mtpinspect.training.evaluate import figures
    from mtpinspect.training.model import Vocabulary
    from mtpinspect.training.tokenizer import build
    from mtpinspect.training.toolchain import toolchain

    torch.set_num_threads(2)
    cfg = config()
    model = from_published(dict(checkpoint_tensors()), cfg)
    tok = build(toolchain().vocab("starcoder"))
    out: dict[str, dict] = {}
    for cls, (drafted, accepted) in replay_by_class(model, tok, prompts, n_predict).items():
        out[cls] = {"drafted": drafted, "accepted": accepted, "acceptance": round(accepted / drafted, 4) if drafted else None}
    # Teacher-forced, on held-out token streams (the training's own evaluation, on the shipped weights).
    from mtpinspect.training.data import load

    streams = load(cache_dir() / "training", tok, tok.convert_tokens_to_ids("<|endoftext|>"))
    everyone = Vocabulary(np.arange(cfg["vocab_size"]), cfg["vocab_size"])
    for cls, stream in streams.held_out.items():
        out.setdefault(cls, {})["held_out"] = figures(model, everyone, cls, stream, count=96).as_dict()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-max", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 3, 4])
    parser.add_argument("--variant-n-max", type=lambda s: [int(x) for x in s.split(",")], default=[1, 3],
                        help="draft lengths for the low-bit heads and the other seed's sidecar")
    parser.add_argument("--prompts-per-class", type=int, default=8)
    parser.add_argument("--prompt-chars", type=int, default=600)
    parser.add_argument("--n-predict", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--other-sidecar", type=Path, default=None, help="mtp- sidecar of a differently seeded run")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: heads, replay, diagnose")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-trained-"))
    out.mkdir(parents=True, exist_ok=True)
    prompts = _prompts(args.prompts_per_class, args.prompt_chars, out)
    results: dict = {"model": str(SHIPPED_GGUF), "load_before": os.getloadavg(), "variants": {}}
    variants: list[tuple[str, Path, Path | None]] = [("shipped Q8_0 head", SHIPPED_GGUF, None)]
    if "heads" not in skip:
        for kind in HEAD_TYPES:
            variants.append((f"{kind} head", write_gguf(out / f"head-{kind}.gguf", head_type=kind, force=True)[0].path, None))
    if args.other_sidecar is not None:
        from mtpinspect.trained_model import write_sidecar

        trunk = write_sidecar(out / "trunk.gguf", force=True)[0].path
        variants.append(("trunk + sidecar of seed 1", trunk, args.other_sidecar))
    for name, model, mtp_file in variants:
        began = time.perf_counter()
        n_max = args.n_max if model == SHIPPED_GGUF else args.variant_n_max
        rows = _sweep(model, prompts, args, out / name.replace(" ", "-"), n_max, mtp_file)
        causes = _diagnose(model, mtp_file) if "diagnose" not in skip else []
        results["variants"][name] = {"sweep": rows, "diagnose": causes, "seconds": round(time.perf_counter() - began, 1)}
        print(f"\n== {name} ({time.perf_counter() - began:.0f} s); diagnose: {', '.join(causes)}")
        print(tabulate(rows, headers="keys"))
    if "replay" not in skip:
        replay = _replay(prompts, args.n_predict)
        results["pytorch"] = replay
        server = {r["class"]: r["acceptance"] for r in results["variants"]["shipped Q8_0 head"]["sweep"] if r["n_max"] == 1}
        print("\n== n-max 1 acceptance: PyTorch replay on the GGUF's weights vs llama-server")
        print(tabulate([[c, replay[c]["acceptance"], server.get(c), replay[c]["held_out"]["agreement"],
                         replay[c]["held_out"]["distinct_share"], replay[c]["held_out"]["entropy"]] for c in CLASSES],
                       headers=["class", "PyTorch", "llama-server", "teacher-forced agreement", "distinct share", "entropy"]))
    results["load_after"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
