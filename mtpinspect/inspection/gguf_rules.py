"""Rules for a GGUF: bundled head, mtp- sidecar (whether it pairs, whether llama.cpp can load it as a
draft model), head lost in conversion, llama.cpp graph support for the architecture, and very
low-bit head tensors."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath

from mtpinspect.inspection.builder import ReportBuilder, trunk_beside
from mtpinspect.inspection.evidence import Evidence, GgufEvidence
from mtpinspect.inspection.report import BLOCKING_FINDINGS, RuntimeVerdict
from mtpinspect.inspection.support import (
    DRAFT_REQUIRED_TENSORS,
    LLAMA_CPP_MTP_GRAPH,
    LOW_BIT_GGML,
    llama_cpp_graph,
    llama_server_command,
)
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP
from mtpinspect.sources.filenames import quant_tag
from mtpinspect.vocabulary import GraphSupport, Layout, RuntimeStatus, Severity, SourceKind

# More MTP layers than any published model has (they have 1 to 3): a count above it is a finding, never a size.
PLAUSIBLE_MTP_LAYERS = 64
# Below this median cosine a sidecar's embedding rows are another training run's. Measured (bench/README.md):
# the same embedding at Q8_0 against F16, BF16, Q6_K, Q4_0, IQ4_NL, Q2_K: 0.955-1.000, against TQ1_0: 0.65;
# heads of another training run: -0.11 to 0.05.
FOREIGN_COSINE = 0.3
# Findings with which llama.cpp loads and drafts, but the head is unlikely to draft well: "at risk".
HEAD_AT_RISK = ("LOW_BIT_MTP_HEAD", "NEXTN_COUNT_UNSUPPORTED", "SIDECAR_MISMATCH", "SIDECAR_FOREIGN")
# GGUF architectures whose HF originals all carry an MTP head: a GGUF without it lost it in conversion.
_ARCHS_WITH_MTP_ORIGINALS = {"qwen35", "qwen35moe", "qwen3next", "glm4moe", "glm-dsa", "deepseek32", "mimo2", "step35"}


def _tensor_line(g: GgufEvidence, name: str) -> str:
    t = g.tensors[name]
    return f"{name} {t.ggml_type} {list(t.shape)}"


def _pairing_problems(main: GgufEvidence, side: GgufEvidence) -> tuple[list[str], list[str]]:
    """(blocking, drafting) problems of a sidecar next to its main GGUF. Blocking ones stop llama-server:
    a width mismatch aborts when the MTP draft context is created, a smaller vocabulary on the first
    draft. The others start and draft, with a head made for another model."""
    blocking, drafting = [], []
    checks = [
        ("architecture", main.arch, side.arch, blocking),
        ("n_embd", main.embedding_length, side.embedding_length, blocking),
        ("vocabulary size", main.vocab_size, side.vocab_size, blocking),
        # A trunk-only main (converted with --no-mtp) has block_count L; the mtp- file keeps L + N.
        ("trunk layers", _trunk_layers(main), _trunk_layers(side), drafting),
    ]
    for label, a, b, kind in checks:
        if a != b:
            kind.append(f"{label}: main {a} vs sidecar {b}")
    if main.nextn_layers is not None and side.nextn_layers is not None and main.nextn_layers != side.nextn_layers:
        blocking.append(f"nextn_predict_layers: main {main.nextn_layers} vs sidecar {side.nextn_layers}")
    if not side.nextn_layers:
        blocking.append(f"sidecar has no {side.arch}.nextn_predict_layers key")
    da, db = main.tokenizer_digest, side.tokenizer_digest
    if da and db and da != db and main.vocab_size == side.vocab_size:
        drafting.append("tokenizer tokens differ (same size, different strings)")
    return blocking, drafting


@dataclass(frozen=True)
class Kinship:
    """What the sampled embedding rows say of a sidecar: trained with this trunk's embedding or not."""

    foreign: bool
    line: str
    rows: tuple[str, ...]  # one line per row compared, for a foreign sidecar's evidence
    non_finite: tuple[str, ...] = ()  # the sidecar's sampled rows that hold NaN or Inf: a broken head


def _embedding_kinship(ev: Evidence) -> Kinship | None:
    """The sidecar's token_embd rows against the trunk's. Identical bytes, or vectors within the quantization's
    error (median cosine at least FOREIGN_COSINE), say the head was trained with this embedding; rows of
    another training run are unrelated vectors (cosine near 0). The figures: bench/README.md, issue 32."""
    c = ev.embedding
    if c is None:
        return Kinship(False, f"{ev.sidecar.files[0] if ev.sidecar else 'the sidecar'}: embedding rows not compared: "
                       f"{ev.embedding_problem}", ()) if ev.embedding_problem else None
    tokens = [r for r in c.rows if r.tensor == "token_embd.weight"]
    said = [r for r in tokens if r.identical or r.cosine is not None]
    main_type, side_type = c.types["token_embd.weight"]
    where = f"{c.sidecar_file}: token_embd.weight ({side_type}) against {c.main_file}'s ({main_type}), {len(tokens)} rows " \
            f"sampled, {c.bytes_read} bytes read"
    broken = tuple(f"{r.tensor} row {r.row}: NaN or Inf in {c.sidecar_file}" for r in c.rows if r.sidecar_finite is False)
    if broken:
        return Kinship(False, f"{where}: {len(broken)} of {len(c.rows)} sampled rows hold NaN or Inf", (), broken)
    if not said:
        unreadable = [r for r in tokens if r.sidecar_finite is None or r.main_finite is None]
        why = "a type gguf-py cannot read" if unreadable else "all zero"
        return Kinship(False, f"{where}: no row could be compared ({why})", ())
    cosines = sorted(1.0 if r.identical else r.cosine or 0.0 for r in said)
    median = cosines[len(cosines) // 2]
    norm = next((r for r in c.rows if r.tensor == "output_norm.weight"), None)
    norm_said = "" if norm is None else f"; output_norm {'identical' if norm.identical else 'differs'}"
    if all(r.identical for r in said):
        return Kinship(False, f"{where}: every row byte for byte the main file's{norm_said}: the head was trained "
                       "with this embedding", ())
    if median >= FOREIGN_COSINE:
        return Kinship(False, f"{where}: the same vectors within the quantization's error (cosine "
                       f"{cosines[0]:.3f}-{cosines[-1]:.3f}){norm_said}: the head was trained with this embedding", ())
    rows = tuple(f"token {r.row}: cosine {r.cosine:.3f}" for r in said if r.cosine is not None)
    return Kinship(True, f"{where}: unrelated vectors (median cosine {median:.3f}, below {FOREIGN_COSINE}){norm_said}",
                   rows)


def _own_head_rows(ev: Evidence, b: ReportBuilder) -> None:
    """A head whose own embedding rows hold NaN or Inf is broken, however well it is laid out."""
    h = ev.head_rows
    if h is None or not h.non_finite:
        return
    b.add("MTP_HEAD_NON_FINITE", f"{h.file} is a broken head: {h.tensor}, the embedding its head drafts with, holds "
          f"NaN or Inf ({len(h.non_finite)} of {len(h.rows)} sampled rows), so every draft is garbage; use an intact file",
          [f"{h.file}: {h.tensor} ({h.ggml_type}), rows {', '.join(map(str, h.non_finite))} of the {len(h.rows)} sampled "
           f"hold NaN or Inf, {h.bytes_read} bytes read"])


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


def _gguf_mtp_types(g: GgufEvidence) -> dict[str, int]:
    tensors = g.tensors
    return dict(Counter(tensors[n].ggml_type for n in g.mtp.block if n in tensors).most_common())


def apply_gguf_rules(ev: Evidence, b: ReportBuilder) -> None:
    g = ev.gguf
    assert g is not None
    arch = g.arch
    key = f"{arch}.nextn_predict_layers"
    head = g  # the file that carries the head
    mtp_tensors = [n for n in g.mtp.nextn if n in g.tensors]
    key_line = f"{g.files[0]}: {key} = {g.nextn_layers}, block_count = {g.block_count}"
    if arch == "gemma4" or (ev.sidecar and ev.sidecar.arch == "gemma4-assistant"):
        _gguf_gemma(ev, b)
        return
    if mtp_tensors and not g.has_trunk:
        b.layout = Layout.sidecar
        b.mtp_layers = len(g.mtp.blocks)
        b.add("MTP_SIDECAR", "this file is an MTP sidecar (nextn tensors only, no blk.0.attn_norm): "
              "pass it with -md next to its main GGUF", [key_line, *_nextn_inventory(g)[0]])
    elif mtp_tensors:
        b.layout = Layout.bundled
        b.mtp_layers = len(g.mtp.blocks)
        b.add("MTP_PRESENT", f"{b.mtp_layers} MTP layer(s) bundled in the GGUF ({len(g.mtp.block)} tensors in block(s) "
              f"{', '.join(map(str, g.mtp.blocks))})", [key_line, *_nextn_inventory(g)[0]])
    if mtp_tensors:
        _own_head_rows(ev, b)
    elif ev.sidecar is not None:
        s = ev.sidecar
        head = s
        b.layout = Layout.sidecar
        b.mtp_layers = len(s.mtp.blocks) if s.mtp.nextn else 0
        kinship = _embedding_kinship(ev)
        b.add("MTP_SIDECAR", f"the MTP head ships as a separate file: {', '.join(s.files)} (pass it with -md)",
              [ev.sidecar_choice.why,
               f"{s.files[0]}: {s.arch}.nextn_predict_layers = {s.nextn_layers}, block_count = {s.block_count}, "
               f"trunk {'present' if s.has_trunk else 'absent'}", *_nextn_inventory(s)[0],
               *([kinship.line] if kinship is not None and not kinship.foreign else [])])
        blocking, drafting = _pairing_problems(g, s)
        if blocking or drafting:
            first = (blocking or drafting)[0]
            b.add("SIDECAR_MISMATCH", f"{s.files[0]} does not pair with {g.files[0]}: {first}"
                  + ("" if blocking else " (llama.cpp loads it, but the head was made for another model)"),
                  [*blocking, *drafting], severity=None if blocking else Severity.warning)
        if kinship is not None and kinship.non_finite:
            b.add("MTP_HEAD_NON_FINITE", f"{s.files[0]} is a broken head: its embedding holds NaN or Inf "
                  f"({len(kinship.non_finite)} of the sampled rows), so every draft is garbage; use an intact mtp- file",
                  [kinship.line, *kinship.non_finite])
        if kinship is not None and kinship.foreign:
            b.add("SIDECAR_FOREIGN", f"{s.files[0]} was trained with another embedding than {g.files[0]}'s: its head "
                  "reads this trunk's hidden states without having been trained on them, so most drafts are rejected "
                  "(use the mtp- file of the same release)", [kinship.line, *kinship.rows])
        missing = [n for n in DRAFT_REQUIRED_TENSORS if n not in s.tensors]
        if missing:
            b.add("SIDECAR_INCOMPLETE", f"{s.files[0]} has no {', '.join(missing)}: llama.cpp loads a draft model as a "
                  f"whole model and stops with \"check_tensor_dims: tensor '{missing[0]}' not found\"",
                  [f"{s.files[0]}: {len(s.tensors)} tensors, none named {', '.join(missing)}"])
    elif g.nextn_layers:
        b.add("MTP_WEIGHTS_MISSING", f"{key} = {g.nextn_layers} but no blk.N.nextn.* tensors: llama.cpp fails to load "
              "or aborts with --spec-type draft-mtp", [key_line])
    else:
        _gguf_without_head(ev, b, key_line)
    _unbacked_layers(b, head)
    if b.mtp_layers:
        _gguf_graph_and_types(b, head)
        b.mtp_bytes, b.mtp_params = _gguf_mtp_size(head)
        b.mtp_types = _gguf_mtp_types(head)
    _gguf_runtimes(ev, b, head)


def _unbacked_layers(b: ReportBuilder, head: GgufEvidence) -> None:
    """A head that declares more MTP layers than its tensors hold: llama.cpp stops at the missing blocks.
    The count comes from the tensors, never from the key (a header may claim millions)."""
    declared = head.nextn_layers
    if not b.mtp_layers or not declared or declared <= b.mtp_layers:
        return
    far = f" (no real model has more than {PLAUSIBLE_MTP_LAYERS})" if declared > PLAUSIBLE_MTP_LAYERS else ""
    b.add("MTP_WEIGHTS_MISSING", f"{head.arch}.nextn_predict_layers = {declared}{far} but the tensors hold "
          f"{b.mtp_layers} MTP layer(s): llama.cpp fails to load the missing blocks",
          [f"{head.files[0]}: {head.arch}.nextn_predict_layers = {declared}, block_count = {head.block_count}",
           f"MTP tensors in block(s) {', '.join(map(str, head.mtp.blocks))}"])


def _gguf_without_head(ev: Evidence, b: ReportBuilder, key_line: str) -> None:
    g = ev.gguf
    assert g is not None
    passed = list(ev.sidecar_choice.passed_over)
    decl = ev.config.mtp if ev.config else None
    name = str(g.first.get("general.name") or g.first.get("general.basename") or g.files[0])
    if decl is not None and decl.layers > 0 or (decl is None and g.arch in _ARCHS_WITH_MTP_ORIGINALS) or (
        g.arch == "deepseek2" and decl is None and "kimi" not in name.lower()
    ):
        why = "DeepSeek-V2/V3 conversions drop the MTP layer (skip_mtp)" if g.arch == "deepseek2" else (
            "the original has an MTP head; convert with the head (no --no-mtp) or use a GGUF that bundles it")
        b.add("MTP_DROPPED_IN_CONVERSION", f"no nextn tensors and no mtp- sidecar in this {g.arch} GGUF: {why}",
              [key_line, f"general.name = {name}", *([f"{ev.config_file}: {decl.key} = {decl.layers}"] if decl else []), *passed])
    elif g.arch == "deepseek4":
        b.add("SIDECAR_NOT_FOUND", "DeepSeek-V4 GGUFs carry MTP only in a separate mtp- file; none was found", [key_line, *passed])
    else:
        b.add("NO_MTP", f"no nextn tensors and no {g.arch}.nextn_predict_layers key: this GGUF has no MTP head", [key_line, *passed])


def _gguf_graph_and_types(b: ReportBuilder, head: GgufEvidence) -> None:
    arch = head.arch
    graph = llama_cpp_graph(arch)
    if graph is GraphSupport.unused:
        b.add("ARCH_NO_MTP_GRAPH", f"llama.cpp {PINNED_LLAMA_CPP} keeps '{arch}' nextn tensors but has no MTP graph: "
              "they load as 'unused tensor' and draft-mtp cannot use them", [f"general.architecture = {arch}"])
    elif graph is GraphSupport.unknown:
        b.add("ARCH_NO_MTP_GRAPH", f"llama.cpp {PINNED_LLAMA_CPP} has no MTP draft graph for architecture '{arch}'",
              [f"general.architecture = {arch}"])
    elif LLAMA_CPP_MTP_GRAPH[arch] == "1" and (head.nextn_layers or 0) > 1:
        b.add("NEXTN_COUNT_UNSUPPORTED", f"'{arch}' MTP graph takes exactly 1 layer, the file has {head.nextn_layers}",
              [f"{arch}.nextn_predict_layers = {head.nextn_layers}"])
    _, low = _nextn_inventory(head)
    if low:
        b.add("LOW_BIT_MTP_HEAD", f"{len(low)} MTP tensor(s) at very low-bit types: heads this small often draft garbage "
              "(e.g. 0/3595 accepted with an IQ3_S head); use a GGUF whose nextn tensors are Q8_0 or better", low)


def _gguf_runtimes(ev: Evidence, b: ReportBuilder, head: GgufEvidence) -> None:
    g = ev.gguf
    assert g is not None
    b.runtimes["llama.cpp"] = _llama_for_gguf(ev, b, g, head)
    gguf_only = "vLLM and SGLang do not run MTP from GGUF files; use the original HF checkpoint"
    b.runtimes["vllm"] = RuntimeVerdict(RuntimeStatus.unsupported, gguf_only)
    b.runtimes["sglang"] = RuntimeVerdict(RuntimeStatus.unsupported, gguf_only)


def _llama_for_gguf(ev: Evidence, b: ReportBuilder, g: GgufEvidence, head: GgufEvidence) -> RuntimeVerdict:
    t = ev.target
    blocking = next((f for f in b.findings if f.severity is Severity.error and f.code in BLOCKING_FINDINGS), None)
    if not b.mtp_layers:
        return RuntimeVerdict(RuntimeStatus.unsupported, b.findings[0].message if b.findings else "no MTP head")
    if blocking:
        return RuntimeVerdict(RuntimeStatus.unsupported, blocking.message)
    if b.layout == Layout.sidecar and ev.sidecar is None:
        # The source itself is the mtp- file: its main GGUF when it lies beside it, else "MAIN.gguf" for the user to fill in.
        trunk = trunk_beside(ev)
        return RuntimeVerdict(RuntimeStatus.supported, "load the main GGUF with -m and this file with -md",
                              llama_server_command(trunk or "MAIN.gguf", sidecar=t.file_ref(g.files[0]), program=b.server.program))
    at_risk = any(b.has(code) for code in HEAD_AT_RISK)
    status = RuntimeStatus.at_risk if at_risk else RuntimeStatus.supported
    reason = f"llama.cpp {PINNED_LLAMA_CPP} has the '{head.arch}' MTP draft graph"
    sidecar = t.file_ref(ev.sidecar.files[0]) if b.layout == Layout.sidecar and ev.sidecar is not None else None
    if t.kind is not SourceKind.hub:
        return RuntimeVerdict(status, reason, llama_server_command(t.file_ref(g.files[0]), sidecar=sidecar, program=b.server.program))
    # -hf REPO:QUANT also fetches the mtp- sibling when --spec-type draft-mtp is given (llama.cpp common/download.cpp).
    quant = t.quant or quant_tag(g.files[0])
    if quant:
        if sidecar:
            reason += f"; with -hf and --spec-type draft-mtp, llama-server also downloads {PurePosixPath(sidecar).name}"
        return RuntimeVerdict(status, reason, llama_server_command(f"{t.repo_id}:{quant}", hf=True, program=b.server.program))
    return RuntimeVerdict(status, reason, llama_server_command(t.repo_id or t.display, hf=True, hf_file=g.files[0], sidecar=sidecar, program=b.server.program))


def _gguf_gemma(ev: Evidence, b: ReportBuilder) -> None:
    g, s = ev.gguf, ev.sidecar
    assert g is not None
    t = ev.target
    b.layout = Layout.separate_checkpoint
    if s is not None and s.arch == "gemma4-assistant":
        b.mtp_layers = s.nextn_layers or s.block_count or 0
        b.add("SEPARATE_DRAFTER", f"Gemma 4 drafts with the assistant GGUF {s.files[0]} (gemma4-assistant, "
              f"{b.mtp_layers} layer(s)): pass it with -md", [f"{s.files[0]}: general.architecture = gemma4-assistant"])
        b.runtimes["llama.cpp"] = RuntimeVerdict(RuntimeStatus.supported, "gemma4 target + gemma4-assistant drafter (draft-mtp)",
                                                 llama_server_command(t.file_ref(g.files[0]), sidecar=t.file_ref(s.files[0]), program=b.server.program))
        b.mtp_bytes, b.mtp_params = sum(x.nbytes for x in s.tensors.values()), sum(x.n_elements for x in s.tensors.values())
    elif g.arch == "gemma4-assistant":
        b.mtp_layers = g.nextn_layers or g.block_count or 0
        b.add("SEPARATE_DRAFTER", "this GGUF is a Gemma 4 assistant drafter: pass it with -md next to a gemma4 target",
              [f"{g.files[0]}: general.architecture = gemma4-assistant"])
        b.runtimes["llama.cpp"] = RuntimeVerdict(RuntimeStatus.supported, "gemma4-assistant has an MTP draft graph",
                                                 llama_server_command("gemma-4-target.gguf", sidecar=g.files[0], program=b.server.program))
    else:
        b.add("SEPARATE_DRAFTER", "Gemma 4 has no MTP layers of its own; it needs a gemma4-assistant drafter GGUF, "
              "and none was found beside this file", [f"{g.files[0]}: general.architecture = gemma4"], severity=Severity.warning)
        b.runtimes["llama.cpp"] = RuntimeVerdict(RuntimeStatus.unsupported, "no gemma4-assistant drafter found")
    gguf_only = "vLLM and SGLang do not run MTP from GGUF files"
    b.runtimes["vllm"] = RuntimeVerdict(RuntimeStatus.unsupported, gguf_only)
    b.runtimes["sglang"] = RuntimeVerdict(RuntimeStatus.unsupported, gguf_only)
