"""Train the tiny glm4moe model and its MTP head on this CPU, then save and convert it.

One run: fetch the three classes (corpus.py: the Debian packages, or with ``Recipe.corpus`` the sample of
them that ships) and tokenize them (data.py), pick the tokens that get rows of their own
(``Recipe.min_count``), train trunk and head together (loss = main CE + ``mtp_weight`` x MTP CE, AdamW,
warm-up then cosine decay), score the held-out text every ``eval_every`` steps (evaluate.py; the learning
curve goes to curve.jsonl), and write the Hugging Face folder (checkpoint.py) and its GGUF through the
pinned converter (toolchain.py). The seed fixes the initial weights and every batch: the same recipe on
the same packages gives the same model on the same CPU.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from mtpinspect.files import OwnedFolder, replace_folder, replaceable_folder
from mtpinspect.training.corpus import DEBIAN

Progress = Callable[[str], None]

SHIPPED_OUTTYPE = "q8_0"  # the shipped GGUF: 49k x 256 embedding and output matrices fit 48 MB only so


@dataclass(frozen=True)
class Recipe:
    steps: int = 1100  # about 60 minutes on 2 cores (3.2 s a step)
    seed: int = 0
    per_class: int = 4  # windows of each class in a batch
    length: int = 385  # tokens per window: 384 positions scored
    lr: float = 2e-3
    warmup: int = 100
    min_lr_share: float = 0.1
    weight_decay: float = 0.1
    clip: float = 1.0
    mtp_weight: float = 0.3  # DeepSeek-V3's lambda for its first MTP depth
    min_count: int = 20  # a token seen fewer times in the training text shares the rare tokens' rows
    eval_every: int = 100
    eval_windows: int = 48
    threads: int = 2
    layers: int = 4
    corpus: str = DEBIAN  # corpus.CORPORA: the Debian packages, or the sample of them that ships (smoke runs, tests)
    family: str = "glm4moe"  # family.FAMILIES: what is trained; everything else is shared

    def lr_at(self, step: int) -> float:
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        done = (step - self.warmup) / max(1, self.steps - self.warmup)
        return self.lr * (self.min_lr_share + (1 - self.min_lr_share) * 0.5 * (1 + math.cos(math.pi * min(1.0, done))))


# The recipe of each family's built-in model: one recipe, only the family differs (qwen35's reference
# Gated DeltaNet path takes about 1.8 s a step on 2 quiet cores, less than glm4moe's 3.2 s).
RECIPES: dict[str, Recipe] = {
    "glm4moe": Recipe(),
    "qwen35": Recipe(family="qwen35"),
}


@dataclass
class TrainResult:
    folder: Path  # the Hugging Face checkpoint
    gguf: Path
    curve: Path
    record: dict[str, Any] = field(default_factory=dict)


# What train writes in OUT (checkpoint/ with the files its save and the tokenizer write): with --force, a
# folder holding only these is replaced, never one holding anything else (files.replaceable_folder).
_CHECKPOINT_FILES = ("config.json", "model.safetensors", "training.json", "tokenizer.json", "tokenizer_config.json",
                     "special_tokens_map.json", "chat_template.jinja")
OUTPUT = OwnedFolder("training folder", frozenset((
    "checkpoint", *(f"checkpoint/{name}" for name in _CHECKPOINT_FILES),
    f"model-{SHIPPED_OUTTYPE.upper()}.gguf", "curve.jsonl", "state.pt")))


@dataclass(frozen=True)
class _Inputs:
    tokenizer: Any
    eot: int
    streams: Any  # data.Streams
    vocab: Any  # model.Vocabulary


def train(out: Path, recipe: Recipe = Recipe(), *, cache: Path, force: bool = False, progress: Progress | None = None) -> TrainResult:
    """Train, save OUT/checkpoint (Hugging Face folder), OUT/model-Q8_0.gguf, OUT/curve.jsonl and
    OUT/state.pt. Everything is written into a temporary folder beside OUT and moved into place at the
    end, so a failed or interrupted run leaves nothing half-written."""
    say = progress or (lambda _: None)
    target = replaceable_folder(out, OUTPUT, force=force)  # refused before an hour of training, not after

    def fill(work: Path) -> tuple[Path, dict[str, Any]]:
        inputs = _inputs(cache, recipe, say)
        started = time.monotonic()
        model, last = _fit(inputs, recipe, work / "curve.jsonl", say)
        record = _record(inputs, recipe, model, last, time.monotonic() - started)
        return _save(work, inputs, model, record, say), record

    gguf, record = replace_folder(target, OUTPUT, fill)
    return TrainResult(out / "checkpoint", out / gguf.name, out / "curve.jsonl", record)


def _inputs(cache: Path, recipe: Recipe, say: Progress) -> _Inputs:
    """The tokenizer, the token streams of every class and the tokens that get rows of their own."""
    import numpy as np

    from mtpinspect.training import corpus, data, tokenizer, toolchain
    from mtpinspect.training.model import Vocabulary

    # The text first: a corpus that cannot be had here (no apt-get) is said before anything is unpacked.
    packages = corpus.packages(recipe.corpus, cache)
    tok = tokenizer.build(toolchain.toolchain().vocab(tokenizer.VOCAB))
    eot = tok.convert_tokens_to_ids(tokenizer.END_OF_TEXT)
    streams = data.load(cache, packages, tok, eot, say)
    counts = streams.counts(tokenizer.PADDED_VOCAB)
    return _Inputs(tok, eot, streams, Vocabulary(np.nonzero(counts >= recipe.min_count)[0], tokenizer.PADDED_VOCAB))


def _fit(inputs: _Inputs, recipe: Recipe, curve_path: Path, say: Progress) -> tuple[Any, dict[str, Any]]:
    """The training loop; every step is a line of curve.jsonl, the held-out figures every eval_every
    steps and at the end. Returns the model and the last line."""
    import numpy as np
    import torch

    from mtpinspect.training import data, evaluate
    from mtpinspect.training.family import family
    from mtpinspect.training.model import losses

    vocab, streams = inputs.vocab, inputs.streams
    # The order of the seeded draws (the weights, then the batches) is part of the recipe.
    torch.manual_seed(recipe.seed)
    torch.set_num_threads(recipe.threads)
    rng = np.random.default_rng(recipe.seed)
    model = family(recipe.family).build(recipe.layers, vocab)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": recipe.weight_decay}, {"params": rest, "weight_decay": 0.0}],
                            lr=recipe.lr, betas=(0.9, 0.95))
    train_streams = {c: vocab.to_compact[s] for c, s in streams.train.items()}
    started = time.monotonic()
    tokens = 0
    row: dict[str, Any] = {}
    with curve_path.open("w", encoding="utf-8") as curve:
        for step in range(recipe.steps):
            for group in opt.param_groups:
                group["lr"] = recipe.lr_at(step)
            ids = torch.from_numpy(data.batch(train_streams, recipe.per_class, recipe.length, rng))
            main, mtp = losses(model, ids)
            opt.zero_grad(set_to_none=True)
            (main + recipe.mtp_weight * mtp).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
            opt.step()
            tokens += ids.numel()
            row = {"step": step + 1, "tokens": tokens, "seconds": round(time.monotonic() - started, 1),
                   "lr": recipe.lr_at(step), "main_loss": main.item(), "mtp_loss": mtp.item()}
            if (step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps:
                row["held_out"] = [evaluate.figures(model, vocab, c, s, count=recipe.eval_windows).as_dict()
                                   for c, s in streams.held_out.items()]
                say(_summary(row))
            curve.write(json.dumps(row) + "\n")
            curve.flush()
    return model, row


def _record(inputs: _Inputs, recipe: Recipe, model: Any, last: dict[str, Any], seconds: float) -> dict[str, Any]:
    """How the weights were made: training.json of the checkpoint."""
    import torch
    import transformers

    from mtpinspect.training import tokenizer

    return {
        "recipe": asdict(recipe),
        "shape": model.shape.as_dict(),
        "tokenizer": {"vocab": tokenizer.VOCAB, "kept_tokens": int(len(inputs.vocab.kept)), "rare_tokens": int(inputs.vocab.n_rare)},
        "packages": inputs.streams.packages,
        "documents": inputs.streams.documents,
        "train_tokens": {c: int(len(s)) for c, s in inputs.streams.train.items()},
        "tokens_seen": last.get("tokens", 0),
        "seconds": round(seconds, 1),
        "torch": torch.__version__,
        "transformers": transformers.__version__,  # qwen35's trunk is transformers' own Qwen3_5TextModel
        "gguf": _made_by(recipe.family),
        "held_out": last.get("held_out", []),
    }


def _save(work: Path, inputs: _Inputs, model: Any, record: dict[str, Any], say: Progress) -> Path:
    """The Hugging Face folder, its GGUF through the pinned converter, and the PyTorch state."""
    import torch

    from mtpinspect.training import checkpoint
    from mtpinspect.training.family import family

    folder = work / "checkpoint"
    made = family(record["recipe"]["family"])
    # GLM opens a text with [gMASK]; Qwen3.5 has no BOS token and separates texts with <|endoftext|>.
    bos = inputs.tokenizer.convert_tokens_to_ids("[gMASK]") if made.name == "glm4moe" else inputs.eot
    checkpoint.save(folder, made.published(model, inputs.vocab), made.config(model.shape, inputs.eot, bos), inputs.tokenizer, record)
    gguf = shipped_gguf(folder, work / f"model-{SHIPPED_OUTTYPE.upper()}.gguf", made.name, say)
    torch.save({"model": model.state_dict(), "kept": inputs.vocab.kept}, work / "state.pt")
    return gguf


def shipped_gguf(folder: Path, gguf: Path, family_name: str, say: Progress | None = None) -> Path:
    """The Q8_0 GGUF of a checkpoint folder, made as the family's built-in model was (Family.quantized_by)."""
    from mtpinspect.training import toolchain
    from mtpinspect.training.family import family

    say = say or (lambda _: None)
    say(f"converting {folder.name}: {_made_by(family_name)}")
    if family(family_name).quantized_by == "llama-quantize":
        with tempfile.TemporaryDirectory(prefix=".f32-", dir=gguf.parent) as scratch:
            full = toolchain.convert(folder, Path(scratch) / "model-F32.gguf", "f32")
            return toolchain.quantize(full, gguf, SHIPPED_OUTTYPE.upper(), {})
    return toolchain.convert(folder, gguf, SHIPPED_OUTTYPE)


def _made_by(name: str) -> str:
    from mtpinspect.training.family import family

    if family(name).quantized_by == "llama-quantize":
        return f"convert_hf_to_gguf.py --outtype f32, then llama-quantize {SHIPPED_OUTTYPE.upper()} (pinned llama.cpp)"
    return f"convert_hf_to_gguf.py --outtype {SHIPPED_OUTTYPE} (pinned llama.cpp)"


def _summary(row: dict[str, Any]) -> str:
    parts = [f"step {row['step']} ({row['seconds']:.0f} s): loss {row['main_loss']:.3f} / mtp {row['mtp_loss']:.3f}"]
    for fig in row.get("held_out", []):
        parts.append(f"{fig['cls']} agree {fig['agreement']:.3f} acc {fig['main_accuracy']:.3f} "
                     f"distinct {fig['distinct_share']:.3f} H {fig['entropy']:.2f}")
    return "; ".join(parts)


def quick(recipe: Recipe, steps: int) -> Recipe:
    """The same recipe for a few steps (tests, smoke runs): evaluation only at the end."""
    return replace(recipe, steps=steps, warmup=min(recipe.warmup, max(1, steps // 2)), eval_every=max(steps, 1), eval_windows=8)
