"""A small glm4moe decoder with a depth-1 MTP module, in plain PyTorch, computing what the pinned
llama.cpp's glm4moe graphs compute (src/models/glm4-moe.cpp), so that a converted checkpoint drafts in
llama-server exactly as it did here.

Trunk: dense pre-norm blocks (RMSNorm, attention with partial NeoX RoPE, SwiGLU), a final norm and an
untied output head. MTP module, as DeepSeek-V3 trains it and GLM-4.5 publishes it::

    h' = Block(eh_proj([enorm(embed(x_{t+1})) ; hnorm(h_t)]));  logits = output(shared_head_norm(h'))

with ``h_t`` the trunk's hidden state *after* its final norm (llama.cpp hands the head that one:
``t_h_nextn`` follows ``output_norm``), the embedding and output head shared with the trunk, and the
block a MoE one (router with sigmoid scores and a selection bias, routed and shared SwiGLU experts), as
the glm4moe MTP graph requires.

The output products dominate training on a CPU (two softmaxes over the vocabulary per position, main and
MTP). So the model is trained over a compact vocabulary: the tokens the training text uses often
(``Vocabulary.kept``) each have their own embedding and output rows; every other token shares one
embedding row and one output row. That is an ordinary full-vocabulary model whose rare tokens all have
the same weights, and its softmax is computed exactly: the N identical output rows form one class whose
logit carries ``+log N``. ``expand`` writes the full matrices the published layout needs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Shape:
    """The model's dimensions. Every matrix row a quantized head could hold is a multiple of 256, so that
    llama-quantize gives the MTP block any type, k-quants and ternary included, without a fallback."""

    vocab: int  # rows of the full embedding and output matrices
    hidden: int = 256
    layers: int = 3  # trunk blocks, all dense
    heads: int = 4
    ff: int = 768  # the dense blocks' SwiGLU width
    experts: int = 2  # routed experts of the MTP block
    experts_used: int = 1
    expert_ff: int = 256
    shared_experts: int = 1
    rope_theta: float = 10000.0
    partial_rotary: float = 0.5  # GLM rotates half of each head's dimensions
    eps: float = 1e-5
    context: int = 4096  # max_position_embeddings, as written into config.json
    routed_scale: float = 1.0
    norm_topk: bool = False  # with one expert used, a normalised weight would be 1 and train no router

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def rope_dim(self) -> int:
        return int(self.head_dim * self.partial_rotary)

    def as_dict(self) -> dict:
        return asdict(self)


class Vocabulary:
    """Which token ids get rows of their own while training; the rest share the class ``rare``."""

    def __init__(self, kept: np.ndarray, size: int) -> None:
        self.kept = np.unique(kept.astype(np.int64))
        self.size = size
        self.rare = len(self.kept)  # the compact id of every other token
        self.n_rare = size - len(self.kept)
        self.to_compact = np.full(size, self.rare, dtype=np.int64)
        self.to_compact[self.kept] = np.arange(len(self.kept))

    @property
    def classes(self) -> int:
        return len(self.kept) + (1 if self.n_rare else 0)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(shape: Shape, length: int, offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (shape.rope_theta ** (torch.arange(0, shape.rope_dim, 2, dtype=torch.float32) / shape.rope_dim))
    angles = torch.outer(torch.arange(offset, offset + length, dtype=torch.float32), inv)
    angles = torch.cat([angles, angles], dim=-1)  # NeoX: dimension i pairs with i + rope_dim/2
    return angles.cos(), angles.sin()


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rope_dim: int) -> torch.Tensor:
    rot, rest = x[..., :rope_dim], x[..., rope_dim:]
    half = rope_dim // 2
    turned = torch.cat([-rot[..., half:], rot[..., :half]], dim=-1)
    return torch.cat([rot * cos + turned * sin, rest], dim=-1)


class Attention(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        width = shape.heads * shape.head_dim
        self.q_proj = nn.Linear(shape.hidden, width, bias=False)
        self.k_proj = nn.Linear(shape.hidden, width, bias=False)
        self.v_proj = nn.Linear(shape.hidden, width, bias=False)
        self.o_proj = nn.Linear(width, shape.hidden, bias=False)
        self.shape = shape

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        b, t, _ = x.shape
        s = self.shape
        q, k, v = (proj(x).view(b, t, s.heads, s.head_dim).transpose(1, 2) for proj in (self.q_proj, self.k_proj, self.v_proj))
        q, k = _rotate(q, *rope, s.rope_dim), _rotate(k, *rope, s.rope_dim)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, ff: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, ff, bias=False)
        self.up_proj = nn.Linear(hidden, ff, bias=False)
        self.down_proj = nn.Linear(ff, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Router(nn.Module):
    """GLM's router: ``weight`` scores each expert (sigmoid); ``e_score_correction_bias`` shifts the
    selection only, never the weights (llama.cpp: exp_probs_b)."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(shape.experts, shape.hidden))
        self.register_buffer("e_score_correction_bias", torch.zeros(shape.experts))


class MoE(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.gate = Router(shape)
        self.experts = nn.ModuleList(SwiGLU(shape.hidden, shape.expert_ff) for _ in range(shape.experts))
        self.shared_experts = SwiGLU(shape.hidden, shape.expert_ff * shape.shared_experts)
        self.shape = shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.shape
        scores = torch.sigmoid(F.linear(x, self.gate.weight))
        chosen = torch.topk(scores + self.gate.e_score_correction_bias, s.experts_used, dim=-1).indices
        weights = scores.gather(-1, chosen)
        if s.norm_topk:
            weights = weights / weights.sum(-1, keepdim=True)
        weights = weights * s.routed_scale
        # Few experts: run each on every row and keep what the router chose (cheaper than gathering).
        dense = torch.zeros_like(scores).scatter(-1, chosen, weights)
        out = sum(dense[..., e : e + 1] * expert(x) for e, expert in enumerate(self.experts))
        return out + self.shared_experts(x)


class Block(nn.Module):
    def __init__(self, shape: Shape, moe: bool) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(shape.hidden, shape.eps)
        self.self_attn = Attention(shape)
        self.post_attention_layernorm = RMSNorm(shape.hidden, shape.eps)
        self.mlp = MoE(shape) if moe else SwiGLU(shape.hidden, shape.ff)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), rope)
        return x + self.mlp(self.post_attention_layernorm(x))


class MTPLayer(Block):
    """The MTP layer under GLM-4.5's published names: a MoE block plus enorm, hnorm, eh_proj and
    shared_head.norm."""

    def __init__(self, shape: Shape) -> None:
        super().__init__(shape, moe=True)
        self.enorm = RMSNorm(shape.hidden, shape.eps)
        self.hnorm = RMSNorm(shape.hidden, shape.eps)
        self.eh_proj = nn.Linear(2 * shape.hidden, shape.hidden, bias=False)
        self.shared_head = nn.Module()
        self.shared_head.norm = RMSNorm(shape.hidden, shape.eps)

    def head_input(self, embedded: torch.Tensor, hidden: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x = self.eh_proj(torch.cat([self.enorm(embedded), self.hnorm(hidden)], dim=-1))  # embedding half first
        return self.shared_head.norm(super().forward(x, rope))


class TinyGlm(nn.Module):
    def __init__(self, shape: Shape, vocab: Vocabulary) -> None:
        super().__init__()
        self.shape = shape
        self.embed_tokens = nn.Embedding(vocab.classes, shape.hidden)
        self.layers = nn.ModuleList(Block(shape, moe=False) for _ in range(shape.layers))
        self.norm = RMSNorm(shape.hidden, shape.eps)
        self.lm_head = nn.Linear(shape.hidden, vocab.classes, bias=False)
        self.mtp = MTPLayer(shape)
        # +log N on the shared class: its N identical rows, summed in the softmax (a constant).
        offset = torch.zeros(vocab.classes)
        if vocab.n_rare:
            offset[vocab.rare] = math.log(vocab.n_rare)
        self.register_buffer("class_offset", offset)
        self.apply(_init)

    def trunk(self, ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states (after the output norm) for compact ids of shape (batch, length)."""
        rope = rope_tables(self.shape, ids.shape[1])
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, rope)
        return self.norm(x)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Class logits; their softmax is the full vocabulary's, the shared class holding all rare tokens."""
        return self.lm_head(hidden) + self.class_offset

    def mtp_hidden(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """The head's state for each row k = (x_k, h_{k-1}), the draft of x_{k+1}: the pairs llama.cpp's
        draft context decodes (common/speculative.cpp, process(): each token with the target's h of the
        position before; the first with a zero h)."""
        shifted = torch.cat([torch.zeros_like(hidden[:, :1]), hidden[:, :-1]], dim=1)
        rope = rope_tables(self.shape, ids.shape[1])
        return self.mtp.head_input(self.embed_tokens(ids), shifted, rope)


def _init(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    elif isinstance(module, Router):
        nn.init.normal_(module.weight, std=0.02)


def losses(model: TinyGlm, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Main next-token and MTP next-next-token cross-entropy over a batch of compact ids (batch, length).
    The head's first row (a zero h) drafts from one token alone: it is decoded, as in llama.cpp, but not
    scored."""
    hidden = model.trunk(ids)
    main = F.cross_entropy(model.logits(hidden[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
    head = model.mtp_hidden(hidden[:, :-1], ids[:, :-1])[:, 1:]
    mtp = F.cross_entropy(model.logits(head).flatten(0, 1), ids[:, 2:].flatten())
    return main, mtp
