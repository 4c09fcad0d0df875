"""Tiny GGUF models with an MTP (NextN) head whose greedy draft acceptance is chosen in advance.

They are the embedded default model of `mtpinspect sweep`, the fixtures of the test suite, and the way
to reproduce MTP failure modes (a dropped, damaged or low-bit head, a sidecar from another model) in
well under a second of llama-server load time.

The recipe (verified with the pinned llama-server) is a glm4moe model:
a dense trunk with plain attention, plus one MoE MTP block ``blk.L``.

- One-hot token embeddings and ``attn_output = ffn_down = 0`` make every hidden state equal to its
  token's embedding, so the main model is a bigram: greedy generation walks x, x+1, x+2, ... (mod V).
- The MTP block adds nothing either (``attn_output``, ``ffn_down_exps``, ``ffn_down_shexp`` are zero),
  so its output is the normalised ``eh_proj`` projection of ``[enorm(embed(x_t+1)) ; hnorm(h_t)]``.
  ``eh_proj = [I | 0]`` passes the token half: the head sees the token the model just emitted and
  drafts from it through ``nextn.shared_head_head``. ``eh_proj = [0 | I]`` passes the hidden half
  instead: the head re-predicts the token that was just emitted and every draft is rejected.
- The explicit ``nextn.shared_head_head`` holds, for each token x, the token the head drafts after it:
  x+1 (agrees with the model) or x+2 for "poisoned" tokens, where a draft chain breaks.
  Its rows share a constant component ``HEAD_SHARED`` and the drafted token's row gets ``HEAD_SIGNAL``
  more. Softmax ignores the shared part, so F32, F16, BF16, Q8_0, Q5_x, Q4_x and MXFP4 heads keep the
  signal (checked by quantize/dequantize round trips and with llama-server), while ternary
  quantization (TQ1_0, TQ2_0, the low-bit types of LOW_BIT_MTP_HEAD) rounds it away: every logit ties
  and acceptance drops to about zero, the failure real low-bit heads show.

Acceptance as a fraction ``p`` is the probability that one drafted token is accepted (the acceptance
at ``--spec-draft-n-max 1``); deeper draft positions compound as p, p^2, ..., like a real head and like
llama-server's ``--spec-synth-rates``. The poisoned tokens are picked by simulating llama-server's
draft/verify loop (:func:`mtpinspect.tiny_drafts.simulate`), so the expected figures for a given prompt are exact.
``TinyModelSpec.poisoned`` names them instead: a cluster of poisoned tokens makes acceptance depend on
where in the chain a prompt starts (a model that drafts well for one prompt class and badly for another).

The default dimensions make a model so small that on a CPU drafting always costs more than it saves.
The "heavy" size preset (:func:`spec_for_size`) widens and deepens the trunk until it dominates each
decode step, so that a good head speeds decoding up (figures: bench/README.md, "MTP pay-off on a CPU").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import GGML_QUANT_SIZES, dequantize, quantize

from mtpinspect.errors import UsageError
from mtpinspect.files import writable, write_file
from mtpinspect.formulas import expected_length
from mtpinspect.sources.filenames import sidecar_path
from mtpinspect.tiny_drafts import DraftRun, first_token, simulate

ARCH = "glm4moe"
LAYOUTS = ("bundled", "sidecar")
HEADS = ("normal", "zeroed")
ACCEPTANCE_WORDS = ("perfect", "none")
# ggml types gguf-py can write for the MTP block's matrices.
HEAD_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q5_1", "Q5_0", "Q4_1", "Q4_0", "MXFP4", "TQ2_0", "TQ1_0")

# The head's logits for token x are c*HEAD_SHARED for every token plus c*HEAD_SIGNAL for the drafted
# one (c = the norm of a one-hot vector, sqrt(embd)). A ratio of 5 keeps the signal through 4-bit block
# quantization and loses it under ternary; measured with gguf-py's quantize/dequantize for every type.
HEAD_SHARED = 5.0
HEAD_SIGNAL = 1.0

# Calibration of poisoned tokens: how many random subsets to try, for which n-max and budget.
_CANDIDATES = 48
_CALIBRATION_N_MAX = (1, 2, 3, 4)
_CALIBRATION_N_PREDICT = 64
_CALIBRATION_STARTS = 8


@dataclass(frozen=True)
class TinyModelSpec:
    """What to build. Every field has a default that gives the demo model (perfect acceptance, F32)."""

    acceptance: str | float = "perfect"  # "perfect", "none", or p in (0, 1): see the module docstring
    vocab: int = 64
    embd: int = 64  # >= vocab (one-hot embeddings); a multiple of the head type's block size
    trunk_layers: int = 2
    n_head: int = 4
    ff: int = 128  # dense trunk FFN width
    n_expert: int = 2
    expert_ff: int = 32  # per-expert and shared-expert width; a multiple of the head type's block size
    nextn: bool = True  # False: no nextn key and no MTP block, as `convert_hf_to_gguf.py --no-mtp` writes
    head_type: str = "F32"  # ggml type of the MTP block's matrices (norms, router and bias stay F32)
    head: str = "normal"  # "zeroed": eh_proj and shared_head_head all zero, a damaged head
    layout: str = "bundled"  # "sidecar": trunk-only main file plus mtp-<name>.gguf, as `--mtp` writes
    # The sidecar's spec when it comes from another model (a mismatch, e.g. TinyModelSpec(vocab=96,
    # embd=96)); None: the sidecar matches the main file.
    sidecar_from: TinyModelSpec | None = None
    # The tokens after which the head drafts x+2, chosen by hand; overrides the choice from the fraction
    # (which then only labels the model). None: chosen to match the fraction. Not with acceptance "none".
    poisoned: tuple[int, ...] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def fraction(self) -> float:
        """The chosen per-token acceptance: 1.0 for perfect, 0.0 for none."""
        if self.acceptance == "perfect":
            return 1.0
        if self.acceptance == "none":
            return 0.0
        return float(self.acceptance)

    @property
    def mtp_block(self) -> int:
        return self.trunk_layers


def parse_acceptance(text: str) -> str | float:
    """'perfect', 'none', or a fraction strictly between 0 and 1 (UsageError otherwise)."""
    word = text.strip().lower()
    if word in ACCEPTANCE_WORDS:
        return word
    try:
        value = float(word)
    except ValueError:
        raise UsageError(f"acceptance {text!r}: expected perfect, none or a fraction between 0 and 1") from None
    if not 0.0 < value < 1.0:
        raise UsageError(f"acceptance {text!r}: a fraction must lie strictly between 0 and 1 (use perfect or none)")
    return value


def block_size(head_type: str) -> int:
    """Elements per quantization block of a head type (1 for float types)."""
    return GGML_QUANT_SIZES[GGMLQuantizationType[head_type]][0]


def _validate(spec: TinyModelSpec) -> None:
    if isinstance(spec.acceptance, str):
        if spec.acceptance not in ACCEPTANCE_WORDS:
            raise UsageError(f"acceptance {spec.acceptance!r}: expected perfect, none or a fraction between 0 and 1")
    elif not 0.0 < float(spec.acceptance) < 1.0:
        raise UsageError(f"acceptance {spec.acceptance!r}: a fraction must lie strictly between 0 and 1")
    if spec.head_type not in HEAD_TYPES:
        raise UsageError(f"head type {spec.head_type!r}: expected one of {', '.join(HEAD_TYPES)}")
    if spec.head not in HEADS:
        raise UsageError(f"head {spec.head!r}: expected one of {', '.join(HEADS)}")
    if spec.layout not in LAYOUTS:
        raise UsageError(f"layout {spec.layout!r}: expected one of {', '.join(LAYOUTS)}")
    for name in ("vocab", "embd", "trunk_layers", "n_head", "ff", "n_expert", "expert_ff"):
        if getattr(spec, name) < 1:
            raise UsageError(f"{name} = {getattr(spec, name)}: must be at least 1")
    if spec.vocab < 3:
        raise UsageError(f"vocab = {spec.vocab}: needs at least 3 tokens")
    if spec.embd < spec.vocab:
        raise UsageError(
            f"embd = {spec.embd} < vocab = {spec.vocab}: the embeddings are one-hot, embd must be >= vocab"
        )
    if spec.embd % spec.n_head or (spec.embd // spec.n_head) % 2:
        raise UsageError(f"embd = {spec.embd}: must split into {spec.n_head} heads of even size (RoPE)")
    size = block_size(spec.head_type)
    if spec.embd % size or spec.expert_ff % size:
        raise UsageError(
            f"head type {spec.head_type}: embd ({spec.embd}) and expert_ff ({spec.expert_ff}) must be multiples "
            f"of its block size {size}"
        )
    if not spec.nextn and spec.layout == "sidecar":
        raise UsageError(
            "layout sidecar needs an MTP head: it cannot be combined with no nextn (--no-nextn, nextn=False)"
        )
    if spec.poisoned is not None:
        if spec.acceptance == "none":
            raise UsageError("poisoned tokens need a head that drafts (acceptance perfect or a fraction, not none)")
        outside = [t for t in spec.poisoned if not 0 <= t < spec.vocab]
        if outside:
            raise UsageError(f"poisoned token {outside[0]}: outside the vocabulary 0..{spec.vocab - 1}")
    if spec.sidecar_from is not None:
        if spec.layout != "sidecar":
            raise UsageError("sidecar_from needs layout sidecar")
        if not spec.sidecar_from.nextn:
            raise UsageError("sidecar_from must describe a model with an MTP head (nextn=True)")


# -- what the head drafts (tiny_drafts.py simulates llama-server's loop over it) -------------------


def _rms_norm(x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def _poisoned(spec: TinyModelSpec) -> frozenset[int]:
    """Tokens after which the head drafts x+2 instead of x+1: the spec's own, or chosen so acceptance
    tracks the fraction."""
    if spec.head == "zeroed":
        return frozenset()
    if spec.poisoned is not None:
        return frozenset(spec.poisoned)
    if spec.acceptance in ACCEPTANCE_WORDS:
        return frozenset()
    p = spec.fraction
    count = min(spec.vocab - 1, max(1, round((1.0 - p) * spec.vocab)))
    rng = np.random.default_rng(spec.seed)
    candidates = [
        frozenset(int(t) for t in rng.choice(spec.vocab, size=count, replace=False)) for _ in range(_CANDIDATES)
    ]
    return min(candidates, key=lambda subset: _calibration_error(spec.vocab, subset, p))


def _calibration_error(vocab: int, poisoned: frozenset[int], p: float) -> float:
    """Squared distance of the simulated acceptance from (p + ... + p^k) / k, over n-max k = 1..4."""
    drafts = _draft_table(vocab, poisoned)
    starts = [round(i * vocab / _CALIBRATION_STARTS) % vocab for i in range(_CALIBRATION_STARTS)]
    error = 0.0
    for n_max in _CALIBRATION_N_MAX:
        # The per-position rates p, p^2, ..., p^n averaged: what accepted / drafted gives with full drafts.
        target = (expected_length(p, n_max) - 1) / n_max
        runs = [simulate(drafts, start, n_max, _CALIBRATION_N_PREDICT) for start in starts]
        error += (sum(r.accepted for r in runs) / sum(r.drafted for r in runs) - target) ** 2
    return error


def _draft_table(vocab: int, poisoned: frozenset[int]) -> tuple[int, ...]:
    return tuple((x + 2) % vocab if x in poisoned else (x + 1) % vocab for x in range(vocab))


# -- weights -------------------------------------------------------------------------------------


def _head_matrix(spec: TinyModelSpec, poisoned: frozenset[int]) -> np.ndarray:
    """nextn.shared_head_head as numpy (vocab, embd): row y scores token y."""
    if spec.head == "zeroed":
        return np.zeros((spec.vocab, spec.embd), np.float32)
    head = np.full((spec.vocab, spec.embd), HEAD_SHARED, np.float32)
    for x, drafted in enumerate(_draft_table(spec.vocab, poisoned)):
        head[drafted, x] += HEAD_SIGNAL
    return head


def _eh_proj(spec: TinyModelSpec) -> np.ndarray:
    """nextn.eh_proj as numpy (embd, 2*embd): input is [enorm(embedding) ; hnorm(hidden)]."""
    proj = np.zeros((spec.embd, 2 * spec.embd), np.float32)
    if spec.head == "zeroed":
        return proj
    eye = np.eye(spec.embd, dtype=np.float32)
    if spec.acceptance == "none":
        proj[:, spec.embd :] = eye
    else:
        proj[:, : spec.embd] = eye
    return proj


def _as_written(array: np.ndarray, head_type: str) -> np.ndarray:
    """The values llama.cpp will see after the head type's quantization round trip."""
    qtype = GGMLQuantizationType[head_type]
    return dequantize(quantize(array, qtype), qtype).reshape(array.shape)


@dataclass(frozen=True)
class HeadDrafts:
    """For each token x, the token the MTP head drafts after x."""

    tokens: tuple[int, ...]
    # Tokens after which the head's top logits tie (a zeroed or ternary head). llama-server then drafts
    # one fixed token of the tie; the lowest id is assumed. Over a full cycle of the vocabulary any
    # fixed pick gives the same figures, which is what llama-server showed (1 accepted per cycle).
    tied: int


def head_drafts(spec: TinyModelSpec) -> HeadDrafts:
    """What the head drafts, computed from the weights as written (after quantization).

    The MTP block adds nothing, so the draft after x is
    argmax(head @ rmsnorm(eh_proj @ [rmsnorm(e_x) ; rmsnorm(e_prev)])), prev = the token before x.
    """
    if not spec.nextn:
        raise UsageError("the model has no MTP head (nextn=False)")
    head = _as_written(_head_matrix(spec, _poisoned(spec)), spec.head_type)
    proj = _as_written(_eh_proj(spec), spec.head_type)
    embed = _token_embd(spec)
    tokens, tied = [], 0
    for x in range(spec.vocab):
        joined = np.concatenate([_rms_norm(embed[x]), _rms_norm(embed[(x - 1) % spec.vocab])])
        logits = head @ _rms_norm(proj @ joined)
        top = np.flatnonzero(logits == logits.max())
        tokens.append(int(top[0]))
        tied += len(top) > 1
    return HeadDrafts(tokens=tuple(tokens), tied=tied)


def expected_run(spec: TinyModelSpec, prompt: str, n_max: int, n_predict: int) -> DraftRun:
    """The draft/verify figures llama-server reports for one greedy request on this model."""
    return simulate(head_drafts(spec).tokens, first_token(prompt, spec.vocab), n_max, n_predict)


def expected_acceptance(spec: TinyModelSpec, n_max: int, n_predict: int = 64) -> DraftRun:
    """Figures pooled over every possible first token: what a mix of prompts gives on average."""
    drafts = head_drafts(spec).tokens
    runs = [simulate(drafts, start, n_max, n_predict) for start in range(spec.vocab)]
    return DraftRun(
        drafted=sum(r.drafted for r in runs),
        accepted=sum(r.accepted for r in runs),
        steps=sum(r.steps for r in runs),
        per_position=tuple(sum(col) for col in zip(*(r.per_position for r in runs))),
    )


def _token_embd(spec: TinyModelSpec) -> np.ndarray:
    return np.eye(spec.vocab, spec.embd, dtype=np.float32)


def _output(spec: TinyModelSpec) -> np.ndarray:
    # Row y scores token y; it reads the one-hot of y's predecessor, so next(x) = x+1.
    out = np.zeros((spec.vocab, spec.embd), np.float32)
    for y in range(spec.vocab):
        out[y, (y - 1) % spec.vocab] = 1.0
    return out


Tensor = tuple[np.ndarray, str]  # values (numpy shape = reversed ggml ne) and ggml type name


def _shared_tensors(spec: TinyModelSpec) -> dict[str, Tensor]:
    return {
        "token_embd.weight": (_token_embd(spec), "F32"),
        "output_norm.weight": (np.ones(spec.embd, np.float32), "F32"),
        "output.weight": (_output(spec), "F32"),
    }


def _attention(spec: TinyModelSpec, block: int, rng: np.random.Generator, kind: str) -> dict[str, Tensor]:
    e = spec.embd
    # Random q/k/v make the block look like a model; attn_output = 0 keeps the residual stream exact.
    return {
        f"blk.{block}.attn_norm.weight": (np.ones(e, np.float32), "F32"),
        f"blk.{block}.attn_q.weight": (rng.normal(0, 0.02, (e, e)).astype(np.float32), kind),
        f"blk.{block}.attn_k.weight": (rng.normal(0, 0.02, (e, e)).astype(np.float32), kind),
        f"blk.{block}.attn_v.weight": (rng.normal(0, 0.02, (e, e)).astype(np.float32), kind),
        f"blk.{block}.attn_output.weight": (np.zeros((e, e), np.float32), kind),
        f"blk.{block}.post_attention_norm.weight": (np.ones(e, np.float32), "F32"),
    }


def _trunk_tensors(spec: TinyModelSpec, rng: np.random.Generator) -> dict[str, Tensor]:
    e, ff = spec.embd, spec.ff
    tensors: dict[str, Tensor] = {}
    for block in range(spec.trunk_layers):
        tensors |= _attention(spec, block, rng, "F32")
        tensors |= {
            f"blk.{block}.ffn_gate.weight": (rng.normal(0, 0.02, (ff, e)).astype(np.float32), "F32"),
            f"blk.{block}.ffn_up.weight": (rng.normal(0, 0.02, (ff, e)).astype(np.float32), "F32"),
            f"blk.{block}.ffn_down.weight": (np.zeros((e, ff), np.float32), "F32"),
        }
    return tensors


def _mtp_tensors(spec: TinyModelSpec, rng: np.random.Generator) -> dict[str, Tensor]:
    e, ffe, n, kind, b = spec.embd, spec.expert_ff, spec.n_expert, spec.head_type, spec.mtp_block
    tensors = _attention(spec, b, rng, kind)
    tensors |= {
        # llama-quantize keeps the router in F32 too.
        f"blk.{b}.ffn_gate_inp.weight": (rng.normal(0, 0.02, (n, e)).astype(np.float32), "F32"),
        f"blk.{b}.exp_probs_b.bias": (np.zeros(n, np.float32), "F32"),
        f"blk.{b}.ffn_gate_exps.weight": (rng.normal(0, 0.02, (n, ffe, e)).astype(np.float32), kind),
        f"blk.{b}.ffn_up_exps.weight": (rng.normal(0, 0.02, (n, ffe, e)).astype(np.float32), kind),
        f"blk.{b}.ffn_down_exps.weight": (np.zeros((n, e, ffe), np.float32), kind),
        f"blk.{b}.ffn_gate_shexp.weight": (rng.normal(0, 0.02, (ffe, e)).astype(np.float32), kind),
        f"blk.{b}.ffn_up_shexp.weight": (rng.normal(0, 0.02, (ffe, e)).astype(np.float32), kind),
        f"blk.{b}.ffn_down_shexp.weight": (np.zeros((e, ffe), np.float32), kind),
        f"blk.{b}.nextn.eh_proj.weight": (_eh_proj(spec), kind),
        f"blk.{b}.nextn.enorm.weight": (np.ones(e, np.float32), "F32"),
        f"blk.{b}.nextn.hnorm.weight": (np.ones(e, np.float32), "F32"),
        f"blk.{b}.nextn.shared_head_head.weight": (_head_matrix(spec, _poisoned(spec)), kind),
    }
    return tensors


def _tensors(spec: TinyModelSpec, part: str) -> dict[str, Tensor]:
    # One generator, consumed in a fixed order, so the trunk and the MTP block of the bundled file and
    # of the sidecar layout hold the same values.
    rng = np.random.default_rng(spec.seed)
    trunk = _trunk_tensors(spec, rng)
    shared = _shared_tensors(spec)
    if part == "trunk" or not spec.nextn:
        return shared | trunk
    mtp = _mtp_tensors(spec, rng)
    if part == "mtp":
        return shared | mtp
    return shared | trunk | mtp


# -- files ---------------------------------------------------------------------------------------


def _describe(spec: TinyModelSpec, part: str) -> str:
    head = f"{spec.head} {spec.head_type}, acceptance {spec.acceptance}"
    if spec.poisoned is not None:
        head = f"{spec.head} {spec.head_type}, {len(set(spec.poisoned))} poisoned tokens chosen by hand"
    if not spec.nextn:
        head = "none"
    elif part == "trunk":
        head = "in the mtp- sidecar"
    return f"mtpinspect tiny test model (bigram x -> x+1); MTP head: {head}"


def _write(path: Path, spec: TinyModelSpec, part: str) -> None:
    has_head = spec.nextn and part != "trunk"
    writer = GGUFWriter(str(path), ARCH)
    writer.add_name(f"mtpinspect-tiny-{part}")
    writer.add_description(_describe(spec, part))
    writer.add_context_length(2048)
    writer.add_embedding_length(spec.embd)
    # convert_hf_to_gguf.py's --mtp files keep block_count L+N and the key; --no-mtp files drop both.
    writer.add_block_count(spec.trunk_layers + (1 if has_head else 0))
    if has_head:
        writer.add_nextn_predict_layers(1)
    writer.add_feed_forward_length(spec.ff)
    writer.add_head_count(spec.n_head)
    writer.add_head_count_kv(spec.n_head)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_expert_feed_forward_length(spec.expert_ff)
    writer.add_expert_shared_count(1)
    writer.add_expert_count(spec.n_expert)
    writer.add_expert_used_count(1)
    # The trunk is dense; only the MTP block (the glm4moe MTP graph requires MoE) uses experts.
    writer.add_leading_dense_block_count(spec.trunk_layers)
    writer.add_tokenizer_model("test")
    writer.add_token_list([f"t{i}" for i in range(spec.vocab)])
    for name, (values, kind) in _tensors(spec, part).items():
        if kind == "F32":
            writer.add_tensor(name, values)
        else:
            qtype = GGMLQuantizationType[kind]
            writer.add_tensor(name, quantize(values, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# Sidecars "from another model" for reproducing SIDECAR_MISMATCH, and what this llama-server does with
# each (measured): a different n_embd aborts at startup ("MTP input row width must match the target
# h_nextn width"); a smaller vocabulary loads, then aborts on the first draft ("failed to add token");
# a different block_count loads and drafts normally.
MISMATCHES = ("embd", "vocab", "layers")


def mismatched_sidecar(kind: str, size: str = "tiny") -> TinyModelSpec:
    """The spec of a sidecar that differs from the size preset's model in n_embd, vocabulary or block_count."""
    fields = size_fields(size)
    model = TinyModelSpec(**fields)  # type: ignore[arg-type]
    if kind == "embd":
        return TinyModelSpec(**{**fields, "embd": 2 * model.embd})  # type: ignore[arg-type]
    if kind == "vocab":
        return TinyModelSpec(**{**fields, "vocab": 3 * model.vocab // 4})  # type: ignore[arg-type]
    if kind == "layers":
        return TinyModelSpec(**{**fields, "trunk_layers": model.trunk_layers + 1})  # type: ignore[arg-type]
    raise UsageError(f"mismatch {kind!r}: expected one of {', '.join(MISMATCHES)}")


def write_tiny_model(path: Path | str, spec: TinyModelSpec = TinyModelSpec(), *, force: bool = False) -> list[Path]:
    """Write the model; return the files written (the main file, then the sidecar for layout sidecar).
    Only a new path or a regular file is replaced; a symbolic link is written through with ``force``."""
    path = Path(path)
    if spec.layout == "bundled":
        jobs = [(path, spec, "bundled")]
    else:
        jobs = [(path, spec, "trunk"), (sidecar_path(path), spec.sidecar_from or spec, "mtp")]
    written = []
    for target, _, _ in jobs:
        writable(target, through_link=force)  # refuse before the first file is written
    for target, part_spec, part in jobs:
        write_file(target, functools.partial(_write, spec=part_spec, part=part), through_link=force)
        written.append(target)
    return written


# Size presets: the dimensions each one sets (any other field keeps its default).
# "heavy" gives the trunk enough weights (4 layers, FFN 8192 wide over embd 256: about 107 MB of F32)
# that on a CPU reading them dominates every decode step. Verifying k+1 tokens in one batch reads them
# once, about the cost of one single-token decode, while each draft costs one small MTP block: with a
# good head MTP pays off, as on a real model, where the tiny default only shows the per-step overhead.
# The vocabulary stays at 64 and embd >= vocab, so the bigram construction is the same.
SIZES = ("tiny", "heavy")


def size_fields(size: str) -> dict[str, int]:
    """The TinyModelSpec fields a size preset sets: none for "tiny" (the defaults)."""
    if size == "tiny":
        return {}
    if size == "heavy":
        return {"embd": 256, "ff": 8192, "trunk_layers": 4}
    raise UsageError(f"size {size!r}: expected one of {', '.join(SIZES)}")


def spec_for_size(size: str, **fields: object) -> TinyModelSpec:
    """A spec with a size preset's dimensions; ``fields`` set the rest (or override the preset)."""
    return TinyModelSpec(**{**size_fields(size), **fields})  # type: ignore[arg-type]


def spec_for_head_type(head_type: str, **fields: object) -> TinyModelSpec:
    """A spec whose dimensions fit the head type's block size (256 for the ternary TQ types)."""
    size = block_size(head_type) if head_type in HEAD_TYPES else 1
    default = TinyModelSpec()
    fitted = {"embd": max(default.embd, size), "expert_ff": max(default.expert_ff, size), "head_type": head_type}
    return TinyModelSpec(**{**fitted, **fields})  # type: ignore[arg-type]
