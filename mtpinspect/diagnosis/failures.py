"""A failed start or a crash names its cause: the line an engine printed when MTP did not start, or the
crash it died of, read the same way for the probe's own runs (rank.py) and for logs of runs made elsewhere.

- a rejected ``--spec-type`` (``unknown speculative type: X``, or the pre-MTP parser's ``unknown
  speculative decoding type without draft model``) is the build's fault or the flag's, and the build's
  usage text decides: when the log holds it (``--spec-type [none|ngram-cache|...]`` or
  ``--spec-type none,draft-simple,...``), a list without ``draft-mtp`` -> BUILD_WITHOUT_MTP (0.95: the
  build predates MTP support, llama.cpp PR #22673), a list with it -> WRONG_SPEC_TYPE (0.98). Without
  the usage text, the pre-MTP wording or a rejected ``draft-mtp`` -> BUILD_WITHOUT_MTP (0.8), any other
  rejected value -> WRONG_SPEC_TYPE (0.9). `mtp` alone proves nothing: it was the valid name on
  PR #22673's branch;
- any other start or crash reason names its cause directly (``doesn't contain MTP layers`` ->
  SIDECAR_NOT_PASSED when an mtp- file exists and was not passed, NO_MTP_HEAD when check found no
  head, else MTP_WEIGHTS_MISSING; ``MTP input row width`` or ``failed to add token`` ->
  SIDECAR_MISMATCH; ``check_tensor_dims: tensor 'token_embd.weight' not found`` (or output_norm) while
  loading the draft model -> SIDECAR_INCOMPLETE; a crash no such line explains (a signal, GGML_ASSERT,
  abort, uncaught exception or GPU fault) -> MTP_ENGINE_CRASH, confidence 0.95 when the probe
  reproduced it (its baseline ran: the crash is MTP's) and 0.8 from a log, with the change the probe
  verified as the fix, or from a log the changes its signature points at; anything else ->
  MTP_FAILED, with a fix in the log's engine's words).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mtpinspect.causes import Cause
from mtpinspect.diagnosis.advice import (
    SIDECAR_REMAKE_FIX,
    engine_crash_fix,
    failed_start_fix,
    missing_weights_fix,
)
from mtpinspect.diagnosis.static import StaticEvidence, fix_command
from mtpinspect.logread.catalogue import MTP_FAILURE_MARKERS
from mtpinspect.logread.rules_message import REJECTED_TYPE, build_without_mtp
from mtpinspect.runtime.crash import Crash, CrashKind
from mtpinspect.runtime.flags import DRAFT_MODEL, MTP_SPEC_TYPE, SPEC_TYPE, ServerArgs
from mtpinspect.runtime.workarounds import Trial, Workaround
from mtpinspect.vocabulary import Engine, EvidenceSource, Layout


def classify_failure(
    lines: Sequence[str],
    static: StaticEvidence | None,
    settings: ServerArgs,
    *,
    had_sidecar: bool,
    source: EvidenceSource,
    crash: CrashEvidence | None = None,
    offered: tuple[str, ...] | None = None,
    engine: Engine = Engine.llama_cpp,
) -> Cause | None:
    """The cause a failed start or crash names; None when nothing failed. ``offered``: the build's
    --spec-type list, from the usage text it printed (None when the log does not show it)."""
    lines = [line for line in lines if line]
    if crash is not None:
        lines = [*lines, crash.crash.summary, *crash.crash.lines]
    if not lines:
        return None
    text = "\n".join(lines)
    telling = next((line for line in lines if MTP_FAILURE_MARKERS.search(line)), lines[0])
    evidence = (telling,)
    rejected = REJECTED_TYPE.search(text)
    if rejected is not None:
        return _rejected_type(rejected, offered, static, settings, evidence, source)
    if re.search(r"MTP input row width|failed to add token", text):
        return Cause("SIDECAR_MISMATCH", 0.95, "the mtp- sidecar does not fit the main model: llama-server aborts",
                     evidence, _sidecar_fix(static), (source,))
    if _DRAFT_LACKS_SHARED.search(text) and (had_sidecar or _DRAFT_FAILED.search(text)):
        return Cause("SIDECAR_INCOMPLETE", 0.95, "the mtp- sidecar lacks tensors a draft model needs: llama-server "
                     "stops at load", evidence, SIDECAR_REMAKE_FIX, (source,))
    if _NO_HEAD.search(text):
        return _no_layers(static, settings, evidence, had_sidecar, source)
    context = _CONTEXT_FAILED.search(text)
    if context is not None:
        return _context_failed(lines, evidence, static, settings, had_sidecar, source)
    if re.search(r"MTP block missing nextn|missing tensor '[^']*nextn|weights missing from checkpoint|"
                 r"requires nextn_predict_layers > 0", text):
        return Cause("MTP_WEIGHTS_MISSING", 0.95, "the MTP layer's weights are missing", evidence,
                     missing_weights_fix(engine), (source,))
    # ggml's own "op not implemented: OP" (ggml-cpu.c ggml_get_n_tasks, then abort) is a backend without that op:
    # a crash of whatever graph asked for it, not a build without the MTP graph.
    if "not implemented" in _GGML_OP_MISSING.sub("", text):
        return Cause("NO_MTP_GRAPH", 0.9, "this build has no MTP graph for the architecture", evidence,
                     "use a llama.cpp build with MTP support for this architecture, or leave MTP off", (source,))
    if crash is not None:
        return _crash_cause(crash, static, source)
    if _NO_SUCH_FILE.search(text):  # the file the command names is not there: the user's path, nothing of MTP's
        return None
    return Cause("MTP_FAILED", 0.7, f"the MTP configuration failed: {telling}", evidence, failed_start_fix(engine),
                 (source,))


# ggml's loader cannot open the file the command names (ggml/src/gguf.cpp gguf_init_from_file: "failed to open GGUF file
# '%s' (%s)" with strerror; older builds "failed to open '%s': '%s'"): a path that does not exist, whichever model it is.
# The line as the log's failure (its function prefix stripped), or glued to a log view's stream name.
_NO_SUCH_FILE = re.compile(r"failed to open GGUF file '[^'\n]{1,600}' \(No such file or directory\)|"
                           r"gguf_init_from_file\w{0,10}: failed to open '[^'\n]{1,600}': '?No such file or directory")
_GGML_OP_MISSING = re.compile(r"\bop not implemented: [A-Z][A-Z0-9_]{0,40}")
# The loaded model has no MTP layers: llama.cpp's own words (src/llama-context.cpp:3883) or its print_info count.
_NO_HEAD = re.compile(r"doesn't contain MTP layers|n_layer_nextn\s*=\s*0\b|\.nextn_predict_layers\s+u32\s+=\s+0\b")
# common/speculative.cpp:2552/2564 (and llama.rn's "failed to create MTP draft context"): the MTP context was not
# created, for want of nextn layers or of memory; the lines before say which when the log has them.
_CONTEXT_FAILED = re.compile(r"failed to (?:create|measure|initialize|init) (?:the )?"
                             r"(?:MTP (?:draft |speculative )?|draft |speculative )context\b")
_OUT_OF_MEMORY = re.compile(r"failed to allocate|out of memory|cudaMalloc failed|OOM|not enough memory", re.IGNORECASE)


# llama_init_from_model's checks of a context's parameters (src/llama-context.cpp, the same in ik_llama.cpp), printed
# before any memory is asked for: the context was refused for what it was given, not for the model or for memory.
# Each with what the line says and what to change.
_CONTEXT_REFUSED: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"n_batch and n_ubatch cannot both be zero"),
     "it was given a batch size of 0 (n_batch and n_ubatch both 0), which llama_init_from_model refuses",
     "give the draft context a batch size: a -b / -ub of 0 on the command is passed on to it (drop it, or set -b 2048 "
     "-ub 512); where the command sets none, the engine built the draft context without one (a bug of its draft "
     "setup, as in ik_llama.cpp#2173): update it, or run mainline llama-server with --spec-type draft-mtp"),
    (re.compile(r"n_ctx and model->hparams\.n_ctx_train cannot both be zero"),
     "it was given no context size (n_ctx 0) and the draft model states none it was trained with",
     "give the draft context a size: set -c (and the draft's own context option, -cd, where the build has it) to a "
     "number, not 0"),
    (re.compile(r"V cache quantization requires flash_attn"),
     "its V cache is quantized without flash attention, which llama_init_from_model refuses",
     "turn flash attention on (-fa on) or leave the V cache unquantized for the draft (drop -ctv / the draft's "
     "-ctvd q8_0 / q4_0)"),
)


def _context_failed(lines: Sequence[str], evidence: tuple[str, ...], static: StaticEvidence | None,
                    settings: ServerArgs, had_sidecar: bool, source: EvidenceSource) -> Cause:
    """No MTP context: its parameters refused when the log says so, the model's missing head when check says so,
    memory when the log says so, else both readings."""
    for pattern, says, change in _CONTEXT_REFUSED:
        refused = next((line for line in lines if pattern.search(line)), None)
        if refused is not None:
            failed = next((line for line in lines if _CONTEXT_FAILED.search(line)), evidence[0])
            return Cause("MTP_FAILED", 0.8, f"the MTP draft context could not be made: {says} (neither the head nor "
                         "memory is at fault)", (failed, refused) if failed != refused else (refused,), change, (source,))
    if static is not None and (static.has("NO_MTP") or static.has("MTP_WEIGHTS_MISSING")) and not static.has("MTP_PRESENT"):
        return _no_layers(static, settings, evidence, had_sidecar, source)
    memory = next((line for line in lines if _OUT_OF_MEMORY.search(line)), None)
    if memory is not None:
        return Cause("MTP_FAILED", 0.8, "llama.cpp ran out of memory creating the MTP draft context (the head is not at "
                     "fault)", (*evidence, memory),
                     "free memory for the draft context: a smaller -c, fewer -ngl layers, a quantized KV cache (-ctk/-ctv "
                     "q8_0), or turn MTP off on this device; if memory is plentiful, a newer llama.cpp build (a "
                     "regression in the MTP context's allocation was fixed in PR #28183)", (source,))
    return Cause("MTP_FAILED", 0.7, "llama.cpp could not create the MTP draft context: either the model has no nextn "
                 "layers or memory for the draft context ran out (the log does not say which)", evidence,
                 "run `mtpinspect check MODEL`: no MTP head (NO_MTP, MTP_WEIGHTS_MISSING) means this GGUF cannot draft "
                 "with MTP (use one that bundles the head, or its mtp- file with -md); with the head present, give the "
                 "draft context memory (a smaller -c, -ngl, -ctk/-ctv q8_0) or try a newer llama.cpp build", (source,))


# llama.cpp loads a draft model as a whole model: a sidecar without the shared embedding or output norm
# fails its loader's tensor check (the same line for a damaged main GGUF, hence the draft-model condition).
_DRAFT_LACKS_SHARED = re.compile(r"check_tensor_dims: tensor '(?:token_embd|output_norm)\.weight' not found|"
                                 r"missing tensor '(?![^']*nextn)[^']+'")
# The draft model's load failed (common/speculative.cpp, tools/server/server-context.cpp's memory measure).
_DRAFT_FAILED = re.compile(r"failed to (?:load|measure) (?:the )?draft model|\[spec\] failed")

def _rejected_type(
    rejected: re.Match[str], offered: tuple[str, ...] | None, static: StaticEvidence | None, settings: ServerArgs,
    evidence: tuple[str, ...], source: EvidenceSource,
) -> Cause:
    """The build's own type list decides between an old build and a wrong flag (see the module docstring)."""
    value = rejected["value"]
    if offered is not None and MTP_SPEC_TYPE in offered:
        return _wrong_spec_type(static, settings, (*evidence, f"the build offers --spec-type {','.join(offered)}"), source, 0.98)
    if offered is not None:
        usage = f"the build's usage text: --spec-type {'|'.join(offered)} (no {MTP_SPEC_TYPE})"
        return build_without_mtp(f"its --spec-type offers no {MTP_SPEC_TYPE}", (*evidence, usage), source, 0.95)
    if value is None:
        return build_without_mtp("the message is the pre-MTP argument parser's (builds before PR #22673)",
                                  (*evidence, "the usage text with the build's --spec-type list is not in the log"), source, 0.8)
    if value == MTP_SPEC_TYPE:
        return build_without_mtp(f"the build rejects {MTP_SPEC_TYPE} itself", evidence, source, 0.8)
    return _wrong_spec_type(static, settings, evidence, source, 0.9)


def _wrong_spec_type(static: StaticEvidence | None, settings: ServerArgs, evidence: tuple[str, ...],
                     source: EvidenceSource, confidence: float) -> Cause:
    fixed = settings.without(SPEC_TYPE, DRAFT_MODEL)
    return Cause("WRONG_SPEC_TYPE", confidence, f"llama-server rejects the --spec-type value (MTP is `{MTP_SPEC_TYPE}`)",
                 evidence, fix_command(static, fixed), (source,))


@dataclass(frozen=True)
class CrashEvidence:
    """An engine crash with MTP on, and what is known about getting around it."""

    crash: Crash
    tried: tuple[Trial, ...] = ()  # changes the probe tried, in order (empty: none tried)
    fix: ServerArgs | None = None  # the arguments that started and decoded (verified by the probe)
    fixed_by: Workaround | None = None
    suggested: tuple[Workaround, ...] = ()  # from a log's signature, when nothing could be tried
    baseline_ran: bool = False  # the same server decodes the model without MTP
    engine: Engine = Engine.llama_cpp  # whose crash: the fix is said in that engine's terms


def _crash_cause(evidence: CrashEvidence, static: StaticEvidence | None, source: EvidenceSource) -> Cause:
    crash = evidence.crash
    lines = [crash.summary]
    if crash.kind in (CrashKind.SIGNAL, CrashKind.BACKTRACE) and crash.lines:
        lines.append(f"last log line: {crash.lines[-1].strip()}")  # only the signal: where it died is the clue
    if evidence.baseline_ran:
        lines.append("without MTP the same llama-server decodes this model (the probe's baseline)")
    lines += [f"tried {t.workaround.value}: {t.outcome}" for t in evidence.tried]
    without = " and decodes without it" if evidence.baseline_ran else ""
    message = f"the engine crashes with MTP on{without}: {crash.summary}"
    if evidence.fix is not None and evidence.fixed_by is not None:
        fix = (f"verified: starts and decodes {evidence.fixed_by.phrase}: {fix_command(static, evidence.fix)} "
               "(the crash is the engine's: report it to llama.cpp with this log)")
        return Cause("MTP_ENGINE_CRASH", 0.95, message, tuple(lines), fix, (source,))
    if evidence.tried:
        tried = ", ".join(t.workaround.value for t in evidence.tried)
        fix = (f"no single change made it start and decode (tried {tried}): use another llama.cpp build (a newer "
               "release, or the pinned one: mtpinspect runtime build), report the crash to llama.cpp with this log, "
               "and leave MTP off meanwhile")
        return Cause("MTP_ENGINE_CRASH", 0.95 if evidence.baseline_ran else 0.85, message, tuple(lines), fix, (source,))
    other_engine = engine_crash_fix(evidence.engine)
    if other_engine is not None:
        return Cause("MTP_ENGINE_CRASH", 0.8, message, tuple(lines), other_engine, (source,))
    order = ", ".join(w.value for w in evidence.suggested[:4]) or "a newer llama.cpp build"
    fix = (f"try, one change at a time: {order}; `mtpinspect diagnose MODEL -- <your llama-server flags>` tries them "
           "on this machine and says which one works")
    return Cause("MTP_ENGINE_CRASH", 0.8, message, tuple(lines), fix, (source,))


def _no_layers(
    static: StaticEvidence | None, settings: ServerArgs, evidence: tuple[str, ...], had_sidecar: bool, source: EvidenceSource
) -> Cause:
    if static is not None and static.report is not None and static.report.layout is Layout.sidecar and not had_sidecar:
        return Cause("SIDECAR_NOT_PASSED", 0.95,
                     "the main GGUF has no MTP layers; its head is in the mtp- file, which was not passed with -md",
                     evidence, fix_command(static, settings), (source,))
    if static is not None and static.has("NO_MTP") and not static.has("MTP_PRESENT"):
        return Cause("NO_MTP_HEAD", 0.95, "the model has no MTP layers", evidence,
                     "MTP cannot be used with this model: drop --spec-type draft-mtp", (source,))
    return Cause("MTP_WEIGHTS_MISSING", 0.9, "the model loaded has no MTP layers", evidence,
                 "use a GGUF that bundles the head (converted without --no-mtp), or pass its mtp- file with -md",
                 (source,))


def _sidecar_fix(static: StaticEvidence | None) -> str:
    name = static.sidecar.name if static is not None and static.sidecar is not None else "the mtp- file"
    return (f"replace {name} with the mtp- file converted from the same model, revision and quantization as the "
            "main GGUF (python convert_hf_to_gguf.py MODEL_DIR --mtp, from the same snapshot)")
