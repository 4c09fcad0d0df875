"""SGLang as an engine for ``sweep --engine sglang --serve`` and ``--endpoint``.

Read from sgl-project/sglang (python/sglang/srt/metrics/collector.py, managers/scheduler_metrics_mixin.py,
0.4.x to 0.5.x): SGLang keeps no speculative counters, only the gauges ``sglang:spec_accept_length``
and (0.5 on) ``sglang:spec_accept_rate`` (``model_name`` label, more with data parallelism), set once
per decode logging interval, and with ``--enable-metrics`` only (appended when the template lacks it).
Its scheduler logs the same figures per interval: ``Decode batch. #running-req: 1, ... accept len:
2.31, accept rate: 0.65, ...`` (accept rate in newer versions). A request's mean length is the mean of
the lines its decoding wrote, else the gauge; its counts are rebuilt from that and its token count
(steps = tokens after the first / mean length).
"""

from __future__ import annotations

import re

from mtpinspect.runtime.engines.spec import EngineSpec, MeanLength
from mtpinspect.vocabulary import Engine

# The same line mtpinspect/logread/formats.py reads from a pasted SGLang log.
_DECODE_LINE = re.compile(r"Decode batch[.,] .*?accept len: (?P<len>[\d.]+)(?:, accept rate: (?P<rate>[\d.]+))?")


def log_reading(text: str) -> MeanLength | None:
    """The mean of the ``accept len`` (and ``accept rate``) figures of the decode lines in ``text``."""
    lengths, rates = [], []
    for match in _DECODE_LINE.finditer(text):
        lengths.append(float(match["len"]))
        if match["rate"] is not None:
            rates.append(float(match["rate"]))
    if not lengths:
        return None
    return MeanLength(sum(lengths) / len(lengths), sum(rates) / len(rates) if rates else None)


def _setting(n: int) -> str:
    # An MTP (NextN) head is run by SGLang's EAGLE worker: n steps of one token, n + 1 tokens verified.
    return f"--speculative-algorithm EAGLE --speculative-num-steps {n} --speculative-eagle-topk 1 --speculative-num-draft-tokens {n + 1}"


SPEC = EngineSpec(
    engine=Engine.sglang,
    versions="SGLang 0.4.x to 0.5.x",
    spec_options=("--speculative-",),
    required=("--enable-metrics",),
    owned_by=("sglang",),
    setting=_setting,
    off="without the --speculative-* options",
    log_reading=log_reading,
)
