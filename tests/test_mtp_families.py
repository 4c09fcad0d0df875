"""The MTP family table (inspection/naming.py MTP_FAMILIES): one test per family from its real tensor names.

Each family's names below are written out by hand from the engine file its row cites (the names those
loaders read from the checkpoint), not generated from the table, so a row that spells a family wrongly
fails here. Trunk tensors of the same checkpoints, and checkpoints without a head, must find nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mtpinspect
from mtpinspect.inspection.naming import FAMILY_OF_MODEL_TYPE, MTP_FAMILIES, find_mtp_tensors

# family -> (num_hidden_layers, trunk names, MTP names, MTP layers found)
REAL_NAMES: dict[str, tuple[int, list[str], list[str], int]] = {
    # vLLM deepseek_mtp.py _rewrite_spec_layer_name; SGLang deepseek_nextn.py (DeepSeek-V3: 61 layers)
    "DeepSeek-V3 / R1 / V3.1 / V3.2, Kimi-K2": (61, ["model.layers.60.mlp.experts.0.gate_proj.weight", "model.norm.weight"], [
        "model.layers.61.eh_proj.weight", "model.layers.61.enorm.weight", "model.layers.61.hnorm.weight",
        "model.layers.61.shared_head.head.weight", "model.layers.61.shared_head.norm.weight",
        "model.layers.61.embed_tokens.weight", "model.layers.61.self_attn.q_a_proj.weight",
        "model.layers.61.mlp.experts.255.down_proj.weight"], 1),
    # vLLM glm4_moe_mtp.py; GLM-5.1: 78 layers
    "GLM-4.5 / 4.6 / 4.7, GLM-4.7-Flash, GLM-5.x": (78, ["model.layers.77.self_attn.o_proj.weight"], [
        "model.layers.78.eh_proj.weight", "model.layers.78.enorm.weight", "model.layers.78.hnorm.weight",
        "model.layers.78.shared_head.norm.weight", "model.layers.78.self_attn.indexer.k_norm.weight"], 1),
    # vLLM step3p5_mtp.py: "model.layers.<id>.transformer.*"; Step-3.7-Flash: 45 layers, 3 MTP layers
    "Step-3.5 / 3.7": (45, ["model.layers.44.self_attn.q_proj.weight"], [
        "model.layers.45.eh_proj.weight", "model.layers.46.enorm.weight", "model.layers.47.hnorm.weight",
        "model.layers.45.transformer.shared_head.output.weight", "model.layers.46.transformer.shared_head.norm.weight"], 3),
    # vLLM bailing_moe_mtp.py: model.layers.{num_hidden_layers + i}, ".attention.dense" -> o_proj, word_embeddings
    "Bailing (Ling / Ring 2.x, 3.0)": (32, ["model.word_embeddings.weight", "model.layers.31.attention.dense.weight"], [
        "model.layers.32.eh_proj.weight", "model.layers.32.enorm.weight", "model.layers.32.hnorm.weight",
        "model.layers.32.final_layernorm.weight", "model.layers.32.attention.query_key_value.weight",
        "model.layers.32.mlp.experts.0.gate_proj.weight"], 1),
    # SGLang hunyuan_v3_nextn.py; llama.cpp conversion/hunyuan.py (.final_layernorm. -> .shared_head.norm.)
    "Hunyuan-V3": (32, ["model.layers.0.self_attn.q_proj.weight"], [
        "model.layers.32.eh_proj.weight", "model.layers.32.final_layernorm.weight", "model.layers.32.mlp.gate.weight"], 1),
    # vLLM openpangu_mtp.py: proj, norm_after_embedding, norm_before_output
    "openPangu Ultra MoE": (61, ["model.layers.60.mlp.experts.0.up_proj.weight"], [
        "model.layers.61.proj.weight", "model.layers.61.norm_after_embedding.weight",
        "model.layers.61.norm_before_output.weight", "model.layers.61.shared_head.head.weight"], 1),
    # vLLM qwen3_next_mtp.py / qwen3_5_mtp.py, llama.cpp conversion/qwen.py
    "Qwen3-Next, Qwen3.5 / 3.6 / 3.8": (48, ["model.layers.47.linear_attn.in_proj_qkvz.weight", "lm_head.weight"], [
        "mtp.fc.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight", "mtp.norm.weight",
        "mtp.layers.0.self_attn.q_proj.weight", "mtp.layers.0.mlp.experts.511.down_proj.weight"], 1),
    # vLLM deepseek_v4_mtp.py (e_proj, h_proj, hc_head_*); llama.cpp conversion/deepseek.py --mtp
    "DeepSeek-V4": (43, ["layers.42.attn.wq_a.weight", "embed.weight"], [
        "mtp.0.e_proj.weight", "mtp.0.h_proj.weight", "mtp.0.enorm.weight", "mtp.0.hnorm.weight", "mtp.0.norm.weight",
        "mtp.0.hc_head_fn", "mtp.0.attn.wq_a.weight", "mtp.0.ffn.experts.255.w1.weight"], 1),
    # llama.cpp conversion/nemotron.py: mtp.layers.0.{enorm,hnorm,eh_proj}, mtp.layers.1.{norm,final_layernorm}
    "Nemotron-H (Nemotron 3 Super)": (88, ["backbone.layers.87.mixer.in_proj.weight", "backbone.embeddings.weight"], [
        "mtp.layers.0.enorm.weight", "mtp.layers.0.hnorm.weight", "mtp.layers.0.eh_proj.weight",
        "mtp.layers.0.mixer.q_proj.weight", "mtp.layers.1.norm.weight", "mtp.layers.1.final_layernorm.weight",
        "mtp.layers.1.mixer.experts.0.up_proj.weight"], 2),
    # llama.cpp conversion/exaone.py: mtp.fc, mtp.pre_fc_norm_embedding/hidden, mtp.norm
    "EXAONE-MoE / EXAONE 4.5": (48, ["model.layers.47.mlp.gate.weight"], [
        "mtp.fc.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight", "mtp.norm.weight",
        "mtp.layers.0.self_attn.q_proj.weight"], 1),
    # llama.cpp conversion/mimo.py: model.mtp.layers.{i}.* (3 layers)
    "MiMo-V2-Flash": (48, ["model.layers.47.self_attn.q_proj.weight"], [
        "model.mtp.layers.0.enorm.weight", "model.mtp.layers.1.eh_proj.weight", "model.mtp.layers.2.mlp.down_proj.weight"], 3),
    # vLLM longcat_flash_mtp.py new_to_old_names_mapping
    "LongCat-Flash": (28, ["model.layers.27.mlps.0.down_proj.weight"], [
        "model.mtp.layers.0.eh_proj.weight", "model.mtp.layers.0.enorm.m.weight", "model.mtp.layers.0.hnorm.m.weight",
        "model.mtp.layers.0.self_attn.kv_b_proj.weight", "model.mtp.layers.0.transformer_layer.mlp.up_proj.weight",
        "model.mtp.norm.weight", "model.mtp.embed_tokens.weight"], 1),
    # vLLM mimo_mtp.py; cases/mimo-7b-base (Megatron-Bridge fixture)
    "MiMo-7B": (36, ["model.layers.35.mlp.up_proj.weight"], [
        "model.mtp_layers.0.token_layernorm.weight", "model.mtp_layers.0.hidden_layernorm.weight",
        "model.mtp_layers.0.input_proj.weight", "model.mtp_layers.0.final_layernorm.weight",
        "model.mtp_layers.0.self_attn.q_proj.bias"], 1),
    # vLLM ernie_mtp.py _rewrite_spec_layer_name: model.{mtp_emb_norm,mtp_hidden_norm,mtp_linear_proj}.0.*,
    # model.mtp_block.0.*; ERNIE-4.5-21B-A3B: 28 layers
    "ERNIE-4.5": (28, ["model.layers.27.mlp.experts.63.down_proj.weight", "model.embed_tokens.weight"], [
        "model.mtp_emb_norm.0.weight", "model.mtp_hidden_norm.0.weight", "model.mtp_linear_proj.0.weight",
        "model.mtp_block.0.input_layernorm.weight", "model.mtp_block.0.self_attn.q_proj.weight",
        "model.mtp_block.0.mlp.experts.0.gate_proj.weight"], 1),
}


def test_every_family_has_a_source_and_a_test() -> None:
    assert {f.name for f in MTP_FAMILIES} == set(REAL_NAMES) | {"Gemma 4 assistant"}
    for family in MTP_FAMILIES:
        assert family.sources and all(" " in s and ("@" in s or "0c1e570" in s) for s in family.sources), family.name
        assert family.model_types and family.names


@pytest.mark.parametrize("family", sorted(REAL_NAMES))
def test_family_real_names(family: str) -> None:
    layers, trunk, mtp, count = REAL_NAMES[family]
    found = find_mtp_tensors(trunk + mtp, layers)
    assert set(found.names) == set(mtp), family
    assert found.count == count, found.layers


def test_non_mtp_checkpoints_say_nothing() -> None:
    # Qwen3-30B-A3B and gpt-oss trunks, and names that only look alike ("mtp" inside a word, a huge layer number).
    names = ["model.layers.47.mlp.experts.127.gate_proj.weight", "model.layers.23.mlp.experts.gate_up_proj_blocks",
             "model.embed_tokens.weight", "lm_head.weight", "model.smtp.fc.weight", "model.layers.123456789012.x.weight",
             "model.mtp_blocker.weight", "vision.mtp_emb_norm_like.weight"]
    assert find_mtp_tensors(names, 48).names == ()


def _write(folder: Path, config: dict, names: list[str]) -> None:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 0}, "weight_map": {n: "model-00001-of-00001.safetensors" for n in names}}))


# ERNIE-4.5-21B-A3B's published values (hidden 2560, 28 layers, vocab 103424; quoted in public test fixtures, see
# the family row) plus its num_nextn_predict_layers: 1.
ERNIE = {"architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe", "hidden_size": 2560,
         "num_hidden_layers": 28, "num_nextn_predict_layers": 1, "vocab_size": 103424, "moe_num_experts": 64}


def test_ernie_head_is_present_not_missing(tmp_path: Path) -> None:
    _, trunk, mtp, _ = REAL_NAMES["ERNIE-4.5"]
    _write(tmp_path / "ernie", ERNIE, trunk + mtp)
    report = mtpinspect.check(str(tmp_path / "ernie"))
    assert "MTP_PRESENT" in report.codes() and "MTP_WEIGHTS_MISSING" not in report.codes()
    assert report.mtp_layers == 1 and report.exit_code == 0
    assert report.runtimes["vllm"].status.value != "unsupported"


def test_unknown_family_is_undetermined_not_missing(tmp_path: Path) -> None:
    # A model_type outside the table whose head hides under names nobody here knows: warning, not error.
    config = {**ERNIE, "model_type": "brand_new_moe", "architectures": ["BrandNewMoeForCausalLM"]}
    _write(tmp_path / "new", config, ["model.layers.0.self_attn.q_proj.weight", "model.draft_head.0.proj.weight"])
    report = mtpinspect.check(str(tmp_path / "new"))
    assert "MTP_WEIGHTS_MISSING" not in report.codes()
    finding = next(f for f in report.findings if f.code == "MTP_UNDETERMINED")
    assert finding.severity.value == "warning"
    assert any("model.mtp_block.{i}.*" in line and "mtp.fc" in line for line in finding.evidence)
    assert report.runtimes["vllm"].status.value == "unknown"


def test_known_family_without_its_names_is_still_missing(tmp_path: Path) -> None:
    _write(tmp_path / "glm", {"model_type": "glm_moe_dsa", "num_hidden_layers": 78, "num_nextn_predict_layers": 1},
           ["model.layers.77.self_attn.o_proj.weight"])
    report = mtpinspect.check(str(tmp_path / "glm"))
    assert "MTP_WEIGHTS_MISSING" in report.codes()
    assert FAMILY_OF_MODEL_TYPE["glm_moe_dsa"].scheme == "model.layers.{L}"


def test_gemma4_assistant_is_a_drafter_of_its_own(tmp_path: Path) -> None:
    """A gemma4_assistant checkpoint is all head: its layers and pre/post projections are not trunk tensors of
    any target, so names decide nothing; its model_type does (the SEPARATE row)."""
    assert FAMILY_OF_MODEL_TYPE["gemma4_assistant"].scheme == "separate checkpoint"
    names = ["pre_projection.weight", "post_projection.weight", "model.layers.0.self_attn.q_proj.weight"]
    assert find_mtp_tensors(names, 4).names == ()
    _write(tmp_path / "assistant", {"model_type": "gemma4_assistant", "num_hidden_layers": 4}, names)
    report = mtpinspect.check(str(tmp_path / "assistant"))
    assert "SEPARATE_DRAFTER" in report.codes() and report.mtp_layers == 4
