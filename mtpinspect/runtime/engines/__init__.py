"""The engines a sweep can drive or attach to: one module each, one :class:`EngineSpec` each.

    >>> from mtpinspect.runtime.engines import spec_of
    >>> spec_of(Engine.vllm).setting(3)
"""

from __future__ import annotations

from mtpinspect.runtime.engines import llamacpp, sglang, vllm
from mtpinspect.runtime.engines.spec import EngineSpec
from mtpinspect.vocabulary import Engine

SPECS: dict[Engine, EngineSpec] = {spec.engine: spec for spec in (llamacpp.SPEC, vllm.SPEC, sglang.SPEC)}
# As --engine spells them.
ENGINE_NAMES = tuple(engine.value for engine in SPECS)


def spec_of(engine: Engine) -> EngineSpec:
    return SPECS[engine]
