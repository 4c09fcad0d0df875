"""`check`'s pipeline: sources -> formats -> evidence -> verdict -> report, reading headers only; for a GGUF,
the pinned llama.cpp's own metadata-only load confirms the llama.cpp verdict (engine.py)."""

from __future__ import annotations

from pathlib import Path

from mtpinspect.errors import MtpinspectError
from mtpinspect.inspection.app_rules import sweep_of
from mtpinspect.inspection.engine import DEFAULT_CONTEXT, consult_llama_cpp
from mtpinspect.inspection.evidence import gather
from mtpinspect.inspection.report import CheckedModels, CheckFailure, CheckReport
from mtpinspect.inspection.verdict import assemble_report
from mtpinspect.sources.policy import Clock, FetchPolicy
from mtpinspect.sources.resolve import Target, resolve, resolve_each_gguf


def check(
    source: str,
    revision: str | None = None,
    token: str | None = None,
    *,
    file: str | None = None,
    mtp_file: str | None = None,
    endpoint: str | None = None,
    verify: bool | None = None,
    context: int = DEFAULT_CONTEXT,
    sweep_report: str | Path | None = None,
    verify_digest: bool = False,
    policy: FetchPolicy | None = None,
) -> CheckReport:
    """Decide whether the MTP head of ``source`` will work, reading only headers and small files.

    ``source`` is a Hub repo id (``ORG/NAME`` or ``ORG/NAME:QUANT``), a local GGUF, a local snapshot
    directory (the Hugging Face cache included), a model of the local Ollama store (``ollama:NAME``) or
    of LM Studio's models folder (``lmstudio:PUBLISHER/REPO[:QUANT]``). For a GGUF, ``verify`` asks the
    pinned llama.cpp itself (a metadata-only load, also giving the memory at ``context`` tokens): None
    when its helper is built, True always (building it first: minutes, once), False never.
    ``sweep_report``, the report.json of a sweep of the same GGUF, gives the n-max Ollama and LM Studio
    are told to use. ``verify_digest`` hashes every Ollama blob (by default only those up to 64 MiB; the
    others' sizes are checked). ``policy`` bounds the Hub requests (timeout, retries, deadline) and says
    whether the header cache is used. Raises
    ``MtpinspectError`` subclasses for bad input.
    """
    target = resolve(source, revision=revision, token=token, endpoint=endpoint, file=file, mtp_file=mtp_file,
                     verify_digest=verify_digest, policy=policy)
    ev = gather(target)
    if sweep_report is not None:
        ev.sweep = sweep_of(ev, sweep_report)
    return assemble_report(ev, consult_llama_cpp(ev, verify, context))


def check_all(
    source: str,
    revision: str | None = None,
    token: str | None = None,
    *,
    endpoint: str | None = None,
    verify: bool | None = None,
    context: int = DEFAULT_CONTEXT,
    verify_digest: bool = False,
    policy: FetchPolicy | None = None,
) -> list[CheckReport | CheckFailure]:
    """`check` every GGUF model in a repo, a folder, the Ollama store (``ollama:``, or ``ollama:MODEL`` for its
    tags) or LM Studio's models folder (``lmstudio:``, ``lmstudio:PUBLISHER/REPO``): which keep a usable MTP
    head? A model that cannot be read (corrupt, cut short, an incomplete split set) is a CheckFailure in
    its place. Once the deadline of the Hub's requests passes, the models left are counted, not judged
    (``not_judged``): each would only fail on the deadline, and a repo of 20,000 files spent minutes so."""
    targets = resolve_each_gguf(source, revision=revision, token=token, endpoint=endpoint,
                                verify_digest=verify_digest, policy=policy)
    clock = getattr(targets[0].tree, "clock", None) if targets else None  # a Hub repo's: the command's deadline
    results = CheckedModels()
    for index, target in enumerate(targets):
        if isinstance(clock, Clock) and index and clock.left() <= 0:
            results.not_judged, results.deadline = len(targets) - index, clock.policy.deadline
            break
        results.append(judge(target, verify=verify, context=context))
    return results


def judge(target: Target, *, verify: bool | None = None, context: int = DEFAULT_CONTEXT) -> CheckReport | CheckFailure:
    """`check` of one resolved target (one model of `check --all`, one of `find`'s): its report, or, when it
    cannot be read (corrupt, cut short, gated, an incomplete split set), a CheckFailure with the one line why."""
    error = target.unreadable
    if error is None:
        try:
            ev = gather(target)
            return assemble_report(ev, consult_llama_cpp(ev, verify, context))
        except MtpinspectError as exc:
            error = str(exc)
    return CheckFailure(target.display, target.kind, target.revision, {"gguf": target.gguf_files}, error)
