"""vLLM as an engine for ``sweep --engine vllm --serve`` and ``--endpoint``.

Read from vllm-project/vllm: the V1 engine (0.8 and later, vllm/v1/metrics/loggers.py and
vllm/v1/spec_decode/metrics.py) exposes the counters ``vllm:spec_decode_num_drafts``,
``vllm:spec_decode_num_draft_tokens``, ``vllm:spec_decode_num_accepted_tokens`` and, labelled by
``position``, ``vllm:spec_decode_num_accepted_tokens_per_pos`` (each with ``model_name`` and
``engine`` labels, ``_total`` on the page); the V0 engine (0.7 and earlier) had no ``num_drafts``
counter, so a draft count is then the draft tokens over the draft length. Both are read
(runtime/metrics.py). Speculative decoding is switched on by ``--speculative-config JSON`` (0.8 on) or
``--speculative-model`` / ``--num-speculative-tokens`` (older).
"""

from __future__ import annotations

import json

from mtpinspect.runtime.engines.spec import EngineSpec
from mtpinspect.vocabulary import Engine


def _setting(n: int) -> str:
    return "--speculative-config '" + json.dumps({"method": "mtp", "num_speculative_tokens": n}) + "'"


SPEC = EngineSpec(
    engine=Engine.vllm,
    versions="vLLM 0.7 (V0 counters) to 0.11 (V1 counters with per-position)",
    spec_options=("--speculative-", "--speculative_config", "--num-speculative-tokens"),
    required=(),  # /metrics is always on
    owned_by=("vllm",),
    setting=_setting,
    off="without --speculative-config",
)
