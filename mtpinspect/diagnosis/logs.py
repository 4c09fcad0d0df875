"""Reading the logs of a run made elsewhere: llama-server stderr, vLLM log lines, saved /metrics pages.

Each file becomes one :class:`LogEvidence`: the draft figures it holds (accepted, drafted, mean
length, per position), whether MTP was in use, why a start failed, and the settings it shows. The
kind of file is recognised from its content, not its name:

- a Prometheus text page (``llamacpp:``, ``vllm:`` or ``sglang:`` samples) is a saved ``/metrics``;
- ``SpecDecoding metrics:`` lines or vLLM's engine banner make a vLLM log, whose per-interval lines
  ``Accepted: N tokens, Drafted: M tokens, Per-position acceptance rate: ..., Avg Draft acceptance
  rate: P%`` are summed;
- anything else is read as llama-server stderr (draft acceptance lines, ``model has unused tensor``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.errors import FormatError
from mtpinspect.files import read_bounded
from mtpinspect.jsonable import json_field
from mtpinspect.runtime.logs import failure_reason, parse_draft_lines, unused_nextn_tensors
from mtpinspect.runtime.metrics import parse_metrics

MAX_LOG_BYTES = 256 << 20

_METRIC_LINE = re.compile(r"^(?:llamacpp|vllm|sglang):\w+(?:\{[^}]*\})?\s+\S+", re.MULTILINE)
_VLLM_SPEC = re.compile(
    r"SpecDecoding metrics:.*?Accepted: (\d+) tokens, Drafted: (\d+) tokens"
    r"(?:, Per-position acceptance rate: ([\d.,\s]+?))?(?:, Avg Draft acceptance rate: ([\d.]+)%)?\s*$"
)
_VLLM_MEAN_LEN = re.compile(r"Mean acceptance length: ([\d.]+)")
_VLLM_BANNER = re.compile(r"Initializing a V\d LLM engine|vllm\.|\[(?:core|metrics|loggers)\.py:\d+\]")
_VLLM_QUANT = re.compile(r"\bquantization=([\w-]+)")
_VLLM_MODEL = re.compile(r"\bmodel='([^']+)'")
_VLLM_SPEC_TOKENS = re.compile(r"num_spec(?:ulative)?_tokens['\"]?[=:]\s*(\d+)")
_VLLM_MISSING = re.compile(r"MTP speculative decoding layer \d+ weights missing from checkpoint.*")
_LLAMA_ARCH = re.compile(r"(?:print_info: arch\s*=\s*|general\.architecture\s+str\s*=\s*)(\S+)")
_LLAMA_CTX = re.compile(r"n_ctx_slot\s*=\s*(\d+)")
_LLAMA_STOP = re.compile(r"stop processing: n_tokens = (\d+), truncated = (\d)")
_LLAMA_MTP_ON = re.compile(r"creating MTP draft context|loading draft model '([^']*)'")
# Markers of a start that failed or a crash; failure_reason picks the telling line only when one is there.
_LLAMA_FAILED = re.compile(
    r"exiting due to|GGML_ASSERT|error while handling argument|failed to load model|failed to create MTP context|"
    r"terminate called|GGML_ABORT|Segmentation fault|error: invalid argument|the argument has been removed"
)


# Lines that say why MTP failed, whatever runtime printed them (llama.cpp's common/arg.cpp and
# common/speculative.cpp, vLLM's MTP weight loader).
MTP_FAILURE_MARKERS = re.compile(
    r"unknown speculative type|doesn't contain MTP layers|failed to create MTP context|MTP input row width|"
    r"failed to add token|MTP block missing nextn|missing tensor '[^']*nextn|weights missing from checkpoint|"
    r"NextN graph not implemented|error while handling argument"
)


@dataclass
class LogEvidence:
    """What one log file says about a run (in JSON, the figures and the failure; the rest feeds the rules)."""

    path: str
    kind: str  # "llama-server", "vllm", "metrics"
    runtime: str  # "llama.cpp", "vllm", "sglang", "unknown"
    drafted: int | None = None
    accepted: int | None = None
    drafts: int | None = json_field(omit=True, default=None)  # verification steps, where the source counts them
    acceptance: float | None = None
    mean_length: float | None = None
    per_position: tuple[float, ...] = ()
    draft_lines: list[str] = json_field(omit=True, default_factory=list)  # the lines the figures come from (evidence)
    unused_nextn: list[str] = json_field(omit=True, default_factory=list)
    mtp_context: str | None = json_field(omit=True, default=None)  # the line that shows MTP was set up, if any
    failure: str | None = None
    architecture: str | None = json_field(omit=True, default=None)
    n_ctx: int | None = json_field(omit=True, default=None)
    max_tokens: int | None = json_field(omit=True, default=None)  # the most tokens a slot held when a request finished
    truncated: bool = json_field(omit=True, default=False)
    quantization: str | None = json_field(omit=True, default=None)  # vLLM engine banner: None, "fp8", "compressed-tensors", ...
    model_name: str | None = json_field(omit=True, default=None)
    spec_tokens: int | None = json_field(omit=True, default=None)
    # Lines that name a known MTP failure (sidecar width, missing layers, unknown type...), in log order.
    telling: list[str] = json_field(omit=True, default_factory=list)

    @property
    def drafted_anything(self) -> bool:
        return bool(self.drafted)


def read_log(path: str | Path) -> LogEvidence:
    """Parse one log or metrics file; SourceError if it cannot be read, FormatError if it holds nothing usable."""
    file = Path(path).expanduser()
    text = read_bounded(file, MAX_LOG_BYTES, "log file", "pass the part around the run").decode("utf-8", errors="replace")
    if not text.strip():
        raise FormatError(f"{file}: empty log")
    evidence = _parse(str(file), text)
    evidence.telling = [line.strip() for line in text.splitlines() if MTP_FAILURE_MARKERS.search(line)][:4]
    return evidence


def _parse(file: str, text: str) -> LogEvidence:
    if _METRIC_LINE.search(text) and not _VLLM_SPEC.search(text):
        return _metrics(file, text)
    if _VLLM_SPEC.search(text) or _VLLM_BANNER.search(text):
        return _vllm(file, text)
    return _llama_server(file, text)


def _metrics(path: str, text: str) -> LogEvidence:
    # Comments and blank lines aside, a saved page must be all samples: a log that quotes one is not a page.
    try:
        metrics = parse_metrics(text)
    except FormatError as exc:
        raise FormatError(f"{path}: looks like a /metrics page but {exc}") from None
    runtime = {"llamacpp": "llama.cpp"}.get(metrics.source, metrics.source)
    lines = [f"{k} {v:g}" for k, v in metrics.raw.items() if "spec" in k][:8]
    counters = metrics.has_spec_counters
    return LogEvidence(
        path=path,
        kind="metrics",
        runtime=runtime,
        drafted=int(metrics.draft_tokens) if counters else None,
        accepted=int(metrics.accepted_tokens) if counters else None,
        drafts=int(metrics.drafts) if counters else None,
        acceptance=metrics.acceptance,
        mean_length=metrics.mean_length,
        per_position=metrics.per_position_rates(),
        draft_lines=lines,
    )


def _vllm(path: str, text: str) -> LogEvidence:
    evidence = LogEvidence(path=path, kind="vllm", runtime="vllm")
    accepted = drafted = 0
    weighted: list[float] = []
    for line in text.splitlines():
        match = _VLLM_SPEC.search(line)
        if match is None:
            continue
        n_accepted, n_drafted = int(match.group(1)), int(match.group(2))
        accepted, drafted = accepted + n_accepted, drafted + n_drafted
        rates = [float(x) for x in (match.group(3) or "").replace(" ", "").split(",") if x]
        # Per-position rates are per interval: weigh them by the interval's drafted tokens.
        if rates:
            weighted = [w + r * n_drafted for w, r in zip(weighted, rates)] if weighted else [r * n_drafted for r in rates]
        evidence.draft_lines.append(line.strip())
    if evidence.draft_lines:
        evidence.accepted, evidence.drafted = accepted, drafted
        evidence.acceptance = accepted / drafted if drafted else None
        evidence.per_position = tuple(w / drafted for w in weighted) if drafted else ()
        lengths = [float(m.group(1)) for m in _VLLM_MEAN_LEN.finditer(text)]
        evidence.mean_length = lengths[-1] if lengths else None
    quant = _VLLM_QUANT.search(text)
    evidence.quantization = None if quant is None or quant.group(1) == "None" else quant.group(1)
    model = _VLLM_MODEL.search(text)
    evidence.model_name = model.group(1) if model else None
    tokens = _VLLM_SPEC_TOKENS.search(text)
    evidence.spec_tokens = int(tokens.group(1)) if tokens else None
    missing = _VLLM_MISSING.search(text)
    evidence.failure = missing.group(0).strip() if missing else None
    return evidence


def _llama_server(path: str, text: str) -> LogEvidence:
    evidence = LogEvidence(path=path, kind="llama-server", runtime="llama.cpp")
    stats = parse_draft_lines(text)
    if stats:
        evidence.accepted = sum(s.accepted for s in stats)
        evidence.drafted = sum(s.generated for s in stats)
        evidence.acceptance = evidence.accepted / evidence.drafted if evidence.drafted else None
        evidence.draft_lines = [s.raw_line for s in stats]
        lengths = [s.mean_length for s in stats if s.mean_length is not None]
        evidence.mean_length = sum(lengths) / len(lengths) if lengths else None
        positions = [s.per_position for s in stats if s.per_position]
        if positions:
            depth = min(len(p) for p in positions)
            evidence.per_position = tuple(sum(p[i] for p in positions) / len(positions) for i in range(depth))
    evidence.unused_nextn = unused_nextn_tensors(text)
    mtp = _LLAMA_MTP_ON.search(text)
    evidence.mtp_context = mtp.group(0) if mtp else None
    if _LLAMA_FAILED.search(text):
        evidence.failure = failure_reason(text)
    arch = _LLAMA_ARCH.search(text)
    evidence.architecture = arch.group(1) if arch else None
    ctx = _LLAMA_CTX.search(text)
    evidence.n_ctx = int(ctx.group(1)) if ctx else None
    stops = [(int(n), t == "1") for n, t in _LLAMA_STOP.findall(text)]
    if stops:
        evidence.max_tokens = max(n for n, _ in stops)
        evidence.truncated = any(t for _, t in stops)
    recognised = stats or evidence.unused_nextn or evidence.failure or evidence.n_ctx or evidence.architecture
    if not recognised and "llama" not in text:
        raise FormatError(
            f"{path}: not a llama-server log, a vLLM log or a /metrics page (no line this tool recognises)"
        )
    return evidence
