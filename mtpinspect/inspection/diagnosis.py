"""From evidence to a verdict: findings, per-runtime status, the commands to run.

Two paths: an HF checkpoint (config + safetensors headers + quantization config) and a GGUF (header of
the main file and of an `mtp-` sidecar). Each rule adds findings with the lines of evidence it rests
on; the runtime statuses follow from the findings, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from mtpinspect.formats.quantization import QuantAudit, audit_mtp
from mtpinspect.inspection.evidence import Evidence, GgufEvidence
from mtpinspect.inspection.naming import is_head_tensor
from mtpinspect.inspection.report import (
    FINDINGS,
    SEVERITY_ORDER,
    CheckReport,
    Finding,
    QuantizationSummary,
    RuntimeVerdict,
)
from mtpinspect.inspection.support import (
    FAMILIES,
    FIRST_PARTY_QUANTIZERS,
    LLAMA_CPP_MTP_GRAPH,
    LLAMA_CPP_PIN,
    LOW_BIT_GGML,
    MAKERS,
    Family,
    convert_command,
    llama_cpp_graph,
    llama_server_command,
    sglang_command,
    vllm_command,
)

# GGUF architectures whose HF originals all carry an MTP head: a GGUF without it lost it in conversion.
_ARCHS_WITH_MTP_ORIGINALS = {"qwen35", "qwen35moe", "qwen3next", "glm4moe", "glm-dsa", "deepseek32", "mimo2", "step35"}
_SHOWN = 6  # evidence lines per finding before "... and N more"


@dataclass
class _Draft:
    """The report under construction."""

    findings: list[Finding] = field(default_factory=list)
    runtimes: dict[str, RuntimeVerdict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mtp_layers: int = 0
    layout: str = "none"
    mtp_bytes: int | None = None
    mtp_params: int | None = None
    audit: QuantAudit | None = None

    def add(self, code: str, message: str, evidence: list[str] | tuple[str, ...] = (), severity: str | None = None) -> None:
        self.findings.append(Finding(code, severity or FINDINGS[code][1], message, tuple(_clip(list(evidence)))))

    def has(self, code: str) -> bool:
        return any(f.code == code for f in self.findings)


def _clip(lines: list[str]) -> list[str]:
    return lines if len(lines) <= _SHOWN + 1 else [*lines[:_SHOWN], f"... and {len(lines) - _SHOWN} more"]


def _org(repo_id: str | None) -> str | None:
    return repo_id.split("/", 1)[0] if repo_id and "/" in repo_id else None


def _model_ref(ev: Evidence) -> str:
    t = ev.target
    return t.repo_id if t.kind == "hub" and t.repo_id else t.display


# ------------------------------------------------------------------------------------------------
# HF checkpoint


def _checkpoint_presence(ev: Evidence, d: _Draft) -> None:
    cfg, ck = ev.config, ev.checkpoint
    decl = cfg.mtp if cfg else None
    where = f"{ev.config_file}: {decl.key} = {decl.layers}" if decl else None
    present = ck.mtp.count if ck else 0
    if cfg and cfg.model_type == "nemotron_h" and present:
        present = min(present, decl.layers if decl else 1)  # its two HF MTP layers fold into one block
    d.mtp_layers = present
    if ck and present:
        d.layout = "checkpoint"
        files = ", ".join(ck.mtp_files[:3]) + (" ..." if len(ck.mtp_files) > 3 else "")
        lines = [f"{ck.mtp.scheme}: layers {', '.join(ck.mtp.layers)} in {files}"]
        if where:
            lines.insert(0, where)
        if ck.standalone_mtp_file:
            lines.append(f"separate file {ck.standalone_mtp_file}")
        lines += [f"{n} {ck.mtp_dtypes.get(n) or '?'}" for n in _representative(ck.mtp.names)]
        d.add("MTP_PRESENT", f"{present} MTP layer(s) with weights in the checkpoint ({len(ck.mtp.names)} tensors)", lines)
        d.mtp_bytes, d.mtp_params = ck.mtp_bytes, ck.mtp_params
        if len(ck.headers_read) < len(ck.mtp_files) + (1 if ck.standalone_mtp_file else 0):
            unread = [f for f in ck.mtp_files if f not in ck.headers_read]
            d.add("HEADERS_NOT_READ", f"{len(unread)} MTP shard header(s) not read", unread)
    if decl is None and present:
        d.add("MTP_FROM_TENSORS_ONLY", "config.json names no MTP depth; the mtp.* tensors show the head", [f"{ck.mtp.scheme}"])
    elif decl and decl.layers > present:
        names_expected = f"model.layers.{cfg.num_hidden_layers}.*" if cfg and cfg.num_hidden_layers else "MTP tensors"
        lines = [where or "", f"no {names_expected} / mtp.* tensors in {ck.index_file if ck else 'the repo (no safetensors found)'}"]
        if present:
            lines[1] = f"only {present} MTP layer(s) have weights"
        d.add(
            "MTP_WEIGHTS_MISSING",
            f"config announces {decl.layers} MTP layer(s) but the checkpoint has weights for {present}: "
            "a quantization or conversion dropped the head (engines then load garbage or refuse)",
            lines,
        )
    elif not present:
        msg = f"{decl.key} = 0: the model has no MTP head" if decl else "no MTP key in config.json and no MTP tensors"
        d.add("NO_MTP", msg, [where] if where else [ev.config_file or "no config.json"])


def _representative(names: tuple[str, ...], limit: int = 4) -> list[str]:
    """The head's own tensors first (eh_proj, fc, norms), then attention: experts are many and alike."""
    return _head_first([n for n in names if n.endswith(".weight")])[:limit]


def _head_first(names: list[str]) -> list[str]:
    def rank(name: str) -> int:
        if is_head_tensor(name):
            return 0
        return 1 if "attn" in name else 2

    order = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: (rank(n), order[n]))


def _maker_release(ev: Evidence) -> bool:
    org = _org(ev.target.repo_id)
    return org in MAKERS


def _quant_findings(ev: Evidence, d: _Draft, audit: QuantAudit) -> bool:
    """Adds quantization findings; returns True when the head is at risk."""
    q = audit.config
    if audit.mtp_excluded is None or q is None and audit.mtp_excluded is not False:
        return False
    method = q.method if q else "header dtypes"
    lines = [f"{q.source}: {q.method}{'/' + q.algo if q and q.algo else ''}, {audit.excluded_count} exclusion entries ({q.exclusion_key})"] if q else []
    kept, quant = _head_first(audit.kept()), _head_first(audit.quantized())
    header_notes = [f"{v.module}: {v.header_dtype}" + (f" ({v.note})" if v.note else "") for v in audit.modules if v.header_dtype]
    org = _org(ev.target.repo_id)
    maker = _maker_release(ev)
    fp8 = q is not None and q.method == "fp8" or any(v.header_dtype and v.header_dtype.startswith("F8") for v in audit.modules)
    for warning in audit.fused_warnings:
        d.add("FUSED_NAME_MISMATCH", warning, lines)
    if audit.mtp_excluded is True:
        d.add("MTP_EXCLUDED", f"all {len(kept)} quantizable MTP modules are kept in high precision", [*lines, *header_notes[:4]])
        return bool(audit.fused_warnings)
    if maker and fp8:
        why = (
            f"{org} ships its own FP8 release with the head in FP8: the configuration its makers serve with MTP "
            "(DeepSeek-V3 was trained in FP8; GLM FP8 releases exclude only the head's norms and projection)"
        )
        code = "MTP_QUANTIZED" if audit.mtp_excluded is False else "MTP_PARTIALLY_EXCLUDED"
        d.add(code, f"MTP head in FP8 ({len(quant)} modules quantized, {len(kept)} kept): {why}",
              [*lines, *[f"quantized: {m}" for m in quant[:3]], *[f"kept: {m}" for m in kept[:3]], *header_notes[:3]],
              severity="info")
        return False
    who = "first-party quantizer " + org if org in FIRST_PARTY_QUANTIZERS else ("third-party quantization" if org else "quantized checkpoint of unknown origin")
    if audit.mtp_excluded is False:
        d.add(
            "MTP_QUANTIZED",
            f"MTP head quantized ({method}) by a {who}: the classic cause of 0% draft acceptance; "
            "use a release that excludes mtp modules, or point the engine's draft at a BF16 head",
            [*lines, *[f"quantized: {m}" for m in quant], *header_notes[:3]],
            severity="error",
        )
    else:
        d.add(
            "MTP_PARTIALLY_EXCLUDED",
            f"only part of the MTP head is excluded from quantization ({len(kept)} kept, {len(quant)} quantized); "
            f"quantized: {', '.join(quant[:4])}{' ...' if len(quant) > 4 else ''}",
            [*lines, *[f"kept: {m}" for m in kept[:4]], *[f"quantized: {m}" for m in quant[:4]], *header_notes[:3]],
        )
    return True


def _checkpoint_runtimes(ev: Evidence, d: _Draft, family: Family | None, at_risk: bool) -> None:
    model = _model_ref(ev)
    # Pin the commit in the commands only when the user asked for a revision other than main.
    rev = ev.target.revision if getattr(ev.target.tree, "revision", None) else None
    present = d.mtp_layers > 0
    mt = ev.config.model_type if ev.config else None
    risk_reason = "MTP head quantized: expect low or zero acceptance"

    def engine(name: str, has_mtp: bool, command: str | None) -> RuntimeVerdict:
        if not present:
            return RuntimeVerdict("unsupported", "no MTP weights in the checkpoint")
        if family is None:
            return RuntimeVerdict("unknown", f"model_type '{mt}' is not in mtpinspect's table for {name}", command)
        if not has_mtp:
            return RuntimeVerdict("unsupported", f"{name} has no MTP drafting for model_type '{mt}'")
        if at_risk:
            return RuntimeVerdict("at-risk", risk_reason, command)
        return RuntimeVerdict("supported", f"{name} drafts with this model's MTP head", command)

    d.runtimes["vllm"] = engine("vLLM", bool(family and family.vllm), vllm_command(model, rev))
    algo = family.sglang if family else None
    d.runtimes["sglang"] = engine("SGLang", bool(algo), sglang_command(model, algo, rev) if algo else None)
    d.runtimes["llama.cpp"] = _llama_for_checkpoint(ev, d, family, at_risk)
    d.runtimes["transformers"] = RuntimeVerdict("unsupported", "Transformers builds no MTP modules; generation ignores the head")


def _llama_for_checkpoint(ev: Evidence, d: _Draft, family: Family | None, at_risk: bool) -> RuntimeVerdict:
    if not d.mtp_layers:
        return RuntimeVerdict("unsupported", "no MTP weights in the checkpoint")
    mt = ev.config.model_type if ev.config else None
    if family is None or family.gguf_arch is None or family.conversion == "unknown":
        return RuntimeVerdict("unknown", family.note if family and family.note else f"no known GGUF conversion of model_type '{mt}' with MTP")
    q = ev.quant
    if q and q.method not in ("fp8",):
        return RuntimeVerdict("unsupported", f"convert_hf_to_gguf.py takes unquantized or FP8 checkpoints, not {q.method}: convert the original release")
    if family.conversion == "dropped":
        return RuntimeVerdict("unsupported", family.note)
    graph = llama_cpp_graph(family.gguf_arch)
    if graph != "graph":
        return RuntimeVerdict("unsupported", f"llama.cpp {LLAMA_CPP_PIN} has no MTP graph for '{family.gguf_arch}'")
    out = PurePosixPath((ev.target.repo_id or "model").split("/")[-1]).name
    if family.conversion == "sidecar":
        cmd = f"{convert_command('MODEL_DIR', out + '.gguf')} --no-mtp && {convert_command('MODEL_DIR', 'mtp-' + out + '.gguf')} --mtp && {llama_server_command(out + '.gguf', sidecar='mtp-' + out + '.gguf')}"
    else:
        cmd = f"{convert_command('MODEL_DIR', out + '.gguf')} && {llama_server_command(out + '.gguf')}"
    status = "at-risk" if at_risk else "supported"
    return RuntimeVerdict(status, f"converts to GGUF '{family.gguf_arch}' with its nextn tensors; llama.cpp {LLAMA_CPP_PIN} has its MTP graph", cmd)


def _diagnose_checkpoint(ev: Evidence, d: _Draft) -> None:
    mt = ev.config.model_type if ev.config else None
    family = FAMILIES.get(mt or "")
    if mt in ("gemma4", "gemma4_assistant"):
        _gemma(ev, d, mt)
        return
    _checkpoint_presence(ev, d)
    at_risk = False
    ck = ev.checkpoint
    if ck and ck.mtp.names:
        d.audit = audit_mtp(ev.quant, ck.mtp_dtypes, ck.weight_map.keys())
        at_risk = _quant_findings(ev, d, d.audit)
    _checkpoint_runtimes(ev, d, family, at_risk)


def _gemma(ev: Evidence, d: _Draft, mt: str) -> None:
    if mt == "gemma4_assistant":
        n = ev.config.num_hidden_layers if ev.config else None
        d.mtp_layers = n or 0
        d.layout = "separate-checkpoint"
        d.add("SEPARATE_DRAFTER", "this is a Gemma 4 assistant drafter: pass its GGUF with -md next to the gemma4 target",
              [f"{ev.config_file}: model_type = gemma4_assistant"], severity="info")
        d.runtimes["llama.cpp"] = RuntimeVerdict("supported", "gemma4-assistant has an MTP draft graph (draft-mtp)",
                                                 llama_server_command("gemma-4-target.gguf", sidecar="gemma-4-assistant.gguf"))
    else:
        d.layout = "separate-checkpoint"
        d.add("SEPARATE_DRAFTER", "Gemma 4 keeps no MTP layers in this checkpoint; it drafts with a separate "
              "gemma4_assistant checkpoint, loaded by llama.cpp as the draft model (-md) with --spec-type draft-mtp",
              [f"{ev.config_file}: model_type = gemma4, no MTP key, no MTP tensors"])
        d.runtimes["llama.cpp"] = RuntimeVerdict("supported", "target gemma4 + a gemma4-assistant drafter GGUF (draft-mtp)",
                                                 llama_server_command("gemma-4-target.gguf", sidecar="gemma-4-assistant.gguf"))
    d.runtimes["vllm"] = RuntimeVerdict("unknown", "the pinned tables have no vLLM MTP proposer for Gemma 4", None)
    d.runtimes["sglang"] = RuntimeVerdict("unknown", "the pinned tables have no SGLang MTP path for Gemma 4", None)
    d.runtimes["transformers"] = RuntimeVerdict("unsupported", "Transformers builds no MTP modules; generation ignores the head")


# ------------------------------------------------------------------------------------------------
# GGUF


def _tensor_line(g: GgufEvidence, name: str) -> str:
    t = g.tensors[name]
    return f"{name} {t.ggml_type} {list(t.shape)}"


def _pairing_problems(main: GgufEvidence, side: GgufEvidence) -> list[str]:
    problems = []
    checks = [
        ("architecture", main.arch, side.arch),
        ("n_embd", main.embedding_length, side.embedding_length),
        ("vocabulary size", main.vocab_size, side.vocab_size),
        # A trunk-only main (converted with --no-mtp) has block_count L; the mtp- file keeps L + N.
        ("trunk layers", _trunk_layers(main), _trunk_layers(side)),
    ]
    for label, a, b in checks:
        if a != b:
            problems.append(f"{label}: main {a} vs sidecar {b}")
    if main.nextn_layers is not None and side.nextn_layers is not None and main.nextn_layers != side.nextn_layers:
        problems.append(f"nextn_predict_layers: main {main.nextn_layers} vs sidecar {side.nextn_layers}")
    if not side.nextn_layers:
        problems.append(f"sidecar has no {side.arch}.nextn_predict_layers key")
    da, db = main.tokenizer_digest, side.tokenizer_digest
    if da and db and da != db and main.vocab_size == side.vocab_size:
        problems.append("tokenizer tokens differ (same size, different strings)")
    return problems


def _trunk_layers(g: GgufEvidence) -> int | None:
    return None if g.block_count is None else g.block_count - (g.nextn_layers or 0)


def _nextn_inventory(g: GgufEvidence) -> tuple[list[str], list[str]]:
    """(evidence lines, low-bit tensor lines) for the MTP block tensors of a GGUF."""
    mtp = g.mtp
    lines = [_tensor_line(g, n) for n in mtp.nextn if n in g.tensors]
    low = [_tensor_line(g, n) for n in mtp.block if n in g.tensors and g.tensors[n].ggml_type in LOW_BIT_GGML]
    return lines, low


def _gguf_mtp_size(g: GgufEvidence) -> tuple[int, int]:
    tensors = g.tensors
    names = [n for n in g.mtp.block if n in tensors]
    return sum(tensors[n].nbytes for n in names), sum(tensors[n].n_elements for n in names)


def _diagnose_gguf(ev: Evidence, d: _Draft) -> None:
    g = ev.gguf
    assert g is not None
    arch = g.arch
    key = f"{arch}.nextn_predict_layers"
    head = g  # the file that carries the head
    mtp_tensors = [n for n in g.mtp.nextn if n in g.tensors]
    key_line = f"{g.files[0]}: {key} = {g.nextn_layers}, block_count = {g.block_count}"
    if arch == "gemma4" or (ev.sidecar and ev.sidecar.arch == "gemma4-assistant"):
        _gguf_gemma(ev, d)
        return
    if mtp_tensors and not g.has_trunk:
        d.layout = "sidecar"
        d.mtp_layers = g.nextn_layers or len(g.mtp.blocks)
        d.add("MTP_SIDECAR", "this file is an MTP sidecar (nextn tensors only, no blk.0.attn_norm): "
              "pass it with -md next to its main GGUF", [key_line, *_nextn_inventory(g)[0]])
    elif mtp_tensors:
        d.layout = "bundled"
        d.mtp_layers = g.nextn_layers or len(g.mtp.blocks)
        d.add("MTP_PRESENT", f"{d.mtp_layers} MTP layer(s) bundled in the GGUF ({len(g.mtp.block)} tensors in block(s) "
              f"{', '.join(map(str, g.mtp.blocks))})", [key_line, *_nextn_inventory(g)[0]])
    elif ev.sidecar is not None:
        s = ev.sidecar
        head = s
        d.layout = "sidecar"
        d.mtp_layers = s.nextn_layers or len(s.mtp.blocks) if s.mtp.nextn else 0
        d.add("MTP_SIDECAR", f"the MTP head ships as a separate file: {', '.join(s.files)} (pass it with -md)",
              [f"{s.files[0]}: {s.arch}.nextn_predict_layers = {s.nextn_layers}, block_count = {s.block_count}, "
               f"trunk {'present' if s.has_trunk else 'absent'}", *_nextn_inventory(s)[0]])
        problems = _pairing_problems(g, s)
        if problems:
            d.add("SIDECAR_MISMATCH", f"{s.files[0]} does not pair with {g.files[0]}: {problems[0]}", problems)
    elif g.nextn_layers:
        d.add("MTP_WEIGHTS_MISSING", f"{key} = {g.nextn_layers} but no blk.N.nextn.* tensors: llama.cpp fails to load "
              "or aborts with --spec-type draft-mtp", [key_line])
    else:
        _gguf_without_head(ev, d, key_line)
    if d.mtp_layers:
        _gguf_graph_and_types(d, head)
        d.mtp_bytes, d.mtp_params = _gguf_mtp_size(head)
    _gguf_runtimes(ev, d, head)


def _gguf_without_head(ev: Evidence, d: _Draft, key_line: str) -> None:
    g = ev.gguf
    assert g is not None
    decl = ev.config.mtp if ev.config else None
    name = str(g.first.get("general.name") or g.first.get("general.basename") or g.files[0])
    if decl is not None and decl.layers > 0 or (decl is None and g.arch in _ARCHS_WITH_MTP_ORIGINALS) or (
        g.arch == "deepseek2" and decl is None and "kimi" not in name.lower()
    ):
        why = "DeepSeek-V2/V3 conversions drop the MTP layer (skip_mtp)" if g.arch == "deepseek2" else (
            "the original has an MTP head; convert with the head (no --no-mtp) or use a GGUF that bundles it")
        d.add("MTP_DROPPED_IN_CONVERSION", f"no nextn tensors and no mtp- sidecar in this {g.arch} GGUF: {why}",
              [key_line, f"general.name = {name}", *([f"{ev.config_file}: {decl.key} = {decl.layers}"] if decl else [])])
    elif g.arch == "deepseek4":
        d.add("SIDECAR_NOT_FOUND", "DeepSeek-V4 GGUFs carry MTP only in a separate mtp- file; none was found", [key_line])
    else:
        d.add("NO_MTP", f"no nextn tensors and no {g.arch}.nextn_predict_layers key: this GGUF has no MTP head", [key_line])


def _gguf_graph_and_types(d: _Draft, head: GgufEvidence) -> None:
    arch = head.arch
    graph = llama_cpp_graph(arch)
    if graph == "unused":
        d.add("ARCH_NO_MTP_GRAPH", f"llama.cpp {LLAMA_CPP_PIN} keeps '{arch}' nextn tensors but has no MTP graph: "
              "they load as 'unused tensor' and draft-mtp cannot use them", [f"general.architecture = {arch}"])
    elif graph == "unknown":
        d.add("ARCH_NO_MTP_GRAPH", f"llama.cpp {LLAMA_CPP_PIN} has no MTP draft graph for architecture '{arch}'",
              [f"general.architecture = {arch}"])
    elif LLAMA_CPP_MTP_GRAPH[arch] == "1" and (head.nextn_layers or 0) > 1:
        d.add("NEXTN_COUNT_UNSUPPORTED", f"'{arch}' MTP graph takes exactly 1 layer, the file has {head.nextn_layers}",
              [f"{arch}.nextn_predict_layers = {head.nextn_layers}"])
    _, low = _nextn_inventory(head)
    if low:
        d.add("LOW_BIT_MTP_HEAD", f"{len(low)} MTP tensor(s) at very low-bit types: heads this small often draft garbage "
              "(e.g. 0/3595 accepted with an IQ3_S head); use a GGUF whose nextn tensors are Q8_0 or better", low)


def _gguf_runtimes(ev: Evidence, d: _Draft, head: GgufEvidence) -> None:
    g = ev.gguf
    assert g is not None
    t = ev.target
    hub = t.kind == "hub"
    main = f"{t.repo_id}:{t.quant}" if hub and t.quant else (t.repo_id if hub else str(t.tree.path(g.files[0])))  # type: ignore[union-attr]
    sidecar = None
    if d.layout == "sidecar" and ev.sidecar is not None:
        sidecar = ev.sidecar.files[0] if hub else str(t.tree.path(ev.sidecar.files[0]))  # type: ignore[union-attr]
    if hub and not t.quant:
        main = f"{t.repo_id} --hf-file {g.files[0]}"
    blocking = [c for c in ("MTP_WEIGHTS_MISSING", "SIDECAR_MISMATCH", "ARCH_NO_MTP_GRAPH") if d.has(c)]
    if not d.mtp_layers:
        llama = RuntimeVerdict("unsupported", d.findings[0].message if d.findings else "no MTP head")
    elif blocking:
        llama = RuntimeVerdict("unsupported", next(f.message for f in d.findings if f.code == blocking[0]))
    elif d.layout == "sidecar" and ev.sidecar is None:
        llama = RuntimeVerdict("supported", "load the main GGUF with -m and this file with -md",
                               llama_server_command("MAIN.gguf", sidecar=str(t.tree.path(g.files[0])) if not hub else g.files[0]))  # type: ignore[union-attr]
    else:
        status = "at-risk" if d.has("LOW_BIT_MTP_HEAD") or d.has("NEXTN_COUNT_UNSUPPORTED") else "supported"
        reason = f"llama.cpp {LLAMA_CPP_PIN} has the '{head.arch}' MTP draft graph"
        if hub and t.quant:
            cmd = llama_server_command(main, hf=True)
            if sidecar:
                reason += f"; -hf downloads the sibling {PurePosixPath(sidecar).name} with --spec-type draft-mtp"
        else:
            cmd = llama_server_command(main.split(" --hf-file ")[0] if hub else main, hf=hub, sidecar=sidecar)
            if hub:
                cmd = cmd.replace(f"-hf {t.repo_id}", f"-hf {t.repo_id} --hf-file {g.files[0]}", 1)
        llama = RuntimeVerdict(status, reason, cmd)
    d.runtimes["llama.cpp"] = llama
    gguf_only = "vLLM and SGLang do not run MTP from GGUF files; use the original HF checkpoint"
    d.runtimes["vllm"] = RuntimeVerdict("unsupported", gguf_only)
    d.runtimes["sglang"] = RuntimeVerdict("unsupported", gguf_only)
    d.notes.append("Ollama and LM Studio load this GGUF's trunk; neither exposes llama.cpp's draft-mtp: serve it with llama-server")


def _gguf_gemma(ev: Evidence, d: _Draft) -> None:
    g, s = ev.gguf, ev.sidecar
    assert g is not None
    t = ev.target
    d.layout = "separate-checkpoint"
    if s is not None and s.arch == "gemma4-assistant":
        d.mtp_layers = s.nextn_layers or s.block_count or 0
        d.add("SEPARATE_DRAFTER", f"Gemma 4 drafts with the assistant GGUF {s.files[0]} (gemma4-assistant, "
              f"{d.mtp_layers} layer(s)): pass it with -md", [f"{s.files[0]}: general.architecture = gemma4-assistant"])
        side = s.files[0] if t.kind == "hub" else str(t.tree.path(s.files[0]))  # type: ignore[union-attr]
        main = g.files[0] if t.kind == "hub" else str(t.tree.path(g.files[0]))  # type: ignore[union-attr]
        d.runtimes["llama.cpp"] = RuntimeVerdict("supported", "gemma4 target + gemma4-assistant drafter (draft-mtp)",
                                                 llama_server_command(main, sidecar=side))
        d.mtp_bytes, d.mtp_params = sum(x.nbytes for x in s.tensors.values()), sum(x.n_elements for x in s.tensors.values())
    elif g.arch == "gemma4-assistant":
        d.mtp_layers = g.nextn_layers or g.block_count or 0
        d.add("SEPARATE_DRAFTER", "this GGUF is a Gemma 4 assistant drafter: pass it with -md next to a gemma4 target",
              [f"{g.files[0]}: general.architecture = gemma4-assistant"])
        d.runtimes["llama.cpp"] = RuntimeVerdict("supported", "gemma4-assistant has an MTP draft graph",
                                                 llama_server_command("gemma-4-target.gguf", sidecar=g.files[0]))
    else:
        d.add("SEPARATE_DRAFTER", "Gemma 4 has no MTP layers of its own; it needs a gemma4-assistant drafter GGUF, "
              "and none was found beside this file", [f"{g.files[0]}: general.architecture = gemma4"], severity="warning")
        d.runtimes["llama.cpp"] = RuntimeVerdict("unsupported", "no gemma4-assistant drafter found")
    gguf_only = "vLLM and SGLang do not run MTP from GGUF files"
    d.runtimes["vllm"] = RuntimeVerdict("unsupported", gguf_only)
    d.runtimes["sglang"] = RuntimeVerdict("unsupported", gguf_only)


# ------------------------------------------------------------------------------------------------


def _verdict(d: _Draft, usable: bool) -> str:
    supported = [n for n, r in d.runtimes.items() if r.status == "supported"]
    risky = [n for n, r in d.runtimes.items() if r.status == "at-risk"]
    worst = min(d.findings, key=lambda f: SEVERITY_ORDER[f.severity]) if d.findings else None
    where = f"{d.mtp_layers} MTP layer(s), {d.layout}" if d.mtp_layers else d.layout
    if supported:
        extra = f"; at risk in {', '.join(risky)}" if risky else ""
        return f"MTP usable ({where}) in {', '.join(supported)}{extra}"
    if risky:
        return f"MTP at risk ({where}) in {', '.join(risky)}: {worst.message if worst else ''}"
    return f"MTP not usable: {worst.message if worst else 'no MTP head found'}"


def diagnose(ev: Evidence) -> CheckReport:
    d = _Draft()
    if ev.gguf is not None:
        _diagnose_gguf(ev, d)
    else:
        _diagnose_checkpoint(ev, d)
    d.findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    # At risk still counts: the head loads and drafts; the verdict line says how likely it is to fail.
    usable = any(r.status in ("supported", "at-risk") for r in d.runtimes.values())
    t = ev.target
    audit_summary = _quant_summary(ev, d.audit)
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
        verdict=_verdict(d, usable),
        mtp_layers=d.mtp_layers,
        mtp_layers_declared=declared,
        declared_by=declared_by,
        layout=d.layout,
        architecture=_architecture(ev),
        quantization=audit_summary,
        runtimes=d.runtimes,
        findings=d.findings,
        mtp_parameters=d.mtp_params,
        mtp_bytes=d.mtp_bytes,
        files=files,
        bytes_read=meter.bytes_read,
        bytes_total=total,
        requests=meter.requests,
        notes=[n for n in d.notes if n],
    )


def _quant_summary(ev: Evidence, audit: QuantAudit | None) -> QuantizationSummary:
    q = ev.quant
    return QuantizationSummary(
        method=q.method if q else None,
        algo=q.algo if q else None,
        source=q.source if q else None,
        exclusion_key=q.exclusion_key if q else None,
        excluded_count=len(q.exclusions) if q else 0,
        mtp_excluded=audit.mtp_excluded if audit else None,
        kept=tuple(audit.kept()) if audit else (),
        quantized=tuple(audit.quantized()) if audit else (),
    )


def _architecture(ev: Evidence) -> dict[str, object]:
    cfg = ev.config
    return {
        "model_type": cfg.model_type if cfg else None,
        "architectures": list(cfg.architectures) if cfg else [],
        "num_hidden_layers": cfg.num_hidden_layers if cfg else None,
        "gguf_architecture": ev.gguf.arch if ev.gguf else (FAMILIES[cfg.model_type].gguf_arch if cfg and cfg.model_type in FAMILIES else None),
    }
