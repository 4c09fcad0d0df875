"""`mtpinspect train`: make the built-in trained model again, or a variant of it, on this CPU."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from mtpinspect.cli._args import format_option
from mtpinspect.cli._output import Output
from mtpinspect.errors import UsageError
from mtpinspect.training.corpus import CORPORA, DEBIAN
from mtpinspect.training.family import FAMILIES


@click.command("train")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--steps", type=click.IntRange(min=1, max=1_000_000), default=None,
              help="Training steps (default: the family's recipe: glm4moe 1,100, about an hour on 2 cores; qwen35 64); "
                   "a few for a smoke test.")
@click.option("--seed", type=click.IntRange(min=0, max=2**32 - 1), default=0, show_default=True,
              help="Seed of the initial weights and of every batch.")
@click.option("--corpus", type=click.Choice(CORPORA), default=DEBIAN, show_default=True,
              help="debian: the three Debian packages, fetched with apt-get download (what the built-in model was "
                   "trained on); sample: a few of their documents that ship with mtpinspect, for machines without "
                   "apt-get and smoke tests (too little text for a model worth measuring).")
@click.option("--family", type=click.Choice(FAMILIES), default="glm4moe", show_default=True,
              help="glm4moe: the built-in model (all-attention trunk, MoE MTP layer); qwen35: the Qwen3.5-family one "
                   "(Gated DeltaNet and attention layers, dense MTP layer), each with its own recipe.")
@click.option("--force", is_flag=True, help="Replace what is in a non-empty OUT.")
@format_option(csv="the held-out figures per class")
def command(out: Path, steps: int | None, seed: int, corpus: str, family: str, force: bool, fmt: str) -> int:
    """Train the tiny glm4moe model and its MTP head (the recipe of the built-in model) and write OUT:
    checkpoint/ (Hugging Face folder, with training.json: the recipe, corpus included),
    model-Q8_0.gguf (made by the pinned convert_hf_to_gguf.py), curve.jsonl (the learning curve) and
    state.pt.

    \b
    The training text comes from three Debian packages fetched with apt-get download (Python's sources,
    its documentation, the Japanese manual pages), or with --corpus sample from the few of their files
    that ship with mtpinspect; a held-out part of each is never trained on. Needs the train extra:
    pip install '.[train]' in mtpinspect's checkout (docs/train.md).
    """
    from mtpinspect.training import TRAIN_EXTRA, missing

    absent = missing()
    if absent:
        raise UsageError(f"training needs {', '.join(absent)}: install the train extra ({TRAIN_EXTRA})")
    from mtpinspect.cache_dir import cache_dir
    from mtpinspect.training.train import RECIPES, quick, train

    recipe = replace(RECIPES[family], seed=seed, corpus=corpus)
    if steps is not None:
        recipe = quick(recipe, steps) if steps < recipe.eval_every else replace(recipe, steps=steps)
    sink = Output(fmt)
    result = train(out, recipe, cache=cache_dir() / "training", force=force,
                   progress=lambda line: print(f"train: {line}", file=sys.stderr, flush=True))
    rows = [{"class": f["cls"], "agreement": f["agreement"], "main_accuracy": f["main_accuracy"],
             "mtp_accuracy": f["mtp_accuracy"], "distinct_share": f["distinct_share"],
             "top_token_share": f["top_token_share"], "entropy": f["entropy"]}
            for f in result.record["held_out"]]
    sink.table(rows, list(rows[0]) if rows else ["class"], title=f"Held-out text after {recipe.steps} steps", primary=True)
    sink.text(f"\ncheckpoint: {result.folder}\ngguf: {result.gguf}\ncurve: {result.curve}")
    sink.document({"checkpoint": str(result.folder), "gguf": str(result.gguf), "curve": str(result.curve),
                   "record": result.record})
    return 0
