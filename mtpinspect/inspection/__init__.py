"""Inspection: sources -> formats -> evidence -> verdict -> report, reading headers only; for a GGUF,
the pinned llama.cpp's own metadata-only load confirms the llama.cpp verdict (engine.py)."""

from __future__ import annotations

from mtpinspect.errors import MtpinspectError
from mtpinspect.inspection.engine import consult_llama_cpp
from mtpinspect.inspection.evidence import gather
from mtpinspect.inspection.report import CheckFailure, CheckReport
from mtpinspect.inspection.verdict import assemble_report
from mtpinspect.runtime.verify import DEFAULT_CONTEXT
from mtpinspect.sources.resolve import resolve, resolve_each_gguf


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
) -> CheckReport:
    """Decide whether the MTP head of ``source`` will work, reading only headers and small files.

    ``source`` is a Hub repo id (``ORG/NAME`` or ``ORG/NAME:QUANT``), a local GGUF, or a local snapshot
    directory (the Hugging Face cache included). For a GGUF, ``verify`` asks the pinned llama.cpp itself
    (a metadata-only load, also giving the memory at ``context`` tokens): None when its helper is built,
    True always (building it first: minutes, once), False never. Raises ``MtpinspectError`` subclasses
    for bad input.
    """
    target = resolve(source, revision=revision, token=token, endpoint=endpoint, file=file, mtp_file=mtp_file)
    ev = gather(target)
    return assemble_report(ev, consult_llama_cpp(ev, verify, context))


def check_all(
    source: str,
    revision: str | None = None,
    token: str | None = None,
    *,
    endpoint: str | None = None,
    verify: bool | None = None,
    context: int = DEFAULT_CONTEXT,
) -> list[CheckReport | CheckFailure]:
    """`check` every GGUF model in a repo or folder: which quantizations keep a usable MTP head? A model
    that cannot be read (corrupt, cut short, an incomplete split set) is a CheckFailure in its place."""
    results: list[CheckReport | CheckFailure] = []
    for target in resolve_each_gguf(source, revision=revision, token=token, endpoint=endpoint):
        error = target.unreadable
        if error is None:
            try:
                ev = gather(target)
                results.append(assemble_report(ev, consult_llama_cpp(ev, verify, context)))
                continue
            except MtpinspectError as exc:
                error = str(exc)
        results.append(CheckFailure(target.display, target.kind, target.revision, {"gguf": target.gguf_files}, error))
    return results


__all__ = ["CheckFailure", "CheckReport", "check", "check_all"]
