"""What each engine can do with an MTP head, per architecture, and the commands that use it.

The llama.cpp facts are those of the pinned llama.cpp (runtime/pin.py): which GGUF architectures have
an MTP draft graph, which keep nextn tensors unused, and what convert_hf_to_gguf.py does with each HF
family's head.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from mtpinspect.runtime.flags import DRAFT_MODEL, HF_FILE, HF_REPO, MODEL, MTP_SPEC_TYPE, N_MAX, SPEC_TYPE
from mtpinspect.runtime.n_max import RULE_OF_THUMB_N_MAX
from mtpinspect.vocabulary import Conversion, GraphSupport

# What llama.cpp requires of every GGUF it loads as a model, a draft model (-md) included: each MTP
# architecture creates these with flags 0 in load_arch_tensors (src/models/*.cpp), so an mtp- sidecar
# without them fails with "check_tensor_dims: tensor '...' not found".
DRAFT_REQUIRED_TENSORS = ("token_embd.weight", "output_norm.weight")

# GGUF architecture -> how many MTP layers its draft graph accepts ("1" or "1+": heads chained).
LLAMA_CPP_MTP_GRAPH: dict[str, str] = {
    "qwen35": "1",
    "qwen35moe": "1",
    "qwen3next": "1",
    "glm4moe": "1",
    "deepseek2": "1",
    "deepseek32": "1",
    "deepseek4": "1",
    "glm-dsa": "1",
    "cohere2moe": "1",
    "bailingmoe3": "1",
    "nemotron_h_moe": "1",
    "hy_v3": "1+",
    "mimo2": "1+",
    "step35": "1+",
    "gemma4-assistant": "1+",
}
# Architectures whose converter keeps nextn tensors although llama.cpp has no graph for them.
LLAMA_CPP_NEXTN_UNUSED = frozenset({"glm4", "exaone4", "exaone-moe", "bailingmoe2", "dots3note"})


@dataclass(frozen=True)
class Family:
    """An HF model family (by model_type): its GGUF architecture and what conversion does to the head."""

    gguf_arch: str | None
    conversion: Conversion
    vllm: bool  # vLLM has an MTP proposer for it
    sglang: str | None  # SGLang speculative algorithm name, None if none
    note: str = ""


FAMILIES: dict[str, Family] = {
    "deepseek_v3": Family("deepseek2", Conversion.dropped, True, "EAGLE", "convert_hf_to_gguf.py drops DeepSeek-V3's MTP layer (skip_mtp)"),
    "deepseek_v32": Family("deepseek32", Conversion.bundled, True, "EAGLE"),
    "deepseek_v4": Family("deepseek4", Conversion.sidecar, True, "EAGLE", "llama.cpp loads DeepSeek-V4 MTP only from a separate --mtp conversion"),
    "deepseek_ref": Family("deepseek4", Conversion.sidecar, True, "EAGLE"),
    "kimi_k2": Family("deepseek2", Conversion.dropped, True, "EAGLE"),
    "kimi_k25": Family("deepseek2", Conversion.dropped, True, "EAGLE"),
    "glm4_moe": Family("glm4moe", Conversion.bundled, True, "EAGLE"),
    "glm4_moe_lite": Family("deepseek2", Conversion.bundled, True, "EAGLE"),
    "glm_moe_dsa": Family("glm-dsa", Conversion.bundled, True, "EAGLE"),
    "qwen3_next": Family("qwen3next", Conversion.bundled, True, "NEXTN"),
    "qwen3_5": Family("qwen35", Conversion.bundled, True, "NEXTN"),
    "qwen3_5_text": Family("qwen35", Conversion.bundled, True, "NEXTN"),
    "qwen3_5_moe": Family("qwen35moe", Conversion.bundled, True, "NEXTN"),
    "qwen3_5_moe_text": Family("qwen35moe", Conversion.bundled, True, "NEXTN"),
    "mimo": Family(None, Conversion.unknown, True, "EAGLE", "MiMo-7B converts to a GGUF architecture without an MTP graph"),
    "mimo_v2_flash": Family("mimo2", Conversion.bundled, True, "EAGLE"),
    "step3p5": Family("step35", Conversion.bundled, True, "EAGLE"),
    "step3p7": Family("step35", Conversion.unknown, True, "EAGLE", "Step-3.7 is newer than the pinned converter; its Step-3.5 text model converts to step35"),
    "nemotron_h": Family("nemotron_h_moe", Conversion.bundled, True, "EAGLE"),
    "hunyuan_v3": Family("hy_v3", Conversion.bundled, True, "EAGLE"),
    "gemma4": Family("gemma4", Conversion.sidecar, False, None, "Gemma 4 drafts with a separate gemma4_assistant checkpoint"),
    "gemma4_assistant": Family("gemma4-assistant", Conversion.bundled, False, None),
    "minimax_m3": Family(None, Conversion.unknown, True, "EAGLE"),
    # vLLM ernie_mtp.py, SGLang ernie4_eagle.py; llama.cpp converts ERNIE-4.5 without its head.
    "ernie4_5": Family(None, Conversion.unknown, True, "EAGLE", "llama.cpp has no MTP graph for ERNIE-4.5"),
    "ernie4_5_moe": Family(None, Conversion.unknown, True, "EAGLE", "llama.cpp has no MTP graph for ERNIE-4.5"),
    # vLLM longcat_flash_mtp.py, SGLang longcat_flash_nextn.py
    "longcat_flash": Family(None, Conversion.unknown, True, "EAGLE", "llama.cpp has no LongCat-Flash conversion with MTP"),
    # vLLM / SGLang exaone_moe_mtp.py; llama.cpp keeps the tensors without a graph (conversion/exaone.py)
    "exaone_moe": Family("exaone-moe", Conversion.bundled, True, "EAGLE"),
    "minimax_m2": Family(None, Conversion.unknown, False, None),
}

# Engine loaders that build an MTP head without the checkpoint's quantization, whatever its list says, by
# (engine, quantization method) -> (model_types, the code): a BF16 head the list does not declare loads there.
UNQUANTIZED_MTP_LOADERS: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    ("sglang", "modelopt"): (frozenset({"qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}),
                             "SGLang qwen3_5_mtp.py @008b79d _mtp_quant_config: serialized ModelOpt NVFP4 / MIXED_PRECISION "
                             "checkpoints build the MTP module unquantized"),
}
# What the engines' loaders do with a module the config quantizes: the quantized Linear's create_weights
# allocates packed or FP8 weights and scales, and the checkpoint's BF16 tensor does not fit them.
UNDECLARED_LOADERS = {
    "vllm": "vLLM builds every Linear the list does not exclude with the config's quant method (quant_config."
            "get_quant_method -> create_weights allocates packed/FP8 weights and scales): a BF16 tensor there fails to "
            "load or loads as garbage",
    "sglang": "SGLang builds it the same way (QuantizationConfig.get_quant_method per prefix); its loader crashes on "
              "such a release",
}

# Orgs that publish the original weights of a family: their own FP8 releases ship the head as they serve it.
MAKERS = {
    "deepseek-ai", "zai-org", "THUDM", "Qwen", "XiaomiMiMo", "stepfun-ai", "moonshotai", "google", "MiniMaxAI",
    "tencent", "inclusionAI", "CohereLabs", "LGAI-EXAONE", "rednote-hilab",
}
# Quantizers that publish with the maker's serving stack in mind and exclude MTP heads by policy.
FIRST_PARTY_QUANTIZERS = {"nvidia", "RedHatAI", "amd"}


@dataclass(frozen=True)
class MakerFp8:
    """A family whose maker publishes its own block-FP8 release and serves the MTP head from it."""

    maker: str
    lists_modules: bool  # its quantization_config carries a modules_to_not_convert list of module names


# HF fine-grained FP8 (quant_method fp8, e4m3, 128x128 blocks) as the makers write it, by model_type. From
# their published configs: DeepSeek-V3/R1/V3.1/V3.2/V4, Kimi-K2 and MiMo-V2-Flash list no modules; GLM-5/5.1/
# 5.2-FP8, Qwen3-FP8 and Qwen3.8-FP8 list theirs by full name (norms, routers, eh_proj, embeddings, and for
# Qwen the MTP attention). GLM-4.5/4.7, Qwen3-Next and Qwen3.5/3.6 are taken to follow their family's way.
MAKER_FP8: dict[str, MakerFp8] = {
    "deepseek_v3": MakerFp8("deepseek-ai", False),
    "deepseek_v32": MakerFp8("deepseek-ai", False),
    "deepseek_v4": MakerFp8("deepseek-ai", False),
    "kimi_k2": MakerFp8("moonshotai", False),
    "mimo_v2_flash": MakerFp8("XiaomiMiMo", False),
    "glm4_moe": MakerFp8("zai-org", True),
    "glm_moe_dsa": MakerFp8("zai-org", True),
    "qwen3_next": MakerFp8("Qwen", True),
    "qwen3_5": MakerFp8("Qwen", True),
    "qwen3_5_text": MakerFp8("Qwen", True),
    "qwen3_5_moe": MakerFp8("Qwen", True),
    "qwen3_5_moe_text": MakerFp8("Qwen", True),
}

LOW_BIT_GGML = frozenset({
    "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "Q2_K", "Q3_K", "TQ1_0", "TQ2_0",
})


def llama_cpp_graph(arch: str | None) -> GraphSupport:
    if arch in LLAMA_CPP_MTP_GRAPH:
        return GraphSupport.graph
    if arch in LLAMA_CPP_NEXTN_UNUSED:
        return GraphSupport.unused
    return GraphSupport.unknown


def llama_server_command(
    model: str, *, program: str, hf: bool = False, hf_file: str | None = None, sidecar: str | None = None,
    n_max: int = RULE_OF_THUMB_N_MAX,
) -> str:
    """`-m FILE`, or `-hf REPO[:QUANT]` (plus `--hf-file` to name the file) for a Hub repo, run by ``program``
    (command_server.server_for_commands: the llama-server mtpinspect itself would run)."""
    parts = [program, *(HF_REPO if hf else MODEL).spelled(model)]
    if hf_file:
        parts += HF_FILE.spelled(hf_file)
    if sidecar:
        parts += DRAFT_MODEL.spelled(sidecar)
    parts += [*SPEC_TYPE.spelled(MTP_SPEC_TYPE), *N_MAX.spelled(n_max)]
    return shlex.join(parts)


def convert_command(model_dir: str, outfile: str) -> str:
    return shlex.join(["python", "convert_hf_to_gguf.py", model_dir, "--outfile", outfile])


def vllm_command(model: str, revision: str | None = None) -> str:
    parts = ["vllm", "serve", model]
    if revision:
        parts += ["--revision", revision]
    parts += ["--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 1}, separators=(",", ":"))]
    return shlex.join(parts)


def sglang_command(model: str, algorithm: str, revision: str | None = None) -> str:
    parts = ["python", "-m", "sglang.launch_server", "--model-path", model]
    if revision:
        parts += ["--revision", revision]
    parts += [
        "--speculative-algorithm", algorithm, "--speculative-num-steps", "1",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "2",
    ]
    return shlex.join(parts)
