"""llama-server as an engine for ``sweep --engine llama.cpp --serve`` and ``--endpoint``.

Flags as the pinned llama.cpp spells them (runtime/flags.py); counters ``llamacpp:spec_decode_*`` from
tools/server/server-context.cpp, which it exposes with ``--metrics`` (appended when the template lacks it).
"""

from __future__ import annotations

from mtpinspect.runtime.engines.spec import EngineSpec
from mtpinspect.runtime.flags import (
    DRAFT_CACHE_TYPE_K,
    DRAFT_CACHE_TYPE_V,
    DRAFT_GPU_LAYERS,
    DRAFT_MODEL,
    METRICS,
    MTP_SPEC_TYPE,
    N_MAX,
    P_MIN,
    SPEC_TYPE,
    SYNTH_LEN,
    SYNTH_RATES,
)
from mtpinspect.vocabulary import Engine

_SPEC_FLAGS = (SPEC_TYPE, N_MAX, DRAFT_MODEL, P_MIN, SYNTH_RATES, SYNTH_LEN, DRAFT_GPU_LAYERS, DRAFT_CACHE_TYPE_K,
               DRAFT_CACHE_TYPE_V)


def _setting(n: int) -> str:
    return " ".join([*SPEC_TYPE.spelled(MTP_SPEC_TYPE), *N_MAX.spelled(n)])


SPEC = EngineSpec(
    engine=Engine.llama_cpp,
    versions="the pinned llama.cpp (runtime/pin.py)",
    # A draft GGUF alone switches MTP on (llama-server infers the type), so -md goes too; "--spec-" covers the rest.
    spec_options=(*(s for flag in _SPEC_FLAGS for s in flag.spellings), "--spec-"),
    required=tuple(METRICS.spelled()),
    owned_by=("llamacpp",),
    setting=_setting,
    off="without --spec-type and -md",
    draft_lines=True,
)
