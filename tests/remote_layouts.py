"""Hub repo layouts at real scale, for counting what a remote `check` costs (bench/bench_remote_layouts.py).

Each layout is written as stand-in files under a folder (true headers at their real sizes, tensor data a
sparse hole) and served by the Hub stand-in (tests/hubstub.py):

- `gguf-single`: one GGUF per quantization, three listed (a GLM-4.5-Air-like glm4moe header: 1,005
  tensors and a 150,000-token BPE vocabulary with merges, 5.8 MiB), checked as `REPO:Q4_K_M`;
- `gguf-split-5`: a GLM-4.7-like Q4_K_M split in 5 shards in its own folder, as unsloth publishes them
  (1,573 tensors, 151,552-token vocabulary; every key and a 6.1 MB header in shard 1, 19.7 KB headers in
  shards 2-5);
- `gguf-sidecar`: the two files of a `--no-mtp` / `--mtp` conversion, as Qwen3.6 MTP GGUFs are published: the
  trunk and its `mtp-` sidecar (the MTP block, the embedding and the output), each with the GLM-4.5-Air-like
  150,000-token vocabulary (5.8 MiB headers), checked as `REPO:Q4_K_M`;
- `safetensors-163`: a DeepSeek-V3-like FP8 checkpoint (the real config.json; 91,991 tensors, 641.29 GiB,
  as a public tensor listing of the real 163-file DeepSeek-R1 counts them; an 8.9 MB
  model.safetensors.index.json) in 163 shards, the MTP layer 61 (1,564 tensors, a 203 KB header) alone
  in the last;
- `safetensors-163-mtp4`: the same with layer 61 spread over the last 4 shards (the real repo keeps
  layer 61's own tensors in shard 163 and its experts across the last few).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from math import prod
from pathlib import Path

from casekit import CASES_ROOT, SAFETENSORS_DTYPE_SIZES, safetensors_header
from gguf_factory import BIG_TYPES, Glm4MoeDims, big_metadata, glm4moe_tensors, write_big_gguf, write_split_gguf

FileSource = Path | bytes
Tensor = tuple[str, str, list[int]]  # name, safetensors dtype, shape


@dataclass(frozen=True)
class Layout:
    name: str
    repo_id: str
    files: Mapping[str, FileSource]
    source: str  # what `mtpinspect check` is given
    gguf_entry: str | None  # GGUF layouts: the file a reader starts from (a split's first shard)
    description: str


# -- GGUF ---------------------------------------------------------------------------------------------

GLM47_DIMS = Glm4MoeDims(
    n_vocab=151_552, n_embd=5120, n_head=96, n_head_kv=8, head_dim=128, n_ff=12_288, n_ff_exp=1536,
    n_expert=160, n_expert_used=8, n_layer=92, n_dense=3, n_nextn=1,
)  # fmt: skip
GGUF_README = b"# stand-in GGUF repo\n"


def gguf_single(workdir: Path) -> Layout:
    big = write_big_gguf(workdir / "gguf-single.gguf", size_gib=8)
    # The listing is what matters for the other quantizations: they share the stand-in file.
    files: dict[str, FileSource] = {f"GLM-4.5-Air-{q}.gguf": big.path for q in ("Q2_K", "Q4_K_M", "Q8_0")}
    files["README.md"] = GGUF_README
    return Layout(
        name="gguf-single",
        repo_id="bench/GLM-4.5-Air-GGUF",
        files=files,
        source="bench/GLM-4.5-Air-GGUF:Q4_K_M",
        gguf_entry="GLM-4.5-Air-Q4_K_M.gguf",
        description="one GGUF per quantization (3 listed), 1,005 tensors, 150k-token vocabulary",
    )


def gguf_split(workdir: Path, n_shards: int = 5) -> Layout:
    folder = workdir / "gguf-split"
    folder.mkdir(parents=True, exist_ok=True)
    metadata = big_metadata(GLM47_DIMS, name="GLM 4.7", size_label="358B-A32B")
    tensors = glm4moe_tensors(GLM47_DIMS, BIG_TYPES)
    shards = write_split_gguf(
        folder / "GLM-4.7-Q4_K_M.gguf", arch="glm4moe", metadata=metadata, tensors=tensors, n_shards=n_shards
    )
    files: dict[str, FileSource] = {f"Q4_K_M/{shard.name}": shard for shard in shards}
    files["README.md"] = GGUF_README
    return Layout(
        name=f"gguf-split-{n_shards}",
        repo_id="bench/GLM-4.7-GGUF",
        files=files,
        source="bench/GLM-4.7-GGUF:Q4_K_M",
        gguf_entry=f"Q4_K_M/{shards[0].name}",
        description=f"GLM-4.7-like Q4_K_M split in {n_shards} shards, 1,573 tensors, 151,552-token vocabulary",
    )


def gguf_sidecar(workdir: Path) -> Layout:
    trunk = write_big_gguf(workdir / "GLM-4.5-Air-Q4_K_M.gguf", size_gib=8, part="trunk")
    head = write_big_gguf(workdir / "mtp-GLM-4.5-Air-Q4_K_M.gguf", size_gib=8, part="mtp")
    files: dict[str, FileSource] = {trunk.path.name: trunk.path, head.path.name: head.path, "README.md": GGUF_README}
    return Layout(
        name="gguf-sidecar",
        repo_id="bench/GLM-4.5-Air-MTP-GGUF",
        files=files,
        source="bench/GLM-4.5-Air-MTP-GGUF:Q4_K_M",
        gguf_entry=None,  # @huggingface/gguf reads one file (or a split set), not a pair
        description="a --no-mtp trunk and its mtp- sidecar, each with a 150k-token vocabulary",
    )


# -- safetensors --------------------------------------------------------------------------------------

DEEPSEEK_CONFIG = CASES_ROOT / "deepseek-v3" / "config.json"
DEEPSEEK_SHARDS = 163
_FP8 = "F8_E4M3"


def _fp8_linear(prefix: str, out_features: int, in_features: int) -> list[Tensor]:
    """An FP8 weight with its 128x128-block inverse scales, as DeepSeek-V3 stores every linear layer."""
    return [
        (f"{prefix}.weight", _FP8, [out_features, in_features]),
        (f"{prefix}.weight_scale_inv", "F32", [-(-out_features // 128), -(-in_features // 128)]),
    ]


def deepseek_v3_layer(layer: int, config: Mapping) -> list[Tensor]:
    """One decoder layer of DeepSeek-V3 (MLA attention; dense MLP before `first_k_dense_replace`, else MoE)."""
    h, p = config["hidden_size"], f"model.layers.{layer}"
    heads, rope, nope, v = (config[k] for k in ("num_attention_heads", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"))
    q_rank, kv_rank = config["q_lora_rank"], config["kv_lora_rank"]
    tensors: list[Tensor] = [(f"{p}.input_layernorm.weight", "BF16", [h]), (f"{p}.post_attention_layernorm.weight", "BF16", [h])]
    tensors += _fp8_linear(f"{p}.self_attn.q_a_proj", q_rank, h)
    tensors += [(f"{p}.self_attn.q_a_layernorm.weight", "BF16", [q_rank])]
    tensors += _fp8_linear(f"{p}.self_attn.q_b_proj", heads * (nope + rope), q_rank)
    tensors += _fp8_linear(f"{p}.self_attn.kv_a_proj_with_mqa", kv_rank + rope, h)
    tensors += [(f"{p}.self_attn.kv_a_layernorm.weight", "BF16", [kv_rank])]
    tensors += _fp8_linear(f"{p}.self_attn.kv_b_proj", heads * (nope + v), kv_rank)
    tensors += _fp8_linear(f"{p}.self_attn.o_proj", h, heads * v)
    if layer < config["first_k_dense_replace"]:
        ff = config["intermediate_size"]
        return tensors + _mlp(f"{p}.mlp", h, ff)
    n_experts, ff = config["n_routed_experts"], config["moe_intermediate_size"]
    tensors += [(f"{p}.mlp.gate.weight", "BF16", [n_experts, h]), (f"{p}.mlp.gate.e_score_correction_bias", "F32", [n_experts])]
    for expert in range(n_experts):
        tensors += _mlp(f"{p}.mlp.experts.{expert}", h, ff)
    return tensors + _mlp(f"{p}.mlp.shared_experts", h, ff * config["n_shared_experts"])


def _mlp(prefix: str, hidden: int, ff: int) -> list[Tensor]:
    gate, up = _fp8_linear(f"{prefix}.gate_proj", ff, hidden), _fp8_linear(f"{prefix}.up_proj", ff, hidden)
    return gate + up + _fp8_linear(f"{prefix}.down_proj", hidden, ff)


def deepseek_v3_tensors(config: Mapping) -> tuple[list[Tensor], list[Tensor]]:
    """(trunk, MTP layers): every tensor of DeepSeek-V3, in the order its index assigns them to shards."""
    h, vocab, n_layers = config["hidden_size"], config["vocab_size"], config["num_hidden_layers"]
    trunk: list[Tensor] = [("model.embed_tokens.weight", "BF16", [vocab, h])]
    for layer in range(n_layers):
        trunk += deepseek_v3_layer(layer, config)
    trunk += [("model.norm.weight", "BF16", [h]), ("lm_head.weight", "BF16", [vocab, h])]
    mtp: list[Tensor] = []
    for layer in range(n_layers, n_layers + config["num_nextn_predict_layers"]):
        p = f"model.layers.{layer}"
        # The MTP layer's own tensors come last: the real repo keeps them in shard 163.
        mtp += deepseek_v3_layer(layer, config)
        mtp += [
            (f"{p}.eh_proj.weight", "BF16", [h, 2 * h]),
            (f"{p}.embed_tokens.weight", "BF16", [vocab, h]),
            (f"{p}.enorm.weight", "BF16", [h]),
            (f"{p}.hnorm.weight", "BF16", [h]),
            (f"{p}.shared_head.head.weight", "BF16", [vocab, h]),
            (f"{p}.shared_head.norm.weight", "BF16", [h]),
        ]
    return trunk, mtp


def _nbytes(tensor: Tensor) -> int:
    return prod(tensor[2]) * SAFETENSORS_DTYPE_SIZES[tensor[1]]


def deal_by_bytes(tensors: list[Tensor], n_shards: int) -> list[list[Tensor]]:
    """Consecutive groups of about equal data size, as save_pretrained's max_shard_size makes them."""
    total = sum(_nbytes(t) for t in tensors)
    shards: list[list[Tensor]] = [[] for _ in range(n_shards)]
    done = 0
    for tensor in tensors:
        index = min(n_shards - 1, done * n_shards // total)
        shards[index].append(tensor)
        done += _nbytes(tensor)
    if any(not shard for shard in shards):
        raise ValueError(f"{len(tensors)} tensors do not fill {n_shards} shards")
    return shards


def deepseek_v3_checkpoint(workdir: Path, mtp_shards: int) -> Layout:
    config = json.loads(DEEPSEEK_CONFIG.read_text())
    trunk, mtp = deepseek_v3_tensors(config)
    shards = deal_by_bytes(trunk, DEEPSEEK_SHARDS - mtp_shards) + deal_by_bytes(mtp, mtp_shards)
    folder = workdir / f"deepseek-v3-mtp{mtp_shards}"
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, FileSource] = {"config.json": DEEPSEEK_CONFIG}
    weight_map: dict[str, str] = {}
    for number, tensors in enumerate(shards, start=1):
        name = f"model-{number:05d}-of-{DEEPSEEK_SHARDS:06d}.safetensors"  # DeepSeek's own naming
        header, data_size = safetensors_header({"tensors": tensors})
        (folder / name).write_bytes(header)
        os.truncate(folder / name, len(header) + data_size)
        files[name] = folder / name
        weight_map.update((t[0], name) for t in tensors)
    total = sum(_nbytes(t) for t in trunk + mtp)
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    files["model.safetensors.index.json"] = (json.dumps(index, indent=2) + "\n").encode()
    for extra in ("generation_config.json", "tokenizer_config.json"):
        files[extra] = b"{}\n"
    files["README.md"] = b"# stand-in checkpoint\n"
    suffix = "" if mtp_shards == 1 else f"-mtp{mtp_shards}"
    spread = "alone in the last shard" if mtp_shards == 1 else f"over the last {mtp_shards} shards"
    repo_id = f"bench/DeepSeek-V3{suffix}"
    return Layout(
        name=f"safetensors-163{suffix}",
        repo_id=repo_id,
        files=files,
        source=repo_id,
        gguf_entry=None,
        description=f"DeepSeek-V3-like FP8, {len(trunk) + len(mtp):,} tensors in 163 shards, MTP layer {spread}",
    )


LAYOUTS: dict[str, Callable[[Path], Layout]] = {
    "gguf-single": gguf_single,
    "gguf-split-5": gguf_split,
    "gguf-sidecar": gguf_sidecar,
    "safetensors-163": lambda workdir: deepseek_v3_checkpoint(workdir, 1),
    "safetensors-163-mtp4": lambda workdir: deepseek_v3_checkpoint(workdir, 4),
}
