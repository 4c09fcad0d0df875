"""The result of `check`: a verdict, findings with evidence, per-runtime status and commands.

`CheckReport.to_dict()` is the documented JSON schema (mtpinspect/schemas/check.schema.json); the
finding codes are a fixed catalogue (FINDINGS) so scripts can match on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mtpinspect.vocabulary import Layout, MtpExcluded, RuntimeStatus, Severity, SourceKind

SCHEMA_ID = "mtpinspect.check/1"

# code -> (what it means, default severity). README and `check --codes` print this table.
FINDINGS: dict[str, tuple[str, Severity]] = {
    "MTP_PRESENT": ("MTP weights are present: how many layers, and where they were found", Severity.info),
    "NO_MTP": ("The model has no MTP head (the config announces none, or 0, and no MTP tensors exist)", Severity.info),
    "MTP_FROM_TENSORS_ONLY": ("The config names no MTP depth; only the MTP tensors tell (Qwen3-Next)", Severity.info),
    "MTP_WEIGHTS_MISSING": ("The config announces MTP layers but the checkpoint has no (or fewer) MTP weights", Severity.error),
    "MTP_DROPPED_IN_CONVERSION": ("A GGUF of a family that has an MTP head, converted without it", Severity.error),
    "MTP_EXCLUDED": ("The quantization exclusion list keeps every MTP module in high precision", Severity.info),
    "MTP_QUANTIZED": ("The MTP head is quantized (list and header dtypes); judged by who quantized it", Severity.warning),
    "MTP_PARTIALLY_EXCLUDED": ("Some MTP modules are excluded from quantization, others are not (named)", Severity.warning),
    "FUSED_NAME_MISMATCH": ("The exclusion list names unfused modules (q/k/v_proj, gate/up_proj) that engines fuse", Severity.warning),
    "MTP_SIDECAR": ("The MTP head ships as a separate mtp- GGUF that must be passed with -md", Severity.info),
    "SIDECAR_MISMATCH": ("The mtp- sidecar does not pair with the main GGUF (arch, n_embd, vocab, blocks, key)", Severity.error),
    "SIDECAR_NOT_FOUND": ("The main GGUF has no MTP head and no mtp- sidecar was found beside it", Severity.warning),
    "LOW_BIT_MTP_HEAD": ("MTP tensors at a very low-bit ggml type (IQ3_S, Q2_K...): expect low or zero acceptance", Severity.warning),
    "ARCH_NO_MTP_GRAPH": ("The pinned llama.cpp has no MTP draft graph for this architecture", Severity.error),
    "NEXTN_COUNT_UNSUPPORTED": ("More MTP layers than the architecture's llama.cpp graph accepts", Severity.warning),
    "SEPARATE_DRAFTER": ("MTP drafting uses a separate drafter checkpoint (Gemma 4 gemma4_assistant)", Severity.info),
    "HEADERS_NOT_READ": ("Some MTP shard headers were not read; dtype checks cover the ones that were", Severity.info),
}

@dataclass(frozen=True)
class Finding:
    code: str  # a key of FINDINGS
    severity: Severity
    message: str
    evidence: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message, "evidence": list(self.evidence)}


@dataclass(frozen=True)
class RuntimeVerdict:
    status: RuntimeStatus
    reason: str
    command: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "command": self.command}


@dataclass(frozen=True)
class QuantizationSummary:
    method: str | None
    algo: str | None
    source: str | None
    exclusion_key: str | None
    excluded_count: int
    mtp_excluded: MtpExcluded
    kept: tuple[str, ...] = ()
    quantized: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "algo": self.algo,
            "source": self.source,
            "exclusion_key": self.exclusion_key,
            "excluded_count": self.excluded_count,
            "mtp_excluded": self.mtp_excluded,
            "mtp_modules_kept": list(self.kept),
            "mtp_modules_quantized": list(self.quantized),
        }


@dataclass
class CheckReport:
    source: str
    source_kind: SourceKind
    revision: str | None
    usable: bool
    verdict: str
    mtp_layers: int
    mtp_layers_declared: int | None
    declared_by: str | None
    layout: Layout
    architecture: dict[str, Any]
    quantization: QuantizationSummary
    runtimes: dict[str, RuntimeVerdict]
    findings: list[Finding]
    mtp_parameters: int | None
    mtp_bytes: int | None
    files: dict[str, list[str]]
    bytes_read: int
    bytes_total: int
    requests: int
    mtp_types: dict[str, int] = field(default_factory=dict)  # dtype or ggml type -> MTP tensors of that type
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 0 if self.usable else 1

    @property
    def mtp_share(self) -> float | None:
        if self.mtp_bytes is None or not self.bytes_total or self.mtp_bytes > self.bytes_total:
            return None  # stand-in files cut short cannot give a share
        return self.mtp_bytes / self.bytes_total

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_ID,
            "source": self.source,
            "source_kind": self.source_kind,
            "revision": self.revision,
            "usable": self.usable,
            "verdict": self.verdict,
            "mtp_layers": self.mtp_layers,
            "mtp_layers_declared": self.mtp_layers_declared,
            "declared_by": self.declared_by,
            "layout": self.layout,
            "architecture": self.architecture,
            "quantization": self.quantization.to_dict(),
            "runtimes": {name: rv.to_dict() for name, rv in self.runtimes.items()},
            "findings": [f.to_dict() for f in self.findings],
            "mtp_size": {"parameters": self.mtp_parameters, "bytes": self.mtp_bytes, "share_of_download": self.mtp_share},
            "mtp_types": self.mtp_types,
            "files": self.files,
            "bytes_read": self.bytes_read,
            "bytes_total": self.bytes_total,
            "requests": self.requests,
            "notes": self.notes,
        }
