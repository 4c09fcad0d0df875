"""What Ollama and LM Studio do, as their sources say: every fact mtpinspect prints about the two apps, with
the file, line and version it was read at (``SOURCES``), and the version ranges where behaviour changed.

This module sits below every floor (it imports only the vocabulary): sources/ reads the stores with its
names and paths, inspection/, sweep/ and diagnosis/ speak its settings (mtpinspect/apps.py builds the
sentences). A fact that changes with a new release changes here, with its source.

Checked on 2026-12-01 against ollama/ollama at fb30760 (v0.33.0-rc2) and the tags v0.30.0 to v0.32.15;
lmstudio-ai/lmstudio-js at 6ec11db; lmstudio-ai/lmstudio-bug-tracker threads (LM Studio's app is closed
source: its settings are known from the SDK schema, its behaviour from its bug tracker).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    """Where a fact was read: a file and lines of a repository at a version, or a bug-tracker thread."""

    where: str  # "ollama/ollama llm/llama_server.go:807-824"
    version: str  # "v0.33.0-rc2 (fb30760)"

    def __str__(self) -> str:
        return f"{self.where} at {self.version}"


OLLAMA_HEAD = "v0.33.0-rc2 (fb30760)"
LMSTUDIO_JS_HEAD = "lmstudio-js 6ec11db (2026-08-21)"
CHECKED_ON = "2026-12-01"

# -- Ollama ------------------------------------------------------------------------------------------

# GGUF models run on llama.cpp's llama-server from this release (commit 9db4bdb; earlier releases ran
# them on Ollama's own runner, without MTP).
OLLAMA_LLAMA_SERVER_FROM = "0.30.0"
# A DRAFT layer whose GGUF is a DFlash drafter runs as draft-dflash from this release (commit 43f4eda);
# earlier releases start every DRAFT layer as draft-mtp.
OLLAMA_DFLASH_FROM = "0.32.7"
# The llama.cpp build each Ollama release vendors (its LLAMA_CPP_VERSION file), from the release that
# changed it; a release not listed runs the build of the nearest release above it in this list.
OLLAMA_LLAMA_CPP_BUILDS = (
    ("0.30.0", "b9452"), ("0.30.1", "b9479"), ("0.30.4", "b9493"), ("0.30.5", "b9509"), ("0.30.9", "b9626"),
    ("0.30.10", "b9672"), ("0.30.11", "b9781"), ("0.31.0", "b9840"), ("0.31.2", "b9888"), ("0.32.2", "b10069"),
    ("0.32.3", "b10091"), ("0.32.6", "b10242"), ("0.32.8", "b10353"), ("0.32.10", "b10380"), ("0.32.14", "b10434"),
    ("0.32.15", "b10488"),
)
# The newest release the table was read at (0.33.0-rc2 still vendors b10488).
OLLAMA_BUILDS_CHECKED_TO = "0.33.0-rc2"

# Modelfile parameters (api/types.go Options) that shape the llama-server run.
DRAFT_NUM_PREDICT = "draft_num_predict"
OLLAMA_TEMPERATURE = "temperature"
OLLAMA_NUM_CTX = "num_ctx"
OLLAMA_NUM_BATCH = "num_batch"
# draft_num_predict when a DRAFT layer is present and nothing sets it (api.DefaultOptions).
OLLAMA_DRAFTER_DEFAULT_N_MAX = 4
# Temperature when neither the Modelfile nor the request sets one (api.DefaultOptions).
OLLAMA_DEFAULT_TEMPERATURE = 0.8
# -c when num_ctx is unset and OLLAMA_CONTEXT_LENGTH too: by total VRAM, 47 GiB+ / 23 GiB+ / less.
OLLAMA_DEFAULT_NUM_CTX_BY_VRAM = ((47, 262144), (23, 32768), (0, 4096))
# -b and -ub when num_batch is unset, for a context of 4096 or less (the scheduler's generation batch).
OLLAMA_DEFAULT_NUM_BATCH = 512
# Architectures the scheduler loads with one slot whatever OLLAMA_NUM_PARALLEL says.
OLLAMA_SINGLE_SLOT_FAMILIES = frozenset({"mllama", "qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe", "qwen3next",
                                         "lfm2", "lfm2moe", "nemotron_h", "nemotron_h_moe", "nemotron_h_omni"})
# The llama-server speculative types Ollama passes, and the flag it adds to draft-mtp.
OLLAMA_DRAFT_MTP = "draft-mtp"
OLLAMA_DRAFT_DFLASH = "draft-dflash"
OLLAMA_DFLASH_ARCH = "dflash"  # general.architecture of a DFlash drafter GGUF
OLLAMA_BACKEND_SAMPLING_FLAG = "--spec-draft-backend-sampling"
# Legacy heads: these architectures draft when the GGUF has mtp.* tensors, without nextn_predict_layers.
OLLAMA_LEGACY_MTP_ARCHS = frozenset({"qwen35", "qwen35moe"})

# Environment variables the server reads.
OLLAMA_MODELS_ENV = "OLLAMA_MODELS"
OLLAMA_HOST_ENV = "OLLAMA_HOST"
OLLAMA_CONTEXT_LENGTH_ENV = "OLLAMA_CONTEXT_LENGTH"
OLLAMA_NUM_PARALLEL_ENV = "OLLAMA_NUM_PARALLEL"
OLLAMA_KV_CACHE_TYPE_ENV = "OLLAMA_KV_CACHE_TYPE"
OLLAMA_FLASH_ATTENTION_ENV = "OLLAMA_FLASH_ATTENTION"
OLLAMA_DEFAULT_HOST = "127.0.0.1"
OLLAMA_DEFAULT_PORT = 11434
OLLAMA_VERSION_PATH = "/api/version"

# Where the store is: $OLLAMA_MODELS, else ~/.ollama/models; the Linux installer's service (user ollama,
# home /usr/share/ollama) keeps it here.
OLLAMA_USER_STORE = Path(".ollama") / "models"  # under the home folder
OLLAMA_SERVICE_STORE = Path("/usr/share/ollama/.ollama/models")

# Manifest layer media types (manifest/layer.go, server/images.go).
OLLAMA_MODEL_MEDIA = "application/vnd.ollama.image.model"
OLLAMA_DRAFT_MEDIA = "application/vnd.ollama.image.draft"
OLLAMA_PARAMS_MEDIA = "application/vnd.ollama.image.params"
OLLAMA_PROJECTOR_MEDIA = "application/vnd.ollama.image.projector"
OLLAMA_ADAPTER_MEDIA = "application/vnd.ollama.image.adapter"
# MLX-engine (safetensors) models: one layer per tensor (or a packed group), named by the tensor, each a
# safetensors blob; config.json and the rest as JSON layers named by their file.
OLLAMA_TENSOR_MEDIA = "application/vnd.ollama.image.tensor"
OLLAMA_JSON_MEDIA = "application/vnd.ollama.image.json"
# The tensor prefix of a separate drafter stored in an MLX model's manifest (x/mlxrunner/model/root.go).
OLLAMA_MLX_DRAFT_PREFIX = "draft."
MLX_DRAFT_CONFIG = "draft/config.json"

# -- LM Studio ---------------------------------------------------------------------------------------

LM_STUDIO_MIN_VERSION = "0.4.14"
LM_STUDIO_MIN_ENGINE = "2.15.0"  # its llama.cpp engine ("runtime") that brought MTP
# Setting names (lmstudio-js packages/lms-kv-config/src/schema.ts), since 2026-06-09 (5be2b5b8); the
# names before it (e6ea9417, 2026-05-19) are ignored by the current schema.
LM_STUDIO_SWITCH = "Draft MTP"
LM_STUDIO_MAX = "Max Draft Tokens"
LM_STUDIO_MIN = "Min Draft Tokens"
LM_STUDIO_CUTOFF = "Drafting Probability Cutoff"
LM_STUDIO_FORMER_NAMES = ("MTP Speculative Decoding", "MTP Max Draft Tokens", "MTP Min Draft Tokens")
LM_STUDIO_RENAMED_ON = "2026-06-09"
# The load-config keys the SDK sets (llm.load.llama.speculativeDecoding.*).
LM_STUDIO_CONFIG_PREFIX = "llm.load.llama.speculativeDecoding"
# Where LM Studio lives (lmstudio-js findLMStudioHome.ts): the path in ~/.lmstudio-home-pointer, else
# ~/.cache/lm-studio when it exists, else ~/.lmstudio; models: settings.json's downloadsFolder, else
# <home>/models, laid out <publisher>/<repo>/*.gguf.
LM_STUDIO_HOME_POINTER = ".lmstudio-home-pointer"
LM_STUDIO_LEGACY_HOME = Path(".cache") / "lm-studio"
LM_STUDIO_HOME = Path(".lmstudio")
LM_STUDIO_SETTINGS = "settings.json"
LM_STUDIO_DOWNLOADS_KEY = "downloadsFolder"
# Its llama.cpp engines: extensions/backends/llama.cpp-<platform>-<variant>-<version>/.
LM_STUDIO_ENGINES = Path("extensions") / "backends"
LM_STUDIO_ENGINE_PREFIX = "llama.cpp-"
# Bug-tracker threads behind the behaviour the tool states.
LM_STUDIO_SIDECAR_THREAD = "lmstudio-ai/lmstudio-bug-tracker#2244"
LM_STUDIO_ASSISTANT_THREADS = ("lmstudio-ai/lmstudio-bug-tracker#2229", "lmstudio-ai/lmstudio-bug-tracker#2150",
                               "lmstudio-ai/lmstudio-bug-tracker#2044")

_OLLAMA = "ollama/ollama "
_TRACKER = "lmstudio-ai/lmstudio-bug-tracker"
SOURCES: dict[str, Source] = {
    "OLLAMA_LLAMA_SERVER_FROM": Source(_OLLAMA + "llm/llama_server.go (commit 9db4bdb, 2026-05-29)", "v0.30.0"),
    "OLLAMA_DFLASH_FROM": Source(_OLLAMA + "llm/llama_server.go:802-835 (commit 43f4eda)", "v0.32.7"),
    "OLLAMA_LLAMA_CPP_BUILDS": Source(_OLLAMA + "LLAMA_CPP_VERSION", "each tag v0.30.0 to v0.33.0-rc2"),
    "OLLAMA_BUILDS_CHECKED_TO": Source(_OLLAMA + "LLAMA_CPP_VERSION", OLLAMA_HEAD),
    "DRAFT_NUM_PREDICT": Source(_OLLAMA + "api/types.go:595; server/routes.go:136-156", OLLAMA_HEAD),
    "OLLAMA_TEMPERATURE": Source(_OLLAMA + "api/types.go Options", OLLAMA_HEAD),
    "OLLAMA_NUM_CTX": Source(_OLLAMA + "llm/llama_server.go:375 (-c num_ctx x slots)", OLLAMA_HEAD),
    "OLLAMA_NUM_BATCH": Source(_OLLAMA + "llm/llama_server.go:581-595", OLLAMA_HEAD),
    "OLLAMA_DRAFTER_DEFAULT_N_MAX": Source(_OLLAMA + "api/types.go:1119", OLLAMA_HEAD),
    "OLLAMA_DEFAULT_TEMPERATURE": Source(_OLLAMA + "api/types.go:1103", OLLAMA_HEAD),
    "OLLAMA_DEFAULT_NUM_CTX_BY_VRAM": Source(_OLLAMA + "server/routes.go:2049-2057; api/types.go:1115", OLLAMA_HEAD),
    "OLLAMA_DEFAULT_NUM_BATCH": Source(_OLLAMA + "server/sched.go:798, 859-868", OLLAMA_HEAD),
    "OLLAMA_SINGLE_SLOT_FAMILIES": Source(_OLLAMA + "server/sched.go:497-510", OLLAMA_HEAD),
    "OLLAMA_DRAFT_MTP": Source(_OLLAMA + "llm/llama_server.go:802-835, 901-913", OLLAMA_HEAD),
    "OLLAMA_DRAFT_DFLASH": Source(_OLLAMA + "llm/llama_server.go:802-835", OLLAMA_HEAD),
    "OLLAMA_DFLASH_ARCH": Source(_OLLAMA + "llm/llama_server.go:826-835 (externalDraftType)", OLLAMA_HEAD),
    "OLLAMA_BACKEND_SAMPLING_FLAG": Source(_OLLAMA + "llm/llama_server.go:817-819", OLLAMA_HEAD),
    "OLLAMA_LEGACY_MTP_ARCHS": Source(_OLLAMA + "llm/llama_server.go:837-851 (hasMTPDraft)", OLLAMA_HEAD),
    "OLLAMA_MODELS_ENV": Source(_OLLAMA + "docs/faq.mdx; envconfig/config.go", OLLAMA_HEAD),
    "OLLAMA_HOST_ENV": Source(_OLLAMA + "envconfig/config.go:21-23", OLLAMA_HEAD),
    "OLLAMA_CONTEXT_LENGTH_ENV": Source(_OLLAMA + "envconfig/config.go:230", OLLAMA_HEAD),
    "OLLAMA_NUM_PARALLEL_ENV": Source(_OLLAMA + "envconfig/config.go:275 (default 1)", OLLAMA_HEAD),
    "OLLAMA_KV_CACHE_TYPE_ENV": Source(_OLLAMA + "envconfig/config.go:222; llm/server.go:118; llm/llama_server.go:393-396",
                                       OLLAMA_HEAD),
    "OLLAMA_FLASH_ATTENTION_ENV": Source(_OLLAMA + "envconfig/config.go:216; llm/llama_server.go:597-625", OLLAMA_HEAD),
    "OLLAMA_DEFAULT_HOST": Source(_OLLAMA + "envconfig/config.go:21-23", OLLAMA_HEAD),
    "OLLAMA_DEFAULT_PORT": Source(_OLLAMA + "envconfig/config.go:21-23", OLLAMA_HEAD),
    "OLLAMA_VERSION_PATH": Source(_OLLAMA + "server/routes.go:1880", OLLAMA_HEAD),
    "OLLAMA_USER_STORE": Source(_OLLAMA + "docs/faq.mdx:230-241", OLLAMA_HEAD),
    "OLLAMA_SERVICE_STORE": Source(_OLLAMA + "docs/faq.mdx:236; scripts/install.sh", OLLAMA_HEAD),
    "OLLAMA_MODEL_MEDIA": Source(_OLLAMA + "server/images.go:717-732", OLLAMA_HEAD),
    "OLLAMA_DRAFT_MEDIA": Source(_OLLAMA + "manifest/layer.go:23; server/images.go:731", OLLAMA_HEAD),
    "OLLAMA_PARAMS_MEDIA": Source(_OLLAMA + "server/images.go", OLLAMA_HEAD),
    "OLLAMA_PROJECTOR_MEDIA": Source(_OLLAMA + "server/images.go:739", OLLAMA_HEAD),
    "OLLAMA_ADAPTER_MEDIA": Source(_OLLAMA + "server/images.go:737", OLLAMA_HEAD),
    "OLLAMA_TENSOR_MEDIA": Source(_OLLAMA + "manifest/layer.go:13-22; x/server/show.go:228-300", OLLAMA_HEAD),
    "OLLAMA_JSON_MEDIA": Source(_OLLAMA + "x/imagegen/manifest/manifest.go:125-132", OLLAMA_HEAD),
    "OLLAMA_MLX_DRAFT_PREFIX": Source(_OLLAMA + "x/mlxrunner/model/root.go:92-98; x/mlxrunner/runner.go:78-117", OLLAMA_HEAD),
    "MLX_DRAFT_CONFIG": Source(_OLLAMA + "x/mlxrunner/model/root.go:92-98", OLLAMA_HEAD),
    "LM_STUDIO_MIN_VERSION": Source(_TRACKER + "#1934 (2026-05-20)", "LM Studio 0.4.14"),
    "LM_STUDIO_MIN_ENGINE": Source(_TRACKER + "#1934; #2283 (engine 2.28.2 failed, 2.29.0 loaded)", "engine 2.15.0"),
    "LM_STUDIO_SWITCH": Source("lmstudio-js packages/lms-kv-config/src/schema.ts:384", LMSTUDIO_JS_HEAD),
    "LM_STUDIO_MAX": Source("lmstudio-js packages/lms-kv-config/src/schema.ts:440 (default 3)", LMSTUDIO_JS_HEAD),
    "LM_STUDIO_MIN": Source("lmstudio-js packages/lms-kv-config/src/schema.ts:451 (default 0)", LMSTUDIO_JS_HEAD),
    "LM_STUDIO_CUTOFF": Source("lmstudio-js packages/lms-kv-config/src/schema.ts:464 (default 0)", LMSTUDIO_JS_HEAD),
    "LM_STUDIO_FORMER_NAMES": Source("lmstudio-js schema.ts (commit e6ea9417)", "2026-05-19 to 2026-06-09"),
    "LM_STUDIO_RENAMED_ON": Source("lmstudio-js schema.ts (commit 5be2b5b8, #602)", "2026-06-09"),
    "LM_STUDIO_CONFIG_PREFIX": Source("lmstudio-js packages/lms-kv-config/src/schema.ts:378", LMSTUDIO_JS_HEAD),
    "LM_STUDIO_HOME_POINTER": Source("lmstudio-js findLMStudioHome.ts:15-33", LMSTUDIO_JS_HEAD),
    "LM_STUDIO_LEGACY_HOME": Source("lmstudio-js findLMStudioHome.ts:15-33", LMSTUDIO_JS_HEAD),
    "LM_STUDIO_HOME": Source("lmstudio-js findLMStudioHome.ts:15-33", LMSTUDIO_JS_HEAD),
    "LM_STUDIO_SETTINGS": Source("LM Studio <home>/settings.json (downloadsFolder)", "LM Studio 0.4"),
    "LM_STUDIO_DOWNLOADS_KEY": Source("LM Studio <home>/settings.json (downloadsFolder)", "LM Studio 0.4"),
    "LM_STUDIO_ENGINES": Source("LM Studio <home>/extensions/backends/llama.cpp-*-<version>/", "LM Studio 0.4"),
    "LM_STUDIO_ENGINE_PREFIX": Source("LM Studio <home>/extensions/backends/llama.cpp-*-<version>/", "LM Studio 0.4"),
    "LM_STUDIO_SIDECAR_THREAD": Source(_TRACKER + "#2244", "LM Studio 0.4.20+1"),
    "LM_STUDIO_ASSISTANT_THREADS": Source(_TRACKER + "#2229 (\"Gemma4Assistant requires ctx_other\"), #2150, #2044",
                                          "LM Studio 0.4.16 to 0.4.20+1"),
}


def version_key(version: str) -> tuple[int, ...]:
    """'0.32.7' -> (0, 32, 7); a suffix (-rc2, +1) is dropped. Digits only: (0,) when none lead."""
    parts = []
    for part in version.lstrip("v").split("-")[0].split("+")[0].split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts) or (0,)


def at_least(version: str, floor: str) -> bool:
    return version_key(version) >= version_key(floor)


def ollama_llama_cpp_build(version: str) -> str | None:
    """The llama.cpp build Ollama ``version`` vendors; None before 0.30.0 or past the releases checked."""
    if not at_least(version, OLLAMA_LLAMA_SERVER_FROM) or version_key(version) > version_key(OLLAMA_BUILDS_CHECKED_TO):
        return None
    return [build for release, build in OLLAMA_LLAMA_CPP_BUILDS if at_least(version, release)][-1]


def ollama_default_num_ctx(vram_gib: float) -> int:
    """Ollama's -c when neither num_ctx nor OLLAMA_CONTEXT_LENGTH is set, for a machine's total VRAM."""
    return next(ctx for floor, ctx in OLLAMA_DEFAULT_NUM_CTX_BY_VRAM if vram_gib >= floor)
