"""Fidelity of the built-in qwen35 model: PyTorch against the pinned llama-server, per class of held-out text.

The same n-max-1 loop, two ways:
  - llama-server: `mtpinspect sweep builtin:qwen35 --n-max 1` on prompts cut from the held-out documents of
    each class (bench_trained_model.py's prompts), its greedy draft acceptance per class;
  - PyTorch: transformers' Qwen3_5TextModel (the trunk: its Gated DeltaNet's reference path and gated
    attention) and the MTP layer of training/model_qwen35.py, holding the trained weights (the run's
    state.pt, F32) expanded to the full vocabulary, generating greedily and replaying the loop
    (training/evaluate.py, ``replay_n_max_1``).
They must agree within 2 points per class. llama-server runs the Q8_0 GGUF the pinned converter made of
those weights, so a difference is conversion (the V-head order, the A_log and norm rewrites, MRoPE
sections), a Gated DeltaNet that computes differently, or quantization. The V heads: the model has as
many value heads as key heads, so the converter's reorder (grouped-by-K to tiled) is the identity.

    python bench/bench_qwen35_model.py --state RUN/state.pt [--prompts-per-class 4] [--n-predict 64]
        [--json bench/results/qwen35-model.json]

Needs the train extra (torch, transformers) and the Debian corpus (fetched as `mtpinspect train` does).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench_trained_model import CLASSES, _prompts, replay_by_class
from tabulate import tabulate

from mtpinspect.sweep import SweepOptions, run_sweep
from mtpinspect.trained_model import BUILT_IN_PREFIX, SHIPPED_QWEN35


def _server(prompts: Path, args: argparse.Namespace, out: Path) -> dict[str, dict]:
    options = SweepOptions(n_max=(1,), repeat=1, prompts=str(prompts), n_predict=args.n_predict,
                           server_args=("-t", str(args.threads)), out_dir=out, plot=False)
    report = run_sweep(Path(BUILT_IN_PREFIX + "qwen35"), options)
    return {g.prompt_class: {"drafted": g.drafted, "accepted": g.accepted, "acceptance": g.acceptance,
                             "checkpoint_restores": g.checkpoint_restores, "tok_s": g.tokens_per_second.median
                             if g.tokens_per_second else None}
            for g in report.results if g.n_max == 1}


def _pytorch(state: Path, prompts: Path, n_predict: int) -> dict[str, dict]:
    import numpy as np
    import torch

    from mtpinspect.training.model import Vocabulary
    from mtpinspect.training.model_qwen35 import TinyQwen35, from_published, published_tensors, shape_of
    from mtpinspect.training.tokenizer import build
    from mtpinspect.training.toolchain import toolchain

    torch.set_num_threads(2)
    cfg = json.loads((SHIPPED_QWEN35 / "config.json").read_text(encoding="utf-8"))
    saved = torch.load(state, weights_only=False)
    vocab = Vocabulary(np.asarray(saved["kept"]), cfg["vocab_size"])
    trained = TinyQwen35(shape_of(cfg), vocab)
    trained.load_state_dict(saved["model"])
    model = from_published(published_tensors(trained, vocab), cfg)
    tok = build(toolchain().vocab("starcoder"))
    return {cls: {"drafted": drafted, "accepted": accepted, "acceptance": accepted / drafted if drafted else None}
            for cls, (drafted, accepted) in replay_by_class(model, tok, prompts, n_predict).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", type=Path, required=True, help="state.pt of the `train --family qwen35` run")
    parser.add_argument("--prompts-per-class", type=int, default=4)
    parser.add_argument("--prompt-chars", type=int, default=600)
    parser.add_argument("--n-predict", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-qwen35-"))
    out.mkdir(parents=True, exist_ok=True)
    prompts = _prompts(args.prompts_per_class, args.prompt_chars, out)
    began = time.perf_counter()
    server = _server(prompts, args, out / "sweep")
    torch_side = _pytorch(args.state, prompts, args.n_predict)
    rows = []
    for cls in CLASSES:
        s, t = server.get(cls, {}), torch_side[cls]
        gap = None if s.get("acceptance") is None or t["acceptance"] is None else 100 * (s["acceptance"] - t["acceptance"])
        rows.append({"class": cls, "llama-server": s.get("acceptance"), "drafted (server)": s.get("drafted"),
                     "PyTorch": t["acceptance"], "drafted (PyTorch)": t["drafted"], "gap (points)": gap,
                     "restores": s.get("checkpoint_restores")})
    print(tabulate(rows, headers="keys", floatfmt=".3f"))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "seconds": round(time.perf_counter() - began, 1),
                                         "load": os.getloadavg(), "n_predict": args.n_predict,
                                         "prompts_per_class": args.prompts_per_class}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
