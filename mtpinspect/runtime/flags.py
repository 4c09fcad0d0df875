"""llama-server's speculative-decoding flags as the pinned llama.cpp spells them (common/arg.cpp), for
the code that builds or reads llama-server command lines."""

from __future__ import annotations

from collections.abc import Sequence

# Accepted --spec-type values (common/speculative.cpp); `mtp` is not one of them.
SPEC_TYPES = frozenset({
    "none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark",
    "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
})
# The spellings of the draft-model flag; given a draft GGUF without --spec-type, llama-server infers it.
DRAFT_MODEL_FLAGS = ("-md", "--spec-draft-model", "--model-draft")

# Spellings of the flags that MTP crash workarounds change (common/arg.cpp of the pinned commit).
THREADS_FLAGS = ("-t", "--threads")
BATCH_FLAGS = ("-b", "--batch-size", "-ub", "--ubatch-size")
SPLIT_MODE_FLAGS = ("-sm", "--split-mode")
FLASH_ATTN_FLAGS = ("-fa", "--flash-attn")
NO_REPACK_FLAGS = ("-nr", "--no-repack")
GPU_LAYERS_FLAGS = ("-ngl", "--gpu-layers", "--n-gpu-layers")
DRAFT_GPU_LAYERS_FLAGS = ("-ngld", "--spec-draft-ngl", "--gpu-layers-draft", "--n-gpu-layers-draft")
DRAFT_CACHE_TYPE_FLAGS = (
    "-ctkd", "--spec-draft-type-k", "--cache-type-k-draft", "-ctvd", "--spec-draft-type-v", "--cache-type-v-draft",
)
OVERRIDE_TENSOR_FLAGS = ("-ot", "--override-tensor")
N_MAX_FLAGS = ("--spec-draft-n-max",)


def _matches(arg: str, names: Sequence[str]) -> bool:
    return arg in names or any(arg.startswith(name + "=") for name in names)


def has_flag(args: Sequence[str], names: Sequence[str]) -> bool:
    """Whether any spelling in ``names`` is given, as `-x V` or `-x=V`."""
    return any(_matches(arg, names) for arg in args)


def flag_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of the last occurrence of a flag (llama-server keeps the last), or None."""
    value = None
    for index, arg in enumerate(args):
        if _matches(arg, names):
            if "=" in arg and arg.split("=", 1)[0] in names:
                value = arg.split("=", 1)[1]
            elif index + 1 < len(args):
                value = args[index + 1]
    return value


def without_flags(args: Sequence[str], names: Sequence[str], *, valueless: Sequence[str] = ()) -> list[str]:
    """``args`` with every occurrence of the flags in ``names`` removed, each with its value (flags in
    ``valueless`` take none)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if _matches(arg, names):
            skip = "=" not in arg and arg not in valueless
            continue
        out.append(arg)
    return out
