"""Each engine's own reading of an exclusion list, after its own fusing of modules.

vLLM checks a fused module (qkv_proj, gate_up_proj) through its shards for every format it loads; SGLang's
compressed-tensors loader matches the fused name itself for MTP draft classes (formats/quantization.py
ENGINE_READINGS cites both). A list that names the MTP block's unfused q/k/v_proj and gate/up_proj therefore
keeps the head in BF16 under vLLM and leaves SGLang with quantized modules holding BF16 weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from casekit import safetensors_header

import mtpinspect
from mtpinspect.formats.quantization import ENGINE_READINGS, engine_match, engine_reading, find_quantization

MTP = "mtp.layers.0"
SHARDS = [f"{MTP}.self_attn.q_proj", f"{MTP}.self_attn.k_proj", f"{MTP}.self_attn.v_proj",
          f"{MTP}.mlp.gate_proj", f"{MTP}.mlp.up_proj"]
# Each dialect's list naming the MTP block's unfused shards, as that dialect spells a list.
LISTS = {
    "compressed-tensors": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                           "config_groups": {"group_0": {"targets": ["Linear"]}}, "ignore": ["lm_head", *SHARDS]},
    "fp8": {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": SHARDS},
    "modelopt": {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": SHARDS},
    "quark": {"quant_method": "quark", "exclude": SHARDS},
    "awq": {"quant_method": "awq", "bits": 4, "modules_to_not_convert": SHARDS},
    "gptq": {"quant_method": "gptq", "bits": 4, "dynamic": {f"-:{s.replace('.', '[.]')}$": {} for s in SHARDS}},
    "bitsandbytes": {"quant_method": "bitsandbytes", "load_in_4bit": True, "llm_int8_skip_modules": SHARDS},
    "mxfp4": {"quant_method": "mxfp4", "modules_to_not_convert": SHARDS},
}
# (vLLM keeps the shards, SGLang keeps them): read from each engine's code (ENGINE_READINGS), or, where no
# engine code was read for the pair, the shard-aware reading.
ANSWERS = {"compressed-tensors": (True, False), "fp8": (True, True), "awq": (False, False), "gptq": (False, False)}


@pytest.mark.parametrize("dialect", sorted(LISTS))
def test_fused_name_case_both_engines(dialect: str) -> None:
    q = find_quantization({"quantization_config": LISTS[dialect]}, {})
    assert q is not None and q.method == dialect
    vllm, sglang = ANSWERS.get(dialect, (True, True))
    for shard in SHARDS:
        assert (engine_match(q, shard, "vllm") is not None) is vllm, (dialect, shard)
        assert (engine_match(q, shard, "sglang") is not None) is sglang, (dialect, shard)
    # down_proj is never fused: both engines read it as the list does.
    assert engine_match(q, f"{MTP}.mlp.down_proj", "sglang") is None
    for engine in ("vllm", "sglang"):
        assert engine_reading(engine, dialect).verified is (dialect in ENGINE_READINGS[engine])


def test_lists_naming_fused_modules_satisfy_both_engines() -> None:
    fused = {**LISTS["compressed-tensors"], "ignore": ["re:^mtp[.].*"]}
    q = find_quantization({"quantization_config": fused}, {})
    assert all(engine_match(q, s, "sglang") == "re:^mtp[.].*" for s in SHARDS)
    # AWQ's usual spelling, a prefix of the block, is a substring of the fused names too.
    q = find_quantization({"quantization_config": {**LISTS["awq"], "modules_to_not_convert": ["mtp"]}}, {})
    assert all(engine_match(q, s, e) == "mtp" for s in SHARDS for e in ("vllm", "sglang"))
    named = {**LISTS["compressed-tensors"], "ignore": [f"{MTP}.self_attn.qkv_proj", f"{MTP}.mlp.gate_up_proj"]}
    q = find_quantization({"quantization_config": named}, {})
    assert engine_match(q, f"{MTP}.self_attn.k_proj", "sglang") == f"{MTP}.self_attn.qkv_proj"


def _qwen_folder(tmp: Path, quantization_config: dict) -> Path:
    """The real Qwen3.5-27B config with a compressed-tensors quantization_config, a BF16 MTP block (its 15
    real mtp.* tensors, cases/qwen3.5-27b) and a quantized trunk layer."""
    config = json.loads((Path(__file__).parents[1] / "cases" / "qwen3.5-27b" / "config.json").read_text())
    config["quantization_config"] = quantization_config
    case = json.loads((Path(__file__).parents[1] / "cases" / "qwen3.5-27b" / "case.json").read_text())
    mtp = case["files"]["model-00002-of-00002.safetensors"]["safetensors"]["tensors"]
    trunk = [["model.language_model.layers.3.self_attn.q_proj.weight_packed", "U8", [12288, 2560]],
             ["model.language_model.layers.3.self_attn.q_proj.weight_scale", "F8_E4M3", [12288, 320]]]
    tmp.mkdir()
    (tmp / "config.json").write_text(json.dumps(config))
    weight_map = {}
    for shard, tensors in (("model-00001-of-00002.safetensors", trunk), ("model-00002-of-00002.safetensors", mtp)):
        header, _ = safetensors_header({"tensors": tensors})
        (tmp / shard).write_bytes(header)
        weight_map.update({t[0]: shard for t in tensors})
    (tmp / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return tmp


def test_sglang_at_risk_vllm_supported_for_unfused_ignore(tmp_path: Path) -> None:
    # The published Qwen3.8-27B NVFP4 shape: every MTP Linear named in `ignore`, unfused.
    qc = {**LISTS["compressed-tensors"], "ignore": ["lm_head", "mtp.fc", *SHARDS, f"{MTP}.self_attn.o_proj",
                                                      f"{MTP}.mlp.down_proj"]}
    report = mtpinspect.check(str(_qwen_folder(tmp_path / "m", qc)))
    assert report.quantization.mtp_excluded is True
    assert report.runtimes["vllm"].status.value == "supported"
    assert report.runtimes["sglang"].status.value == "at-risk"
    mismatch = next(f for f in report.findings if f.code == "FUSED_NAME_MISMATCH" and f.message.startswith("SGLang"))
    assert f"{MTP}.self_attn.qkv_proj" in mismatch.message and f"{MTP}.mlp.gate_up_proj" in mismatch.message
    assert "vLLM maps fused names back" in mismatch.message and "sgl-project/sglang#35887" in mismatch.message
    assert any("should_ignore_layer" in line for line in mismatch.evidence)


def test_regex_over_the_block_satisfies_sglang(tmp_path: Path) -> None:
    qc = {**LISTS["compressed-tensors"], "ignore": ["lm_head", "re:^mtp[.].*"]}
    report = mtpinspect.check(str(_qwen_folder(tmp_path / "m", qc)))
    assert report.runtimes["sglang"].status.value == "supported"
    assert "FUSED_NAME_MISMATCH" not in report.codes()


def test_undeclared_bf16_head_is_at_risk_per_engine(tmp_path: Path) -> None:
    # compressed-tensors whose ignore names nothing of the head, a head BF16 in its headers: both engines build
    # the MTP Linears quantized and meet BF16 tensors there.
    qc = {**LISTS["compressed-tensors"], "ignore": ["lm_head"]}
    report = mtpinspect.check(str(_qwen_folder(tmp_path / "m", qc)))
    assert report.quantization.mtp_excluded == "undeclared"
    assert "MTP_EXCLUDED" not in report.codes()
    finding = next(f for f in report.findings if f.code == "MTP_UNDECLARED_BF16")
    assert {report.runtimes["vllm"].status.value, report.runtimes["sglang"].status.value} == {"at-risk"}
    assert any(line.startswith("SGLang: ") and "crashes" in line for line in finding.evidence)
    assert any(line.startswith("vLLM: ") and "create_weights" in line for line in finding.evidence)


def test_undeclared_under_modelopt_spares_sglangs_qwen35_loader(tmp_path: Path) -> None:
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["lm_head"]}
    report = mtpinspect.check(str(_qwen_folder(tmp_path / "m", qc)))
    assert report.quantization.mtp_excluded == "undeclared"
    assert report.runtimes["vllm"].status.value == "at-risk"
    assert report.runtimes["sglang"].status.value == "supported"
    finding = next(f for f in report.findings if f.code == "MTP_UNDECLARED_BF16")
    assert any("_mtp_quant_config" in line for line in finding.evidence)


def test_declared_bf16_head_stays_excluded(tmp_path: Path) -> None:
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["lm_head", "mtp*"]}
    report = mtpinspect.check(str(_qwen_folder(tmp_path / "m", qc)))
    assert report.quantization.mtp_excluded is True
    assert "MTP_UNDECLARED_BF16" not in report.codes()
    assert report.runtimes["vllm"].status.value == report.runtimes["sglang"].status.value == "supported"
