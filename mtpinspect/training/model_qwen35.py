"""A small Qwen3.5 (``qwen35``) decoder with one MTP layer: the trunk is transformers' own
``Qwen3_5TextModel`` (Gated DeltaNet and gated full-attention layers, as the family mixes them: three
recurrent layers, then one attention layer), so the PyTorch side is the published architecture, not a
re-implementation; the MTP layer is what the pinned llama.cpp's qwen35 MTP graph computes
(src/models/qwen35.cpp, ``graph_mtp``) under the names Qwen3.5 checkpoints publish it with (``mtp.*``,
read by the converter's ``_QwenMtpMixin``)::

    h' = Block(fc([pre_fc_norm_embedding(embed(x_{t+1})) ; pre_fc_norm_hidden(h_t)]));  logits = output(norm(h'))

with ``h_t`` the trunk's hidden state after its final norm (``t_h_nextn`` follows ``output_norm``), the
embedding and output head shared with the trunk, and Block a full-attention Qwen3.5 decoder layer
(q/k norms, sigmoid-gated attention output, SwiGLU).

Linear attention has as many value heads as key heads, so the converter's V-head reorder
(``_LinearAttentionVReorderBase``: grouped-by-K to tiled order) is the identity and a PyTorch replay of
the GGUF needs no inverse permutation. Training uses the compact vocabulary of model.py (``Vocabulary``)
for the same reason as the glm4moe model: the rare tokens share one row, exactly.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from mtpinspect.training.model import Vocabulary


@dataclass(frozen=True)
class Shape:
    vocab: int
    hidden: int = 128
    layers: int = 4  # trunk layers; every ``full_attention_interval``-th is full attention, the rest Gated DeltaNet
    full_attention_interval: int = 4
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 32
    ff: int = 384
    linear_heads: int = 4  # key heads = value heads: the converter's V reorder is the identity
    linear_head_dim: int = 32
    conv_kernel: int = 4
    rope_theta: float = 10000.0
    partial_rotary: float = 0.25
    eps: float = 1e-6
    context: int = 4096

    @property
    def rope_pairs(self) -> int:
        return int(self.head_dim * self.partial_rotary) // 2

    @property
    def mrope_section(self) -> list[int]:
        """Text, height, width sections summing to the rotated pairs (text positions use one for all)."""
        pairs = self.rope_pairs
        return [pairs - 2 * (pairs // 4), pairs // 4, pairs // 4]

    @property
    def layer_types(self) -> list[str]:
        n = self.full_attention_interval
        return ["full_attention" if (i + 1) % n == 0 else "linear_attention" for i in range(self.layers)]

    def as_dict(self) -> dict:
        return asdict(self)


def hf_config(shape: Shape, vocab: int, eos: int, bos: int) -> dict[str, Any]:
    """config.json of ``Qwen3_5ForCausalLM`` for this shape (``vocab`` rows in the matrices)."""
    return {
        "architectures": ["Qwen3_5ForCausalLM"],
        "model_type": "qwen3_5_text",
        "vocab_size": vocab,
        "hidden_size": shape.hidden,
        "intermediate_size": shape.ff,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "linear_num_key_heads": shape.linear_heads,
        "linear_num_value_heads": shape.linear_heads,
        "linear_key_head_dim": shape.linear_head_dim,
        "linear_value_head_dim": shape.linear_head_dim,
        "linear_conv_kernel_dim": shape.conv_kernel,
        "layer_types": shape.layer_types,
        "full_attention_interval": shape.full_attention_interval,
        "rope_parameters": {"rope_type": "default", "rope_theta": shape.rope_theta, "partial_rotary_factor": shape.partial_rotary,
                            "mrope_section": shape.mrope_section, "mrope_interleaved": True},
        "partial_rotary_factor": shape.partial_rotary,
        "rms_norm_eps": shape.eps,
        "max_position_embeddings": shape.context,
        "mtp_num_hidden_layers": 1,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "hidden_act": "silu",
        "bos_token_id": bos,
        "eos_token_id": eos,
        "torch_dtype": "float32",
    }


def _text_config(shape: Shape, vocab: int) -> Any:
    from transformers import Qwen3_5TextConfig

    cfg = hf_config(shape, vocab, eos=0, bos=0)
    for key in ("architectures", "model_type", "mtp_num_hidden_layers", "torch_dtype", "full_attention_interval",
                "partial_rotary_factor"):
        cfg.pop(key)
    config = Qwen3_5TextConfig(**cfg)
    config._attn_implementation = "sdpa"
    return config


class MTPLayer(nn.Module):
    """Qwen3.5's MTP module under its published names (``mtp.fc``, ``mtp.pre_fc_norm_*``, ``mtp.layers.0``,
    ``mtp.norm``)."""

    def __init__(self, config: Any, attention_index: int) -> None:
        super().__init__()
        from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer, Qwen3_5RMSNorm

        h, eps = config.hidden_size, config.rms_norm_eps
        self.pre_fc_norm_embedding = Qwen3_5RMSNorm(h, eps)
        self.pre_fc_norm_hidden = Qwen3_5RMSNorm(h, eps)
        self.fc = nn.Linear(2 * h, h, bias=False)
        self.layers = nn.ModuleList([Qwen3_5DecoderLayer(config, attention_index)])
        self.norm = Qwen3_5RMSNorm(h, eps)


class TinyQwen35(nn.Module):
    """Same interface as model.TinyGlm (trunk, logits, mtp_hidden, lm_head, shape): losses and evaluate
    serve both families."""

    def __init__(self, shape: Shape, vocab: Vocabulary) -> None:
        super().__init__()
        from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextModel

        self.shape = shape
        config = _text_config(shape, vocab.classes)
        self.model = Qwen3_5TextModel(config)
        self.lm_head = nn.Linear(shape.hidden, vocab.classes, bias=False)
        self.mtp = MTPLayer(config, shape.layer_types.index("full_attention"))
        offset = torch.zeros(vocab.classes)
        if vocab.n_rare:
            offset[vocab.rare] = math.log(vocab.n_rare)
        self.register_buffer("class_offset", offset)
        self.apply(_init)

    @property
    def embed_tokens(self) -> nn.Embedding:
        return self.model.embed_tokens

    def trunk(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, use_cache=False).last_hidden_state

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden) + self.class_offset

    def mtp_hidden(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Row k = (x_k, h_{k-1}), the draft of x_{k+1}, as llama.cpp's draft context decodes it (the first
        row with a zero h)."""
        shifted = torch.cat([torch.zeros_like(hidden[:, :1]), hidden[:, :-1]], dim=1)
        embedded = self.model.embed_tokens(ids)
        x = self.mtp.fc(torch.cat([self.mtp.pre_fc_norm_embedding(embedded), self.mtp.pre_fc_norm_hidden(shifted)], dim=-1))
        length = ids.shape[1]
        positions = torch.arange(length).view(1, 1, -1).expand(3, ids.shape[0], -1)
        rope = self.model.rotary_emb(x, positions)
        causal = torch.ones(length, length, dtype=torch.bool).tril()[None, None]
        x = self.mtp.layers[0](x, position_embeddings=rope, attention_mask=causal)
        return self.mtp.norm(x)


def _init(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)


def published_tensors(model: TinyQwen35, vocab: Vocabulary) -> dict[str, Any]:
    """The weights under Qwen3.5's published names, the compact vocabulary expanded to every token."""
    import numpy as np

    out: dict[str, Any] = {}
    for name, tensor in model.state_dict().items():
        if name == "class_offset":
            continue
        array = tensor.detach().to("cpu").float().numpy()
        if name in ("model.embed_tokens.weight", "lm_head.weight"):
            array = array[vocab.to_compact]
        out[name] = np.ascontiguousarray(array)
    return out


def from_published(tensors: dict[str, Any], cfg: dict[str, Any]) -> TinyQwen35:
    """A model with every token's own rows holding published weights: PyTorch runs the numbers llama-server runs."""
    import numpy as np

    shape = shape_of(cfg)
    model = TinyQwen35(shape, Vocabulary(np.arange(cfg["vocab_size"]), cfg["vocab_size"]))
    state = {name: torch.from_numpy(np.array(a, dtype=np.float32)) for name, a in tensors.items()}
    state["class_offset"] = torch.zeros(cfg["vocab_size"])
    model.load_state_dict(state, strict=True)
    return model.eval()


def shape_of(cfg: dict[str, Any]) -> Shape:
    return Shape(
        vocab=cfg["vocab_size"], hidden=cfg["hidden_size"], layers=cfg["num_hidden_layers"],
        full_attention_interval=cfg["full_attention_interval"], heads=cfg["num_attention_heads"],
        kv_heads=cfg["num_key_value_heads"], head_dim=cfg["head_dim"], ff=cfg["intermediate_size"],
        linear_heads=cfg["linear_num_key_heads"], linear_head_dim=cfg["linear_key_head_dim"],
        conv_kernel=cfg["linear_conv_kernel_dim"], rope_theta=cfg["rope_parameters"]["rope_theta"],
        partial_rotary=cfg["rope_parameters"]["partial_rotary_factor"], eps=cfg["rms_norm_eps"],
        context=cfg["max_position_embeddings"],
    )
