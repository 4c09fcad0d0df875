"""Causes that one line of the catalogue (messages.py) establishes, for texts no richer rule explains.

Tried after the rules that read the run (run_rules.py) and before the failed-start and crash rules
(failures.py), and only when MTP was not off:

- a line whose catalogue entry names a cause (a desktop app's own refusal, an MTP flag the build rejects
  as unknown): that cause, in the terms of whoever printed it;

The rest only when the text holds no MTP-failure line, which failures.py reads:

- a llama.cpp usage listing whose ``--spec-type`` values lack ``draft-mtp`` (the build's own list, printed
  after a rejected argument or by ``--help``) -> BUILD_WITHOUT_MTP, whatever the command asked for;
- a backend's kernel failure (Level Zero / Unified Runtime ``ZE_RESULT_ERROR_*``) in a run with MTP on
  -> ENGINE_LIMITATION: the backend cannot run MTP's path, not the head;
- a Python exception whose text, or whose traceback, is the engine's speculative or MTP code (an MTP
  drafter class or module, ``spec_decode``, ``--speculative-algorithm``, or the exception's own words:
  speculative, draft, MTP, NextN) -> ENGINE_LIMITATION: the engine's MTP path fails for this model or
  setting (an assertion on which algorithms a model supports, an AttributeError on an MTP class).

Confidence: 0.85 for an app's refusal and an exception that names MTP itself; 0.7 when only the
traceback around it shows the speculative path; 0.6 when MTP use is not shown at all.
"""

from __future__ import annotations

import re

from mtpinspect.diagnosis.causes import Cause
from mtpinspect.diagnosis.failures import build_without_mtp
from mtpinspect.diagnosis.logs import LogEvidence
from mtpinspect.diagnosis.messages import Hit, Meaning, Scan, gap_remedy
from mtpinspect.diagnosis.run_facts import MtpUse
from mtpinspect.runtime.flags import MTP_SPEC_TYPE
from mtpinspect.vocabulary import Engine, EvidenceSource

# An exception's own words that put it on the speculative path.
_SPECULATIVE_WORDS = re.compile(r"speculat|\bdraft|\bMTP\b|mtp_|_mtp|NextN|nextn|\bEAGLE|spec_decode|num_speculative", re.IGNORECASE)


def message_cause(log: LogEvidence) -> Cause | None:
    """The cause a catalogue line establishes (see the module docstring), or None."""
    hits = log.scan
    if hits is None or log.mtp_use is MtpUse.off:
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
    gap = hits.first(Meaning.engine_gap)
    if gap is not None and log.mtp_use is MtpUse.on:
        return _backend_gap(log, gap)
    for exception in hits.of(Meaning.exception):
        cause = _exception(log, hits, exception)
        if cause is not None:
            return cause
    return None


def _source(hit: Hit) -> str:
    return f"{hit.message.means} ({hit.message.source})"


def _confidence(log: LogEvidence, high: float) -> float:
    return high if log.mtp_use is MtpUse.on else min(high, 0.6)


def _decisive(log: LogEvidence, hit: Hit) -> Cause:
    message = hit.message
    assert message.cause is not None
    evidence = (hit.line, f"{log.path}: {_source(hit)}")
    if message.cause == "BUILD_WITHOUT_MTP":
        return build_without_mtp(message.means, evidence, EvidenceSource.log, 0.85)
    who = message.app.value if message.app is not None else (message.engine.value if message.engine else "the engine")
    return Cause(message.cause, 0.85, f"{who}: {message.means}", evidence, message.remedy or gap_remedy(None),
                 (EvidenceSource.log,))


def _backend_gap(log: LogEvidence, hit: Hit) -> Cause:
    on = log.run.evidence if log.run is not None else "MTP on"
    return Cause("ENGINE_LIMITATION", 0.8,
                 f"the backend fails on MTP's path ({hit.match.group(0)}): an engine gap, not the head",
                 (hit.line, f"{log.path}: {_source(hit)}", f"{log.path}: MTP on: {on}"),
                 f"{gap_remedy(_engine(log))}; on this backend try the run without MTP first, then report the kernel "
                 "failure with the backend named", (EvidenceSource.log,))


def _exception(log: LogEvidence, hits: Scan, hit: Hit) -> Cause | None:
    text = hit.match.group("text") or ""
    said = _SPECULATIVE_WORDS.search(text) is not None
    around = hits.mtp_sign or hits.first(Meaning.speculation)
    if not said and around is None:
        return None
    kind = hit.match.group("type")
    evidence = [hit.line, f"{log.path}: {_source(hit)}"]
    if around is not None:
        evidence.append(f"{log.path}: line {around.number}: {around.message.means}")
    engine = _engine(log)
    where = f"{engine.value}'s" if engine is not Engine.unknown else "the engine's"
    return Cause("ENGINE_LIMITATION", _confidence(log, 0.85 if said else 0.7),
                 f"{where} speculative / MTP code raises {kind}: an engine gap for this model or setting, not the head",
                 tuple(evidence), gap_remedy(engine), (EvidenceSource.log,))


def _engine(log: LogEvidence) -> Engine:
    if log.runtime is not Engine.unknown:
        return log.runtime
    writer = log.scan.writer if log.scan is not None else None
    return writer or Engine.unknown
