"""Inspection: sources -> formats -> evidence -> diagnosis -> report, reading headers only."""

from __future__ import annotations

from mtpinspect.inspection.diagnosis import diagnose
from mtpinspect.inspection.evidence import gather
from mtpinspect.inspection.report import CheckReport
from mtpinspect.sources.resolve import resolve


def check(
    source: str,
    revision: str | None = None,
    token: str | None = None,
    *,
    file: str | None = None,
    mtp_file: str | None = None,
    endpoint: str | None = None,
) -> CheckReport:
    """Decide whether the MTP head of ``source`` will work, reading only headers and small files.

    ``source`` is a Hub repo id (``ORG/NAME`` or ``ORG/NAME:QUANT``), a local GGUF, or a local snapshot
    directory (the Hugging Face cache included). Raises ``MtpinspectError`` subclasses for bad input.
    """
    target = resolve(source, revision=revision, token=token, endpoint=endpoint, file=file, mtp_file=mtp_file)
    return diagnose(gather(target))


__all__ = ["CheckReport", "check"]
