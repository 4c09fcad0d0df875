"""ReportBuilder: check's report under construction, filled in by the checkpoint and GGUF rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from mtpinspect.inspection.evidence import Evidence
from mtpinspect.inspection.report import FINDINGS, Finding, RuntimeVerdict
from mtpinspect.runtime.command_server import SERVER_ON_PATH, CommandServer
from mtpinspect.runtime.n_max import NMaxAdvice
from mtpinspect.vocabulary import Layout, Severity, SourceKind

if TYPE_CHECKING:  # a checkpoint's: checkpoint_rules.py fills them, and a GGUF check does not load them
    from mtpinspect.inspection.origin import Origin
    from mtpinspect.inspection.quant_audit import QuantAudit

SIDECAR_PREFIX = "mtp-"  # convert_hf_to_gguf --mtp writes the head as mtp-<main file name>
_SHOWN = 6  # evidence lines per finding before "... and N more"


@dataclass
class ReportBuilder:
    """Findings, runtime verdicts and figures as the rules add them; verdict.py turns it into a CheckReport."""

    findings: list[Finding] = field(default_factory=list)
    runtimes: dict[str, RuntimeVerdict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mtp_layers: int = 0
    layout: Layout = Layout.none
    mtp_bytes: int | None = None
    mtp_params: int | None = None
    audit: QuantAudit | None = None
    origin: Origin | None = None  # who made the checkpoint (origin.py); judged for HF checkpoints
    mtp_types: dict[str, int] = field(default_factory=dict)
    app_n_max: NMaxAdvice | None = None
    # The llama-server the printed commands name (command_server.server_for_commands, asked once per report).
    server: CommandServer = field(default_factory=lambda: CommandServer(SERVER_ON_PATH, None))

    def add(
        self, code: str, message: str, evidence: list[str] | tuple[str, ...] = (), severity: Severity | None = None
    ) -> None:
        self.findings.append(Finding(code, severity or FINDINGS[code][1], message, tuple(clip(list(evidence)))))

    def has(self, code: str) -> bool:
        return any(f.code == code for f in self.findings)


def clip(lines: list[str]) -> list[str]:
    return lines if len(lines) <= _SHOWN + 1 else [*lines[:_SHOWN], f"... and {len(lines) - _SHOWN} more"]


def trunk_beside(ev: Evidence) -> str | None:
    """For a local mtp- sidecar checked on its own, its main GGUF (the same name without ``mtp-``, as
    convert_hf_to_gguf names them) when it lies beside it; else None (the main file is not known)."""
    t, g = ev.target, ev.gguf
    if g is None or t.kind is SourceKind.hub or ev.sidecar is not None:
        return None
    path = PurePosixPath(g.files[0])
    if not path.name.lower().startswith(SIDECAR_PREFIX):
        return None
    trunk = str(path.with_name(path.name[len(SIDECAR_PREFIX):]))
    return t.file_ref(trunk) if trunk in t.tree.files else None


def model_ref(ev: Evidence) -> str:
    t = ev.target
    return t.repo_id if t.kind is SourceKind.hub and t.repo_id else t.display
