"""Which tensor names are MTP weights, in HF checkpoints and in GGUF files.

One table, MTP_FAMILIES, says how each family that an engine drafts with names its head in the HF
checkpoint, each row citing the engine files that read those names (vLLM's `*_mtp.py`, SGLang's
`*_nextn.py` / `*_mtp.py`, llama.cpp's converter at the pinned commit). The spellings fall into a few
schemes: extra decoder layers after the trunk (`model.layers.{L}.*` with `eh_proj`, `enorm`, `hnorm`,
`shared_head.*`), an `mtp.` prefix (`mtp.fc`, `mtp.layers.0.*`, `mtp.0.*`, `model.mtp.layers.0.*`),
`model.mtp_layers.{i}.*` (MiMo) and ERNIE-4.5's own `model.mtp_block.{i}.*` with `model.mtp_emb_norm.{i}`,
`model.mtp_hidden_norm.{i}` and `model.mtp_linear_proj.{i}`. GGUF files append the head as the last
blocks: `blk.{L}.nextn.*` plus the block's ordinary attention/FFN tensors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Engine sources the rows cite (commits as stored by the search index this table was built from).
_VLLM = "vllm-project/vllm vllm/model_executor/models/"
_SGLANG = "sgl-project/sglang python/sglang/srt/models/"
_LLAMA = "llama.cpp 0c1e570 "


@dataclass(frozen=True)
class MtpFamily:
    """How one family names its MTP head in an HF checkpoint, and where the engines say so."""

    name: str
    model_types: frozenset[str]
    scheme: str  # SCHEMES key
    names: tuple[str, ...]  # the head's own names as the checkpoint spells them ({L}: num_hidden_layers + i)
    sources: tuple[str, ...]  # engine files that read these names: repo, path and commit


# Scheme -> (the pattern of its tensor names, how a layer id is spelled). A "layered" scheme's names are MTP
# only from layer num_hidden_layers on. Layer numbers of at most 9 digits: a longer run of digits in a name
# from a file is no layer (and int() of thousands of digits is refused by Python).
LAYERED = "model.layers.{L}"
# A drafter that is a checkpoint of its own: all of its tensors are the head, so names decide nothing there
# (checkpoint_rules.py judges it by its model_type).
SEPARATE = "separate checkpoint"
SCHEMES: dict[str, re.Pattern[str]] = {
    LAYERED: re.compile(r"^(?:model\.)?(?:language_model\.)?(?:model\.)?layers\.(?P<idx>\d{1,9})\."),
    "mtp.*": re.compile(r"^(?:model\.)?(?:language_model\.)?mtp\.(?:layers\.(?P<idx>\d{1,9})\.|(?P<top>\d{1,9})\.)?"),
    "model.mtp_layers.*": re.compile(r"^(?:model\.)?mtp_layers\.(?P<idx>\d{1,9})\."),
    "model.mtp_block.*": re.compile(
        r"^(?:model\.)?(?:mtp_block|mtp_emb_norm|mtp_hidden_norm|mtp_linear_proj)(?:\.(?P<idx>\d{1,9}))?\."),
}
_LAYER_LABEL = {"mtp.*": "mtp", "model.mtp_layers.*": "mtp_layers", "model.mtp_block.*": "mtp_block"}

MTP_FAMILIES: tuple[MtpFamily, ...] = (
    MtpFamily("DeepSeek-V3 / R1 / V3.1 / V3.2, Kimi-K2", frozenset({"deepseek_v3", "deepseek_v32", "kimi_k2", "kimi_k25"}),
              LAYERED, ("model.layers.{L}.eh_proj", "model.layers.{L}.enorm", "model.layers.{L}.hnorm",
                        "model.layers.{L}.shared_head.head", "model.layers.{L}.shared_head.norm",
                        "model.layers.{L}.embed_tokens", "model.layers.{L}.self_attn.*", "model.layers.{L}.mlp.*"),
              (f"{_VLLM}deepseek_mtp.py @4f7c144 (_rewrite_spec_layer_name)",
               f"{_SGLANG}deepseek_nextn.py @c28bdc9", f"{_LLAMA}conversion/deepseek.py (V2/V3 skip_mtp; V3.2 keeps it)")),
    MtpFamily("GLM-4.5 / 4.6 / 4.7, GLM-4.7-Flash, GLM-5.x", frozenset({"glm4_moe", "glm4_moe_lite", "glm_moe_dsa"}),
              LAYERED, ("model.layers.{L}.eh_proj", "model.layers.{L}.enorm", "model.layers.{L}.hnorm",
                        "model.layers.{L}.shared_head.head", "model.layers.{L}.shared_head.norm",
                        "model.layers.{L}.embed_tokens", "model.layers.{L}.self_attn.*", "model.layers.{L}.mlp.*"),
              (f"{_VLLM}glm4_moe_mtp.py @6e052ba", f"{_SGLANG}glm4_moe_nextn.py @d737979",
               f"{_SGLANG}glm4_moe_lite_nextn.py @cc481eb", f"{_LLAMA}conversion/glm.py:111-384")),
    MtpFamily("Step-3.5 / 3.7", frozenset({"step3p5", "step3p7"}), LAYERED,
              ("model.layers.{L}.eh_proj", "model.layers.{L}.enorm", "model.layers.{L}.hnorm",
               "model.layers.{L}.transformer.shared_head.norm", "model.layers.{L}.transformer.shared_head.output",
               "model.layers.{L}.self_attn.*", "model.layers.{L}.mlp.*"),
              (f"{_VLLM}step3p5_mtp.py @375a5cf (drops '.transformer.')", f"{_SGLANG}step3p5_mtp.py @7ebcb76",
               f"{_LLAMA}conversion/step3.py:100-285")),
    MtpFamily("Bailing (Ling / Ring 2.x, 3.0)", frozenset({"bailing_moe", "bailing_moe_v2", "bailing_moe_v3", "bailing_hybrid"}),
              LAYERED, ("model.layers.{L}.eh_proj", "model.layers.{L}.enorm", "model.layers.{L}.hnorm",
                        "model.layers.{L}.final_layernorm", "model.layers.{L}.attention.*", "model.layers.{L}.mlp.*"),
              (f"{_VLLM}bailing_moe_mtp.py @01af990 (get_spec_layer_idx: model.layers.{{num_hidden_layers + i}})",
               f"{_SGLANG}bailing_moe_nextn.py @d1575d1", f"{_LLAMA}conversion/bailingmoe3.py:17-140")),
    MtpFamily("Hunyuan-V3", frozenset({"hunyuan_v3"}), LAYERED,
              ("model.layers.{L}.eh_proj", "model.layers.{L}.enorm", "model.layers.{L}.hnorm",
               "model.layers.{L}.final_layernorm", "model.layers.{L}.self_attn.*", "model.layers.{L}.mlp.*"),
              (f"{_SGLANG}hunyuan_v3_nextn.py @f111248", f"{_LLAMA}conversion/hunyuan.py:363-430")),
    MtpFamily("openPangu Ultra MoE", frozenset({"pangu_ultra_moe", "openpangu_ultra_moe"}), LAYERED,
              ("model.layers.{L}.proj", "model.layers.{L}.norm_after_embedding", "model.layers.{L}.norm_before_output",
               "model.layers.{L}.shared_head.*", "model.layers.{L}.self_attn.*", "model.layers.{L}.mlp.*"),
              (f"{_VLLM}openpangu_mtp.py @42fa4c0 (proj -> eh_proj, norm_* -> enorm/hnorm)",)),
    MtpFamily("Qwen3-Next, Qwen3.5 / 3.6 / 3.8",
              frozenset({"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}), "mtp.*",
              ("mtp.fc", "mtp.pre_fc_norm_embedding", "mtp.pre_fc_norm_hidden", "mtp.norm", "mtp.layers.{i}.*"),
              (f"{_VLLM}qwen3_next_mtp.py @ffdc985", f"{_VLLM}qwen3_5_mtp.py @9a4f2b9", f"{_SGLANG}qwen3_next_mtp.py @bd998a2",
               f"{_SGLANG}qwen3_5_mtp.py @6017df8", f"{_LLAMA}conversion/qwen.py:277-368 (_QwenMtpMixin)")),
    MtpFamily("DeepSeek-V4", frozenset({"deepseek_v4", "deepseek_ref"}), "mtp.*",
              ("mtp.{i}.e_proj", "mtp.{i}.h_proj", "mtp.{i}.enorm", "mtp.{i}.hnorm", "mtp.{i}.norm", "mtp.{i}.hc_head_fn",
               "mtp.{i}.attn.*", "mtp.{i}.ffn.*"),
              (f"{_VLLM}deepseek_v4_mtp.py @4529276", f"{_SGLANG}deepseek_v4_nextn.py @22285d8",
               f"{_LLAMA}conversion/deepseek.py:525-640 (--mtp)")),
    MtpFamily("Nemotron-H (Nemotron 3 Super)", frozenset({"nemotron_h"}), "mtp.*",
              ("mtp.layers.0.enorm", "mtp.layers.0.hnorm", "mtp.layers.0.eh_proj", "mtp.layers.{i}.mixer.*",
               "mtp.layers.1.norm", "mtp.layers.1.final_layernorm"),
              (f"{_VLLM}nemotron_h_mtp.py @5a6131d", f"{_SGLANG}nemotron_h_mtp.py @d4d0fc5",
               f"{_LLAMA}conversion/nemotron.py:200-330 (two HF layers fold into one block)")),
    MtpFamily("EXAONE-MoE / EXAONE 4.5", frozenset({"exaone_moe", "exaone4_5"}), "mtp.*",
              ("mtp.fc", "mtp.pre_fc_norm_embedding", "mtp.pre_fc_norm_hidden", "mtp.norm", "mtp.layers.{i}.*"),
              (f"{_VLLM}exaone_moe_mtp.py @d0ac579", f"{_SGLANG}exaone_moe_mtp.py @b53daee",
               f"{_LLAMA}conversion/exaone.py:130-270")),
    MtpFamily("MiMo-V2-Flash", frozenset({"mimo_v2_flash"}), "mtp.*", ("model.mtp.layers.{i}.*",),
              (f"{_LLAMA}conversion/mimo.py:18-33, 255-300 (3 MTP layers, hard-coded)",)),
    MtpFamily("LongCat-Flash", frozenset({"longcat_flash"}), "mtp.*",
              ("model.mtp.layers.0.enorm", "model.mtp.layers.0.hnorm", "model.mtp.layers.0.eh_proj",
               "model.mtp.layers.0.self_attn.*", "model.mtp.layers.0.transformer_layer.mlp.*", "model.mtp.norm",
               "model.mtp.embed_tokens"),
              (f"{_VLLM}longcat_flash_mtp.py @0bb55d6 (new_to_old_names_mapping)", f"{_SGLANG}longcat_flash_nextn.py @b4ea46f")),
    MtpFamily("MiMo-7B", frozenset({"mimo"}), "model.mtp_layers.*",
              ("model.mtp_layers.{i}.token_layernorm", "model.mtp_layers.{i}.hidden_layernorm",
               "model.mtp_layers.{i}.input_proj", "model.mtp_layers.{i}.final_layernorm", "model.mtp_layers.{i}.self_attn.*",
               "model.mtp_layers.{i}.mlp.*"),
              (f"{_VLLM}mimo_mtp.py @98debc2", f"{_SGLANG}mimo_mtp.py @87d6240")),
    MtpFamily("Gemma 4 assistant", frozenset({"gemma4_assistant"}), SEPARATE,
              ("pre_projection", "post_projection", "model.layers.{i}.*"),
              (f"{_SGLANG}gemma4_mtp.py @219f70e", f"{_LLAMA}src/models/gemma4-assistant.cpp:43-55, conversion/gemma.py:951 "
               "(block_count == nextn_predict_layers), gguf-py tensor_mapping.py pre_projection/post_projection")),
    MtpFamily("ERNIE-4.5", frozenset({"ernie4_5", "ernie4_5_moe"}), "model.mtp_block.*",
              ("model.mtp_emb_norm.{i}", "model.mtp_hidden_norm.{i}", "model.mtp_linear_proj.{i}", "model.mtp_block.{i}.*"),
              (f"{_VLLM}ernie_mtp.py @028aedf (_rewrite_spec_layer_name)", f"{_SGLANG}ernie4_eagle.py @6614f98")),
)

FAMILY_OF_MODEL_TYPE = {mt: family for family in MTP_FAMILIES for mt in family.model_types}


def names_looked_for() -> list[str]:
    """Every spelling the table knows, for a finding that says what was looked for and not found."""
    return sorted({n for family in MTP_FAMILIES for n in family.names})


# Modules that only an MTP head has (whole dotted components: "gate_proj" must not match "e_proj").
HEAD_MARKERS = frozenset({
    "eh_proj", "enorm", "hnorm", "shared_head", "e_proj", "h_proj", "fc", "pre_fc_norm_embedding", "pre_fc_norm_hidden",
    "mtp_emb_norm", "mtp_hidden_norm", "mtp_linear_proj", "input_proj", "token_layernorm", "hidden_layernorm",
})


def is_head_tensor(name: str) -> bool:
    """True for the head's own tensors (projection, norms, shared head), not its attention or experts."""
    return not HEAD_MARKERS.isdisjoint(name.split("."))


_GGUF_BLOCK = re.compile(r"^blk\.(?P<idx>\d{1,9})\.")


@dataclass(frozen=True)
class MtpTensors:
    """The MTP tensors found among a checkpoint's tensor names."""

    names: tuple[str, ...]
    layers: tuple[str, ...]  # distinct layer ids, e.g. ("61",) or ("mtp.0",)
    scheme: str | None  # SCHEMES keys joined by " + ", or None when none found

    @property
    def count(self) -> int:
        return len(self.layers)


def _match(name: str, num_hidden_layers: int | None) -> tuple[str, str] | None:
    """(scheme, layer id) when ``name`` is an MTP tensor under one of the table's schemes."""
    for scheme, pattern in SCHEMES.items():
        m = pattern.match(name)
        if m is None:
            continue
        if scheme == LAYERED:
            if num_hidden_layers is not None and int(m.group("idx")) >= num_hidden_layers:
                return scheme, m.group("idx")
            continue
        idx = m.groupdict().get("idx") or m.groupdict().get("top") or "0"
        return scheme, f"{_LAYER_LABEL[scheme]}.{idx}"
    return None


def find_mtp_tensors(names: Iterable[str], num_hidden_layers: int | None) -> MtpTensors:
    found: list[str] = []
    layers: set[str] = set()
    schemes: set[str] = set()
    for name in names:
        hit = _match(name, num_hidden_layers)
        if hit is not None:
            found.append(name)
            schemes.add(hit[0])
            layers.add(hit[1])
    scheme = " + ".join(sorted(schemes)) if schemes else None
    return MtpTensors(tuple(found), tuple(sorted(layers, key=_layer_key)), scheme)


def _layer_key(layer: str) -> tuple[str, int]:
    head, _, idx = layer.rpartition(".")
    return (head, int(idx)) if idx.isdigit() and len(idx) <= 9 else (layer, 0)


@dataclass(frozen=True)
class GgufMtpTensors:
    nextn: tuple[str, ...]  # blk.N.nextn.* and the gemma4-assistant nextn.* projections
    block: tuple[str, ...]  # every tensor of the MTP blocks (nextn included)
    blocks: tuple[int, ...]


def find_gguf_mtp_tensors(names: Iterable[str], block_count: int | None, nextn_layers: int | None) -> GgufMtpTensors:
    """The MTP blocks are the ones with nextn tensors and, of the last ``nextn_layers`` blocks the header
    declares, those the tensor list has: what the file holds, however many layers its keys claim."""
    names = list(names)
    nextn = tuple(n for n in names if ".nextn." in n or n.startswith("nextn."))
    block_of = {n: int(m.group("idx")) for n in names if (m := _GGUF_BLOCK.match(n))}
    nextn_blocks = {block_of[n] for n in nextn if n in block_of}
    if block_count and nextn_layers:
        first = block_count - nextn_layers
        nextn_blocks |= {i for i in block_of.values() if first <= i < block_count}
    block = tuple(n for n, i in block_of.items() if i in nextn_blocks)
    return GgufMtpTensors(nextn, tuple(sorted(set(block) | set(nextn))), tuple(sorted(nextn_blocks)))
