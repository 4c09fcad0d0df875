"""From evidence to a ranked list of causes: the runtime rules, merging, and the ranking rule.

Evidence comes from three places: static (`check` and the run's flags, static.py), the probe
(probe.py) and logs of runs made elsewhere (logread/runs.py). The rules here read the probe and the logs:

- what a pasted log's lines establish: the tie to MTP and the rules on what the run was (logread/rules_run.py), a
  catalogue line's cause (logread/rules_message.py);
- a failed start or a crash names its cause (failures.py);
- ``model has unused tensor blk.N.nextn...`` with no draft lines -> MTP_NOT_ENABLED, or NO_MTP_GRAPH
  when draft-mtp was asked for (or the architecture has no graph); a log that shows no command line gives both
  at medium and low confidence, with the run that decides;
- acceptance at most 5% while the baseline runs (from a log: its acceptance, or without one a mean
  length of at most 1.05, which is at most 0.05 accepted tokens per step and so at most 5% at any
  draft length) -> HEAD_QUANTIZED when static evidence shows a quantized or damaged head (check's
  MTP_QUANTIZED / MTP_PARTIALLY_EXCLUDED / FUSED_NAME_MISMATCH / LOW_BIT_MTP_HEAD, all-zero head
  weights, a vLLM engine that loads a quantized checkpoint and drafts with that same checkpoint),
  otherwise HEAD_DISAGREES (HEAD_FOREIGN when check finds the sidecar's embedding another trunk's). A zeroed head is "damaged", so HEAD_QUANTIZED (its evidence line says "all
  zero"); without data to read (a log only) it is HEAD_DISAGREES. Its fix is the engine's (advice.py):
  a vLLM or SGLang log gets engine version, method, checkpoint and the known engine bugs its settings
  point at, never a GGUF re-export. Acceptance of 50% or more refutes a static head warning;
- the copy class (text any matching head drafts nearly all of) judges the head, head_rules.py: below its
  level -> HEAD_FOREIGN, HEAD_QUANTIZED or HEAD_WEAK by check's evidence; at it, a class below 0.5 is hard
  text -> PROMPT_CLASS, and a static HEAD_FOREIGN is dropped. The rules below read the other classes;
- without copy figures (its runs failed), classes whose n-max 1 acceptance
  differ by 0.3 or more, one below 0.5 -> PROMPT_CLASS;
- going from n-max 1 to 3 gains under 0.35 accepted tokens per extra drafted token (confidence 0.7
  when n-max 3 also measured slower, 0.45 otherwise), or a log's deepest two positions accepted under 35% of
  steps on average (the same gain per extra drafted token, read from the per-position list) -> NMAX_TOO_HIGH (with a known engine bug when the deepest positions fall to
  exactly 0: a cliff, not a decay);
- acceptance 50% or more and every MTP configuration under 0.95x the baseline -> SLOWER_THAN_BASELINE;
- a request that filled 90% of the slot's context, or was truncated -> CONTEXT_NEAR_LIMIT;
- the runs of one pasted text compared by their decode speed (logread/rules_run.py: compared_runs): every drafting
  run no faster than the run without it -> SLOWER_THAN_BASELINE.

Merging: one cause per code; confidences from independent sources combine as 1 - prod(1 - c);
evidence lines are concatenated; a log cause's evidence names the figures the log lacks. Ranking: by
score = mechanism weight (blocked 1.0, zero 0.9, low 0.6, slow 0.5) x confidence, highest first; ties
keep the catalogue order of mtpinspect/causes.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mtpinspect.causes import CAUSES, FINE_ACCEPTANCE, SLOWER, Cause
from mtpinspect.diagnosis.advice import (
    FOREIGN_HEAD_FIX,
    disagreeing_head_fix,
    known_bugs,
    mtp_off_fix,
    n_max_fix,
    n_max_setting,
)
from mtpinspect.diagnosis.failures import CrashEvidence, classify_failure
from mtpinspect.diagnosis.head_rules import foreign_line, judge_head
from mtpinspect.diagnosis.probe_result import COPY_CLASS, ProbeFigure, ProbeResult, fmt
from mtpinspect.diagnosis.static import (
    StaticEvidence,
    fix_command,
    head_fix,
    settings_causes,
    static_causes,
)
from mtpinspect.inspection.support import llama_cpp_graph
from mtpinspect.logread.catalogue import Meaning
from mtpinspect.logread.drafters import Drafter, drafter_named, drafting_place
from mtpinspect.logread.rules_loader import loader_cause
from mtpinspect.logread.rules_message import REJECTED_TYPE, drafting_path, message_cause
from mtpinspect.logread.rules_run import (
    compared_runs,
    crash_may_be_mtps,
    drafter_crash,
    drafter_death,
    drafter_failed_start,
    mtp_tie,
    not_mtps,
    run_cause,
)
from mtpinspect.logread.run_facts import MtpUse
from mtpinspect.logread.runs import LogEvidence
from mtpinspect.runtime.flags import MTP_SPEC_TYPE, SPEC_FLAGS, SPEC_TYPE, ServerArgs
from mtpinspect.runtime.n_max import WORTH_DRAFTING, measured_by
from mtpinspect.runtime.workarounds import Trial
from mtpinspect.vocabulary import Engine, EvidenceSource, GraphSupport

ZERO_ACCEPTANCE = 0.05
CLASS_GAP = 0.3
CONTEXT_SHARE = 0.9
_MAX_EVIDENCE = 10


def gather_causes(
    static: StaticEvidence | None, settings: ServerArgs, probe: ProbeResult | None, logs: Sequence[LogEvidence]
) -> tuple[list[Cause], list[str]]:
    """Every cause the evidence supports, ranked, and notes on evidence that was set aside."""
    causes = static_causes(static, settings) if static is not None else settings_causes(settings, None)
    notes: list[str] = []
    if probe is not None:
        found, head_notes = _probe_causes(static, settings, probe)
        causes += found
        causes, refuted = _refute_head_warning(causes, probe)
        notes += head_notes + refuted
    for log in logs:
        causes += _log_causes(static, settings, log)
        note = not_mtps(log)
        notes += [note] if note and not _rejected_spec_type(log) else []
    causes += compared_runs(logs)  # the runs of one text against each other (a table of configurations)
    return rank(causes), notes


def rank(causes: Sequence[Cause]) -> list[Cause]:
    """One cause per code, ordered by mechanism weight x confidence (ties: catalogue order)."""
    merged: dict[str, Cause] = {}
    for cause in causes:
        merged[cause.code] = _merge(merged[cause.code], cause) if cause.code in merged else cause
    order = list(CAUSES)
    return sorted(merged.values(), key=lambda c: (-round(c.score, 6), order.index(c.code)))


def _merge(a: Cause, b: Cause) -> Cause:
    strong, weak = (a, b) if a.confidence >= b.confidence else (b, a)
    evidence = list(dict.fromkeys([*strong.evidence, *weak.evidence]))[:_MAX_EVIDENCE]
    return Cause(
        code=a.code,
        confidence=1 - (1 - a.confidence) * (1 - b.confidence),
        message=strong.message,
        evidence=tuple(evidence),
        fix=strong.fix,
        sources=tuple(dict.fromkeys([*strong.sources, *weak.sources])),
    )


# -- the probe ----------------------------------------------------------------------------------


def _probe_causes(static: StaticEvidence | None, settings: ServerArgs, probe: ProbeResult) -> tuple[list[Cause], list[str]]:
    """The probe's causes, and notes on static evidence it refutes."""
    causes: list[Cause] = []
    notes: list[str] = []
    given = probe.as_given
    if given is not None:
        causes += _as_given_causes(static, settings, probe)
    mtp = probe.mtp_figures()
    had_sidecar = static is not None and static.sidecar is not None
    crashed = {entry.configuration for entry in probe.crashes}
    for entry in probe.crashes:
        fix = entry.workaround.apply(settings.without(*SPEC_FLAGS).added(*SPEC_TYPE.spelled(MTP_SPEC_TYPE))) \
            if entry.workaround else None
        evidence = CrashEvidence(entry.crash, tuple(Trial(t.workaround, ServerArgs.of(t.args), t.ok, t.outcome)
                                                    for t in entry.tried),
                                 fix, entry.workaround, baseline_ran=True)
        cause = classify_failure([], static, settings, had_sidecar=had_sidecar, source=EvidenceSource.probe, crash=evidence)
        if cause is not None:
            causes.append(cause)
    failed = [f for f in mtp if f.error and not f.drafted and f.configuration not in crashed]
    if failed:
        log_lines = [line for log in probe.mtp_logs for line in log.telling]
        cause = classify_failure([*log_lines, *(f.error or "" for f in failed)], static, settings,
                                 had_sidecar=had_sidecar, source=EvidenceSource.probe)
        if cause is not None:
            causes.append(cause)
    ran = [f for f in mtp if f.drafted]
    if ran:
        found, notes = _acceptance_causes(static, probe, ran)
        causes += found
    elif mtp and not failed and settings.p_min is not None and settings.p_min > 0:
        causes.append(Cause("HIGH_P_MIN", 0.9, f"no token was drafted at --spec-draft-p-min {settings.p_min:g}",
                            tuple(f.line() for f in mtp), "lower it: --spec-draft-p-min 0 (the default)",
                            (EvidenceSource.probe,)))
    for log in probe.mtp_logs:
        causes += _context_causes(log, EvidenceSource.probe)
    return causes, notes


def _as_given_causes(static: StaticEvidence | None, settings: ServerArgs, probe: ProbeResult) -> list[Cause]:
    given = probe.as_given
    assert given is not None
    had_sidecar = settings.draft_model is not None or (static is not None and static.sidecar_given)
    lines = [*(given.log.telling if given.log else []), given.failure or ""] if given.failure else []
    crash = None
    if given.crash is not None:
        search = given.workarounds
        found = search.fix if search else None
        crash = CrashEvidence(given.crash, search.trials if search else (), found.args if found else None,
                              found.workaround if found else None, baseline_ran=_baseline_ran(probe))
    cause = classify_failure(lines, static, settings, had_sidecar=had_sidecar, source=EvidenceSource.probe, crash=crash,
                             offered=given.log.offered_spec_types if given.log else None)
    if cause is not None:
        return [cause]
    if given.log is None:
        return []
    return _unused_head_causes(static, settings, given.log, EvidenceSource.probe, asked_mtp=MTP_SPEC_TYPE in settings.spec_types)


def _unused_head_causes(
    static: StaticEvidence | None, settings: ServerArgs, log: LogEvidence, source: EvidenceSource, *, asked_mtp: bool
) -> list[Cause]:
    if log.drafted_anything or not log.unused_nextn:
        return []
    evidence = (f"{log.unused_nextn_line or f'model has unused tensor {log.unused_nextn[0]}'} "
                f"(and {len(log.unused_nextn) - 1} more nextn tensors)",
                f"{log.path}: no draft acceptance line")
    arch = log.architecture or (static.architecture if static else None)
    if asked_mtp or (arch is not None and llama_cpp_graph(arch) is GraphSupport.unused):
        return [Cause("NO_MTP_GRAPH", 0.85,
                      f"the server keeps the nextn tensors unused{f' for {arch}' if arch else ''}: this build has no MTP "
                      "graph for the architecture", (*evidence, f"architecture: {arch or 'unknown'}"),
                      "use a llama.cpp build whose MTP support covers this architecture, or serve it with vLLM/SGLang",
                      (source,))]
    if source is EvidenceSource.log and log.mtp_use is MtpUse.not_shown and log.crash is not None and \
            mtp_tie(log) is None:
        return []  # a bare excerpt of a crash in a load that left the head out: the crash is the paste's news (a note)
    if source is EvidenceSource.log and log.mtp_use is MtpUse.not_shown:
        # A bare excerpt (a loader's lines, no command line): nothing says whether MTP was asked for, so the same
        # unused tensors are either a run without MTP or a build without the graph; the next run decides.
        check = ("the check that decides: start it with --spec-type draft-mtp; draft lines mean MTP was only off, "
                 "the nextn tensors still unused mean this build has no MTP graph for the architecture")
        return [Cause("MTP_NOT_ENABLED", 0.5, "the head is in the file and unused, and the paste shows no command "
                      "line: MTP was not switched on, or (below) the build cannot run it", (*evidence, check),
                      fix_command(static, settings), (source,)),
                Cause("NO_MTP_GRAPH", 0.45, f"or this build has no MTP graph for {arch or 'the architecture'}: it "
                      "keeps the nextn tensors unused even with MTP asked for", (*evidence, check),
                      "use a llama.cpp build whose MTP support covers this architecture, or serve it with vLLM/SGLang",
                      (source,))]
    return [Cause("MTP_NOT_ENABLED", 0.9 if source is EvidenceSource.log else 0.95,
                  "the head is in the file but the run never switched MTP on (no --spec-type draft-mtp)", evidence,
                  fix_command(static, settings), (source,))]


def _baseline_ran(probe: ProbeResult) -> bool:
    return any(f.n_max is None and f.tokens_per_second is not None for f in probe.figures)


def _pooled(figures: Sequence[ProbeFigure]) -> float | None:
    drafted = sum(f.drafted for f in figures)
    return sum(f.accepted for f in figures) / drafted if drafted else None


def _baseline_lines(probe: ProbeResult) -> list[str]:
    return [f.line() for f in probe.figures if f.n_max is None]


def _acceptance_causes(static: StaticEvidence | None, probe: ProbeResult, ran: list[ProbeFigure]) -> tuple[list[Cause], list[str]]:
    """Causes from what the probe's drafts were accepted: the copy class judges the head (head_rules.py), the
    other classes the text, the draft length and the speed."""
    pooled = _pooled(ran) or 0.0
    lines = [f.line() for f in ran]
    if pooled <= ZERO_ACCEPTANCE:
        evidence = (f"probe: acceptance {pooled:.1%} over {sum(f.drafted for f in ran)} drafted tokens", *lines,
                    *_baseline_lines(probe)[:1])
        return [_zero_cause(static, None, evidence, EvidenceSource.probe, 0.9, probe.server.engine)], []
    head = judge_head(static, ran, probe.server.engine)
    text = [f for f in ran if f.prompt_class != COPY_CLASS]
    causes = list(head.causes)
    if head.matches is None:
        causes += _class_causes(text)
    causes += _nmax_causes(probe, text)
    text_pooled = _pooled(text)
    if text_pooled is not None and text_pooled >= FINE_ACCEPTANCE:
        causes += _slower_causes(probe, text, text_pooled)
    return causes, head.notes


def _zero_cause(static: StaticEvidence | None, log: LogEvidence | None, evidence: tuple[str, ...], source: EvidenceSource,
                confidence: float, engine: Engine = Engine.llama_cpp) -> Cause:
    defects = bool(static and (static.head_defect or static.zero_tensors))
    quantized = log is not None and log.quantization is not None
    # A vLLM banner's quantization is the target checkpoint's: it is the head's only when the same checkpoint drafts.
    quantized_engine = quantized and log is not None and not log.separate_drafter
    if quantized and log is not None and log.separate_drafter:
        evidence = (*evidence, f"{log.path}: the target is quantized ({log.quantization}) but the drafter is another "
                               f"checkpoint ({log.draft_model}): not a quantized head")
    foreign = foreign_line(static)
    if foreign is not None:
        return Cause("HEAD_FOREIGN", confidence, "the head drafts nothing the model accepts: the sidecar's head was "
                     "trained with another trunk", (*evidence, foreign), FOREIGN_HEAD_FIX, (source, EvidenceSource.static))
    if defects or quantized_engine:
        extra = (f"{log.path}: the engine loads the checkpoint with quantization={log.quantization}",) if quantized_engine and log else ()
        why = _head_defect_words(static, log if quantized_engine and not defects else None)
        return Cause("HEAD_QUANTIZED", confidence, f"the MTP head drafts nothing the model accepts: {why}",
                     (*evidence, *extra), head_fix(static), (source,))
    bugs = tuple(sign for sign, _ in known_bugs(log))
    return Cause("HEAD_DISAGREES", confidence - 0.05,
                 "the head loads and drafts, the model runs, yet about every draft is rejected: the head does not "
                 "match this model (other fine-tune or revision, broken export) or the engine runs it wrongly",
                 (*evidence, *bugs), disagreeing_head_fix(log, engine), (source,))


def _head_defect_words(static: StaticEvidence | None, log: LogEvidence | None) -> str:
    if log is not None:
        return f"the engine runs it quantized ({log.quantization})"
    assert static is not None
    if static.zero_tensors and not static.head_defect:
        return "its weights are all zero"
    if static.has("LOW_BIT_MTP_HEAD"):
        return "its tensors are at very low-bit GGUF types"
    return "it is quantized without exclusion"


def _class_causes(ran: list[ProbeFigure]) -> list[Cause]:
    first = {f.prompt_class: f for f in ran if f.n_max == min(x.n_max or 0 for x in ran)}
    if len(first) < 2:
        return []
    rates = {c: f.acceptance for c, f in first.items() if f.acceptance is not None}
    if len(rates) < 2:
        return []
    worst, best = min(rates, key=rates.__getitem__), max(rates, key=rates.__getitem__)
    if rates[worst] >= FINE_ACCEPTANCE or rates[best] - rates[worst] < CLASS_GAP:
        return []
    evidence = tuple(first[c].line() for c in sorted(first))
    return [Cause("PROMPT_CLASS", 0.75,
                  f"acceptance depends on the kind of text: {best} {rates[best]:.0%}, {worst} {rates[worst]:.0%}",
                  evidence,
                  f"use MTP where it drafts well ({best}); for {worst} expect little gain or leave it off; "
                  "measure your own prompts: mtpinspect sweep MODEL --prompts YOUR_PROMPTS.jsonl",
                  (EvidenceSource.probe,))]


def _nmax_causes(probe: ProbeResult, ran: list[ProbeFigure]) -> list[Cause]:
    # The decay is a property of the head and the text; one short timing per configuration is not, so
    # speed only raises the confidence (as the log rule does with the decay alone).
    evidence: list[str] = []
    slower = False
    for prompt_class in sorted({f.prompt_class for f in ran}):
        mine = sorted((f for f in ran if f.prompt_class == prompt_class and f.n_max), key=lambda f: f.n_max or 0)
        if len(mine) < 2:
            continue
        low, high = mine[0], mine[-1]
        if None in (low.mean_length, high.mean_length, low.speedup, high.speedup):
            continue
        assert low.n_max and high.n_max and low.mean_length and high.mean_length and low.speedup and high.speedup
        gain = (high.mean_length - low.mean_length) / (high.n_max - low.n_max)
        if gain < WORTH_DRAFTING:
            slower |= high.speedup < low.speedup
            evidence.append(
                f"{prompt_class}: n-max {low.n_max} -> {high.n_max} adds {gain:.2f} accepted tokens per extra drafted "
                f"token (mean length {low.mean_length:.2f} -> {high.mean_length:.2f}); speedup {low.speedup:.2f}x -> "
                f"{high.speedup:.2f}x; per position {', '.join(f'{r:.2f}' for r in high.per_position)}")
    if not evidence:
        return []
    low_n = min(f.n_max or 1 for f in ran)
    return [Cause("NMAX_TOO_HIGH", 0.7 if slower else 0.45,
                  "deeper draft positions are rarely accepted: a high n-max costs more than it gains",
                  tuple(evidence), f"{n_max_fix(probe.server.engine, low_n)} ({measured_by('the probe')})",
                  (EvidenceSource.probe,))]


def _slower_causes(probe: ProbeResult, ran: list[ProbeFigure], pooled: float) -> list[Cause]:
    timed = [f for f in ran if f.speedup is not None]
    if not timed:
        return []
    best = max(timed, key=lambda f: f.speedup or 0.0)
    assert best.speedup is not None
    if best.speedup >= SLOWER:
        return []
    base = probe.baseline(best.prompt_class)
    evidence = [
        f"probe: acceptance {pooled:.0%}, yet the best MTP setting (n-max {best.n_max}, {best.prompt_class}) decodes "
        f"{fmt(best.tokens_per_second, '.1f')} tok/s vs {fmt(base.tokens_per_second if base else None, '.1f')} "
        f"tok/s without MTP ({best.speedup:.2f}x)",
    ]
    for cost in probe.costs:
        needed = ("no acceptance can pay off here (even perfect drafts give at most "
                  f"{cost.n_max + 1} tokens per step)") if cost.break_even_acceptance is None else (
            f"break-even per-token acceptance about {cost.break_even_acceptance:.2f}")
        evidence.append(f"n-max {cost.n_max}: a verification step costs {cost.step_cost:.2f} baseline tokens "
                        f"(measured mean length {cost.mean_length:.2f}, {cost.speedup:.2f}x): {needed} (estimate)")
    confidence = 0.55 if best.within_noise else 0.85
    return [Cause("SLOWER_THAN_BASELINE", confidence,
                  "drafts are accepted, but verifying them costs more than it saves on this machine",
                  tuple(evidence), mtp_off_fix(probe.server.engine), (EvidenceSource.probe,))]


def _refute_head_warning(causes: list[Cause], probe: ProbeResult) -> tuple[list[Cause], list[str]]:
    """A static head warning that the probe contradicts (acceptance >= 50%) is dropped, with a note. A
    static HEAD_FOREIGN is dropped when the copy probe finds the head matching (head_rules.py says why)."""
    measured = any(c.code == "HEAD_FOREIGN" and EvidenceSource.probe in c.sources for c in causes)
    if _copy_measured(probe) and not measured:
        causes = [c for c in causes if not (c.code == "HEAD_FOREIGN" and c.sources == (EvidenceSource.static,))]
    pooled = _pooled([f for f in probe.mtp_figures() if f.drafted])
    if pooled is None or pooled < FINE_ACCEPTANCE:
        return causes, []
    kept = [c for c in causes if not (c.code == "HEAD_QUANTIZED" and c.sources == (EvidenceSource.static,))]
    if len(kept) == len(causes):
        return causes, []
    return kept, [f"check warns about the head's quantization, but the probe measured acceptance {pooled:.0%}: "
                  "the head drafts well on this model"]


def _copy_measured(probe: ProbeResult) -> bool:
    return any(f.prompt_class == COPY_CLASS and f.drafted for f in probe.mtp_figures())


def _context_causes(log: LogEvidence, source: EvidenceSource) -> list[Cause]:
    if log.n_ctx is None or log.max_tokens is None:
        return []
    if log.max_tokens < CONTEXT_SHARE * log.n_ctx and not log.truncated:
        return []
    return [Cause("CONTEXT_NEAR_LIMIT", 0.7,
                  f"requests fill the context ({log.max_tokens} of {log.n_ctx} tokens): drafts are cut to fit",
                  (f"{log.path}: n_ctx_slot = {log.n_ctx}, a request ended at n_tokens = {log.max_tokens}"
                   + (", truncated" if log.truncated else ""),),
                  f"raise the context: -c {max(2 * log.n_ctx, 4096)} (prompt + n_predict + n-max + 2 must fit)",
                  (source,))]


# -- logs of runs made elsewhere ---------------------------------------------------------------


def _rejected_spec_type(log: LogEvidence) -> bool:
    return any(REJECTED_TYPE.search(line) for line in [*log.telling, log.failure or ""])


def _log_causes(static: StaticEvidence | None, settings: ServerArgs, log: LogEvidence) -> list[Cause]:
    causes: list[Cause] = []
    had_sidecar = bool(log.mtp_context and "loading draft model" in log.mtp_context)
    crash = CrashEvidence(log.crash, suggested=tuple(log.suggested), engine=log.runtime) if log.crash is not None else None
    tied = mtp_tie(log) is not None  # without a tie to MTP, a crash is a crash: no MTP cause (logread/rules_run.py)
    head_found = static.has("MTP_PRESENT") if static is not None else None
    # The loader's missing block tensor is read against the GGUF's layout whatever ties it (logread/rules_loader.py).
    special = ((run_cause(log, head_found) or message_cause(log)) if tied else None) or loader_cause(log)
    if special is not None:
        causes.append(special)
    # With MTP off a crash is not MTP's (a note), unless another drafter was on and the crash is in its code.
    elif tied and (log.mtp_use is not MtpUse.off or _rejected_spec_type(log) or drafter_crash(log) is not None or
                   drafter_death(log) is not None or drafter_failed_start(log) is not None):
        no_head = [h.line for h in log.scan.of(Meaning.no_head)] if log.scan is not None else []
        failure = classify_failure([*log.telling, *no_head, log.failure or ""] if log.failure or log.telling else [],
                                   static, settings, had_sidecar=had_sidecar, source=EvidenceSource.log, crash=crash,
                                   offered=log.offered_spec_types, engine=log.runtime)
        if failure is not None and failure.code == "MTP_ENGINE_CRASH" and log.mtp_use is MtpUse.not_shown:
            failure = _unshown_mtp(failure, log) if crash_may_be_mtps(log) else None
        if failure is not None and failure.code == "MTP_ENGINE_CRASH" and log.mtp_use is MtpUse.off:
            failure = _other_drafter_crash(failure, log)
        if failure is not None and failure.code == "MTP_FAILED" and log.mtp_use is MtpUse.off:
            failure = _other_drafter_failure(failure, log)
        if failure is not None and log.crash_line is not None:  # every reading cites its line
            failure = replace(failure, evidence=(failure.evidence[0], f"{log.path}: {log.crash_line}", *failure.evidence[1:]))
        if failure is not None:
            causes.append(failure)
    causes += _unused_head_causes(static, settings, log, EvidenceSource.log, asked_mtp=log.mtp_context is not None)
    if _zero_in_log(log):
        causes.append(_zero_cause(static, log, (_acceptance_line(log), *log.draft_lines, *_lacks(log)),
                                  EvidenceSource.log, 0.75))
    elif log.drafted != 0:
        causes += _decay_causes(log)
    causes += _context_causes(log, EvidenceSource.log)
    return causes


def _other_drafter_crash(cause: Cause, log: LogEvidence) -> Cause:
    """A crash in another drafter's code (EAGLE3, DFlash, a draft model, n-gram) in a run with MTP off: the speculative
    path's crash, said in those words, at medium confidence (the place is the drafter's, the trigger is not proven)."""
    assert log.run is not None and log.crash is not None
    drafter = log.run.drafter or Drafter.draft_model
    named = log.run.other_drafter or ",".join(log.run.spec_types) or log.run.draft_file or ""
    place = drafter_crash(log)
    said = f"the crash is in the drafter's code: {place[:200]}" if place is not None else \
        f"the run sets {drafter} ({named[:120]}), and the engine died while it served: {(drafter_death(log) or '')[:200]}"
    return replace(cause, confidence=min(cause.confidence, 0.7 if place is not None else 0.6),
                   message=f"the engine crashes on {drafter}'s drafting path (MTP off, {named[:80]} drafting): "
                           f"{log.crash.summary}",
                   evidence=(*cause.evidence, f"{log.path}: {said}"))


def _other_drafter_failure(cause: Cause, log: LogEvidence) -> Cause:
    """A failed start in a run with MTP off whose own line says another drafter (a -md draft model, EAGLE3, DFlash) did
    not load or get its context: the speculative configuration failed, said as that drafter's, not MTP's head."""
    assert log.run is not None
    drafter = log.run.drafter or Drafter.draft_model
    named = log.run.other_drafter or log.run.draft_file or ",".join(log.run.spec_types) or ""
    said = drafter_failed_start(log) or ""
    shown = any(said.endswith(e) or e.endswith(said.split(": ", 1)[-1]) for e in cause.evidence)
    return replace(cause, message=f"the speculative configuration failed at the start: the drafter the run set "
                                  f"({drafter}, {named[:80]}) did not load, MTP off: {(log.failure or said)[:200]}",
                   evidence=cause.evidence if shown else (*cause.evidence, f"{log.path}: {said}"),
                   fix="start without the drafter (drop -md / --spec-type) to confirm the target loads alone; then "
                       "check the draft model's file and the settings it shares with the target (KV cache types, "
                       "context, batch: a fork's own cache types may not apply to the drafter), or try a newer build")


def _unshown_mtp(cause: Cause, log: LogEvidence) -> Cause:
    """A crash in an excerpt that shows nothing of the run: MTP's only if MTP was on, which it does not show; but a
    crash its own place puts in the engine's drafting code (drafters.py: a frame of common_speculative_draft) is on the
    speculative path whatever the run set, and says so (still medium: what failed there, a loader's check or the
    drafting itself, the place alone does not say)."""
    assert log.run is not None
    crash = log.crash
    # The crash's own place (a backtrace's frame, an assert's file), not the log lines before it.
    found = drafting_place((crash.message, crash.where or "")) if crash is not None else None
    if crash is not None and found is not None:
        drafter = drafter_named(found.line, otherwise=None)
        path = "the MTP path" if drafter is Drafter.mtp else f"{drafter}'s drafting path" if drafter else "the speculative path"
        return replace(cause, confidence=min(cause.confidence, 0.7),
                       message=f"the engine crashes in its drafting code ({found.code.means}), on {path}: "
                                      f"{crash.summary}",
                       evidence=(*cause.evidence, f"{log.path}: the crash's place is the drafter's code: {found.line[:200]}"))
    path = drafting_path(log)
    message = cause.message if path in ("the MTP path", "the speculative path") or crash is None else \
        f"the engine crashes on {path} (the drafter the text shows): {crash.summary}"
    return replace(cause, confidence=min(cause.confidence, 0.6), message=message,
                   evidence=(*cause.evidence, f"{log.path}: {log.run.evidence}: MTP's only if the run had MTP on "
                                              "(if it did not, this is a crash, not MTP's)"))


# Fewer drafted tokens than this say nothing of a head (one drafted token rejected is not 0% acceptance).
MIN_DRAFTED_TO_JUDGE = 16


def _zero_in_log(log: LogEvidence) -> bool:
    if log.drafted is not None and log.drafted < MIN_DRAFTED_TO_JUDGE:  # nothing, or too little, drafted to judge
        return False
    if log.acceptance is not None:
        return log.acceptance <= ZERO_ACCEPTANCE
    return log.mean_length is not None and log.mean_length - 1 <= ZERO_ACCEPTANCE


def _acceptance_line(log: LogEvidence) -> str:
    if log.accepted is not None and log.drafted is not None:
        return f"{log.path}: {log.accepted} accepted of {log.drafted} drafted tokens ({(log.acceptance or 0.0):.1%})"
    if log.acceptance is not None:
        return f"{log.path}: acceptance {log.acceptance:.1%}"
    return f"{log.path}: mean acceptance length {log.mean_length:.2f} (no more than 1 token per step)"


def _lacks(log: LogEvidence) -> tuple[str, ...]:
    lacks = (f"{log.path}: the log lacks {', '.join(log.missing)}; diagnosed from the figures it has",) if log.missing else ()
    return (*lacks, *log.derived)


def _decay_causes(log: LogEvidence) -> list[Cause]:
    # The probe's rule read from the list: a per-position rate is the tokens that position adds per step, so the
    # deepest two positions' mean is what going from n-max N-2 to N gains per extra drafted token. One deepest
    # position just under the floor is not the cause: dropping it gives back its cost less its yield, about nothing.
    rates = log.per_position
    if len(rates) < 2 or sum(rates[-2:]) / 2 >= WORTH_DRAFTING:
        return []
    # The n-max to keep is the rule's own: the positions that still add WORTH_DRAFTING tokens per step (a position at
    # 0.47 pays for itself, though accepted in under half the steps).
    keep = max(1, sum(1 for r in rates if r >= WORTH_DRAFTING))
    bugs = known_bugs(log)
    fix = f"{n_max_setting(log.runtime, keep)} ({measured_by(f'the run in {log.path}')})" + "".join(f"; {change}" for _, change in bugs)
    return [Cause("NMAX_TOO_HIGH", 0.6,
                  f"acceptance decays with draft position ({rates[0]:.2f} -> {rates[-1]:.2f}): the deepest drafts are wasted",
                  (f"{log.path}: per-position acceptance {', '.join(f'{r:.2f}' for r in rates)}", *log.draft_lines[:2],
                   *(sign for sign, _ in bugs), *_lacks(log)),
                  fix, (EvidenceSource.log,))]
