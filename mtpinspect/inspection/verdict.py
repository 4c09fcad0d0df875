"""From evidence to a verdict: findings, per-runtime status, the commands to run.

Two sets of rules: an HF checkpoint (checkpoint_rules: config + safetensors headers + quantization
config) and a GGUF (gguf_rules: header of the main file and of an `mtp-` sidecar). Each rule adds findings
with the lines of evidence it rests on; the runtime statuses follow from the findings, never the other
way round. Where llama.cpp itself was asked (engine.py), its verdict has the last word on the
llama.cpp status. This module assembles the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mtpinspect.inspection.app_rules import apply_app_rules
from mtpinspect.inspection.builder import ReportBuilder
from mtpinspect.inspection.engine import EngineCheck, follow_engine
from mtpinspect.inspection.evidence import Evidence
from mtpinspect.inspection.gguf_rules import apply_gguf_rules
from mtpinspect.inspection.report import BLOCKING_FINDINGS, CheckReport, MtpSize, QuantizationSummary, RuntimeVerdict
from mtpinspect.inspection.support import FAMILIES
from mtpinspect.runtime.command_server import server_for_commands
from mtpinspect.vocabulary import RuntimeStatus, Severity

if TYPE_CHECKING:
    from mtpinspect.inspection.quant_audit import QuantAudit  # a checkpoint's (checkpoint_rules.py)


def _verdict(b: ReportBuilder, usable: bool) -> str:
    supported = [n for n, r in b.runtimes.items() if r.status is RuntimeStatus.supported]
    risky = [n for n, r in b.runtimes.items() if r.status is RuntimeStatus.at_risk]
    off = [(n, r) for n, r in b.runtimes.items() if r.status is RuntimeStatus.off]
    worst = min(b.findings, key=lambda f: f.severity.rank) if b.findings else None
    where = f"{b.mtp_layers} MTP layer(s), {b.layout}" if b.mtp_layers else b.layout
    # An app whose own setting leaves MTP off is named with the reason: that setting is the news.
    switched_off = f"; off in {', '.join(n for n, _ in off)}: {off[0][1].reason}" if off else ""
    if supported:
        extra = f"; at risk in {', '.join(risky)}" if risky else ""
        return f"MTP usable ({where}) in {', '.join(supported)}{extra}{switched_off}"
    if risky:
        return f"MTP at risk ({where}) in {', '.join(risky)}: {worst.message if worst else ''}{switched_off}"
    if any(r.status is RuntimeStatus.unknown for r in b.runtimes.values()):
        return f"MTP undetermined: {worst.message if worst else 'no runtime is known to draft with this model'}"
    return f"MTP not usable: {worst.message if worst else 'no MTP head found'}"


def _errors_block(b: ReportBuilder) -> None:
    """A blocking error finding says the head cannot be used as it is: no runtime stays "supported" (or at
    risk, or off) beside it, so the verdict, ``usable`` and the exit status agree with the findings."""
    error = next((f for f in b.findings if f.severity is Severity.error and f.code in BLOCKING_FINDINGS), None)
    if error is None:
        return
    for name, runtime in b.runtimes.items():
        if runtime.status.usable:
            b.runtimes[name] = RuntimeVerdict(RuntimeStatus.unsupported, f"{error.code}: {error.message}",
                                              verified=runtime.verified)


def assemble_report(ev: Evidence, engine: EngineCheck | None = None) -> CheckReport:
    """Apply the rules for the evidence's kind (GGUF or checkpoint), then llama.cpp's own verdict where it
    was asked (``engine``), and assemble check's report."""
    b = ReportBuilder(server=server_for_commands())
    if ev.gguf is not None:
        apply_gguf_rules(ev, b)
    else:
        # The checkpoint rules load for a checkpoint only: a GGUF's check (in loops over folders) skips them.
        from mtpinspect.inspection.checkpoint_rules import apply_checkpoint_rules

        apply_checkpoint_rules(ev, b)
    verification = engine.verification if engine else None
    if verification is not None:
        follow_engine(b, verification)
    if ev.gguf is not None or ev.target.app is not None:
        # The apps follow llama.cpp's verdict, the engine's included (both run its llama-server); an Ollama
        # MLX model gets Ollama's verdict from its checkpoint.
        apply_app_rules(ev, b)
    if engine and engine.note:
        b.notes.append(engine.note)
    if b.server.note and any(r.status.usable and b.server.names(r.command) for r in b.runtimes.values()):
        b.notes.append(b.server.note)
    b.findings.sort(key=lambda f: f.severity.rank)
    _errors_block(b)
    usable = any(r.status.usable for r in b.runtimes.values())
    t = ev.target
    audit_summary = _quant_summary(ev, b.audit)
    decl = ev.config.mtp if ev.config else None
    if ev.gguf is not None and ev.gguf.nextn_layers is not None:
        declared, declared_by = ev.gguf.nextn_layers, f"{ev.gguf.files[0]}:{ev.gguf.arch}.nextn_predict_layers"
    else:
        declared = decl.layers if decl else None
        declared_by = f"{ev.config_file}:{decl.key}" if decl else None
    meter = t.tree.meter
    files = {"config": [ev.config_file] if ev.config_file else []}
    if ev.gguf:
        files["gguf"] = ev.gguf.files
        files["sidecar"] = ev.sidecar.files if ev.sidecar else []
        files["other_sidecars"] = ev.other_sidecars
        total = ev.gguf.size + (ev.sidecar.size if ev.sidecar else 0)
    else:
        ck = ev.checkpoint
        files["mtp_shards"] = ck.mtp_files if ck else []
        files["headers_read"] = ck.headers_read if ck else []
        total = t.tree.total_size
    return CheckReport(
        source=t.display,
        source_kind=t.kind,
        revision=t.revision,
        usable=usable,
        verdict=_verdict(b, usable),
        mtp_layers=b.mtp_layers,
        mtp_layers_declared=declared,
        declared_by=declared_by,
        layout=b.layout,
        architecture=_architecture(ev),
        quantization=audit_summary,
        runtimes=b.runtimes,
        findings=b.findings,
        mtp_size=MtpSize(b.mtp_params, b.mtp_bytes, _share(b.mtp_bytes, total)),
        mtp_types=b.mtp_types,
        files=files,
        bytes_read=meter.bytes_read,
        bytes_total=total,
        requests=meter.requests,
        waves=meter.waves,
        bytes_cached=meter.bytes_cached,
        notes=[n for n in b.notes if n],
        memory=verification.memory if verification else None,
        origin=b.origin,
        app=t.app,
        app_n_max=b.app_n_max,
    )


def _share(mtp_bytes: int | None, total: int) -> float | None:
    if mtp_bytes is None or not total or mtp_bytes > total:
        return None  # stand-in files cut short cannot give a share
    return mtp_bytes / total


def _quant_summary(ev: Evidence, audit: QuantAudit | None) -> QuantizationSummary:
    q = ev.quant
    return QuantizationSummary(
        method=q.method if q else None,
        algo=q.algo if q else None,
        source=q.source if q else None,
        exclusion_key=q.exclusion_key if q else None,
        excluded_count=len(q.exclusions) if q else 0,
        mtp_excluded=audit.mtp_excluded if audit else None,
        mtp_modules_kept=tuple(audit.kept()) if audit else (),
        mtp_modules_quantized=tuple(audit.quantized()) if audit else (),
        gguf_file_type=ev.gguf.first.file_type if ev.gguf else None,
    )


def _architecture(ev: Evidence) -> dict[str, object]:
    cfg = ev.config
    return {
        "model_type": cfg.model_type if cfg else None,
        "architectures": list(cfg.architectures) if cfg else [],
        "num_hidden_layers": cfg.num_hidden_layers if cfg else None,
        "gguf_architecture": ev.gguf.arch if ev.gguf else (FAMILIES[cfg.model_type].gguf_arch if cfg and cfg.model_type in FAMILIES else None),
    }
