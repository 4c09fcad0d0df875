"""Causes that one line of the catalogue (catalogue.py) establishes, for texts no richer rule explains.

Tried after the rules that read the run (rules_run.py) and before the failed-start and crash rules
(diagnosis/failures.py), and only when MTP was not off, or was off with another drafter on (EAGLE3, a draft model,
n-gram): then that drafter's code (drafters.py) or figures must place the failure, its setting alone ties nothing:

- a line whose catalogue entry names a cause (a desktop app's own refusal, an MTP flag the build rejects
  as unknown): that cause, in the terms of whoever printed it;

The rest only when the text holds no MTP-failure line, which diagnosis/failures.py reads:

- a llama.cpp usage listing whose ``--spec-type`` values lack ``draft-mtp`` (the build's own list, printed
  after a rejected argument or by ``--help``) -> BUILD_WITHOUT_MTP, whatever the command asked for;
- a backend's kernel failure (Level Zero / Unified Runtime ``ZE_RESULT_ERROR_*``) in a run on the
  speculative path (MTP on, or the engine's speculative code named) -> MTP_ENGINE_CRASH: the backend
  fails on MTP's path, not the head;
- where no engine failure line or crash frames the text, any other error line that names speculative decoding (an app's window, a fork's message: "error",
  "failed", "cannot", "not supported" with "speculative", "draft", "MTP" or an mtp- file), in a text where an engine or
  app speaks (its app or engine named by its lines, a drafter's setting, the engine's drafting code) and on a line no
  other program's tag claims (voices.anothers_line) ->
  ENGINE_LIMITATION: the app or engine cannot run this speculative configuration; the fix names the
  app's own switch when the text shows the app, and the llama-server command that runs the model's
  head (a separate mtp- file with ``-md``);
- a Python traceback whose frames pass through the engine's speculative or MTP code, its exception line cut
  off (the paste ends in the frames) -> MTP_ENGINE_CRASH at medium confidence;
- a Python exception whose text, or whose traceback, is the engine's speculative or MTP code (an MTP
  drafter class or module, ``spec_decode``, ``--speculative-algorithm``, or the exception's own words:
  speculative, draft, MTP, NextN): an engine gap, not the head. What the exception is decides which:
  a refusal (``AssertionError``, ``NotImplementedError``, or a ``ValueError`` that says "not supported"
  / "only ... supported": which algorithms a model supports, or a configuration check's "Expected ... to be provided,
  but found ...", "... must be at most ...", or its own words that the speculative setting "is not compatible with"
  another) -> ENGINE_LIMITATION, save an assert in a batch being run (a serving step's frame, a forward mode only
  drafting runs: the drafter breaking mid-run); any other exception
  (an ``AttributeError`` on an MTP class, a ``NameError`` for a missing kernel, a ``RuntimeError``) is
  the engine's MTP path breaking -> MTP_ENGINE_CRASH. pydantic's line for a validator's exception ("Value error, ...",
  "Assertion failed, ...") is read as that ValueError or AssertionError; where it says what is supported, before the
  "N validation error(s) for CLASS" header above it.

Confidence: 0.85 for a line whose entry names the cause and an exception that names the speculative
path itself; 0.7 when only the text around it shows that path; at most 0.6 when MTP use is not shown.
"""

from __future__ import annotations

import re

from mtpinspect.apps import APP_NAMES, app_setting
from mtpinspect.causes import Cause
from mtpinspect.logread.catalogue import (
    CALL_CHAIN,
    KERNEL_LIMIT,
    METHOD_WORDS,
    SPECULATIVE_WORDS,
    Hit,
    Meaning,
    Scan,
    gap_remedy,
)
from mtpinspect.logread.drafters import (
    DRAFTING_CODE,
    DRAFTING_MODE,
    Drafter,
    drafter_architecture,
    drafter_named,
    drafting_name,
)
from mtpinspect.logread.run_facts import MtpUse
from mtpinspect.logread.runs import LogEvidence
from mtpinspect.logread.voices import without_operands
from mtpinspect.runtime.flags import MTP_SPEC_TYPE
from mtpinspect.runtime.pin import FIRST_MTP_RELEASE
from mtpinspect.vocabulary import App, Engine, EvidenceSource, LogKind

# Exceptions by which an engine refuses a model or setting, rather than breaking on it.
_REFUSALS = frozenset({"AssertionError", "NotImplementedError"})
# A configuration check's words (vllm/config.py SpeculativeConfig: "Expected both speculative_model and
# num_speculative_tokens to be provided, but found ...", "... must be ...", "... cannot be larger than ..."): a setting the
# engine refuses at start, not its drafter breaking.
_REFUSAL_WORDS = re.compile(r"not (?:yet )?supported|unsupported|only .{0,80}\bsupport|does not (?:yet )?support|must be one of|"
                            r"\bExpected\b.{0,200}?\bto be (?:provided|set|specified|given)\b|\bbut found\b|"
                            r"\b(?:must|should|cannot|can ?not) be (?:provided|set|specified|larger|greater|smaller|less|more|"
                            r"at most|at least|positive|divisible|a multiple)\b|"
                            r"is not a registered model|Cannot find model module|"
                            r"\bunknown (?:speculative|spec|draft)[\w ]{0,40}(?:method|type|algorithm)|\bunrecognized\b",
                            re.IGNORECASE)
# An argument check's words that two settings cannot run together (python/sglang/srt/server_args.py: "Speculative
# decoding for {arch} is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.",
# "--enable-layernorm-sp is not compatible with speculative decoding (EAGLE/EAGLE3)", "... is incompatible with
# speculative decoding (--speculative-algorithm EAGLE)", "Cannot set --encoder-only and --language-only together",
# "--enable-prefix-mm-cache requires --encoder-only to be enabled"; vllm-ascend's "Xlite graph mode is not compatible
# with speculative decoding"; TensorRT-LLM's "... cannot be used with ..."): a refusal of the combination at start, read only
# where the exception's own text names the speculative setting (a tensor's "view size is not compatible with input
# tensor's size" while drafting is a crash).
_CONFLICT_WORDS = re.compile(r"\b(?:not |in)compatible with\b|"
                             r"\b(?:cannot|can ?not|can't) be (?:used|combined|enabled|run)(?: together| at the same time)? with\b|"
                             r"\b(?:cannot|can ?not|can't) (?:set|use|enable|specify|combine|pass) (?:both )?[^\n]{1,160}?"
                             r"\b(?:together|at the same time|simultaneously)\b|\b(?:cannot|can ?not|can't) (?:set|use|enable) both\b|"
                             r"\b(?:requires?|needs?) (?:the )?--[a-z][\w-]{1,60}|"
                             r"\brequires? [^\n]{1,80}? to be (?:set|enabled|disabled|specified|provided|used|off|on)\b|"
                             r"\bcan only be used with\b|\bmutually exclusive\b|\bconflicts? with\b", re.IGNORECASE)
# Python's own words for an operation on the wrong types (CPython Objects/object.c do_richcompare: "'%s' not supported
# between instances of '%.100s' and '%.100s'"; Objects/abstract.c binop_type_error: "unsupported operand type(s) for
# %.100s: ..."; "'%.200s' object does not support item assignment / item deletion / the context manager protocol";
# "unsupported format string passed to ...", "unsupported format character", "bad operand type for unary"): a bug in
# the code that ran (a None where a number was due), never the engine refusing a setting, whatever "not supported" they
# hold.
_PYTHON_TYPE_WORDS = re.compile(r"'[^'\n]{1,20}' not supported between instances of\b|\bunsupported operand type\(s\)|"
                                r"'[^'\n]{1,100}' object does not support\b|\bunsupported format (?:string passed to|character)\b|"
                                r"\bbad operand type for\b")
# A KeyError on a weight's name on the MTP path (an MTP layer's weight, or a traceback through an MTP class's
# load_weights): the engine's loader looks up a parameter its MTP class does not define (a mapping bug: vllm#27563
# -> #29545), not a checkpoint without the head (that is "missing", said otherwise).
_MTP_WEIGHT_KEY = re.compile(r"^'[\w.]*(?:mtp|nextn|eh_proj|enorm|hnorm|shared_head)[\w.]*\.(?:weight|bias|\w*scale\w*)'$")
_WEIGHT_KEY = re.compile(r"^'[\w.]+\.(?:weight|bias|\w*scale\w*)'$")
# The loader's own words for a checkpoint name it cannot place in the model class (vllm/model_executor/models/utils.py).
_LOADER_WORDS = re.compile(r"no module or parameter named|has no (?:module|parameter) named")


def message_cause(log: LogEvidence) -> Cause | None:
    """The cause a catalogue line establishes (see the module docstring), or None."""
    hits = log.scan
    # MTP off: nothing of MTP's to explain, unless another drafter was on (its lines and code are the speculative path's).
    if hits is None or (log.mtp_use is MtpUse.off and not (log.run is not None and log.run.other_drafting)):
        return None
    decisive = next((h for h in hits.hits if h.message.cause), None)
    if decisive is not None:
        return _decisive(log, decisive)
    if hits.first(Meaning.mtp_failure) is not None:
        return None
    offered = log.offered_spec_types
    if offered is not None and MTP_SPEC_TYPE not in offered and len(offered) > 1:
        usage = hits.first(Meaning.usage)
        return build_without_mtp(f"its --spec-type offers no {MTP_SPEC_TYPE}",
                                 (usage.line if usage else f"--spec-type {'|'.join(offered)}",
                                  f"{log.path}: the build's usage text lists --spec-type {'|'.join(offered)}"),
                                 EvidenceSource.log, 0.9)
    death = hits.first(Meaning.engine_death)
    drafting = log.drafted or log.mean_length is not None or log.acceptance is not None or hits.mtp_sign is not None \
        or hits.first(Meaning.speculation) is not None
    if log.mtp_use is MtpUse.off:  # another drafter's setting alone does not put a death on its path: its code or figures,
        # or the engine's step executing (every step of a run that drafts drafts and verifies: the frames say it died
        # serving, past its start)
        drafting = log.drafted or log.acceptance is not None or any(h.message.name in DRAFTING_CODE for h in hits.hits) \
            or (log.run is not None and log.run.other_drafting and _serving_step(hits) is not None) \
            or (death is not None and not hits.of(Meaning.exception) and _drafter_setting(log, hits) is not None)
        # (a death whose exception the paste holds says where it died: that, not the setting, decides)
    # A kernel's own bound (a shape it refuses) says what the death was: read below, as a gap.
    limit = any(h.message.name == KERNEL_LIMIT for h in hits.hits)
    if death is not None and drafting and not hits.of(Meaning.exception) and not limit:
        return _death_after_drafting(log, death)
    # A failure of the draft context is its own tie; the target's decode failing needs another line that ties the run.
    gaps = hits.of(Meaning.engine_gap)
    gap = next((h for h in gaps if h.message.on_path), gaps[0] if gaps else None)
    # An app's window quoting it is the app's failure (its refusal below), as the app reports it.
    own = gap is not None and gap.message.on_path and log.app is None
    path = hits.mtp_sign or hits.first(Meaning.speculation) or (gap if own else None)
    if gap is not None and path is not None:
        return _backend_gap(log, gap, path)
    for exception in _validator_first(hits.of(Meaning.exception)):
        cause = _exception(log, hits, exception)
        if cause is not None:
            return cause
    chain = [h for h in hits.hits if h.message.name == CALL_CHAIN]
    if chain and not hits.of(Meaning.exception):
        # The chain's first frame may stand alone on the line before its first arrow.
        frames = [h for h in hits.hits if chain[0].number - 1 <= h.number <= chain[-1].number and
                  h.message.name in DRAFTING_CODE]
        if frames:
            return _chain_through_drafter(log, chain, frames[0], frames)
    trace = hits.first(Meaning.traceback)
    if trace is not None and not hits.of(Meaning.exception):
        # A frame in speculative code: after the header, or any frame line of a slice or of interleaved workers.
        frame = next((h for h in hits.hits if (h.number > trace.number or 'File "' in h.line) and
                      (h.message.meaning is Meaning.speculation or h.message.mtp is MtpUse.on)), None)
        if frame is not None:
            return _cut_traceback(log, trace, frame)
        setting = _drafter_setting(log, hits)
        if setting is not None:
            return _cut_under_setting(log, hits, trace, setting)
    if death is not None and drafting:  # an exception no rule above ties, in a run that drafted
        return _death_after_drafting(log, death)
    # Only where no engine's own failure line or crash is there to explain (diagnosis/failures.py reads those better).
    framed = log.kind is not LogKind.fragment and log.failure is not None
    error = next((h for h in hits.of(Meaning.app_refusal) if h.message.cause is None and _survived(hits, h) is None), None)
    if error is not None and log.crash is None and not framed and about_drafting(log, error.line):
        return _speculative_error(log, error)
    return None


# A validator's words that the engine supports the model or method only in some cases (pydantic's "Value error, Eagle3 is
# only supported for Llama models. ..."): what its header ("1 validation error for SpeculativeConfig") refused.
_SUPPORT_WORDS = re.compile(r"\bonly (?:be )?supported\b|\bnot (?:yet )?supported\b|\bdoes not (?:yet )?support\b|"
                            r"\bunsupported\b", re.IGNORECASE)


def _validator_first(exceptions: list[Hit]) -> list[Hit]:
    """The exception lines in order, save that a validator's line saying what is supported comes first: the header above
    it names only the class checked (a missing setting's words stay under the header's reading: a failed start)."""
    said = [h for h in exceptions if h.message.name == "pydantic validator error" and
            _SUPPORT_WORDS.search(h.match.group("text") or "")]
    return [*said, *(h for h in exceptions if h not in said)]


def about_drafting(log: LogEvidence, line: str) -> bool:
    """Whether an error line about drafts or speculation is about speculative decoding: its own words name the method
    (catalogue.METHOD_WORDS), or an engine or app speaks in the text (:func:`engine_voice`)."""
    return METHOD_WORDS.search(without_operands(line)) is not None or engine_voice(log) is not None


def engine_voice(log: LogEvidence) -> str | None:
    """What shows that an engine or app speaks in the text (its app, the engine its lines name, a drafter's setting or
    MTP sign, the engine's drafting code), None when nothing does: then an error line about a "draft model" or
    "speculative" anything is another program's sense of those words (a mail client's drafts), and ties nothing."""
    hits = log.scan
    if hits is None:
        return None
    if log.app is not None:
        return log.app.value
    if _engine(log) is not Engine.unknown:
        return _engine(log).value
    sign = hits.mtp_sign or hits.first(Meaning.speculation) or \
        next((h for h in hits.hits if h.message.name in DRAFTING_CODE), None)
    return f"line {sign.number}" if sign is not None else None


# A frame of an engine's serving step (vllm/v1/engine/core.py step / run_busy_loop, vllm/v1/executor's execute_model,
# vllm/v1/worker/gpu_model_runner.py execute_model / sample_tokens; python/sglang/srt/managers/scheduler.py
# run_batch / event_loop_*, tp_worker.py forward_batch_generation): the engine was executing a step of the run.
_STEP_FRAME = re.compile(r"[/\\](?:vllm|sglang)[/\\][^\"\n]{1,300}\", line \d{1,7},? in (?:step|step_with_batch_queue|execute_model|"
                         r"run_busy_loop|_process_engine_step|sample_tokens|forward_batch_generation|run_batch|"
                         r"event_loop_\w{1,40})\b")


def _serving_step(hits: Scan) -> Hit | None:
    """The first frame of the engine's serving step in the text's tracebacks, None when none shows."""
    return next((h for h in hits.of(Meaning.traceback) if _STEP_FRAME.search(h.line)), None)


# The lines that show a drafter set up or drafting (llama.cpp's "adding speculative implementation", its drafting
# statistics): after an error line, the run went on to draft.
_DRAFTER_UP = frozenset({"drafter added", "MTP drafter added", "MTP statistics"})


def _survived(hits: Scan, error: Hit) -> Hit | None:
    """The line after ``error`` that shows the server went on to set up its drafter or draft (an error the run survived,
    such as llama-server's memory-fit probe failing before the drafter loads), None when none does."""
    return next((h for h in hits.hits if h.number > error.number and h.message.name in _DRAFTER_UP), None)


def drafting_path(log: LogEvidence, place: str = "") -> str:
    """The drafting path a report names, by the drafter the run set (drafters.Drafter), else the one its drafting code
    ``place`` names (common_speculative_impl_draft_eagle3): "the MTP path", "EAGLE3's drafting path", "a draft model's
    drafting path"; "the speculative path" where the paste names no drafter."""
    drafter = log.run.drafter if log.run is not None else None
    drafter = Drafter.mtp if drafter is None and log.mtp_use is MtpUse.on else drafter
    drafter = drafter or drafter_named(place, otherwise=None)
    if drafter is None:  # llama.cpp's drafting statistics name their implementation ("statistics ngram_map_k: ...")
        drafter = next((d for f in log.statistics for d in (drafter_named(f.label, otherwise=None),) if d is not None), None)
    if drafter is None and log.scan is not None:  # the engine's own lines setting one up ("adding speculative
        # implementation 'draft-eagle3'", SGLang's EAGLEWorker)
        drafter = next((d for h in log.scan.hits if h.message.meaning in (Meaning.speculation, Meaning.mtp_on)
                        for d in (drafter_named(h.line, otherwise=None),) if d is not None), None)
    return "the speculative path" if drafter is None else "the MTP path" if drafter is Drafter.mtp else \
        f"{drafter}'s drafting path"


def _chain_through_drafter(log: LogEvidence, chain: list[Hit], frame: Hit, hits: list[Hit]) -> Cause:
    """A call chain (frames joined by arrows, as a poster quotes where the engine died) through the engine's drafting
    code: a failure on the drafting path, placed by its frame; the death itself may be only in the poster's words."""
    engine = _engine(log)
    where = f"{engine.value}'s" if engine is not Engine.unknown else "the engine's"
    first = min(chain[0].number, frame.number)
    return Cause("MTP_ENGINE_CRASH", _confidence(log, 0.8),
                 f"{where} call chain runs through its drafting code ({frame.message.means}): a failure on "
                 f"{drafting_path(log, ' '.join(h.line for h in hits if h.message.name in DRAFTING_CODE))}, where "
                 "the chain's last frames say",
                 (f"{log.path}: lines {first}-{chain[-1].number}: a call chain", f"{log.path}: line {frame.number}: "
                  f"{_quoted(frame)}", f"{log.path}: line {frame.number}: {_source(frame)}"),
                 f"{gap_remedy(engine)}; run the same load without speculative decoding to confirm the drafter is the "
                 "trigger", (EvidenceSource.log,))


def _death_after_drafting(log: LogEvidence, hit: Hit) -> Cause:
    """The scheduler or a worker died in a run that drafted (its figures, or MTP or a drafter set up): a failure on the
    drafting path, named by its drafter."""
    path = log.scan.mtp_sign or log.scan.first(Meaning.speculation) if log.scan is not None else None
    shown = (f"{log.accepted} of {log.drafted} draft tokens accepted before it" if log.drafted else
             f"{log.run.drafter} on: {log.run.evidence}" if log.run is not None and log.run.drafter is not None else
             f"line {path.number}: {path.message.means}" if path is not None else "the drafter's figures")
    when = "while drafting" if log.drafted or log.mean_length is not None or log.acceptance is not None else \
        "with the drafter set up"
    return Cause("MTP_ENGINE_CRASH", _confidence(log, 0.7),
                 f"{_engine(log).value} died {when} ({hit.message.means}): a crash on {drafting_path(log)}",
                 (_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}", f"{log.path}: {shown}"),
                 f"{gap_remedy(_engine(log))}; run the same load without speculative decoding to confirm MTP is the "
                 "trigger", (EvidenceSource.log,))


def _cut_traceback(log: LogEvidence, trace: Hit, frame: Hit) -> Cause:
    """A traceback through the engine's speculative code whose exception line the paste does not hold."""
    engine = _engine(log)
    where = f"{engine.value}'s" if engine is not Engine.unknown else "the engine's"
    return Cause("MTP_ENGINE_CRASH", _confidence(log, 0.7),
                 f"{where} traceback runs through its speculative decoding code ({frame.message.means}): the engine "
                 "failed on the speculative path; the exception itself is not in the paste",
                 (f"{log.path}: line {trace.number}: {_quoted(trace)}", f"{log.path}: line {frame.number}: {_quoted(frame)}",
                  f"{log.path}: line {frame.number}: {_source(frame)}"),
                 f"{gap_remedy(engine)}; the traceback's last lines (the exception) say which", (EvidenceSource.log,))


_BINDING_FRAME = re.compile(r'File "[^"\n]{0,400}[/\\]llama_cpp[/\\][\w.]{1,80}\.py"')


def _drafter_setting(log: LogEvidence, hits: Scan) -> Hit | None:
    """The line that sets a drafter on a Python engine's run (vLLM's --speculative-config with a method, SGLang's
    --speculative-algorithm EAGLE3 / NEXTN, the engine's MTP class), None when the run sets none or the text is not
    vLLM's or SGLang's. Every step a run with a drafter serves drafts and verifies, and its start builds and profiles
    the drafter: a traceback or a scheduler's death under that setting is on the speculative path (issue 42, rule 2:
    the setting in the command ties it), though only its frames or exception could say where, so at most medium."""
    if _engine(log) is Engine.llama_cpp and any(_BINDING_FRAME.search(h.line) for h in hits.of(Meaning.traceback)):
        # llama-cpp-python's own frames (site-packages/llama_cpp/): the binding's Python traceback, under a line that
        # sets or says speculative decoding (the app's "Speculative decoding enabled"), as vLLM's under its setting.
        return hits.mtp_sign or hits.first(Meaning.speculation)
    if _engine(log) not in (Engine.vllm, Engine.sglang):
        return None
    if log.mtp_use is MtpUse.on:
        return hits.mtp_sign or hits.first(Meaning.speculation)
    if log.run is not None and log.run.other_drafting:
        return hits.first(Meaning.speculation)
    return None


def _cut_under_setting(log: LogEvidence, hits: Scan, trace: Hit, setting: Hit) -> Cause:
    """A vLLM or SGLang traceback cut before its exception (a head, a slice of frames, one frame) in a run whose
    command sets a drafter: a failure on the speculative path; which part failed the paste does not hold."""
    engine = _engine(log)
    last = max(hits.of(Meaning.traceback), key=lambda h: h.number)
    frames = (trace,) if last is trace else (trace, last)
    return Cause("MTP_ENGINE_CRASH", min(_confidence(log, 0.7), 0.6),
                 f"{engine.value}'s traceback, cut before its exception, in a run whose command sets a drafter "
                 f"({setting.message.means}): a failure on the speculative path; the paste does not show where it failed",
                 (*(f"{log.path}: line {h.number}: {_quoted(h)}" for h in frames),
                  f"{log.path}: line {setting.number}: {_quoted(setting)}",
                  f"{log.path}: line {setting.number}: {_source(setting)}"),
                 f"{gap_remedy(engine)}; the traceback's last lines (the exception) say which part failed; run the same "
                 "command without the speculative setting to confirm the drafter is the trigger", (EvidenceSource.log,))


# An app's or fork's words that the model itself has no MTP layer (read before the engine is blamed).
_NO_MTP_IN_MODEL = re.compile(r"(?i)\b(?:no|without|missing|lacks?|lacking|(?:does ?n[o']t|doesn't) (?:have|contain)|has no)\s+"
                              r"(?:an? |any )?(?:MTP|NextN|multi[- ]token[- ]prediction)(?: head| layers?| weights| tensors| "
                              r"modules?| blocks?)?\b|\bnot an? MTP model\b")


# An exception's words that the model has no MTP layers (a noun required: "not supported without MTP" says nothing of the
# model).
_MODEL_WITHOUT_LAYERS = re.compile(r"(?i)\b(?:has no|have no|no|without|missing|lacks?|does ?n[o']t (?:have|contain)|"
                                   r"rather than|instead of)\s+"
                                   r"(?:an? |any )?(?:MTP|NextN|multi[- ]token[- ]prediction)\s+(?:head|layers?|weights|"
                                   r"tensors|modules?|blocks?)\b")
# A count of the model's MTP layers given as zero, in the names the configs use (DeepSeek's num_nextn_predict_layers,
# Qwen3-Next's mtp_num_hidden_layers, MiMo's num_mtp_layers; llama.cpp's nextn_predict_layers, n_layer_nextn).
_NO_NEXTN_LAYERS = re.compile(r"\b(?:num_nextn_predict_layers|nextn_predict_layers|n_layer_nextn|mtp_num_hidden_layers|"
                              r"num_mtp_layers|n_mtp_layers)\b\s{0,3}(?:=|:|is)\s{0,3}0\b")


def _without_head(log: LogEvidence, hit: Hit, also: Hit | None = None) -> Cause:
    """The app's or engine's words that the model has no MTP layer: read for what they say about the model first
    (``also``: the loader's failure on the head's weights that follows from it)."""
    then = (f"{log.path}: line {also.number}: the loader fails on the head's weights, as a checkpoint without them "
            f"makes it: {_quoted(also)[:200]}",) if also is not None else ()
    return Cause("MTP_WEIGHTS_MISSING", _confidence(log, 0.6),
                 "the app or engine says the model has no MTP layer: a GGUF or checkpoint without the head (or one "
                 "whose family has none, or one that ships another drafter in its place: its own method drafts with it)",
                 (_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}", *then),
                 _WITHOUT_HEAD_FIX.get(_engine(log), _WITHOUT_HEAD_FIX[None]), (EvidenceSource.log,))


# What to do about a model without the head, in the engine's terms (a Python engine's run gets no GGUF advice).
_WITHOUT_HEAD_FIX = {
    None: ("run `mtpinspect check MODEL`: no MTP head (NO_MTP, MTP_WEIGHTS_MISSING) means this file cannot draft with MTP: "
           "use one that keeps the head (the maker's, or a GGUF converted without --no-mtp, or its mtp- file with -md); "
           "with the head present, the app's engine is too old for it"),
    **{engine: (f"run `mtpinspect check REPO`: no MTP head (NO_MTP, MTP_WEIGHTS_MISSING) means this checkpoint cannot draft "
                f"with MTP: use the speculative method for the drafter it ships (the {engine.value} message names it, e.g. "
                "method 'dspark' for a DSpark drafter), or a checkpoint that keeps the MTP head")
       for engine in (Engine.vllm, Engine.sglang)},
}


def _speculative_error(log: LogEvidence, hit: Hit) -> Cause:
    engine = _engine(log)
    if _NO_MTP_IN_MODEL.search(hit.line):  # what it says about the model comes first (issue 42, rule 3)
        return _without_head(log, hit)
    if engine in (Engine.vllm, Engine.sglang):  # a Python engine's own refusal: its terms, no llama-server advice
        return Cause("ENGINE_LIMITATION", _confidence(log, 0.7),
                     f"{engine.value} refuses this speculative configuration: an engine limit, not the head",
                     (_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}"), gap_remedy(engine),
                     (EvidenceSource.log,))
    app = App(log.app.value) if log.app is not None else None
    who = APP_NAMES[app] if app is not None else "the app or engine"
    sidecar = "mtp-" in hit.line.lower() or "draft model" in hit.line.lower()
    head = ("llama-server -m MAIN.gguf -md mtp-FILE.gguf --spec-type draft-mtp runs a separate mtp- head; a GGUF that "
            "bundles the head needs no draft file" if sidecar else
            "llama-server -m MODEL.gguf --spec-type draft-mtp runs the model's own head")
    switch = f"{app_setting(app, None)} to serve without it meanwhile; update the app's llama.cpp engine" if app else \
        "turn speculative decoding off meanwhile; update the engine"
    return Cause("ENGINE_LIMITATION", _confidence(log, 0.7),
                 f"{who} fails on this speculative configuration: an app or engine limit, not the head",
                 (_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}"),
                 f"in {who}: {switch}; to check the model itself: {head} (the pinned build: mtpinspect runtime build)",
                 (EvidenceSource.log,))


def _quoted(hit: Hit) -> str:
    """The line as evidence: whole up to 400 characters (a 16 KB line is cut, and says so)."""
    return hit.line if len(hit.line) <= 400 else f"{hit.line[:400]}... ({len(hit.line)} characters)"


def _source(hit: Hit) -> str:
    return f"{hit.message.means} ({hit.message.source})"


def _confidence(log: LogEvidence, high: float) -> float:
    return high if log.mtp_use is MtpUse.on else min(high, 0.6)


def _decisive(log: LogEvidence, hit: Hit) -> Cause:
    message = hit.message
    assert message.cause is not None
    evidence = (_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}")
    if message.cause == "BUILD_WITHOUT_MTP":
        return rejected_flag(log, hit, evidence)
    who = message.app.value if message.app is not None else (message.engine.value if message.engine else "the engine")
    return Cause(message.cause, message.confidence, f"{who}: {message.means}", evidence,
                 message.remedy or gap_remedy(None), (EvidenceSource.log,))


# "unknown speculative type: mtp" (builds since the type list became comma-separated), or the pre-MTP
# parser's "unknown speculative decoding type without draft model" (which names no value).
REJECTED_TYPE = re.compile(r"unknown speculative (?:type: (?P<value>[\w,-]+)|decoding type without draft model)")


def build_without_mtp(why: str, evidence: tuple[str, ...], source: EvidenceSource, confidence: float) -> Cause:
    return Cause("BUILD_WITHOUT_MTP", confidence, f"this llama.cpp build predates MTP support: {why}", evidence,
                 f"use a llama.cpp build with MTP support (PR #22673, first in release {FIRST_MTP_RELEASE}: `llama-server --help` lists {MTP_SPEC_TYPE} "
                 "under --spec-type): a current release or container image (pull it again: a cached image can be older "
                 f"than it looks), or the pinned build: mtpinspect runtime build; then --spec-type {MTP_SPEC_TYPE}",
                 (source,))


# llama.cpp's own spellings of its MTP flags (common/arg.cpp): a build that rejects them predates them.
_UPSTREAM_FLAGS = frozenset({"--spec-type", "--spec-draft-n-max"})
_BUILD_NUMBER = re.compile(r"\b(?:build(?:_info)?|version):\s*(?P<number>\d{3,6})\b")
_DECIDING_CHECK = ("`llama-server --help` of that build decides: --spec-type listing draft-mtp means a renamed flag "
                   "(use -md FILE / --spec-type draft-mtp, the upstream spelling), no --spec-type or no draft-mtp "
                   "means a build before MTP")


def rejected_flag(log: LogEvidence, hit: Hit, evidence: tuple[str, ...]) -> Cause:
    """An MTP flag the build calls invalid: a build before MTP only when its usage listing lacks draft-mtp or its build
    number predates MTP; otherwise two readings (an old build, or a fork that renamed its flags), with the check."""
    flag = hit.match.group("flag")
    offered = log.offered_spec_types
    lines = [h.line for h in log.scan.hits] if log.scan is not None else []
    text_build = next((m for m in map(_BUILD_NUMBER.search, lines) if m is not None), None)
    first = int(FIRST_MTP_RELEASE.lstrip("b"))
    if offered is not None and MTP_SPEC_TYPE in offered:
        return Cause("WRONG_SPEC_TYPE", 0.9, f"the build runs MTP ({MTP_SPEC_TYPE} is in its --spec-type list) but has "
                     f"no {flag}: a flag of another fork or version", (*evidence, f"--spec-type {'|'.join(offered)}"),
                     f"use the upstream spelling: -md FILE for a separate head, --spec-type {MTP_SPEC_TYPE}",
                     (EvidenceSource.log,))
    if offered is not None:
        return build_without_mtp(f"it rejects {flag} and its --spec-type offers no {MTP_SPEC_TYPE}",
                                 (*evidence, f"--spec-type {'|'.join(offered)}"), EvidenceSource.log, 0.9)
    if text_build is not None and int(text_build["number"]) < first:
        return build_without_mtp(f"it rejects {flag} and is build {text_build['number']}, before {FIRST_MTP_RELEASE}",
                                 evidence, EvidenceSource.log, 0.9)
    both = (f"{log.path}: two readings remain: a build before MTP (PR #22673), or a fork that renamed its MTP flags "
            f"(upstream: --spec-type {MTP_SPEC_TYPE}); {_DECIDING_CHECK}")
    if flag in _UPSTREAM_FLAGS:
        return build_without_mtp(f"it rejects llama.cpp's own {flag}", (*evidence, both), EvidenceSource.log, 0.7)
    return Cause("WRONG_SPEC_TYPE", 0.6, f"the build does not know {flag}: a fork's spelling this build renamed or never "
                 "had, or a build before MTP", (*evidence, both),
                 f"spell MTP as upstream does: -md FILE for a separate head, --spec-type {MTP_SPEC_TYPE}; {_DECIDING_CHECK}",
                 (EvidenceSource.log,))


def _backend_gap(log: LogEvidence, hit: Hit, path: Hit) -> Cause:
    tie = () if path is hit else (f"{log.path}: line {path.number}: {path.message.means}",)
    if hit.message.name == KERNEL_LIMIT:
        return _kernel_limit(log, hit, tie)
    return Cause("MTP_ENGINE_CRASH", _confidence(log, 0.8),
                 f"the engine or its backend fails on the speculative path ({hit.match.group(0)}): an engine bug, not the head",
                 (_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}", *tie),
                 f"{gap_remedy(_engine(log))}; on this backend try the run without speculative decoding first, then "
                 "report the kernel failure with the backend named", (EvidenceSource.log,))


def _kernel_limit(log: LogEvidence, hit: Hit, tie: tuple[str, ...]) -> Cause:
    """A kernel's own bound on the shapes it runs, in a run that drafts: a verify step's graph carries each request's
    draft tokens (SGLang's decode graph is captured with --speculative-num-draft-tokens tokens a request), so a setting
    above the bound is one the kernel refuses, not a crash of the drafter."""
    kernel, bound = hit.match.group("kernel"), hit.match.group("bound")
    return Cause("ENGINE_LIMITATION", _confidence(log, 0.7),
                 f"the kernel {kernel} supports shapes only up to {bound}, and the speculative setting asks more (a verify "
                 "step carries each request's draft tokens): an engine limit, not the head",
                 (_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}", *tie),
                 f"keep the draft tokens a request within the kernel's bound ({bound}: SGLang's "
                 "--speculative-num-draft-tokens, vLLM's num_speculative_tokens), or choose an attention backend whose "
                 f"kernel runs more; {gap_remedy(_engine(log))}", (EvidenceSource.log,))


def _exception(log: LogEvidence, hits: Scan, hit: Hit) -> Cause | None:
    text = hit.match.group("text") or ""
    # Its words, not a file it names (FileNotFoundError on '/data/mtp/x.json' is about the user's file).
    unknown = unknown_drafter(hits, hit, text)
    if unknown is not None:
        return _no_drafter_graph(log, hit, *unknown)
    # Its words, or the engine's speculative configuration it names (a "validation error for SpeculativeConfig").
    named = SPECULATIVE_WORDS.search(without_operands(text)) is not None or _SPEC_CONFIG_NAMED.search(text) is not None
    said = named
    # The loader's words name the model class it loads into: a drafter's class (DFlash2Qwen3Model, DeepSeekMTP) puts the
    # exception in the drafter's loading.
    said = said or drafter_loading(text)
    # The name it looked up is the engine's drafting state ('ForwardContext' object has no attribute
    # 'draft_attn_metadatas'): only in an engine's own exception (a blog app's 'Post' has a 'draft_id' too).
    said = said or (_engine(log) in (Engine.vllm, Engine.sglang) and drafting_name(text) is not None)
    around = hits.mtp_sign or hits.first(Meaning.speculation)
    if log.mtp_use is MtpUse.off:  # another drafter on: its code must place the exception, not its setting alone, or
        # the engine's serving step (every step of a run that drafts drafts and verifies)
        around = next((h for h in hits.hits if h.message.name in DRAFTING_CODE), None) or \
            (_serving_step(hits) if log.run is not None and log.run.other_drafting else None)
    if not said and around is None:
        return None
    kind = hit.match.groupdict().get("type") or "AttributeError"  # a line of an AttributeError's own words has no type
    kind = _PYDANTIC_KINDS.get(kind, kind)
    evidence = [_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}"]
    if around is not None:
        evidence.append(f"{log.path}: line {around.number}: {around.message.means}")
    engine = _engine(log)
    where = f"{engine.value}'s" if engine is not Engine.unknown else "the engine's"
    confidence = _confidence(log, 0.85 if said else 0.7)
    # The engine's own words elsewhere in the paste that the checkpoint has no MTP head (it ships another drafter, its
    # nextn layer count is 0): the loader's KeyError on the head's weights is that, not a mapping bug.
    without = next((h for h in hits.of(Meaning.no_head) if h is not hit), None)
    if without is not None and (kind == "KeyError" or _LOADER_WORDS.search(text)):
        return _without_head(log, without, also=hit)
    if kind == "KeyError" and (_MTP_WEIGHT_KEY.match(text.strip()) or
                               (around is not None and _WEIGHT_KEY.match(text.strip()))) or _LOADER_WORDS.search(text):
        return Cause("MTP_LOADER_BUG", _confidence(log, 0.7),
                     f"{where} MTP weight loader looks up {text.strip()}, a parameter its MTP class does not define: a "
                     "loader bug (a mapping regression), not a checkpoint without the head",
                     tuple(evidence),
                     "update the engine (or go back to the last release that loaded this checkpoint's MTP layer) and "
                     "report the KeyError with the version; `mtpinspect check REPO` confirms the checkpoint has the head; "
                     "serve without speculative decoding meanwhile", (EvidenceSource.log,))
    if _MODEL_WITHOUT_LAYERS.search(text) or _NO_NEXTN_LAYERS.search(text):  # what it says about the model comes first
        return _without_head(log, hit)
    # An assert that fails while the engine serves (a frame of its serving step above it: execute_model, run_batch) is
    # its drafting code breaking mid-run, not a check refusing a setting at start; only a refusal's words make it one.
    # A forward mode only drafting runs (SGLang's DRAFT_EXTEND_V2, TARGET_VERIFY), anywhere in the paste, says the same:
    # a batch was being run (a poster's abridged frame may follow the exception).
    step = _serving_step(hits)
    mode = next((h for h in hits.hits if h.message.name == DRAFTING_MODE), None)
    serving = kind == "AssertionError" and (step is not None and step.number < hit.number or mode is not None)
    # Its own words that the speculative setting cannot run beside another one: the argument check refusing the pair,
    # wherever it stands (one line, or under the frames of the server's argument checks).
    conflict = named and _CONFLICT_WORDS.search(text) is not None
    if (kind in _REFUSALS and not serving) or conflict or _REFUSAL_WORDS.search(_PYTHON_TYPE_WORDS.sub(" ", text)):
        return Cause("ENGINE_LIMITATION", confidence,
                     f"{where} speculative / MTP code refuses this model or setting ({kind}): an engine gap, not the head",
                     tuple(evidence), gap_remedy(engine), (EvidenceSource.log,))
    stage = _configuration_stage(hits, hit, kind, text)
    if stage is not None:
        return _failed_configuration(log, hit, kind, text, stage, evidence, confidence)
    return Cause("MTP_ENGINE_CRASH", confidence,
                 f"{where} speculative / MTP code breaks ({kind}: {text[:160]}): an engine bug, not the head",
                 tuple(evidence), gap_remedy(engine), (EvidenceSource.log,))


_SPEC_CONFIG_NAMED = re.compile(r"\bSpeculativeConfig\b")
# pydantic's words for the exception a validator raised (catalogue.py: "Value error, ...", "Assertion failed, ...").
_PYDANTIC_KINDS = {"Value error": "ValueError", "Assertion failed": "AssertionError"}
# The class vLLM's loader names after the tensor it cannot place ("... named 'x.y' in DFlash2Qwen3Model").
_LOADER_CLASS = re.compile(r"\bno module or parameter named\b[^\n]{0,400}?\bin ([A-Za-z]\w{1,100})")


def drafter_loading(text: str) -> bool:
    """Whether an exception's text is vLLM's loader failing to place a tensor in a drafter's model class (its class
    name is a drafter's architecture: DFlash2Qwen3Model, DeepSeekMTP, EagleLlamaForCausalLM)."""
    loading = _LOADER_CLASS.search(text)
    return loading is not None and drafter_architecture(loading.group(1))
# A lookup of a model's type or architecture, as a traceback's frames show it: transformers' auto classes
# (models/auto/configuration_auto.py CONFIG_MAPPING[model_type], modeling_auto.py), the engines' model registries
# (vllm/model_executor/models/registry.py, vllm/transformers_utils/config.py get_config; python/sglang/srt/models/
# registry.py, sglang/srt/utils/hf_transformers_utils.py get_config).
_TYPE_LOOKUP = re.compile(r"[/\\](?:configuration_auto|modeling_auto|registry|hf_transformers_utils)\.py\b|"
                          r"transformers_utils[/\\]config\.py\b|\bin (?:get_config|resolve_model_cls|_get_model_architecture|"
                          r"get_model_architecture|inspect_model_cls|_normalize_archs)\b")
# An exception's words that a model type or architecture is unknown to the engine or its transformers.
_TYPE_UNKNOWN = re.compile(r"(?i)\b(?:architectures?|model[ _]type)\b[^\n]{0,300}?(?:\bnot (?:yet )?supported|\bnot recogni[sz]ed|"
                           r"does not recogni[sz]e|\bunrecognized|\bunknown|\bnot registered)|\bUnrecognized model\b")
_QUOTED_NAME = re.compile(r"['\"`]([\w.-]{1,100})['\"`]")


def unknown_drafter(hits: Scan, hit: Hit, text: str) -> tuple[str, str] | None:
    """(the drafter's name, what places the lookup) where an exception says the engine does not know a model type or
    architecture that is a drafter's (drafters.drafter_architecture): a KeyError on the name under a type lookup's
    frames, or the words "architecture ... not supported" naming it. None otherwise (a web app's KeyError on
    'customer_assistant' has no type lookup)."""
    names = [m.group(1) for m in _QUOTED_NAME.finditer(text[:2000])]
    drafter = next((n for n in names if drafter_architecture(n)), None)
    if drafter is None:
        return None
    if _TYPE_UNKNOWN.search(text):
        return drafter, f"line {hit.number}: the exception's own words: the engine does not know this architecture"
    if hit.match.groupdict().get("type") == "KeyError" and text.strip().strip("'\"") == drafter:
        frame = next((h for h in hits.of(Meaning.traceback) if h.number < hit.number and _TYPE_LOOKUP.search(h.line)), None)
        if frame is not None:
            return drafter, f"line {frame.number}: a lookup of the model's type: {frame.line[:200]}"
    return None


def _no_drafter_graph(log: LogEvidence, hit: Hit, drafter: str, place: str) -> Cause:
    """The engine (or the transformers under it) does not know the drafter's architecture: it predates drafting with it."""
    engine = _engine(log)
    who = engine.value if engine is not Engine.unknown else "the engine"
    return Cause("NO_MTP_GRAPH", _confidence(log, 0.7) if log.mtp_use is MtpUse.on else 0.7,
                 f"{who} does not know the drafter's architecture '{drafter}': this version (or the transformers it "
                 "loads configs with) predates drafting with it, so it has no graph for the drafter",
                 (_quoted(hit), f"{log.path}: line {hit.number}: {_source(hit)}", f"{log.path}: {place}"),
                 f"use a {who} release (and the transformers it asks for) whose model registry knows '{drafter}' (its "
                 "release notes or supported-models list name the drafter); serve without the drafter meanwhile",
                 (EvidenceSource.log,))


# Where an exception says it comes from the engine's configuration being built or checked (before any model loads):
# a validation error of a config class (pydantic's "1 validation error for SpeculativeConfig"), a check that asks for a
# setting to change ("please adjust num_speculative_tokens"), or a frame of the engines' config code (vllm/engine/
# arg_utils.py create_engine_config / create_speculative_config, vllm/config/*.py __post_init__ / _verify_args,
# python/sglang/srt/server_args.py check_server_args / __post_init__).
_CONFIG_WORDS = re.compile(r"\bvalidation errors? for [A-Z]\w{0,80}|\bplease (?:adjust|set|change|reduce|increase|lower|raise|"
                           r"specify|disable|enable|provide|pass)\b", re.IGNORECASE)
_FAILED_START = re.compile(r"\b(?:EngineCore|WorkerProc|Engine core initialization) failed(?: to start)?\b|\bfailed to start\b")
_CONFIG_FRAME = re.compile(r"[/\\](?:arg_utils|server_args|config)\.py\b|[/\\]config[/\\]\w{1,60}\.py\b|"
                           r"\bin (?:_verify_\w{1,60}|__post_init__|create_engine_config|create_speculative_config|from_cli_args|"
                           r"check_server_args|verify_with_parallel_config)\b")


def _configuration_stage(hits: Scan, hit: Hit, kind: str, text: str) -> str | None:
    """The words or frame that place an exception in the engine's configuration stage, None where the text shows the run
    got past it before the exception (a model loading, a graph capture, the server serving: catalogue.Meaning.past_config)
    or nothing places it there. Read from the text's structure: what came before the exception, not its name alone."""
    if any(h.number < hit.number for h in hits.of(Meaning.past_config)):
        return None
    if kind.endswith("ValidationError"):
        return f"line {hit.number}: a validation error of the configuration ({kind})"
    said = _CONFIG_WORDS.search(text)
    if said is not None:
        return f"line {hit.number}: the check's own words: \"{said.group(0)}\""
    frame = next((h for h in hits.of(Meaning.traceback) if h.number < hit.number and _CONFIG_FRAME.search(h.line)), None)
    if frame is not None:
        return f"line {frame.number}: a frame of the engine's configuration code: {frame.line[:200]}"
    # The engine's own word that its start failed (vLLM's "EngineCore failed to start.", "WorkerProc failed to start."),
    # with nothing before the exception showing a model loading: it failed on its settings.
    start = next((h for h in hits.of(Meaning.engine_death) if _FAILED_START.search(h.line)), None)
    if start is not None:
        return f"line {start.number}: the engine says its start failed: {start.line[:200]}"
    return None


def _failed_configuration(log: LogEvidence, hit: Hit, kind: str, text: str, stage: str, evidence: list[str],
                          confidence: float) -> Cause:
    """An exception of the engine's configuration stage on the speculative settings: the start failed (MTP_FAILED),
    before any model loaded; a setting to change, not the drafter breaking while it drafts."""
    engine = _engine(log)
    who = engine.value if engine is not Engine.unknown else "the engine"
    return Cause("MTP_FAILED", confidence,
                 f"{who}'s start failed ({kind}: {text[:160]}) before any line shows a model loading or the server "
                 "serving: a speculative setting the start refuses, not a crash while drafting",
                 (*evidence, f"{log.path}: {stage}"),
                 "change the speculative setting the message names (its check says which: the number of speculative "
                 "tokens, the method, the draft model, a setting it conflicts with), as the engine's documentation for "
                 "speculative decoding spells it; the head is not at issue until the server starts",
                 (EvidenceSource.log,))


def _engine(log: LogEvidence) -> Engine:
    if log.runtime is not Engine.unknown:
        return log.runtime
    writer = log.scan.writer if log.scan is not None else None
    return writer or Engine.unknown
