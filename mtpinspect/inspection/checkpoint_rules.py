"""Rules for an HF safetensors checkpoint: is the head there, did quantization keep it, who runs it.

Inputs are config.json, the MTP tensors found through the index and their shard headers, and the
quantization config; the quantization audit itself lives in quant_audit.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import PurePosixPath

from mtpinspect.formats.quantization import FUSED_SHARDS, MATCH_TIMEOUT_S, engine_reading
from mtpinspect.inspection.builder import ReportBuilder, model_ref
from mtpinspect.inspection.evidence import MAX_MTP_SHARDS, CheckpointEvidence, Evidence
from mtpinspect.inspection.naming import FAMILY_OF_MODEL_TYPE, is_head_tensor, names_looked_for
from mtpinspect.inspection.origin import Origin, OriginSignal, judge_origin
from mtpinspect.inspection.quant_audit import QuantAudit, audit_mtp
from mtpinspect.inspection.report import RuntimeVerdict
from mtpinspect.inspection.support import (
    FAMILIES,
    UNDECLARED_LOADERS,
    UNQUANTIZED_MTP_LOADERS,
    Family,
    convert_command,
    llama_cpp_graph,
    llama_server_command,
    sglang_command,
    vllm_command,
)
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP
from mtpinspect.vocabulary import UNDECLARED, Conversion, GraphSupport, Layout, OriginKind, RuntimeStatus, Severity, SourceKind


def _checkpoint_presence(ev: Evidence, b: ReportBuilder, origin: Origin) -> None:
    cfg, ck = ev.config, ev.checkpoint
    decl = cfg.mtp if cfg else None
    where = f"{ev.config_file}: {decl.key} = {decl.layers}" if decl else None
    present = ck.mtp.count if ck else 0
    if cfg and cfg.model_type == "nemotron_h" and present:
        present = min(present, decl.layers if decl else 1)  # its two HF MTP layers fold into one block
    b.mtp_layers = present
    if ck and present:
        b.layout = Layout.checkpoint
        files = ", ".join(ck.mtp_files[:3]) + (" ..." if len(ck.mtp_files) > 3 else "")
        lines = [f"{ck.mtp.scheme}: layers {', '.join(ck.mtp.layers)} in {files}"]
        if where:
            lines.insert(0, where)
        if ck.standalone_mtp_file:
            lines.append(f"separate file {ck.standalone_mtp_file}")
        lines += [f"{n} {ck.mtp_dtypes.get(n) or '?'}" for n in _representative(ck.mtp.names)]
        b.add("MTP_PRESENT", f"{present} MTP layer(s) with weights in the checkpoint ({len(ck.mtp.names)} tensors)", lines)
        b.mtp_bytes, b.mtp_params = ck.mtp_bytes, ck.mtp_params
        b.mtp_types = dict(Counter(t or "unread" for t in ck.mtp_dtypes.values()).most_common())
        unread = [f for f in ck.mtp_files if f not in ck.headers_read]
        if unread:
            b.add("HEADERS_NOT_READ", f"{len(unread)} MTP shard header(s) not read ({_why_unread(ck, unread)}): dtype "
                  "checks cover the rest, the quantization config alone judges the others", unread)
    if decl is None and present:
        b.add("MTP_FROM_TENSORS_ONLY", "config.json names no MTP depth; the mtp.* tensors show the head", [f"{ck.mtp.scheme}"])
    elif ev.unreadable_weights:
        b.add("HEADERS_NOT_READ", "the weights are PyTorch pickles without an index: their tensor names cannot be "
              "read without downloading them, so whether the MTP weights are there is unknown",
              [*([where] if where else []), *ev.unreadable_weights])
    elif cannot_tell(ev):
        said = (f"{ev.config_file} declares {decl.layers} MTP layer(s)" if decl else
                f"{ev.config_file} names no MTP depth (a {cfg.model_type if cfg else '?'} head shows only in its tensors)")
        b.add("NO_WEIGHT_FILES", f"{said}, and this folder has no weight files, index or headers: whether the MTP "
              f"weights exist cannot be told (config only); {_CONFIG_ONLY_HINT}",
              [where or f"{ev.config_file}: model_type = {cfg.model_type if cfg else None}",
               f"no *.safetensors, *.index.json or *.bin in {ev.target.display}"])
    elif undetermined(ev):
        b.add("MTP_UNDETERMINED", f"{where}, and no tensor of the checkpoint carries a name that any family in "
              f"mtpinspect's table gives its MTP head: model_type '{cfg.model_type if cfg else None}' is not in the table, "
              "so whether the head is there cannot be told from its names",
              [f"looked for: {', '.join(names_looked_for())}",
               f"in {ck.index_file if ck and ck.index_file else 'the checkpoint'}"])
    elif decl and decl.layers > present:
        names_expected = f"model.layers.{cfg.num_hidden_layers}.*" if cfg and cfg.num_hidden_layers else "MTP tensors"
        lines = [where or "", f"no {names_expected} / mtp.* tensors in {ck.index_file if ck else 'the repo (no safetensors found)'}"]
        if present:
            lines[1] = f"only {present} MTP layer(s) have weights"
        b.add(
            "MTP_WEIGHTS_MISSING",
            f"config announces {decl.layers} MTP layer(s) but the checkpoint has weights for {present}: "
            f"{_who_lost_the_head(origin)} (engines then load garbage or refuse)",
            [*lines, *origin.lines()],
        )
    elif not present:
        msg = f"{decl.key} = 0: the model has no MTP head" if decl else "no MTP key in config.json and no MTP tensors"
        b.add("NO_MTP", msg, [where] if where else [ev.config_file or "no config.json"])


# What turns a config-only folder into one check can judge: the Hub repo's headers, read where they are, or
# the index (a few KB, it names every tensor's shard) and, for a quantized head, the MTP shards' headers.
_CONFIG_ONLY_HINT = ("`mtpinspect check ORG/NAME` reads the Hub repo's headers instead; or add the index "
                     '(`hf download ORG/NAME --include "*.json" --local-dir DIR`: enough to tell whether the head is '
                     "there) and the MTP layers' shards (how it is quantized)")


def cannot_tell(ev: Evidence) -> bool:
    """A local folder with a config and nothing that names its tensors (no weights, no index), whose config
    declares MTP layers or belongs to a family whose head only its tensors show: a download that left the
    weights out, not a model without a head (on the Hub, the listing is the whole repo: missing is missing)."""
    if ev.checkpoint is not None or ev.unreadable_weights or ev.target.kind is not SourceKind.local_dir:
        return False
    cfg = ev.config
    decl = cfg.mtp if cfg else None
    return bool(decl.layers) if decl else cfg is not None and cfg.model_type in FAMILIES


def undetermined(ev: Evidence) -> bool:
    """A config that announces MTP layers, a checkpoint whose tensors no family's names match, and a model_type
    outside the family table: the head may be there under names nobody here knows, so it is not called missing."""
    cfg, ck = ev.config, ev.checkpoint
    decl = cfg.mtp if cfg else None
    return bool(decl and decl.layers and ck is not None and not ck.mtp.count
                and (cfg.model_type if cfg else None) not in FAMILY_OF_MODEL_TYPE)


def _why_unread(ck: CheckpointEvidence, unread: list[str]) -> str:
    if all(f in ck.not_downloaded for f in unread):
        return "not in this folder: its index names them, the download left them out"
    if all(f.endswith(".bin") for f in unread):
        return "PyTorch pickles have no header to read"
    absent = f"; {len(ck.not_downloaded)} not in this folder" if ck.not_downloaded else ""
    return f"at most {MAX_MTP_SHARDS} are read{absent}"


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


def _who_lost_the_head(origin: Origin) -> str:
    """How MTP weights a config announces and the checkpoint lacks are worded, by who made the checkpoint:
    its maker never published them, a derivative dropped them, or nobody can tell."""
    if origin.is_maker:
        return f"{origin.who or 'the maker'}, the maker, never published the MTP weights in this release (the config keeps the key)"
    if origin.kind is OriginKind.unknown:
        return ("the head is missing; whether its maker never published it or a quantization or conversion dropped it "
                "cannot be told (nothing says who made this checkpoint)")
    by = f" by {origin.who}" if origin.who else ""
    return f"this derivative{by} dropped the head in quantization or conversion; use a release that keeps it"


_RISK = "MTP head quantized: expect low or zero acceptance"
_ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}
Risks = dict[str, str]  # runtime key ("vllm", "sglang", "llama.cpp") or "*" for all -> why it is at risk


def _engine_gaps(b: ReportBuilder, audit: QuantAudit, lines: list[str]) -> Risks:
    """A finding per engine that builds a fused MTP module quantized although the list keeps its shards."""
    q = audit.config
    risks: Risks = {}
    if q is None:
        return risks
    for engine, fused in audit.engine_unexcluded:
        name = _ENGINE_NAMES.get(engine, engine)
        others = [_ENGINE_NAMES.get(e, e) for e in _ENGINE_NAMES if e != engine and engine_reading(e, q.method).maps_fused]
        leaves = sorted({f.rpartition(".")[2] for f in fused})
        shards = "; ".join(f"{leaf} <- {'/'.join(FUSED_SHARDS[leaf])}" for leaf in leaves)
        b.add("FUSED_NAME_MISMATCH",
              f"{name} will see {len(fused)} un-excluded fused MTP module(s) ({', '.join(fused[:4])}"
              f"{' ...' if len(fused) > 4 else ''}): {q.method} `{q.exclusion_key}` names their shards ({shards}), "
              f"and {name} matches the fused name itself, finds no entry, builds the module quantized and loads the "
              f"BF16 weights into it: an uninitialised head (accept length 1.00)"
              + (f"; {', '.join(others)} {'map' if len(others) > 1 else 'maps'} fused names back to their shards and "
                 f"{'keep' if len(others) > 1 else 'keeps'} the head in BF16" if others else "")
              + f". Serve it with {' or '.join(others) or 'an engine that maps fused names'}"
              + (f", or an {name} with {engine_reading(engine, q.method).fixed_by}" if engine_reading(engine, q.method).fixed_by else "")
              + ", or use a release whose list names the fused modules (or a re: pattern over the MTP block)",
              [*lines, f"{name}: {engine_reading(engine, q.method).source}",
               *[f"{_ENGINE_NAMES.get(e, e)}: {engine_reading(e, q.method).source}" for e in _ENGINE_NAMES if e != engine]])
        risks[engine] = f"{name} matches the fused names ({', '.join(leaves)}) against the list and finds no entry: quantized module, BF16 weights"
    return risks


def _undeclared(b: ReportBuilder, audit: QuantAudit, lines: list[str], model_type: str | None) -> Risks:
    """A head BF16 in its headers that the list does not exclude: at risk in every engine whose loader builds
    those modules quantized, named with its loader."""
    q = audit.config
    assert q is not None
    modules = _head_first(audit.undeclared())
    risks: Risks = {}
    exempt = []
    for engine in UNDECLARED_LOADERS:
        types, source = UNQUANTIZED_MTP_LOADERS.get((engine, q.method), (frozenset(), ""))
        if model_type in types:
            exempt.append(f"{_ENGINE_NAMES[engine]}: {source}")
            continue
        risks[engine] = (f"{len(modules)} BF16 MTP module(s) the {q.method} list does not exclude: "
                         f"{_ENGINE_NAMES[engine]} builds them quantized (load failure or garbage head)")
    b.add("MTP_UNDECLARED_BF16",
          f"the MTP head is BF16 in the headers, but the {q.method} list does not exclude {len(modules)} of its modules "
          f"({', '.join(modules[:4])}{' ...' if len(modules) > 4 else ''}): engines that build modules from the list "
          f"expect quantized weights there; at risk in {', '.join(_ENGINE_NAMES[e] for e in risks) or 'no engine'}; "
          "use a release whose list excludes the MTP modules",
          [*lines, *[f"{v.module}: {v.header_dtype}, not in the list" for v in audit.modules if v.undeclared][:4],
           *[f"{_ENGINE_NAMES[e]}: {UNDECLARED_LOADERS[e]}" for e in risks], *exempt])
    return risks


def _quant_findings(b: ReportBuilder, audit: QuantAudit, origin: Origin, model_type: str | None) -> Risks:
    """Adds quantization findings; returns the runtimes at risk and why."""
    q = audit.config
    if audit.mtp_excluded is None or q is None and audit.mtp_excluded is not False:
        return {}
    method = q.method if q else "header dtypes"
    lines = [f"{q.source}: {q.method}{'/' + q.algo if q.algo else ''}, " + (f"{audit.excluded_count} exclusion entries ({q.exclusion_key})" if q.exclusion_key else "no exclusion list")] if q else []
    kept, quant = _head_first(audit.kept()), _head_first(audit.quantized())
    untargeted = set(audit.untargeted())
    excluded = [m for m in kept if m not in untargeted]
    counts = f"{len(quant)} modules quantized, {len(excluded)} excluded by the list" + (f", {len(untargeted)} not targeted" if untargeted else "")
    header_notes = [f"{v.module}: {v.header_dtype}" + (f" ({v.note})" if v.note else "") for v in audit.modules if v.header_dtype]
    fp8 = q is not None and q.method == "fp8" or any(v.header_dtype and v.header_dtype.startswith("F8") for v in audit.modules)
    for warning in audit.fused_warnings:
        b.add("FUSED_NAME_MISMATCH", warning, lines)
    risks = _engine_gaps(b, audit, lines)
    if audit.fused_warnings:
        risks["*"] = "the list names only some shards of a fused MTP module: engines quantize all of it"
    if audit.mtp_excluded == UNDECLARED:
        return {**risks, **_undeclared(b, audit, lines, model_type)}
    if audit.mtp_excluded is True:
        b.add("MTP_EXCLUDED", f"all {len(kept)} quantizable MTP modules are kept in high precision", [*lines, *header_notes[:4]])
        return risks
    if origin.is_maker and fp8:
        judged = " (judged from the format: nothing else says who made it)" if origin.decided_by is OriginSignal.format else ""
        why = (
            f"{origin.phrase()} ships its own FP8 release with the head in FP8: the configuration its makers serve with MTP "
            f"(DeepSeek-V3 was trained in FP8; GLM FP8 releases exclude only the head's norms and projection){judged}"
        )
        code = "MTP_QUANTIZED" if audit.mtp_excluded is False else "MTP_PARTIALLY_EXCLUDED"
        b.add(code, f"MTP head in FP8 ({counts}): {why}",
              [*origin.lines(), *lines, *[f"quantized: {m}" for m in quant[:3]], *[f"excluded: {m}" for m in excluded[:3]],
               *[f"not targeted: {m}" for m in _head_first(list(untargeted))[:3]], *header_notes[:3]],
              severity=Severity.info)
        return risks
    if audit.mtp_excluded is False:
        trap = ("the classic cause of 0% draft acceptance" if not origin.is_maker
                else "not the FP8 release its makers serve the head from: expect low acceptance")
        b.add(
            "MTP_QUANTIZED",
            f"MTP head quantized ({method}) by {origin.phrase()}: {trap}; "
            "use a release that excludes mtp modules, or point the engine's draft at a BF16 head",
            [*origin.lines(), *lines, *[f"quantized: {m}" for m in quant], *header_notes[:3]],
            severity=Severity.error,
        )
    else:
        b.add(
            "MTP_PARTIALLY_EXCLUDED",
            f"only part of the MTP head is excluded from quantization by {origin.phrase()} ({counts}); "
            f"quantized: {', '.join(quant[:4])}{' ...' if len(quant) > 4 else ''}",
            [*origin.lines(), *lines, *[f"excluded: {m}" for m in excluded[:4]], *[f"quantized: {m}" for m in quant[:4]], *header_notes[:3]],
        )
    return {**risks, "*": _RISK}


def _checkpoint_runtimes(ev: Evidence, b: ReportBuilder, family: Family | None, risks: Risks) -> None:
    model = model_ref(ev)
    # Pin the commit in the commands only when the user asked for a revision other than main.
    rev = ev.target.revision if ev.target.tree.revision else None
    present = b.mtp_layers > 0
    mt = ev.config.model_type if ev.config else None

    def engine(name: str, has_mtp: bool, command: str | None) -> RuntimeVerdict:
        if not present:
            return _absent(ev)
        if family is None:
            return RuntimeVerdict(RuntimeStatus.unknown, f"model_type '{mt}' is not in mtpinspect's table for {name}", command)
        if not has_mtp:
            return RuntimeVerdict(RuntimeStatus.unsupported, f"{name} has no MTP drafting for model_type '{mt}'")
        risk = risks.get(name.lower()) or risks.get("*")
        if risk:
            return RuntimeVerdict(RuntimeStatus.at_risk, risk, command)
        return RuntimeVerdict(RuntimeStatus.supported, f"{name} drafts with this model's MTP head", command)

    b.runtimes["vllm"] = engine("vLLM", bool(family and family.vllm), vllm_command(model, rev))
    algo = family.sglang if family else None
    b.runtimes["sglang"] = engine("SGLang", bool(algo), sglang_command(model, algo, rev) if algo else None)
    b.runtimes["llama.cpp"] = _llama_for_checkpoint(ev, b, family, bool(risks.get("llama.cpp") or risks.get("*")))
    b.runtimes["transformers"] = RuntimeVerdict(RuntimeStatus.unsupported, "Transformers builds no MTP modules; generation ignores the head")


def _absent(ev: Evidence) -> RuntimeVerdict:
    if ev.unreadable_weights:
        return RuntimeVerdict(RuntimeStatus.unknown, "tensor names of pickled weights cannot be read without downloading them")
    if cannot_tell(ev):
        return RuntimeVerdict(RuntimeStatus.unknown, "cannot tell: no weight files in the folder (config only)")
    if undetermined(ev):
        return RuntimeVerdict(RuntimeStatus.unknown, "cannot tell: the config announces MTP layers under names "
                              "mtpinspect's family table does not know")
    return RuntimeVerdict(RuntimeStatus.unsupported, "no MTP weights in the checkpoint")


def _llama_for_checkpoint(ev: Evidence, b: ReportBuilder, family: Family | None, at_risk: bool) -> RuntimeVerdict:
    if not b.mtp_layers:
        return _absent(ev)
    mt = ev.config.model_type if ev.config else None
    if family is None or family.gguf_arch is None or family.conversion is Conversion.unknown:
        return RuntimeVerdict(RuntimeStatus.unknown, family.note if family and family.note else f"no known GGUF conversion of model_type '{mt}' with MTP")
    q = ev.quant
    if q and q.method not in ("fp8",):
        return RuntimeVerdict(RuntimeStatus.unsupported, f"convert_hf_to_gguf.py takes unquantized or FP8 checkpoints, not {q.method}: convert the original release")
    if family.conversion is Conversion.dropped:
        return RuntimeVerdict(RuntimeStatus.unsupported, family.note)
    graph = llama_cpp_graph(family.gguf_arch)
    if graph is not GraphSupport.graph:
        return RuntimeVerdict(RuntimeStatus.unsupported, f"llama.cpp {PINNED_LLAMA_CPP} has no MTP graph for '{family.gguf_arch}'")
    out = PurePosixPath((ev.target.repo_id or "model").split("/")[-1]).name
    if family.conversion is Conversion.sidecar:
        cmd = f"{convert_command('MODEL_DIR', out + '.gguf')} --no-mtp && {convert_command('MODEL_DIR', 'mtp-' + out + '.gguf')} --mtp && {llama_server_command(out + '.gguf', sidecar='mtp-' + out + '.gguf', program=b.server.program)}"
    else:
        cmd = f"{convert_command('MODEL_DIR', out + '.gguf')} && {llama_server_command(out + '.gguf', program=b.server.program)}"
    status = RuntimeStatus.at_risk if at_risk else RuntimeStatus.supported
    return RuntimeVerdict(status, f"converts to GGUF '{family.gguf_arch}' with its nextn tensors; llama.cpp {PINNED_LLAMA_CPP} has its MTP graph", cmd)


def apply_checkpoint_rules(ev: Evidence, b: ReportBuilder) -> None:
    mt = ev.config.model_type if ev.config else None
    family = FAMILIES.get(mt or "")
    if mt in ("gemma4", "gemma4_assistant"):
        _gemma(ev, b, mt)
        return
    b.origin = judge_origin(ev)
    _checkpoint_presence(ev, b, b.origin)
    risks: Risks = {}
    ck = ev.checkpoint
    if ck and ck.mtp.names:
        b.audit = audit_mtp(ev.quant, ck.mtp_dtypes, ck.weight_map.keys())
        risks = _quant_findings(b, b.audit, b.origin, mt)
        _unevaluated_patterns(b.audit, b)
    _checkpoint_runtimes(ev, b, family, risks)


def _unevaluated_patterns(audit: QuantAudit, b: ReportBuilder) -> None:
    if audit.unevaluated and audit.config is not None:
        b.add("PATTERN_NOT_EVALUATED", f"{len(audit.unevaluated)} exclusion regex(es) could not be evaluated within "
              f"{MATCH_TIMEOUT_S} s per name (catastrophic backtracking): they count as matching nothing, so the modules "
              "they were meant to keep are judged by the other entries and the header dtypes",
              [f"{audit.config.source}: {entry} (on {name})" for entry, name in audit.unevaluated])


def _gemma(ev: Evidence, b: ReportBuilder, mt: str) -> None:
    if mt == "gemma4_assistant":
        n = ev.config.num_hidden_layers if ev.config else None
        b.mtp_layers = n or 0
        b.layout = Layout.separate_checkpoint
        b.add("SEPARATE_DRAFTER", "this is a Gemma 4 assistant drafter: pass its GGUF with -md next to the gemma4 target",
              [f"{ev.config_file}: model_type = gemma4_assistant"], severity=Severity.info)
        b.runtimes["llama.cpp"] = RuntimeVerdict(RuntimeStatus.supported, "gemma4-assistant has an MTP draft graph (draft-mtp)",
                                                 llama_server_command("gemma-4-target.gguf", sidecar="gemma-4-assistant.gguf", program=b.server.program))
    else:
        b.layout = Layout.separate_checkpoint
        b.add("SEPARATE_DRAFTER", "Gemma 4 keeps no MTP layers in this checkpoint; it drafts with a separate "
              "gemma4_assistant checkpoint, loaded by llama.cpp as the draft model (-md) with --spec-type draft-mtp",
              [f"{ev.config_file}: model_type = gemma4, no MTP key, no MTP tensors"])
        b.runtimes["llama.cpp"] = RuntimeVerdict(RuntimeStatus.supported, "target gemma4 + a gemma4-assistant drafter GGUF (draft-mtp)",
                                                 llama_server_command("gemma-4-target.gguf", sidecar="gemma-4-assistant.gguf", program=b.server.program))
    b.runtimes["vllm"] = RuntimeVerdict(RuntimeStatus.unknown, "the pinned tables have no vLLM MTP proposer for Gemma 4", None)
    b.runtimes["sglang"] = RuntimeVerdict(RuntimeStatus.unknown, "the pinned tables have no SGLang MTP path for Gemma 4", None)
    b.runtimes["transformers"] = RuntimeVerdict(RuntimeStatus.unsupported, "Transformers builds no MTP modules; generation ignores the head")
