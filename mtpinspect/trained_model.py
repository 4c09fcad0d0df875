"""The built-in trained model: a tiny glm4moe decoder whose MTP head learned to draft (training/), shipped
as the GGUF that the pinned `convert_hf_to_gguf.py` made of its Hugging Face checkpoint.

It is the default model of `mtpinspect sweep`, and `mtpinspect tiny-model --trained` writes it:
- as shipped (trunk and head in one file);
- with the MTP block quantized to a lower type by the pinned llama-quantize (``--head-type``), the way
  a quantized release keeps or loses its head's skill;
- as the converter's ``--no-mtp`` trunk plus ``--mtp`` sidecar (``--layout sidecar``: needs the train
  extra, since the converter needs torch);
- as the Hugging Face folder (``--checkpoint``): config.json, tokenizer files and safetensors rebuilt from
  the shipped weights, such that the pinned converter gives back the shipped GGUF's tensors bit for bit.

Unlike tiny_model.py's constructed models, no acceptance is written into it: it depends on the text, as
a real head's does (figures: bench/README.md, "The trained model").
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtpinspect.errors import UsageError
from mtpinspect.files import OwnedFolder, replace_folder, replaceable_folder, save_safetensors, writable, write_file

SHIPPED = Path(__file__).with_name("data") / "trained"
GGUF_NAME = "tiny-glm-mtp-Q8_0.gguf"
SHIPPED_GGUF = SHIPPED / GGUF_NAME
# The second built-in model: a tiny Qwen3.5-family (qwen35) trunk, Gated DeltaNet and attention layers,
# with a trained MTP layer (training/model_qwen35.py); llama-server drafts on it with recurrent-state
# checkpoints instead of trimming a KV cache. Shipped as its GGUF, config.json and training.json.
SHIPPED_QWEN35 = Path(__file__).with_name("data") / "trained-qwen35"
QWEN35_GGUF = SHIPPED_QWEN35 / "tiny-qwen35-mtp-Q8_0.gguf"
# MODEL as `builtin:NAME` names a built-in model; no MODEL is the first one.
BUILT_IN_PREFIX = "builtin:"
BUILT_IN = {"glm4moe": SHIPPED_GGUF, "qwen35": QWEN35_GGUF}


def is_built_in(model: str | Path) -> bool:
    return str(model).startswith(BUILT_IN_PREFIX)


def built_in(model: str | Path | None) -> Path:
    """The GGUF of a built-in model: ``builtin:NAME``, or None for the default (glm4moe)."""
    if model is None:
        return SHIPPED_GGUF
    name = str(model)[len(BUILT_IN_PREFIX):]
    if name not in BUILT_IN:
        raise UsageError(f"{model}: no such built-in model (there are {', '.join(BUILT_IN_PREFIX + n for n in BUILT_IN)})")
    return BUILT_IN[name]
# Files of the Hugging Face folder that ship as they are; the weights are rebuilt from the GGUF.
FOLDER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "training.json")
WEIGHTS = "model.safetensors"
OUTTYPE = "q8_0"  # what the shipped GGUF was converted with (training/train.py)

# llama-quantize types for the MTP block (--tensor-type takes ggml's lower-case names).
HEAD_TYPES = ("F16", "Q8_0", "Q6_K", "Q5_K", "Q4_K", "Q4_0", "Q3_K", "Q2_K", "IQ4_NL", "TQ2_0", "TQ1_0")


@dataclass(frozen=True)
class Written:
    path: Path
    role: str  # "model", "main (trunk only)", "MTP sidecar", "checkpoint"


def config() -> dict:
    return json.loads((SHIPPED / "config.json").read_text(encoding="utf-8"))


def mtp_block() -> int:
    """The index of the MTP block (blk.L, L = the trunk's layer count)."""
    return int(config()["num_hidden_layers"])


def _copy(source: Path, dest: Path, force: bool) -> Path:
    """``source`` written to ``dest`` by the one safe-write rule (files.write_file): a new path or a regular
    file, through a symbolic link only with ``force``, whole or not at all."""
    return write_file(dest, lambda tmp: shutil.copyfile(source, tmp), through_link=force)


def write_gguf(out: Path, *, head_type: str | None = None, force: bool = False) -> list[Written]:
    """The shipped GGUF at ``out``; with ``head_type``, its MTP block quantized to that type by llama-quantize."""
    writable(out, through_link=force)  # refused before any work, not after
    if head_type is None or head_type.upper() == "Q8_0":
        _copy(SHIPPED_GGUF, out, force)
        return [Written(out, "model")]
    from mtpinspect.training.toolchain import quantize

    kind = _head_type(head_type)
    with tempfile.TemporaryDirectory(prefix=".tiny-", dir=out.parent if out.parent.exists() else None) as tmp:
        made = quantize(SHIPPED_GGUF, Path(tmp) / out.name, OUTTYPE.upper(), {rf"blk\.{mtp_block()}\.": kind.lower()})
        _copy(made, out, force)
    return [Written(out, "model")]


def _head_type(name: str) -> str:
    upper = name.upper()
    if upper not in HEAD_TYPES:
        raise UsageError(f"--head-type {name}: not one of {', '.join(HEAD_TYPES)}")
    return upper


def _require_converter() -> None:
    from mtpinspect.training import TRAIN_EXTRA, missing

    absent = missing(("torch", "transformers"))
    if absent:
        raise UsageError(f"the pinned convert_hf_to_gguf.py needs {' and '.join(absent)}: install the train extra ({TRAIN_EXTRA})")


def write_sidecar(out: Path, *, force: bool = False) -> list[Written]:
    """The converter's trunk (``--no-mtp``) at ``out`` and its head (``--mtp``) as mtp-OUT beside it."""
    from mtpinspect.sources.filenames import sidecar_path
    from mtpinspect.training.toolchain import convert

    _require_converter()
    sidecar = sidecar_path(out)
    writable(out, through_link=force)
    writable(sidecar, through_link=force)
    with tempfile.TemporaryDirectory(prefix=".tiny-") as tmp:
        folder = Path(tmp) / "checkpoint"
        write_checkpoint(folder)
        trunk = convert(folder, Path(tmp) / "trunk.gguf", OUTTYPE, mtp="trunk")
        head = convert(folder, Path(tmp) / "head.gguf", OUTTYPE, mtp="sidecar")
        _copy(trunk, out, force)
        _copy(head, sidecar, force)
    return [Written(out, "main (trunk only)"), Written(sidecar, "MTP sidecar")]


# What write_checkpoint puts in its folder: with --force, a folder holding only these is replaced.
CHECKPOINT = OwnedFolder("checkpoint folder", frozenset((*FOLDER_FILES, WEIGHTS)))


def write_checkpoint(folder: Path, *, force: bool = False) -> list[Written]:
    """The Hugging Face folder of the shipped weights, written by the one folder rule
    (files.replace_folder): built beside ``folder`` and renamed into place, so a failure leaves nothing
    half-written; a folder holding anything else, or the working folder, is refused."""
    target = replaceable_folder(folder, CHECKPOINT, force=force)

    def fill(staging: Path) -> None:
        for name in FOLDER_FILES:
            shutil.copyfile(SHIPPED / name, staging / name)
        save_safetensors(dict(checkpoint_tensors()), staging / WEIGHTS, metadata={"format": "pt"})

    replace_folder(target, CHECKPOINT, fill)
    return [Written(folder, "checkpoint")]


def checkpoint_tensors(gguf_path: Path | None = None) -> Iterator[tuple[str, np.ndarray]]:
    """(published name, array) for every tensor of the GGUF, undoing what the converter did: names
    mapped back through gguf-py's table for glm4moe, experts split out of their 3-D stacks, quantized
    matrices dequantized to F32 (a Q8_0 value is exact in F32, and quantizing it again gives the same
    blocks)."""
    from gguf import MODEL_ARCH, GGUFReader, get_tensor_name_map
    from gguf.quants import dequantize

    cfg = config()
    layers = int(cfg["num_hidden_layers"]) + int(cfg["num_nextn_predict_layers"])
    names = get_tensor_name_map(MODEL_ARCH.GLM4_MOE, layers)
    by_gguf = {_gguf_name(names, hf): hf for hf in _published_names(cfg)}
    reader = GGUFReader(gguf_path or SHIPPED_GGUF)
    for tensor in reader.tensors:
        array = dequantize(tensor.data, tensor.tensor_type).astype(np.float32).reshape(tuple(reversed(tensor.shape.tolist())))
        if tensor.name.endswith("_exps.weight"):
            stem = by_gguf[tensor.name]  # model.layers.L.mlp.experts.{gate,up,down}_proj.weight
            for expert in range(array.shape[0]):
                yield stem.replace(".experts.", f".experts.{expert}."), np.ascontiguousarray(array[expert])
            continue
        yield by_gguf[tensor.name], np.ascontiguousarray(array)


def _gguf_name(names, hf: str) -> str:
    # GLM's router bias is published as `...gate.e_score_correction_bias`; the table knows it as a bias.
    key = hf.removesuffix("_bias") + ".bias" if hf.endswith("e_score_correction_bias") else hf
    return names.get_name(key, try_suffixes=(".weight", ".bias"))


def _published_names(cfg: dict) -> list[str]:
    trunk = int(cfg["num_hidden_layers"])
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    attention = [f"self_attn.{p}_proj.weight" for p in "qkvo"] + ["input_layernorm.weight", "post_attention_layernorm.weight"]
    for layer in range(trunk):
        names += [f"model.layers.{layer}.{n}" for n in attention + [f"mlp.{p}_proj.weight" for p in ("gate", "up", "down")]]
    mtp = f"model.layers.{trunk}."
    names += [mtp + n for n in attention]
    names += [mtp + n for n in ("mlp.gate.weight", "mlp.gate.e_score_correction_bias", "eh_proj.weight", "enorm.weight",
                                "hnorm.weight", "shared_head.norm.weight")]
    names += [mtp + f"mlp.{part}.{p}_proj.weight" for part in ("experts", "shared_experts") for p in ("gate", "up", "down")]
    return names
