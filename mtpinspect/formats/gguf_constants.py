"""GGUF constants for the header reader, generated from gguf-py 0.19.0 by
mtpinspect/formats/gguf_constants_gen.py; do not edit (run `python -m mtpinspect.formats.gguf_constants_gen`).

A plain module, so that reading a GGUF does not import gguf-py and numpy.
"""

from __future__ import annotations

from enum import IntEnum

GGUF_PY_VERSION = "0.19.0"
GGUF_MAGIC = 1179993927
GGUF_VERSION = 3
GGUF_DEFAULT_ALIGNMENT = 32


class GGUFValueType(IntEnum):
    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


class GGMLQuantizationType(IntEnum):
    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    NVFP4 = 40
    Q1_0 = 41


class LlamaFileType(IntEnum):
    ALL_F32 = 0
    MOSTLY_F16 = 1
    MOSTLY_Q4_0 = 2
    MOSTLY_Q4_1 = 3
    MOSTLY_Q8_0 = 7
    MOSTLY_Q5_0 = 8
    MOSTLY_Q5_1 = 9
    MOSTLY_Q2_K = 10
    MOSTLY_Q3_K_S = 11
    MOSTLY_Q3_K_M = 12
    MOSTLY_Q3_K_L = 13
    MOSTLY_Q4_K_S = 14
    MOSTLY_Q4_K_M = 15
    MOSTLY_Q5_K_S = 16
    MOSTLY_Q5_K_M = 17
    MOSTLY_Q6_K = 18
    MOSTLY_IQ2_XXS = 19
    MOSTLY_IQ2_XS = 20
    MOSTLY_Q2_K_S = 21
    MOSTLY_IQ3_XS = 22
    MOSTLY_IQ3_XXS = 23
    MOSTLY_IQ1_S = 24
    MOSTLY_IQ4_NL = 25
    MOSTLY_IQ3_S = 26
    MOSTLY_IQ3_M = 27
    MOSTLY_IQ2_S = 28
    MOSTLY_IQ2_M = 29
    MOSTLY_IQ4_XS = 30
    MOSTLY_IQ1_M = 31
    MOSTLY_BF16 = 32
    MOSTLY_TQ1_0 = 36
    MOSTLY_TQ2_0 = 37
    MOSTLY_MXFP4_MOE = 38
    MOSTLY_NVFP4 = 39
    MOSTLY_Q1_0 = 40
    GUESSED = 1024


# (block size in elements, bytes per block) of each ggml type.
GGML_QUANT_SIZES: dict[GGMLQuantizationType, tuple[int, int]] = {
    GGMLQuantizationType.F32: (1, 4),
    GGMLQuantizationType.F16: (1, 2),
    GGMLQuantizationType.Q4_0: (32, 18),
    GGMLQuantizationType.Q4_1: (32, 20),
    GGMLQuantizationType.Q5_0: (32, 22),
    GGMLQuantizationType.Q5_1: (32, 24),
    GGMLQuantizationType.Q8_0: (32, 34),
    GGMLQuantizationType.Q8_1: (32, 40),
    GGMLQuantizationType.Q2_K: (256, 84),
    GGMLQuantizationType.Q3_K: (256, 110),
    GGMLQuantizationType.Q4_K: (256, 144),
    GGMLQuantizationType.Q5_K: (256, 176),
    GGMLQuantizationType.Q6_K: (256, 210),
    GGMLQuantizationType.Q8_K: (256, 292),
    GGMLQuantizationType.IQ2_XXS: (256, 66),
    GGMLQuantizationType.IQ2_XS: (256, 74),
    GGMLQuantizationType.IQ3_XXS: (256, 98),
    GGMLQuantizationType.IQ1_S: (256, 50),
    GGMLQuantizationType.IQ4_NL: (32, 18),
    GGMLQuantizationType.IQ3_S: (256, 110),
    GGMLQuantizationType.IQ2_S: (256, 82),
    GGMLQuantizationType.IQ4_XS: (256, 136),
    GGMLQuantizationType.I8: (1, 1),
    GGMLQuantizationType.I16: (1, 2),
    GGMLQuantizationType.I32: (1, 4),
    GGMLQuantizationType.I64: (1, 8),
    GGMLQuantizationType.F64: (1, 8),
    GGMLQuantizationType.IQ1_M: (256, 56),
    GGMLQuantizationType.BF16: (1, 2),
    GGMLQuantizationType.TQ1_0: (256, 54),
    GGMLQuantizationType.TQ2_0: (256, 66),
    GGMLQuantizationType.MXFP4: (32, 17),
    GGMLQuantizationType.NVFP4: (64, 36),
    GGMLQuantizationType.Q1_0: (128, 18),
}


class Keys:
    class General:
        TYPE = 'general.type'
        ARCHITECTURE = 'general.architecture'
        QUANTIZATION_VERSION = 'general.quantization_version'
        ALIGNMENT = 'general.alignment'
        FILE_TYPE = 'general.file_type'
        SAMPLING_SEQUENCE = 'general.sampling.sequence'
        SAMPLING_TOP_K = 'general.sampling.top_k'
        SAMPLING_TOP_P = 'general.sampling.top_p'
        SAMPLING_MIN_P = 'general.sampling.min_p'
        SAMPLING_XTC_PROBABILITY = 'general.sampling.xtc_probability'
        SAMPLING_XTC_THRESHOLD = 'general.sampling.xtc_threshold'
        SAMPLING_TEMP = 'general.sampling.temp'
        SAMPLING_PENALTY_LAST_N = 'general.sampling.penalty_last_n'
        SAMPLING_PENALTY_REPEAT = 'general.sampling.penalty_repeat'
        SAMPLING_MIROSTAT = 'general.sampling.mirostat'
        SAMPLING_MIROSTAT_TAU = 'general.sampling.mirostat_tau'
        SAMPLING_MIROSTAT_ETA = 'general.sampling.mirostat_eta'
        NAME = 'general.name'
        AUTHOR = 'general.author'
        VERSION = 'general.version'
        ORGANIZATION = 'general.organization'
        FINETUNE = 'general.finetune'
        BASENAME = 'general.basename'
        DESCRIPTION = 'general.description'
        QUANTIZED_BY = 'general.quantized_by'
        SIZE_LABEL = 'general.size_label'
        LICENSE = 'general.license'
        LICENSE_NAME = 'general.license.name'
        LICENSE_LINK = 'general.license.link'
        URL = 'general.url'
        DOI = 'general.doi'
        UUID = 'general.uuid'
        REPO_URL = 'general.repo_url'
        SOURCE_URL = 'general.source.url'
        SOURCE_DOI = 'general.source.doi'
        SOURCE_UUID = 'general.source.uuid'
        SOURCE_REPO_URL = 'general.source.repo_url'
        BASE_MODEL_COUNT = 'general.base_model.count'
        BASE_MODEL_NAME = 'general.base_model.{id}.name'
        BASE_MODEL_AUTHOR = 'general.base_model.{id}.author'
        BASE_MODEL_VERSION = 'general.base_model.{id}.version'
        BASE_MODEL_ORGANIZATION = 'general.base_model.{id}.organization'
        BASE_MODEL_DESCRIPTION = 'general.base_model.{id}.description'
        BASE_MODEL_URL = 'general.base_model.{id}.url'
        BASE_MODEL_DOI = 'general.base_model.{id}.doi'
        BASE_MODEL_UUID = 'general.base_model.{id}.uuid'
        BASE_MODEL_REPO_URL = 'general.base_model.{id}.repo_url'
        DATASET_COUNT = 'general.dataset.count'
        DATASET_NAME = 'general.dataset.{id}.name'
        DATASET_AUTHOR = 'general.dataset.{id}.author'
        DATASET_VERSION = 'general.dataset.{id}.version'
        DATASET_ORGANIZATION = 'general.dataset.{id}.organization'
        DATASET_DESCRIPTION = 'general.dataset.{id}.description'
        DATASET_URL = 'general.dataset.{id}.url'
        DATASET_DOI = 'general.dataset.{id}.doi'
        DATASET_UUID = 'general.dataset.{id}.uuid'
        DATASET_REPO_URL = 'general.dataset.{id}.repo_url'
        TAGS = 'general.tags'
        LANGUAGES = 'general.languages'

    class Tokenizer:
        MODEL = 'tokenizer.ggml.model'
        PRE = 'tokenizer.ggml.pre'
        LIST = 'tokenizer.ggml.tokens'
        TOKEN_TYPE = 'tokenizer.ggml.token_type'
        TOKEN_TYPE_COUNT = 'tokenizer.ggml.token_type_count'
        SCORES = 'tokenizer.ggml.scores'
        MERGES = 'tokenizer.ggml.merges'
        BOS_ID = 'tokenizer.ggml.bos_token_id'
        EOS_ID = 'tokenizer.ggml.eos_token_id'
        EOT_ID = 'tokenizer.ggml.eot_token_id'
        EOM_ID = 'tokenizer.ggml.eom_token_id'
        UNK_ID = 'tokenizer.ggml.unknown_token_id'
        SEP_ID = 'tokenizer.ggml.seperator_token_id'
        PAD_ID = 'tokenizer.ggml.padding_token_id'
        MASK_ID = 'tokenizer.ggml.mask_token_id'
        ADD_BOS = 'tokenizer.ggml.add_bos_token'
        ADD_EOS = 'tokenizer.ggml.add_eos_token'
        ADD_SEP = 'tokenizer.ggml.add_sep_token'
        ADD_PREFIX = 'tokenizer.ggml.add_space_prefix'
        REMOVE_EXTRA_WS = 'tokenizer.ggml.remove_extra_whitespaces'
        PRECOMPILED_CHARSMAP = 'tokenizer.ggml.precompiled_charsmap'
        HF_JSON = 'tokenizer.huggingface.json'
        RWKV = 'tokenizer.rwkv.world'
        CHAT_TEMPLATE = 'tokenizer.chat_template'
        CHAT_TEMPLATE_N = 'tokenizer.chat_template.{name}'
        CHAT_TEMPLATES = 'tokenizer.chat_templates'
        FIM_PRE_ID = 'tokenizer.ggml.fim_pre_token_id'
        FIM_SUF_ID = 'tokenizer.ggml.fim_suf_token_id'
        FIM_MID_ID = 'tokenizer.ggml.fim_mid_token_id'
        FIM_PAD_ID = 'tokenizer.ggml.fim_pad_token_id'
        FIM_REP_ID = 'tokenizer.ggml.fim_rep_token_id'
        FIM_SEP_ID = 'tokenizer.ggml.fim_sep_token_id'
        PREFIX_ID = 'tokenizer.ggml.prefix_token_id'
        SUFFIX_ID = 'tokenizer.ggml.suffix_token_id'
        MIDDLE_ID = 'tokenizer.ggml.middle_token_id'
