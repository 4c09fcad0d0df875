"""The trained model as a Hugging Face folder in GLM-4.5's published layout: config.json with
``num_nextn_predict_layers: 1``, one safetensors file whose MTP layer sits at index L (the trunk's layer
count) under the published names, and the tokenizer files. The pinned `convert_hf_to_gguf.py` reads it
as it reads GLM-4.5's own checkpoint (toolchain.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mtpinspect.training.model import Shape, TinyGlm, Vocabulary

WEIGHTS = "model.safetensors"
RECORD = "training.json"  # how the weights were made; the converter ignores it


def config(shape: Shape, eos: int, bos: int) -> dict[str, Any]:
    return {
        "architectures": ["Glm4MoeForCausalLM"],
        "model_type": "glm4_moe",
        "vocab_size": shape.vocab,
        "hidden_size": shape.hidden,
        "intermediate_size": shape.ff,
        "moe_intermediate_size": shape.expert_ff,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.heads,
        "head_dim": shape.head_dim,
        "partial_rotary_factor": shape.partial_rotary,
        "rope_theta": shape.rope_theta,
        "rms_norm_eps": shape.eps,
        "max_position_embeddings": shape.context,
        "n_routed_experts": shape.experts,
        "num_experts_per_tok": shape.experts_used,
        "n_shared_experts": shape.shared_experts,
        # Every trunk block dense; the MTP layer (index = layers) is past it, so it is MoE.
        "first_k_dense_replace": shape.layers,
        "norm_topk_prob": shape.norm_topk,
        "routed_scaling_factor": shape.routed_scale,
        "n_group": 1,
        "topk_group": 1,
        "num_nextn_predict_layers": 1,
        "tie_word_embeddings": False,
        "use_qk_norm": False,
        "attention_bias": False,
        "hidden_act": "silu",
        "bos_token_id": bos,
        "eos_token_id": eos,
        "torch_dtype": "float32",
    }


def published_tensors(model: TinyGlm, vocab: Vocabulary) -> dict[str, np.ndarray]:
    """The weights under the published names, the compact vocabulary expanded to every token."""
    mtp = f"model.layers.{model.shape.layers}."
    out: dict[str, np.ndarray] = {}
    for name, tensor in model.state_dict().items():
        array = tensor.detach().to("cpu").float().numpy()
        if name == "class_offset":
            continue
        if name in ("embed_tokens.weight", "lm_head.weight"):
            array = array[vocab.to_compact]  # rare tokens share their class's row
            name = "model.embed_tokens.weight" if name.startswith("embed") else name
        elif name == "norm.weight":
            name = "model.norm.weight"
        elif name.startswith("layers."):
            name = "model." + name
        elif name.startswith("mtp."):
            name = mtp + name[len("mtp."):]
        out[name] = np.ascontiguousarray(array)
    return out


def save(folder: Path, tensors: dict[str, np.ndarray], cfg: dict[str, Any], tokenizer: Any, record: dict[str, Any]) -> None:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / WEIGHTS), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    (folder / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    tokenizer.save_pretrained(folder)


def shape_of(cfg: dict[str, Any]) -> Shape:
    """The Shape a config.json written by ``config`` describes."""
    return Shape(
        vocab=cfg["vocab_size"], hidden=cfg["hidden_size"], layers=cfg["num_hidden_layers"],
        heads=cfg["num_attention_heads"], ff=cfg["intermediate_size"], experts=cfg["n_routed_experts"],
        experts_used=cfg["num_experts_per_tok"], expert_ff=cfg["moe_intermediate_size"],
        shared_experts=cfg["n_shared_experts"], rope_theta=cfg["rope_theta"], partial_rotary=cfg["partial_rotary_factor"],
        eps=cfg["rms_norm_eps"], context=cfg["max_position_embeddings"], routed_scale=cfg["routed_scaling_factor"],
        norm_topk=cfg["norm_topk_prob"],
    )


def from_published(tensors: dict[str, np.ndarray], cfg: dict[str, Any]) -> TinyGlm:
    """A model with every token's own rows, holding published weights (those of a shipped GGUF, read back
    by trained_model.checkpoint_tensors): PyTorch runs the very numbers llama-server runs."""
    import torch

    shape = shape_of(cfg)
    model = TinyGlm(shape, Vocabulary(np.arange(shape.vocab), shape.vocab))
    mtp = f"model.layers.{shape.layers}."
    state = {}
    for name, array in tensors.items():
        if name == "model.embed_tokens.weight":
            key = "embed_tokens.weight"
        elif name == "model.norm.weight":
            key = "norm.weight"
        elif name.startswith(mtp):
            key = "mtp." + name[len(mtp):]
        elif name.startswith("model.layers."):
            key = name[len("model."):]
        else:
            key = name
        state[key] = torch.from_numpy(np.array(array, dtype=np.float32))
    state["class_offset"] = torch.zeros(shape.vocab)
    model.load_state_dict(state, strict=True)
    return model.eval()
