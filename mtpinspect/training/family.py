"""The model families `train` can make: what differs between them (the PyTorch model, config.json, the
published tensor names), one entry each. Corpus, tokenizer, batches, loss, loop, evaluation and the
pinned converter are the same for every family (train.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

FamilyName = Literal["glm4moe", "qwen35"]
FAMILIES: tuple[FamilyName, ...] = ("glm4moe", "qwen35")


@dataclass(frozen=True)
class Family:
    name: FamilyName
    build: Callable[[int, Any], Any]  # (recipe.layers, model.Vocabulary) -> the model to train
    config: Callable[[Any, int, int], dict[str, Any]]  # (model.shape, eos, bos) -> config.json
    published: Callable[[Any, Any], dict[str, Any]]  # (model, vocabulary) -> {published name: array}
    # How the shipped Q8_0 GGUF is made of the checkpoint: "converter" (convert_hf_to_gguf.py --outtype
    # q8_0, as the glm4moe model was made) or "llama-quantize" (the converter at F32, then llama-quantize
    # Q8_0: how Qwen3.5 releases are made, and what the issue of the qwen35 model asks).
    quantized_by: Literal["converter", "llama-quantize"] = "converter"


def family(name: str) -> Family:
    from mtpinspect.training import tokenizer

    if name == "glm4moe":
        from mtpinspect.training import checkpoint
        from mtpinspect.training.model import Shape, TinyGlm

        return Family("glm4moe", lambda layers, vocab: TinyGlm(Shape(vocab=tokenizer.PADDED_VOCAB, layers=layers), vocab),
                      checkpoint.config, checkpoint.published_tensors)
    if name == "qwen35":
        from mtpinspect.training import model_qwen35 as q

        return Family("qwen35", lambda layers, vocab: q.TinyQwen35(q.Shape(vocab=tokenizer.PADDED_VOCAB, layers=layers), vocab),
                      lambda shape, eos, bos: q.hf_config(shape, shape.vocab, eos, bos), q.published_tensors,
                      quantized_by="llama-quantize")
    raise ValueError(f"model family {name!r}: not one of {', '.join(FAMILIES)}")
