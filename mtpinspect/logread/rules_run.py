"""Rules for pasted logs that turn on what the run was (run_facts.py) rather than on its figures, and the tie to MTP.

- a crash or failed start in a run with MTP off is not MTP's: no cause, a note that says so; nor is a
  crash in an excerpt that shows nothing of the run when nothing puts it on the speculative path and it is
  a lone signal line (it says nothing of what crashed, even where an app names the engine) or its place is a component MTP never runs through
  (the multimodal projector, the tokenizer, the grammar); otherwise such a crash is MTP's only if MTP was
  on, and the cause says so (rank.py);
- a crash in a run with MTP off but another drafter on (``--spec-type draft-eagle3``, a vLLM EAGLE method) is the
  speculative path's when the drafting table (drafters.py) places it in that drafter's code (an assert on
  ``t_layer_inp``, a ``common_speculative_*`` frame): MTP_ENGINE_CRASH at medium; the setting alone ties nothing;
- ``draft-mtp`` chained with another model drafter (``-md`` DFlash/EAGLE beside ``--spec-type
  draft-mtp``) whose draft file has no MTP layers -> DRAFTER_COMBINATION (llama.cpp#27839);
- vLLM's "Following weights were not initialized from checkpoint: {...}": MTP-layer weights
  (``eh_proj``, ``enorm``, ``hnorm``, ``mtp_block``, ``mtp.``) -> MTP_WEIGHTS_MISSING (fine-tunes and SFT
  releases drop the head); only the weights an MTP layer shares with the target (``embed_tokens``,
  ``shared_head.head``, ``lm_head``), or any when `check` found the head in the checkpoint ->
  MTP_LOADER_BUG (vllm#27597, #49869: the loader skips or misnames weights the checkpoint has);
- vLLM's "Pipeline parallelism is not supported for this model" with MTP -> ENGINE_LIMITATION: the MTP
  drafter classes do not implement SupportsPP (vllm#52069, PR #46994);
- the runs of one text compared by their decode speed (a table of configurations with a baseline row): every
  drafting run no faster than the baseline while its drafts are accepted (50% or more) -> SLOWER_THAN_BASELINE; a table
  read by its words (tables/) compares its runs within each key (batch size, prompt, a speed column's condition):
  one key where every drafting run is no faster than that key's baseline (as fast is no gain), its drafts accepted or their rate not
  shown -> SLOWER_THAN_BASELINE; so is one drafting condition (a column: "main d=2") no faster than each key's baseline
  under two keys or more, whatever the other columns show; a
  run that drafts more tokens per step (its n-max) decoding slower than one that drafts fewer ->
  NMAX_TOO_HIGH; both at medium confidence (the paste's own timings, not measured here);
- llama.cpp crashes with a known place: "invalid vector subscript" while loading a draft or MTP head
  (the device split of src/llama-model.cpp: llama.cpp#22337, #27454; Gemma 4 assistants #24795,
  #25873) and "Gemma4Assistant requires ctx_other" (a drafter context created without the target's:
  llama-cli, LM Studio; llama.cpp#24343) -> MTP_ENGINE_CRASH with where, the flag and the change to try; but the
  ctx_other line followed by an allocation failure (out of device memory) is the memory fit's probe before the
  drafter's real context ran out of memory: the start failing -> MTP_FAILED at medium (llama.cpp#24758).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mtpinspect.causes import FINE_ACCEPTANCE, SLOWER, Cause
from mtpinspect.logread.catalogue import SPECULATIVE_WORDS, Hit, Meaning
from mtpinspect.logread.drafters import DRAFTING_CODE, drafting_name, drafting_place
from mtpinspect.logread.rules_loader import loader_cause
from mtpinspect.logread.rules_message import about_drafting, drafter_loading, unknown_drafter
from mtpinspect.logread.run_facts import LogApp, MtpUse
from mtpinspect.logread.runs import LogEvidence
from mtpinspect.logread.voices import without_operands
from mtpinspect.runtime.crash import CrashKind
from mtpinspect.vocabulary import Engine, EvidenceSource

_NOT_INITIALIZED = re.compile(r"not initialized from checkpoint\**:?\s*(?:\{(?P<names>[^}\n]*))?")
_SHARED = re.compile(r"embed_tokens|shared_head\.head|lm_head")
# pre_fc_norm_hidden / pre_fc_norm_embedding: Qwen3-Next MTP layer's own norms (vllm/model_executor/models/qwen3_next_mtp.py).
_MTP_WEIGHT = re.compile(r"eh_proj|enorm|hnorm|mtp_block|\bmtp\.|nextn|shared_head\.norm|pre_fc_norm_(?:hidden|embedding)")
_PIPELINE = "Pipeline parallelism is not supported"
_SUBSCRIPT = "invalid vector subscript"
_CTX_OTHER = "Gemma4Assistant requires ctx_other"


# Where MTP never runs: a crash placed there is not MTP's, whatever the run had on.
_ELSEWHERE = re.compile(r"\bclip\.cpp|\bmtmd\b|mtmd[/\\_]|mmproj|llama-grammar|llama-vocab|tokeniz", re.IGNORECASE)


def crash_may_be_mtps(log: LogEvidence) -> bool:
    """A crash in an excerpt that shows nothing of the run's setup may be MTP's (see the module docstring)."""
    if log.crash_owner is not None:  # another program's: its words are its own (a tool's assert on ``node.nextn``)
        return False
    if log.scan is not None and (log.scan.mtp_sign or log.scan.first(Meaning.speculation) or log.telling):
        return True
    crash = log.crash
    if crash is None:
        return True
    if any(SPECULATIVE_WORDS.search(w) for w in (crash.message, crash.where or "", *crash.lines)) or \
            drafting_place((crash.message, crash.where or "", *crash.lines)) is not None:
        return True
    if crash.kind is CrashKind.SIGNAL and len(crash.lines) <= 1:
        return False
    return _ELSEWHERE.search(f"{crash.where or ''} {crash.message}") is None


# The MTP flags and drafter words of the llama.cpp argument a rejected-argument line names.
_SPEC_ARGUMENT = re.compile(r"--spec|--draft|-md\b|--model-draft|-mtp\b|--mtp|--multi-token|draft-mtp")
_REJECTED_ARGUMENT = re.compile(r"(?:invalid|unknown) argument:?\s+-|invalid argument: -")
# The same refusal by the Python front ends of the llama.cpp family (llama-cpp-python's argparse and pydantic settings):
# an option this version does not have. A Python engine's own refusal (vLLM, SGLang) is its limit (rules_message.py).
_REFUSED_OPTION = re.compile(r"\bunrecognized arguments?:\s+-|\bextra_forbidden\b|\bExtra inputs are not permitted\b")
# Catalogue lines that are about MTP only when what they name is: a rejected argument (any flag), an MSVC
# out-of-range (any loader), a failed batch add (any batch).
_GENERIC_FAILURES = frozenset({"argument error", "vector subscript", "failed to add token", "pipeline parallelism",
                               "not initialized from checkpoint", "context parameters refused"})


# src/llama-model.cpp's loader: "model has unused tensor %s (size = %zu bytes) -- ignoring".
_UNUSED_TENSOR = re.compile(r"model has unused tensor \S{1,200} \(size = \d{1,15} bytes\) -- ignoring")


def mtp_tie(log: LogEvidence) -> str | None:
    """What ties the text to the speculative / MTP path, as the line that does; None when nothing does.

    A failure is MTP's to explain only with a tie: the drafter's own figures or lines, an MTP or speculative setting
    in the command, an engine's MTP / speculative / draft / NextN / EAGLE code in a traceback or a crash's place, an
    engine's own line about MTP (a rejected --spec-type, missing nextn layers), an exception whose text names a
    speculative feature. Without one, a crash is a crash and a failed start a failed start, of whatever printed it."""
    if log.drafted is not None or log.acceptance is not None or log.mean_length is not None:
        return log.draft_lines[0] if log.draft_lines else "the drafter's figures"
    if log.mtp_use is MtpUse.on and log.run is not None:
        return log.run.evidence
    if _foreign_traceback(log):  # another program's traceback: its words about drafts are its own (a CMS's draft_model)
        return None
    if log.crash_owner is not None:  # the shell, an assert or the frames say another program died (an image script)
        return None
    # The loader's "model has unused tensor blk.N.nextn... -- ignoring" says the head was left out of this load: a
    # crash after it, with nothing else of MTP's, is the load's, not MTP's (it ties a failure MTP was asked for).
    unused = log.unused_nextn if log.crash is None else []
    if log.mtp_context or unused or log.offered_spec_types:
        return log.mtp_context or (unused[0] if unused else "the build's --spec-type listing")
    hits = log.scan
    if hits is not None:
        python_engine = log.runtime in (Engine.vllm, Engine.sglang) or (hits.writer in (Engine.vllm, Engine.sglang))
        for hit in hits.hits:
            message = hit.message
            if message.cause is None and (_REJECTED_ARGUMENT.search(hit.line) or
                                          (not python_engine and _REFUSED_OPTION.search(hit.line))):
                continue  # a flag the build rejects that is not an MTP flag: a misspelling, nothing of MTP's path
            if message.meaning is Meaning.speculation or message.mtp is MtpUse.on or message.cause is not None or \
                    (message.on_path and log.app is None):
                return f"line {hit.number}: {hit.line[:200]}"
            if message.meaning is Meaning.mtp_failure and (message.name not in _GENERIC_FAILURES or
                                                           _SPEC_ARGUMENT.search(hit.line) or SPECULATIVE_WORDS.search(hit.line)
                                                           or _MTP_WEIGHT.search(hit.line)):
                return f"line {hit.number}: {hit.line[:200]}"
            # Its words, not a file or branch it names; an error about drafts only where an engine or app speaks (a
            # mail client's "failed to load draft model for account 2" is its own).
            if (message.meaning in (Meaning.exception, Meaning.engine_gap) or
                    (message.meaning is Meaning.app_refusal and about_drafting(log, hit.line))) and \
                    SPECULATIVE_WORDS.search(without_operands(hit.line)):
                return f"line {hit.number}: {hit.line[:200]}"
            # A drafter's architecture the engine's type lookup does not know (KeyError: 'gemma4_assistant').
            if message.meaning is Meaning.exception and unknown_drafter(hits, hit, hit.match.groupdict().get("text") or ""):
                return f"line {hit.number}: {hit.line[:200]}"
            # A Python engine's own exception looking up its drafting state ('ForwardContext' object has no attribute
            # 'draft_attn_metadatas'): the step that failed was drafting or verifying.
            if message.meaning is Meaning.exception and python_engine and \
                    drafting_name(hit.match.groupdict().get("text") or "") is not None:
                return f"line {hit.number}: {hit.line[:200]}"
            # The loader failing to place a tensor in a drafter's model class (vLLM's "... in DFlash2Qwen3Model").
            if message.meaning is Meaning.exception and drafter_loading(hit.match.groupdict().get("text") or ""):
                return f"line {hit.number}: {hit.line[:200]}"
    crash = log.crash
    if crash is not None:
        # (the loader's unused-tensor lines name the nextn head it left out: no place of MTP's running)
        said = (crash.message, crash.where or "", *(line for line in crash.lines if not _UNUSED_TENSOR.search(line)))
        place = next((w for w in said if SPECULATIVE_WORDS.search(w)), None)
        found = drafting_place(said)
        if place is not None or found is not None:
            return (place or found.line)[:200]
    if log.failure and SPECULATIVE_WORDS.search(without_operands(log.failure)) and \
            not _REJECTED_ARGUMENT.search(log.failure) and about_drafting(log, log.failure):
        return log.failure[:200]
    return None


# A frame in an engine's code: its Python package (vllm/, sglang/, vLLM's platform plugins vllm_ascend/..., the
# llama.cpp binding llama_cpp/) or the engine's own binary.
_ENGINE_FRAME = re.compile(r"[/\\](?:vllm|sglang|vllm_[a-z]{2,12}|llama_cpp|tensorrt_llm|lmdeploy|ktransformers)[/\\]|"
                           r"\bllama-(?:server|cli)\b")


def _foreign_traceback(log: LogEvidence) -> bool:
    """A Python traceback of another program: its frames are shown, none is an engine's, and no line of the text names
    an engine (catalogue.Scan.writer). Its exception names no MTP cause, whatever words it uses (a CMS's
    ``draft_model`` attribute, a training script's ``train_speculative_heads.py``)."""
    hits = log.scan
    if hits is None or hits.writer is not None:
        return False
    frames = [h for h in hits.of(Meaning.traceback) if 'File "' in h.line]
    return bool(frames) and not any(_ENGINE_FRAME.search(h.line) for h in frames)


def drafter_crash(log: LogEvidence) -> str | None:
    """A crash in a run with MTP off but another drafter on (EAGLE3, DFlash, a draft model, n-gram) whose place the
    drafter table (drafters.py) puts in that drafter's code: the speculative path's crash, as the line that places
    it. The drafter setting alone does not make it one (the target's own decode fails too), nor does the place alone
    in a run that shows MTP and every drafter off."""
    run, crash = log.run, log.crash
    if crash is None or run is None or not run.other_drafting:
        return None
    found = drafting_place((crash.message, crash.where or "", *crash.lines))
    return found.line if found is not None else None


def drafter_death(log: LogEvidence) -> str | None:
    """A process death (a shell's signal line, a native backtrace, an abort, an assert, a GPU fault) of an engine whose
    run sets another drafter (EAGLE3, DFlash, a draft model, n-gram), its place not in that drafter's code: every step
    of such a run drafts and verifies, so the death is on the drafting path, though only its place could say where (at
    most medium). The setting, as the line that shows it; None where the death is another program's (the shell names
    its command), is placed where no drafter runs (the multimodal projector, the tokenizer), or the run sets no drafter."""
    run, crash = log.run, log.crash
    if crash is None or run is None or not run.other_drafting or log.crash_owner is not None or \
            _ELSEWHERE.search(f"{crash.where or ''} {crash.message}"):
        return None
    setting = next((h for h in log.scan.hits if h.message.meaning is Meaning.speculation), None) \
        if log.scan is not None else None
    return f"line {setting.number}: {setting.line[:200]}" if setting is not None else run.evidence


# The engine's own lines that the drafter itself did not start: its model not loaded, its context not made
# (catalogue.py's "draft model load failed", "MTP context failed", "draft context failed"; llama.cpp's
# server-context.cpp, common/speculative.cpp and its forks'). A failure of the drafter's start, whichever drafter.
_DRAFTER_START = frozenset({"draft model load failed", "MTP context failed", "draft context failed"})


def drafter_failed_start(log: LogEvidence) -> str | None:
    """A failed start (no crash) of a run with MTP off but another drafter on (a -md draft model, EAGLE3, DFlash) whose
    own line says that drafter did not load or get its context: the speculative configuration's failure, as that line.
    A failure of the target's load (no such drafter line after it) stays a failed start, not MTP's."""
    run, hits = log.run, log.scan
    if log.crash is not None or run is None or not run.other_drafting or hits is None:
        return None
    # The run's setting must show apart from the failure: a --spec-type chain or a speculative setting's line. A paste
    # whose only drafter is the file its load line names shows a file that did not load (its architecture, its path),
    # not a configuration that failed.
    if not run.spec_types and hits.first(Meaning.speculation) is None:
        return None
    line = next((h for h in hits.hits if h.message.name in _DRAFTER_START), None)
    return f"line {line.number}: {line.line[:200]}" if line is not None else None


def not_mtps(log: LogEvidence) -> str | None:
    """The note for a crash or failed start in a run with MTP off, or a crash that cannot be MTP's; None otherwise."""
    if drafter_crash(log) is not None or drafter_death(log) is not None or drafter_failed_start(log) is not None or \
            (log.run is not None and log.run.other_drafting and log.scan is not None and
                                          any(h.message.name in DRAFTING_CODE for h in log.scan.hits)):
        return None  # another drafter's code is in the text: the speculative path's failure, not a note
    if log.crash is not None and log.crash_owner is not None:
        return (f"{log.path}: a crash of another program, not an engine's: {log.crash.summary}; {log.crash_owner}, "
                f"so it names no MTP cause")
    if log.mtp_use is MtpUse.not_shown and log.crash is not None and not crash_may_be_mtps(log):
        why = ("a lone signal line, nothing of what crashed" if log.crash.kind is CrashKind.SIGNAL else
               f"it dies in {log.crash.where or log.crash.message}, which MTP never runs through")
        return (f"{log.path}: a crash, not MTP's to explain: {log.crash.summary}; the text shows nothing of MTP and {why} "
                "(with MTP on, `mtpinspect diagnose MODEL -- <your flags>` reproduces it and says whether MTP is the trigger)")
    if log.mtp_use is not MtpUse.off or log.run is None or not (log.crash or log.failure):
        return _untied(log)
    what = log.crash.summary if log.crash else log.failure
    other = (f"; {log.run.other_drafter or ','.join(log.run.spec_types)} was drafting, and nothing places it in that "
             "drafter's code" if log.run.other_drafting else "")
    return f"{log.path}: a crash, not MTP's: {what}; MTP was off in this run ({log.run.evidence}){other}" if log.crash else \
        f"{log.path}: a failed start, not MTP's: {what}; MTP was off in this run ({log.run.evidence}){other}"


def _untied(log: LogEvidence) -> str | None:
    """The note for a crash or failure nothing ties to MTP (a crash is a crash: said, with no MTP cause). An engine's own
    death line counts (SGLang's watchdog or scheduler exception, a vLLM worker dying), else an exception or a traceback
    cut before its exception, where no crash or failure line was read: the note says what died, and where."""
    hits = log.scan
    death = next((found for found in (hits.first(meaning) for meaning in (Meaning.engine_death, Meaning.exception,
                                                                           Meaning.traceback)) if found is not None),
                 None) if hits is not None else None
    if not (log.crash or log.failure or death) or mtp_tie(log) is not None or loader_cause(log) is not None:
        return None
    what = log.crash.summary if log.crash else log.failure or \
        f"line {death.number}: {death.message.means}: {death.line[:200]}"  # type: ignore[union-attr]
    kind = "a crash" if log.crash or not log.failure else "a failure"
    return (f"{log.path}: {kind}, nothing ties it to MTP: {what}; no line shows a speculative or MTP setting, the "
            "drafter's lines or the engine's speculative code, so it names no MTP cause")


def run_cause(log: LogEvidence, head_found: bool | None) -> Cause | None:
    """The cause one of this module's rules names for the log, or None. ``head_found``: whether `check` found the MTP
    head in the checkpoint (None: the model was not checked)."""
    text = "\n".join([*log.telling, log.failure or ""])
    if log.run is not None and log.run.combines_drafters and "MTP" in text:
        return _combination(log)
    names = _NOT_INITIALIZED.search(text)
    if names is not None:
        return _not_initialized(log, names["names"] or "", head_found)
    if _PIPELINE in text:
        return _pipeline(log)
    if _CTX_OTHER in text and (memory := _context_memory(log)) is not None:
        return _draft_context_memory(log, memory)
    if _CTX_OTHER in text or _SUBSCRIPT in text:
        return _draft_context_crash(log, ctx_other=_CTX_OTHER in text)
    return None


def _line(log: LogEvidence, needle: str) -> str:
    return next((line for line in log.telling if needle in line), log.failure or needle)


def _combination(log: LogEvidence) -> Cause:
    assert log.run is not None
    types = ",".join(log.run.spec_types)
    return Cause("DRAFTER_COMBINATION", 0.9,
                 f"--spec-type {types} chains draft-mtp with another drafter ({log.run.other_drafter}), and llama.cpp "
                 "loads the one -md file as the MTP context: that file has no MTP layers",
                 (_line(log, "MTP"), f"{log.path}: --spec-type {types}, -md {log.run.draft_file}"),
                 "run one model drafter at a time: --spec-type draft-mtp without -md (the main GGUF's own head), or "
                 f"-md {log.run.draft_file} with --spec-type without draft-mtp; chaining draft-mtp with ngram types works",
                 (EvidenceSource.log,))


def _not_initialized(log: LogEvidence, names: str, head_found: bool | None) -> Cause:
    listed = re.findall(r"'([^']+)'", names)
    mtp = [n for n in listed if _MTP_WEIGHT.search(n)]
    line = _line(log, "not initialized")
    head_present = bool(head_found)
    if not listed and head_found is None:
        return _not_initialized_unnamed(log, line)
    if listed and not mtp and all(_SHARED.search(n) for n in listed) or mtp and head_present:
        why = ("check finds the MTP head in the checkpoint" if head_present else
               f"only the weights an MTP layer shares with the model ({', '.join(listed)}): checkpoints tie them to "
               "embed_tokens/lm_head")
        return Cause("MTP_LOADER_BUG", 0.85, f"vLLM's MTP weight loader skips weights the checkpoint has: {why}",
                     (line, f"{log.path}: {why}"),
                     "an engine bug, not the checkpoint: update vLLM (shared MTP weights mapped in PR #27597, the "
                     "model.language_model.* prefix of GLM-OCR in PR #49869) and report it with this log",
                     (EvidenceSource.log,))
    return Cause("MTP_WEIGHTS_MISSING", 0.9 if mtp else 0.6,
                 "the checkpoint lacks the MTP layer's weights vLLM builds the drafter from (fine-tunes and SFT "
                 "releases often drop the head)",
                 (line, f"{log.path}: {len(mtp)} MTP-layer weight(s) not in the checkpoint, e.g. {mtp[0] if mtp else '-'}"),
                 "use the maker's checkpoint (it ships the MTP layer), merge the fine-tune into a copy that keeps mtp.* / "
                 "the extra layer, or serve this one without --speculative-config; `mtpinspect check REPO` shows the head",
                 (EvidenceSource.log,))


def _not_initialized_unnamed(log: LogEvidence, line: str) -> Cause:
    """The weights' names elided (as pasted, or cut by the poster): the line alone cannot tell the checkpoint's gap
    from the loader's, so both readings are said, with the check that tells them apart."""
    on = log.mtp_use is MtpUse.on
    during = (f"while vLLM loads the MTP drafter ({log.run.evidence})" if on and log.run else
              "the excerpt does not show which model was loading; with --speculative-config it is the MTP drafter")
    return Cause("MTP_WEIGHTS_MISSING", 0.6 if on else 0.45,
                 "weights the engine expects were not in the checkpoint, names not shown: either the checkpoint has no "
                 "MTP layer (fine-tunes and SFT releases often drop it) or the engine's loader misses weights it has",
                 (line, f"{log.path}: {during}; the weights' names are elided, and they decide between the two readings"),
                 "run `mtpinspect check REPO` on the checkpoint: if it finds no MTP head (MTP_WEIGHTS_MISSING or NO_MTP), use the maker's "
                 "checkpoint or serve this one without --speculative-config; if it finds the head (MTP_PRESENT), the "
                 "loader skips weights it has (an engine bug: vllm#27597, #49869): update vLLM and report it; the full "
                 "error line lists the names (mtp / eh_proj / enorm: the head's own; embed_tokens / lm_head: shared)",
                 (EvidenceSource.log,))


def _pipeline(log: LogEvidence) -> Cause:
    on = log.mtp_use is MtpUse.on
    return Cause("ENGINE_LIMITATION", 0.9 if on else 0.6,
                 "vLLM cannot run this MTP drafter under pipeline parallelism: its MTP classes do not implement SupportsPP "
                 "(the draft inherits the target's pipeline_parallel_size)",
                 (_line(log, _PIPELINE), f"{log.path}: " + (f"MTP on: {log.run.evidence}" if on and log.run else
                                                            "the excerpt does not show --speculative-config; the "
                                                            "message is the drafter's when MTP is on")),
                 "use --tensor-parallel-size instead of --pipeline-parallel-size with MTP, or a vLLM with MTP under PP "
                 "(PR #46994, V2 model runner); or drop --speculative-config",
                 (EvidenceSource.log,))


def _context_memory(log: LogEvidence) -> Hit | None:
    """The allocation failure after a drafter's context line (its ctx_other refusal), None when the text shows none."""
    if log.scan is None:
        return None
    start = next((h for h in log.scan.hits if h.message.name == "assistant without ctx_other"), None)
    return next((h for h in log.scan.of(Meaning.memory) if start is not None and h.number > start.number), None)


def _draft_context_memory(log: LogEvidence, memory: Hit) -> Cause:
    """A drafter's context that cannot allocate its buffers: the start failing for memory (MTP_FAILED), not a crash.
    llama-server's memory fit creates the drafter's context once without the target's (its ctx_other line, "normal
    during memory fitting" in later builds), then for real; an allocation failure after it is the real context's. At
    medium: which context ran out the lines do not name, and whether the server went on without MTP the paste may not
    show."""
    line = _line(log, _CTX_OTHER)
    return Cause("MTP_FAILED", 0.7,
                 "the drafter's context could not allocate its buffers (out of device memory) after the memory fit's "
                 "ctx_other probe: the MTP start fails for memory (llama-server then serves without MTP), not a crash",
                 (f"{log.path}: line {memory.number}: {memory.line[:300]}", line,
                  f"{log.path}: the ctx_other line is the memory fit's probe; a crash reading (the drafter's context "
                  "created without the target's) holds only if no allocation failed: a smaller -c deciding it (MTP "
                  "loads, llama.cpp#24758)"),
                 "give the drafter's context memory: a smaller context (-c), fewer layers on the GPU (-ngl), a quantized "
                 "KV cache (-ctk/-ctv q8_0), or the drafter on another device; check the log for \"adding speculative "
                 "implementation\" to see whether MTP started", (EvidenceSource.log,))


def _draft_context_crash(log: LogEvidence, *, ctx_other: bool) -> Cause:
    flags = log.run.evidence if log.run is not None and log.mtp_use is MtpUse.on else "MTP flags not shown"
    if ctx_other:
        where = "creating the draft context of a Gemma 4 assistant drafter: it needs the target's context (ctx_other)"
        app = " (LM Studio's engine does not attach one in released versions)" if log.app is LogApp.lm_studio else ""
        fix = ("serve it with llama-server -m TARGET -md ASSISTANT.gguf --spec-type draft-mtp on a build with Gemma 4 "
               f"MTP (PR #23398 or later): llama-cli and apps that load the assistant on its own fail here{app}")
        line = _line(log, _CTX_OTHER)
    else:
        where = "loading the draft / MTP head (src/llama-model.cpp: the split of its layers over devices indexes past the end)"
        fix = ("add --tensor-split 1 (one device for the split: llama.cpp#27454), or a newer llama.cpp build; report "
               "it with this log (Gemma 4 assistants: llama.cpp#24795, #25873)")
        line = _line(log, _SUBSCRIPT)
    return Cause("MTP_ENGINE_CRASH", 0.85, f"llama.cpp fails while {where}", (line, f"{log.path}: {flags}"), fix,
                 (EvidenceSource.log,))


# The draft length a comparison row names: llama.cpp's --spec-draft-n-max (--draft-max, --draft before the rename),
# vLLM's num_speculative_tokens, or "n-max N" in words.
_N_MAX = re.compile(r"(?:--spec-draft-n-max|--draft-max|--draft-n-max|--draft|num[_-]speculative[_-]tokens|\bn[-_ ]?max)"
                    r"[\s=:\"']{0,4}(?P<n>\d{1,2})\b", re.IGNORECASE)


def compared_runs(logs: Sequence[LogEvidence]) -> list[Cause]:
    """Causes from the runs of one text set against each other by decode speed (see the module docstring)."""
    by_text: dict[str, list[LogEvidence]] = {}
    for log in logs:
        if log.speed is not None:
            by_text.setdefault(log.source, []).append(log)
    causes: list[Cause] = []
    for runs in by_text.values():
        if any(r.group is not None for r in runs):
            causes += _keyed(runs)
            continue
        # Several runs without speculation (a side-by-side table's, one a prompt): the slowest is the bar, so "every
        # speculative run is slower" holds against each of them.
        bases = [r for r in runs if _without_drafting(r) and r.speed]
        base = min(bases, key=lambda r: r.speed or 0.0) if bases else next((r for r in runs if _without_drafting(r)), None)
        drafting = [r for r in runs if not _without_drafting(r) and _drafting(r)]
        if not drafting:
            continue
        causes += _deeper_is_slower(drafting)
        if base is not None and base.speed and all((r.speed or 0) <= base.speed for r in drafting):
            rates = [r.acceptance for r in drafting if r.acceptance is not None]
            if rates and min(rates) >= FINE_ACCEPTANCE:
                causes.append(_slower(base, drafting))
    return causes


def _keyed(runs: list[LogEvidence]) -> list[Cause]:
    """A table's runs, each compared only with the runs of its key (batch size, prompt, the speed column's condition):
    where every speculative run of a key decodes no faster than that key's run without speculation, and its drafts are
    accepted (or the table does not say), speculation costs more than it gains there: SLOWER_THAN_BASELINE. Else a run
    that drafts more tokens and decodes slower than one of its key that drafts fewer: NMAX_TOO_HIGH."""
    keys: dict[str, list[LogEvidence]] = {}
    for run in runs:
        if run.group is not None:  # a table's run; a log's own run beside the table is not one of its keys
            keys.setdefault(run.group, []).append(run)
    for key_runs in keys.values():
        bases = [r.speed for r in key_runs if r.baseline and r.speed]
        drafting = [r for r in key_runs if not r.baseline and r.speed]
        if not bases or not drafting:
            continue
        base = next(r for r in key_runs if r.baseline and r.speed == min(bases))
        rates = [r.acceptance for r in drafting if r.acceptance is not None]
        if all((r.speed or 0) <= min(bases) for r in drafting) and (not rates or min(rates) >= FINE_ACCEPTANCE):
            return [_slower(base, drafting)]
    # Draft lengths compared within a key too: another model's or batch size's runs are no deeper drafts of these.
    deeper = next((found for key_runs in keys.values()
                   if (found := _deeper_is_slower([r for r in key_runs if not r.baseline and _drafting(r)]))), [])
    # Else one drafting condition slower than the baseline under each of its keys (where its deeper drafts are not
    # what is slow: NMAX_TOO_HIGH above names the setting to change).
    slower = _condition_slower(keys) if not deeper else None
    return [slower] if slower is not None else deeper


def _condition_slower(keys: dict[str, list[LogEvidence]]) -> Cause | None:
    """One drafting condition of a table (a column: a build, a draft length, "main d=2" beside "this PR d=2") timed under
    two keys or more beside each key's run without speculation, and no faster than it under every one, its drafts
    accepted (or the table does not say): that condition costs more than it gains, whatever the other columns show.
    A row's own setting (one key) is no condition: its deeper drafts are NMAX_TOO_HIGH's to judge."""
    timed: dict[str, list[tuple[LogEvidence, LogEvidence]]] = {}  # a condition's runs, each with its key's baseline
    for key_runs in keys.values():
        bases = [r for r in key_runs if r.baseline and r.speed]
        if len(bases) != 1:
            continue  # no run without speculation under this key, or several: which one is not said
        for run in key_runs:
            if not run.baseline and run.speed and run.setting:
                timed.setdefault(run.setting, []).append((bases[0], run))
    for pairs in timed.values():
        rates = [r.acceptance for _, r in pairs if r.acceptance is not None]
        if len(pairs) >= 2 and all((r.speed or 0) <= (b.speed or 0) for b, r in pairs) and \
                (not rates or min(rates) >= FINE_ACCEPTANCE):
            return _slower(pairs[0][0], [r for _, r in pairs], pairs[0][1].setting or "", tuple(b.speed or 0 for b, _ in pairs))
    return None


def _without_drafting(log: LogEvidence) -> bool:
    """A run without speculative decoding: a table row that says so, a run that drafted nothing, or MTP off."""
    return log.baseline or log.drafted == 0 or (log.mtp_use is MtpUse.off and log.drafted is None and log.acceptance is None)


def _drafting(log: LogEvidence) -> bool:
    return bool(log.drafted or log.acceptance is not None or log.mean_length is not None or log.mtp_use is MtpUse.on
                or log.setting)


def _row(log: LogEvidence) -> str:
    """The line a run's speed (and figures) come from, cited."""
    where = log.speed_line or (log.draft_lines[0] if log.draft_lines else log.path)
    return f"{log.source}: {where}"


def _slower(base: LogEvidence, drafting: list[LogEvidence], condition: str = "", against: tuple[float, ...] = ()) -> Cause:
    """``condition``: one drafting column's name, slower than the run without speculation under each of its keys
    (``against``: each key's speed without speculation, in ``drafting``'s order)."""
    assert base.speed is not None
    best = max(drafting, key=lambda r: r.speed or 0.0)
    rates = [r.acceptance for r in drafting if r.acceptance is not None]
    accepted = f"drafts are accepted ({min(rates):.0%} or more), but " if rates else ""
    key = f" at {base.group}" if base.group else ""
    unit = " tok/s" if base.speed_unit is None else base.speed_unit
    shown = (f"best {best.speed:g} against {base.speed:g}{unit}" if unit != "1/s" else  # durations: as pasted
             f"the fastest took {1 / best.speed:g} s against {1 / base.speed:g} s")
    if against:
        shown = ", ".join(f"{r.speed:g} against {b:g}" for r, b in zip(drafting[:4], against)) + unit
    said = f"'{condition[:80]}' decodes no faster than the run without it under each key" if condition else \
        f"every speculative run{key} decodes no faster than the run without it"
    return Cause("SLOWER_THAN_BASELINE", 0.6, f"{accepted}{said} ({shown}, as pasted)",
                 (_row(base), *(_row(r) for r in drafting[:4])),
                 "leave speculative decoding off on this machine and model, or measure where it pays: mtpinspect sweep "
                 "MODEL (it times each n-max against the baseline)", (EvidenceSource.log,))


def _deeper_is_slower(drafting: list[LogEvidence]) -> list[Cause]:
    """A run that drafts more tokens per step and decodes slower than one that drafts fewer."""
    # The draft length a run names: its table row or listed label, else its command line (the run's MTP evidence).
    depth = {id(r): int(m["n"]) for r in drafting
             if (m := _N_MAX.search(r.setting or (r.run.evidence if r.run is not None else ""))) is not None}
    # Else the draft length a table's draft-length column gave the run ("draft tokens" 4).
    depth.update({id(r): r.spec_tokens for r in drafting if id(r) not in depth and r.group is not None and r.spec_tokens})
    sized = [r for r in drafting if id(r) in depth and r.speed is not None]
    # Deeper and shallower drafts of one build only: a table setting builds side by side ("old build d=1" | "new build
    # d=1" | "old build d=3") compares the builds, each against the run without speculation (SLOWER_THAN_BASELINE
    # names the slow one); a sweep of one build's draft lengths names the length to change. (A table's runs only: lines
    # listing runs one a line name them as freely as they like.)
    builds = {_build_words(r.setting or "") for r in sized if r.group is not None}
    return _deeper_of_one_build(sized, depth) if len(builds) <= 1 else []


# The words of a run's name that say its draft length ("n-max 3", "--draft-max 2", "d=2", "k=4", "draft 8"): what is left
# names its build, model or condition.
_DEPTH_WORDS = re.compile(_N_MAX.pattern + r"|(?<![\w.@])(?:[kd]\s*=\s*|n[_-]draft\s*[=:]?\s*|draft\s*[=:]?\s*)\d{1,3}(?![\w.])",
                          re.IGNORECASE)


def _build_words(setting: str) -> frozenset[str]:
    """A run's name less its draft length: its words, the bare numbers dropped (a draft-length column's "draft tokens 4")."""
    return frozenset(w for w in re.findall(r"[a-z0-9]+", _DEPTH_WORDS.sub(" ", setting).lower())
                     if not w.isdigit() and w not in _DRAFTING_WORDS)


# Words that say a run drafts, not which build it is ("MTP n-max 2" and "n-max 4" are one build).
_DRAFTING_WORDS = frozenset({"mtp", "nextn", "eagle", "eagle3", "spec", "speculative", "speculation", "draft", "drafting",
                             "with", "on", "w", "n", "max", "num", "tokens", "k", "d"})


def _deeper_of_one_build(sized: list[LogEvidence], depth: dict[int, int]) -> list[Cause]:
    # The fastest run at each draft length, then the fastest at any shorter one (linear in the runs, a table may hold
    # thousands).
    fastest: dict[int, LogEvidence] = {}
    for r in sized:
        if depth[id(r)] not in fastest or (r.speed or 0) > (fastest[depth[id(r)]].speed or 0):
            fastest[depth[id(r)]] = r
    shorter: dict[int, LogEvidence | None] = {}
    best: LogEvidence | None = None
    for n in sorted(fastest):
        shorter[n] = best
        if best is None or (fastest[n].speed or 0) > (best.speed or 0):
            best = fastest[n]
    for deep in sized:
        fast = shorter[depth[id(deep)]]
        if fast is not None and (deep.speed or 0) < SLOWER * (fast.speed or 0):
            return [Cause("NMAX_TOO_HIGH", 0.6,
                          f"drafting {depth[id(deep)]} tokens a step decodes slower ({deep.speed:g} tok/s) than drafting "
                          f"{depth[id(fast)]} ({fast.speed:g} tok/s): the deeper drafts cost more than they gain",
                          (_row(deep), _row(fast)),
                          f"draft fewer tokens a step (n-max {depth[id(fast)]}, as the faster run); mtpinspect sweep MODEL "
                          "measures each n-max on this machine", (EvidenceSource.log,))]
    return []
