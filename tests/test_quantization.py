"""Quantization audit: real published configs for the verdicts, small synthetic configs for each dialect's rules."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from mtpinspect.errors import FormatError
from mtpinspect.formats.quantization import (
    NOT_IN_QUANTIZED_LAYERS,
    NOT_TARGETED,
    QuantizationConfig,
    find_quantization,
    match_exclusion,
)
from mtpinspect.inspection.quant_audit import audit_mtp, mtp_modules_from_tensors

# Published configs, by their name in the reference corpus (cases/README.md): most are a case's own copy,
# the rest live in tests/data/hf-configs.
_CASES = Path(__file__).resolve().parents[1] / "cases"
_DATA = Path(__file__).resolve().parent / "data" / "hf-configs"
_IN_CASES = {
    "controls_no_mtp/openai__gpt-oss-20b.json": "gpt-oss-20b/config.json",
    "deepseek/deepseek-ai__DeepSeek-V3.json": "deepseek-v3/config.json",
    "gemma4/nvidia__Gemma-4-26B-A4B-NVFP4.json": "gemma-4-26b-a4b-nvfp4/config.json",
    "gemma4/nvidia__Gemma-4-26B-A4B-NVFP4.hf_quant_config.json": "gemma-4-26b-a4b-nvfp4/hf_quant_config.json",
    "glm/nvidia__GLM-5.1-NVFP4.json": "glm-5.1-nvfp4/config.json",
    "glm/nvidia__GLM-5.1-NVFP4.hf_quant_config.json": "glm-5.1-nvfp4/hf_quant_config.json",
    "glm/zai-org__GLM-5.1-FP8.json": "glm-5.1-fp8/config.json",
    "kimi/moonshotai__Kimi-K2.5.json": "kimi-k2.5/config.json",
    "qwen3_5/Qwen__Qwen3.8-2.4T-A95B-FP8.json": "qwen3.8-2.4t-a95b-fp8/config.json",
    "qwen3_5/nvidia__Qwen3.5-122B-A10B-NVFP4.json": "qwen3.5-122b-a10b-nvfp4/config.json",
    "qwen3_5/nvidia__Qwen3.5-122B-A10B-NVFP4.hf_quant_config.json": "qwen3.5-122b-a10b-nvfp4/hf_quant_config.json",
    "qwen3_5/nvidia__Qwen3.6-27B-NVFP4.json": "qwen3.6-27b-nvfp4/config.json",
    "qwen3_5/nvidia__Qwen3.6-27B-NVFP4.hf_quant_config.json": "qwen3.6-27b-nvfp4/hf_quant_config.json",
}


def _path(rel: str) -> Path:
    return _CASES / _IN_CASES[rel] if rel in _IN_CASES else _DATA / rel


def load(rel: str) -> dict:
    return json.loads(_path(rel).read_text())


def test_configs_are_the_published_files():
    published = {line.split()[0] for line in (_CASES / "PUBLISHED.sha256").read_text().splitlines() if line.strip()}
    rels = [*_IN_CASES, *(p.relative_to(_DATA).as_posix() for p in _DATA.rglob("*.json"))]
    assert len(rels) == len(_IN_CASES) + 5
    for rel in rels:
        assert hashlib.sha256(_path(rel).read_bytes()).hexdigest() in published, rel


def real(config_rel: str, hf_quant_rel: str | None = None) -> QuantizationConfig:
    extra = {"hf_quant_config.json": load(hf_quant_rel)} if hf_quant_rel else {}
    q = find_quantization(load(config_rel), extra)
    assert q is not None
    return q


# MTP tensor sets. Names come from the reference files: the GLM-5.1 MTP fragment and the per-layer names in
# nvidia GLM-5 NVFP4's exclude list; the Qwen3-Next MTP name fragment (17 non-expert names + experts).
GLM_L = "model.layers.78"
GLM_LINEARS = [
    f"{GLM_L}.eh_proj",
    *(f"{GLM_L}.self_attn.{p}" for p in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj")),
    *(f"{GLM_L}.mlp.shared_experts.{p}" for p in ("gate_proj", "up_proj", "down_proj")),
    *(f"{GLM_L}.mlp.experts.{e}.{p}" for e in range(2) for p in ("gate_proj", "up_proj", "down_proj")),
]
GLM_OTHER = [f"{GLM_L}.{n}" for n in ("enorm", "hnorm", "shared_head.norm", "input_layernorm",
                                        "post_attention_layernorm", "self_attn.q_a_layernorm", "mlp.gate")]

QWEN_NON_EXPERT = [
    "mtp.fc", "mtp.pre_fc_norm_embedding", "mtp.pre_fc_norm_hidden", "mtp.norm",
    "mtp.layers.0.input_layernorm", "mtp.layers.0.post_attention_layernorm",
    *(f"mtp.layers.0.self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm")),
    "mtp.layers.0.mlp.gate",
    *(f"mtp.layers.0.mlp.shared_expert.{p}" for p in ("gate_proj", "up_proj", "down_proj")),
    "mtp.layers.0.mlp.shared_expert_gate",
]
QWEN_EXPERTS = [f"mtp.layers.0.mlp.experts.{e}.{p}" for e in range(4) for p in ("gate_proj", "up_proj", "down_proj")]
# The 8 MTP linears of the dense Qwen3.5/3.6-27B (the ModelOpt exclude script quoted in the reference notes).
QWEN_DENSE = ["mtp.fc", *(f"mtp.layers.0.self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj", "o_proj")),
              *(f"mtp.layers.0.mlp.{p}" for p in ("gate_proj", "up_proj", "down_proj"))]


def weights(modules, dtype=None) -> dict[str, str | None]:
    return {f"{m}.weight": dtype for m in modules}


def fp8(modules) -> tuple[dict[str, str], list[str]]:
    """Block-FP8 header: F8_E4M3 weights with weight_scale_inv beside them."""
    return weights(modules, "F8_E4M3"), [f"{m}.weight_scale_inv" for m in modules]


# ------------------------------------------------------------------ real configs


def test_nvidia_glm51_nvfp4_excludes_the_whole_mtp_layer():
    q = real("glm/nvidia__GLM-5.1-NVFP4.json", "glm/nvidia__GLM-5.1-NVFP4.hf_quant_config.json")
    assert (q.method, q.algo, q.source) == ("modelopt", "NVFP4", "hf_quant_config.json:quantization")
    assert (q.exclusion_key, len(q.exclusions), q.producer) == ("exclude_modules", 155, "modelopt 0.45.0.dev44+gc273ddb8a.d20260509")
    assert q.notes == ()  # config.json's ignore list is the same 155 entries

    audit = audit_mtp(q, weights(GLM_LINEARS + GLM_OTHER))
    assert audit.mtp_excluded is True
    assert audit.excluded_count == 155
    assert {v.module for v in audit.modules} == set(GLM_LINEARS)  # norms and the router are not counted
    assert {v.excluded_by for v in audit.modules} == {"model.layers.78*"}
    assert audit.quantized() == [] and audit.fused_warnings == ()
    # The same glob does not reach the trunk's experts.
    assert match_exclusion(q, "model.layers.77.mlp.experts.0.up_proj") is None


def test_nvidia_glm51_nvfp4_header_bf16_agrees_and_raises_no_note():
    q = real("glm/nvidia__GLM-5.1-NVFP4.json", "glm/nvidia__GLM-5.1-NVFP4.hf_quant_config.json")
    audit = audit_mtp(q, weights(GLM_LINEARS, "BF16"), [f"{m}.weight" for m in GLM_LINEARS])
    assert audit.mtp_excluded is True
    assert all(v.header_quantized is False and v.note is None for v in audit.modules)


def test_zai_glm51_fp8_excludes_only_the_heads_small_modules():
    q = real("glm/zai-org__GLM-5.1-FP8.json")
    assert (q.method, q.algo, q.exclusion_key, len(q.exclusions)) == ("fp8", "e4m3", "modules_to_not_convert", 712)
    layer78 = [e for e in q.exclusions if e.startswith(GLM_L + ".")]
    assert len(layer78) == 13

    quantized = [m for m in GLM_LINEARS if m != f"{GLM_L}.eh_proj"]
    dtypes, scales = fp8(quantized)
    dtypes[f"{GLM_L}.eh_proj.weight"] = "BF16"
    audit = audit_mtp(q, dtypes, scales)
    assert audit.mtp_excluded == "partial"
    assert audit.kept() == [f"{GLM_L}.eh_proj"]
    assert set(audit.quantized()) == set(quantized)
    eh = next(v for v in audit.modules if v.module == f"{GLM_L}.eh_proj")
    assert (eh.excluded_by, eh.header_dtype, eh.header_quantized, eh.note) == (f"{GLM_L}.eh_proj", "BF16", False, None)
    assert all(v.header_dtype == "F8_E4M3" and v.header_quantized for v in audit.modules if v is not eh)


def test_qwen38_fp8_lists_ten_mtp_modules_but_routed_experts_stay_fp8():
    q = real("qwen3_5/Qwen__Qwen3.8-2.4T-A95B-FP8.json")
    assert (q.method, q.algo, q.exclusion_key, len(q.exclusions)) == ("fp8", None, "modules_to_not_convert", 978)
    assert len([e for e in q.exclusions if e.startswith("mtp")]) == 10

    audit = audit_mtp(q, weights(QWEN_NON_EXPERT + QWEN_EXPERTS))
    assert audit.mtp_excluded == "partial"
    assert audit.kept() == [
        "mtp.fc",
        "mtp.layers.0.mlp.shared_expert.down_proj", "mtp.layers.0.mlp.shared_expert.gate_proj",
        "mtp.layers.0.mlp.shared_expert.up_proj",
        "mtp.layers.0.self_attn.k_proj", "mtp.layers.0.self_attn.o_proj", "mtp.layers.0.self_attn.q_proj",
        "mtp.layers.0.self_attn.v_proj",
    ]
    assert sorted(audit.quantized()) == sorted(QWEN_EXPERTS)
    assert audit.fused_warnings == ()  # q/k/v and the shared expert's gate/up are all listed
    expert = next(v for v in audit.modules if v.module == "mtp.layers.0.mlp.experts.0.up_proj")
    assert expert.note == "not excluded, while 8 other MTP module(s) are"


def test_nvidia_qwen36_27b_mixed_precision_keeps_mtp_in_bf16():
    q = real("qwen3_5/nvidia__Qwen3.6-27B-NVFP4.json", "qwen3_5/nvidia__Qwen3.6-27B-NVFP4.hf_quant_config.json")
    assert (q.algo, q.exclusions, q.targets_key, len(q.targets)) == (
        "MIXED_PRECISION", ("mtp*", "mtp.layers.0*"), "quantized_layers", 401)
    audit = audit_mtp(q, weights(QWEN_DENSE + ["mtp.norm", "mtp.pre_fc_norm_hidden"]))
    assert audit.mtp_excluded is True
    assert [v.module for v in audit.modules] == sorted(QWEN_DENSE)
    assert {v.excluded_by for v in audit.modules} == {"mtp*"}
    # Without the glob, the allow-list alone would still keep the head unquantized, while a trunk layer it lists is quantized.
    no_list = dataclasses.replace(q, exclusions=())
    assert match_exclusion(no_list, "mtp.fc") == NOT_IN_QUANTIZED_LAYERS
    assert match_exclusion(no_list, "model.language_model.layers.0.mlp.gate_proj") is None


def test_modelopt_list_with_mtp_layers_glob_but_without_mtp_star_misses_mtp_fc():
    """nvidia Qwen3.5-397B-A17B-NVFP4 shipped `mtp.layers.0*` without `mtp*` (vLLM #38832); rebuilt from the 122B list."""
    q = real("qwen3_5/nvidia__Qwen3.5-122B-A10B-NVFP4.json", "qwen3_5/nvidia__Qwen3.5-122B-A10B-NVFP4.hf_quant_config.json")
    assert {"mtp*", "mtp.layers.0*"} <= set(q.exclusions)
    assert audit_mtp(q, weights(QWEN_NON_EXPERT + QWEN_EXPERTS)).mtp_excluded is True

    missing_star = dataclasses.replace(q, exclusions=tuple(e for e in q.exclusions if e != "mtp*"))
    audit = audit_mtp(missing_star, weights(QWEN_NON_EXPERT + QWEN_EXPERTS))
    assert audit.mtp_excluded == "partial"
    assert audit.quantized() == ["mtp.fc"]
    assert audit.modules[0].note == f"not excluded, while {len(audit.modules) - 1} other MTP module(s) are"


def test_deepseek_v3_fp8_has_no_list_so_the_head_is_fp8():
    q = real("deepseek/deepseek-ai__DeepSeek-V3.json")
    assert (q.method, q.algo, q.exclusion_key, q.exclusions) == ("fp8", "e4m3", None, ())
    mods = ["model.layers.61.eh_proj", "model.layers.61.self_attn.q_a_proj", "model.layers.61.mlp.experts.0.down_proj"]
    audit = audit_mtp(q, weights(mods + ["model.layers.61.enorm", "model.layers.61.shared_head.head",
                                         "model.layers.61.embed_tokens"]))
    assert audit.mtp_excluded is False
    assert set(audit.quantized()) == set(mods)
    assert all(v.excluded_by is None and v.header_quantized is None for v in audit.modules)


def test_deepseek_v3_bf16_eh_proj_is_not_targeted_so_the_head_is_not_partly_excluded():
    """The published headers keep eh_proj BF16 with no list naming it: engines build it as a plain Linear."""
    q = real("deepseek/deepseek-ai__DeepSeek-V3.json")
    mods = ["model.layers.61.self_attn.q_a_proj", "model.layers.61.mlp.experts.0.down_proj"]
    dtypes, scales = fp8(mods)
    dtypes["model.layers.61.eh_proj.weight"] = "BF16"
    audit = audit_mtp(q, dtypes, scales)
    assert audit.mtp_excluded is False
    assert audit.kept() == audit.untargeted() == ["model.layers.61.eh_proj"]
    eh = next(v for v in audit.modules if v.module == "model.layers.61.eh_proj")
    assert eh.note == "header says BF16 and the list does not name it: not targeted (engines build eh_proj without a quantization config)"
    # Named by the list (as GLM's FP8 release does), the same BF16 eh_proj is an exclusion: partial.
    listed = audit_mtp(dataclasses.replace(q, exclusion_key="modules_to_not_convert", exclusions=("model.layers.61.eh_proj",)), dtypes, scales)
    assert listed.mtp_excluded == "partial" and listed.untargeted() == []


@pytest.mark.parametrize("with_hf_quant", [True, False])
def test_deepseek_v4_flash_nvfp4_excludes_mtp_star(with_hf_quant):
    hf_quant = "deepseek/nvidia__DeepSeek-V4-Flash-NVFP4.hf_quant_config.json" if with_hf_quant else None
    q = real("deepseek/nvidia__DeepSeek-V4-Flash-NVFP4.json", hf_quant)
    assert (q.method, q.algo, q.exclusions) == (
        "modelopt", "MIXED_PRECISION", ("*.attn.*", "*.ffn.shared_experts.*", "head", "mtp.*"))
    if not with_hf_quant:
        # config.json alone says quant_method "fp8"; its list is still ModelOpt's globs.
        assert q.source == "config.json:quantization_config" and q.exclusion_key == "ignore"
        assert "quant_method 'fp8'" in q.notes[0]
    # Illustrative DeepSeek-V4 MTP module names under the documented `mtp.<i>.` prefix.
    mods = ["mtp.0.e_proj", "mtp.0.attn.wq_a", "mtp.0.ffn.experts.0.w1", "mtp.0.ffn.shared_experts.w2"]
    audit = audit_mtp(q, weights(mods + ["mtp.0.enorm"]))
    assert audit.mtp_excluded is True
    assert {v.module: v.excluded_by for v in audit.modules}["mtp.0.ffn.experts.0.w1"] == "mtp.*"
    assert match_exclusion(q, "layers.3.ffn.experts.7.w1") is None  # the trunk's experts are NVFP4
    assert match_exclusion(q, "layers.3.ffn.shared_experts.w1") == "*.ffn.shared_experts.*"


def test_gemma4_nvfp4_has_a_list_but_no_mtp_modules():
    q = real("gemma4/nvidia__Gemma-4-26B-A4B-NVFP4.json", "gemma4/nvidia__Gemma-4-26B-A4B-NVFP4.hf_quant_config.json")
    assert (q.method, q.algo, len(q.exclusions)) == ("modelopt", "NVFP4", 93)
    audit = audit_mtp(q, {})
    assert (audit.mtp_excluded, audit.modules, audit.excluded_count) == (None, (), 93)


def test_nemotron_super_fp8_hf_quant_without_list_quantizes_the_head():
    q = find_quantization(load("nemotron/nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json"),
                          {"hf_quant_config.json": load("nemotron/nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.hf_quant_config.json")})
    assert (q.method, q.algo, q.exclusion_key, q.exclusions, q.producer) == ("modelopt", "FP8", None, (), None)
    assert audit_mtp(q, weights(["mtp.layers.0.mixer.in_proj"])).mtp_excluded is False


def test_kimi_k25_compressed_tensors_under_text_config_uses_re_prefix():
    q = real("kimi/moonshotai__Kimi-K2.5.json")
    assert (q.method, q.algo, q.source) == ("compressed-tensors", "pack-quantized", "config.json:text_config.quantization_config")
    assert q.targets == {"Linear"}
    assert match_exclusion(q, "language_model.model.layers.5.self_attn.q_a_proj") == "re:.*self_attn.*"
    assert match_exclusion(q, "language_model.model.layers.5.mlp.shared_experts.up_proj") == "re:.*shared_experts.*"
    assert match_exclusion(q, "language_model.model.layers.5.mlp.experts.3.up_proj") is None


def test_hf_style_lists_gpt_oss_globs_and_minimax_short_names():
    gpt = real("controls_no_mtp/openai__gpt-oss-20b.json")
    assert (gpt.method, gpt.exclusion_key) == ("mxfp4", "modules_to_not_convert")
    assert match_exclusion(gpt, "model.layers.3.self_attn.q_proj") == "model.layers.*.self_attn"
    assert match_exclusion(gpt, "model.layers.3.mlp.experts") is None
    minimax = real("minimax/MiniMaxAI__MiniMax-M2.5.json")
    assert match_exclusion(minimax, "model.layers.0.block_sparse_moe.gate") == "gate"
    assert match_exclusion(minimax, "model.layers.0.block_sparse_moe.experts.0.w1") is None


def test_config_and_hf_quant_disagreement_is_noted_and_hf_quant_wins():
    config = load("glm/nvidia__GLM-5.1-NVFP4.json")
    hf_quant = load("glm/nvidia__GLM-5.1-NVFP4.hf_quant_config.json")
    shortened = copy.deepcopy(config)
    shortened["quantization_config"]["ignore"].remove("model.layers.78*")
    q = find_quantization(shortened, {"hf_quant_config.json": hf_quant})
    assert "model.layers.78*" in q.exclusions
    assert q.notes == ("config.json:quantization_config.ignore has 154 entries but "
                       "hf_quant_config.json:quantization.exclude_modules has 155; using hf_quant_config.json:quantization",)


# ------------------------------------------------------------------ finding the config


def test_no_quantization_config_means_none():
    assert find_quantization({"model_type": "qwen3_5"}, {}) is None
    assert find_quantization(None, {}) is None


def test_malformed_configs_raise_one_line_format_errors():
    with pytest.raises(FormatError, match=r"^config.json:quantization_config: expected a JSON object, got list$"):
        find_quantization({"quantization_config": ["fp8"]}, {})
    with pytest.raises(FormatError, match=r"^config.json:quantization_config: 'ignore' must be a list"):
        find_quantization({"quantization_config": {"quant_method": "compressed-tensors", "ignore": "lm_head"}}, {})
    with pytest.raises(FormatError, match=r"^quantize_config.json: 'dynamic' must be an object"):
        find_quantization(None, {"quantize_config.json": {"bits": 4, "dynamic": ["-:.*mtp.*"]}})


# ------------------------------------------------------------------ dialects (synthetic configs)


def ct(ignore, targets=("Linear",)) -> QuantizationConfig:
    q = find_quantization({"quantization_config": {
        "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": list(ignore),
        "config_groups": {"group_0": {"targets": list(targets)}}}}, {})
    assert q is not None
    return q


QWEN_SMALL = weights(["mtp.fc", "mtp.norm", *QWEN_DENSE[1:]])


def test_compressed_tensors_leading_dot_regex_misses_every_mtp_module():
    audit = audit_mtp(ct(["lm_head", r"re:.*\.mtp\..*"]), QWEN_SMALL)
    assert audit.mtp_excluded is False
    fc = audit.modules[0]
    assert fc.module == "mtp.fc" and fc.excluded_by is None
    assert fc.note.startswith(r"regex '.*\\.mtp\\..*' does not match 'mtp.fc': re.match anchors")

    fixed = audit_mtp(ct(["lm_head", r"re:.*mtp\..*"]), QWEN_SMALL)
    assert fixed.mtp_excluded is True and fixed.quantized() == []


def test_compressed_tensors_list_covering_layers_but_not_fc_is_partial():
    audit = audit_mtp(ct([r"re:mtp\.layers\..*"]), QWEN_SMALL)
    assert audit.mtp_excluded == "partial"
    assert audit.quantized() == ["mtp.fc"]
    assert audit.modules[0].note == "not excluded, while 7 other MTP module(s) are"


def test_compressed_tensors_targets_allow_list_and_packed_weights():
    q = ct([], targets=[r"re:model\.layers\..*"])
    assert match_exclusion(q, "mtp.fc") == NOT_TARGETED
    assert match_exclusion(q, "model.layers.3.mlp.down_proj") is None

    packed = {"mtp.layers.0.mlp.experts.0.gate_proj.weight_packed": "I32", "mtp.fc.weight": "BF16"}
    extra = ["mtp.layers.0.mlp.experts.0.gate_proj.weight_scale", "mtp.layers.0.mlp.experts.0.gate_proj.weight_shape"]
    assert mtp_modules_from_tensors(list(packed) + extra) == ["mtp.fc", "mtp.layers.0.mlp.experts.0.gate_proj"]
    audit = audit_mtp(ct(["mtp.fc"]), packed, extra)
    expert = audit.modules[1]
    assert (expert.header_dtype, expert.header_quantized, expert.quantized) == ("I32", True, True)
    assert audit.mtp_excluded == "partial" and audit.kept() == ["mtp.fc"]


def test_awq_matches_substrings_even_inside_mimo_names():
    q = find_quantization(None, {"quant_config.json": {"w_bit": 4, "q_group_size": 128, "modules_to_not_convert": ["mtp"]}})
    assert (q.method, q.algo, q.source, q.exclusion_key) == ("awq", "4", "quant_config.json", "modules_to_not_convert")
    mimo = ["model.mtp_layers.0.self_attn.q_proj", "model.mtp_layers.0.mlp.down_proj"]
    assert audit_mtp(q, weights(mimo)).mtp_excluded is True
    visual_only = find_quantization({"quantization_config": {"quant_method": "awq", "bits": 4,
                                                             "modules_to_not_convert": ["visual"]}}, {})
    assert audit_mtp(visual_only, weights(mimo)).mtp_excluded is False


def test_bitsandbytes_matches_whole_components_only():
    q = find_quantization({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                                   "llm_int8_skip_modules": ["mtp", "lm_head"]}}, {})
    assert (q.algo, q.exclusion_key) == ("4bit", "llm_int8_skip_modules")
    assert match_exclusion(q, "mtp.layers.0.self_attn.q_proj") == "mtp"
    # Unlike AWQ's substring rule, "mtp" is not a component of MiMo's "mtp_layers".
    assert match_exclusion(q, "model.mtp_layers.0.self_attn.o_proj") is None
    inner = dataclasses.replace(q, exclusions=("shared_expert",))
    assert match_exclusion(inner, "mtp.layers.0.mlp.shared_expert.up_proj") == "shared_expert"
    assert match_exclusion(inner, "mtp.layers.0.mlp.shared_expert_gate") is None


def gptq(dynamic: dict) -> QuantizationConfig:
    q = find_quantization(None, {"quantize_config.json": {
        "bits": 4, "dynamic": dynamic, "meta": {"quantizer": ["gptqmodel:2.2.0"]}}})
    assert q is not None
    return q


def test_gptq_dynamic_first_match_wins():
    bad_order = gptq({r"+:.*self_attn.*": {"bits": 8}, r"-:.*mtp.*": {}})
    assert (bad_order.method, bad_order.algo, bad_order.producer) == ("gptq", "4", "gptqmodel:2.2.0")
    audit = audit_mtp(bad_order, weights(["mtp.fc", "mtp.layers.0.self_attn.o_proj"]))
    assert audit.mtp_excluded == "partial"
    fc, o_proj = audit.modules
    assert fc.excluded_by == r"-:.*mtp.*"
    assert o_proj.excluded_by is None
    assert o_proj.note == (r"GPTQ dynamic: '+:.*self_attn.*' matches first, so the later '-:.*mtp.*' never applies "
                           "(first match wins)")

    good_order = gptq({r"-:.*mtp.*": {}, r"+:.*self_attn.*": {"bits": 8}})
    assert audit_mtp(good_order, weights(["mtp.fc", "mtp.layers.0.self_attn.o_proj"])).mtp_excluded is True


def test_gptq_glob_written_as_regex_is_flagged_and_excludes_nothing():
    q = gptq({"-:*mtp*": {}})
    assert q.notes == ("dynamic key '-:*mtp*' is not a valid regex; engines fail on it",)
    assert match_exclusion(q, "mtp.fc") is None


def test_gptq_regex_is_anchored_at_the_start_of_the_name():
    q = gptq({r"-:mtp_layers\..*": {}})
    mimo = "model.mtp_layers.0.self_attn.q_proj"
    assert match_exclusion(q, mimo) is None
    assert match_exclusion(q, "mtp_layers.0.self_attn.q_proj") == r"-:mtp_layers\..*"
    assert audit_mtp(q, weights([mimo])).modules[0].note.startswith(r"regex 'mtp_layers\\..*' does not match")


def test_quark_exclude_uses_exact_names_and_re_prefix():
    q = find_quantization({"quantization_config": {
        "quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp4"}},
        "exclude": ["lm_head", "mtp.fc", r"re:mtp\.layers\.0\.self_attn\..*", "mtp.layers.0.mlp.experts*"]}}, {})
    assert (q.method, q.algo, q.exclusion_key) == ("quark", "fp4", "exclude")
    experts = [f"mtp.layers.0.mlp.experts.0.{p}" for p in ("gate_proj", "up_proj", "down_proj")]
    audit = audit_mtp(q, weights(["mtp.fc", "mtp.layers.0.self_attn.q_proj", "mtp.layers.0.self_attn.k_proj",
                                  "mtp.layers.0.self_attn.v_proj", *experts]))
    assert audit.mtp_excluded == "partial"
    assert sorted(audit.quantized()) == sorted(experts)  # a glob is a literal name to Quark's matcher
    assert match_exclusion(q, "mtp.layers.0.self_attn.qkv_proj") == r"re:mtp\.layers\.0\.self_attn\..*"


def test_fused_module_is_excluded_only_when_all_shards_are():
    def modelopt(excl):
        return QuantizationConfig("modelopt", "NVFP4", "hf_quant_config.json:quantization", "exclude_modules",
                                  tuple(excl), None)

    attn = "mtp.layers.0.self_attn"
    partial = modelopt([f"{attn}.q_proj", f"{attn}.v_proj"])
    assert match_exclusion(partial, f"{attn}.qkv_proj") is None
    assert match_exclusion(partial, f"{attn}.q_proj") is None
    audit = audit_mtp(partial, weights([f"{attn}.{p}" for p in ("q_proj", "k_proj", "v_proj")]))
    assert audit.mtp_excluded is False
    assert audit.fused_warnings == (
        f"{attn}.qkv_proj: the list names q_proj, v_proj but not k_proj; engines fuse q_proj/k_proj/v_proj into "
        "qkv_proj and quantize all of it",)
    q_note = audit.modules[1].note  # natural order: k_proj, q_proj, v_proj
    assert audit.modules[1].module == f"{attn}.q_proj"
    assert q_note.startswith(f"list names q_proj ({attn}.q_proj) but engines fuse q_proj/k_proj/v_proj into qkv_proj")

    full = modelopt([f"{attn}.q_proj", f"{attn}.k_proj", f"{attn}.v_proj"])
    assert match_exclusion(full, f"{attn}.qkv_proj") == f"{attn}.q_proj"
    # A list that names the fused module covers each shard.
    fused_named = ct([f"{attn}.qkv_proj", "mtp.layers.0.mlp.gate_up_proj"])
    assert match_exclusion(fused_named, f"{attn}.k_proj") == f"{attn}.qkv_proj"
    assert match_exclusion(fused_named, "mtp.layers.0.mlp.up_proj") == "mtp.layers.0.mlp.gate_up_proj"
    assert match_exclusion(fused_named, "mtp.layers.0.mlp.down_proj") is None


def test_the_earliest_matching_entry_is_reported():
    def modelopt(excl):
        return QuantizationConfig("modelopt", "NVFP4", "hf_quant_config.json", "exclude_modules", tuple(excl), None)

    assert match_exclusion(modelopt(["mtp*", "mtp.fc"]), "mtp.fc") == "mtp*"
    assert match_exclusion(modelopt(["mtp.fc", "mtp*"]), "mtp.fc") == "mtp.fc"


def test_header_dtype_overrides_the_list_both_ways():
    q = QuantizationConfig("modelopt", "NVFP4", "hf_quant_config.json:quantization", "exclude_modules",
                           ("lm_head", "mtp.layers.0*"), None)
    dtypes = {"mtp.fc.weight": "BF16", "mtp.layers.0.mlp.down_proj.weight": "U8",
              "mtp.layers.0.mlp.up_proj.weight": "U8", "mtp.layers.0.self_attn.o_proj.weight": "BF16"}
    names = ["mtp.layers.0.mlp.down_proj.weight_scale", "mtp.layers.0.mlp.down_proj.weight_scale_2"]
    audit = audit_mtp(q, dtypes, names)
    by = {v.module: v for v in audit.modules}

    fc = by["mtp.fc"]  # the nvidia Qwen3.5-397B trap: the list misses mtp.fc, the header keeps it BF16
    assert (fc.excluded_by, fc.header_quantized, fc.quantized) == (None, False, False)
    assert fc.note.startswith("header says BF16 although the list does not exclude it")

    down = by["mtp.layers.0.mlp.down_proj"]
    assert (down.excluded_by, down.header_dtype, down.header_quantized, down.quantized) == ("mtp.layers.0*", "U8", True, True)
    assert down.note == "header says U8 although the list excludes it (mtp.layers.0*)"

    up = by["mtp.layers.0.mlp.up_proj"]  # packed ints without scales: unknown, so the list decides
    assert (up.header_quantized, up.quantized, up.note) == (None, False, "U8 weight without scale tensors beside it")

    assert by["mtp.layers.0.self_attn.o_proj"].note is None
    assert audit.mtp_excluded == "partial" and audit.quantized() == ["mtp.layers.0.mlp.down_proj"]


def test_mtp_modules_leave_out_norms_embeddings_heads_and_routers():
    names = [f"{m}.weight" for m in GLM_LINEARS + GLM_OTHER] + [
        f"{GLM_L}.embed_tokens.weight", f"{GLM_L}.shared_head.head.weight", f"{GLM_L}.eh_proj.weight_scale_inv",
        f"{GLM_L}.mlp.gate.e_score_correction_bias", "mtp.layers.0.mlp.shared_expert_gate.weight",
    ]
    assert set(mtp_modules_from_tensors(names)) == set(GLM_LINEARS)
    assert mtp_modules_from_tensors([f"mtp.layers.0.mlp.experts.{e}.up_proj.weight" for e in (10, 2, 1)]) == [
        "mtp.layers.0.mlp.experts.1.up_proj", "mtp.layers.0.mlp.experts.2.up_proj", "mtp.layers.0.mlp.experts.10.up_proj"]


def test_no_quantization_config_gives_no_verdict_unless_the_header_shows_quantized_weights():
    assert audit_mtp(None, weights(QWEN_DENSE, "BF16")).mtp_excluded is None
    dtypes, scales = fp8(QWEN_DENSE)
    audit = audit_mtp(None, dtypes, scales)
    assert audit.mtp_excluded is False and audit.excluded_count == 0
