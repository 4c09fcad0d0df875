"""mtpinspect: will a model's MTP / NextN head work for speculative decoding, and does it pay off here?

    >>> import mtpinspect
    >>> report = mtpinspect.check("unsloth/Qwen3.5-2B-MTP-GGUF:Q4_K_M")
    >>> report.usable, report.layout, report.runtimes["llama.cpp"].command
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mtpinspect.drift import DriftOptions, DriftReport, run_drift
    from mtpinspect.inspection.census import Census, find
    from mtpinspect.inspection.pipeline import check, check_all
    from mtpinspect.inspection.report import CheckReport

__all__ = ["Census", "CheckReport", "DriftOptions", "DriftReport", "__version__", "check", "check_all", "find",
           "run_drift"]


def __getattr__(name: str) -> Any:
    # Imported on first use so that `mtpinspect --help` does not pay for huggingface_hub and numpy.
    if name in ("check", "check_all"):
        from mtpinspect.inspection import pipeline

        return getattr(pipeline, name)
    if name == "CheckReport":
        from mtpinspect.inspection.report import CheckReport

        return CheckReport
    if name in ("find", "Census"):
        from mtpinspect.inspection import census

        return getattr(census, name)
    if name in ("run_drift", "DriftOptions", "DriftReport"):
        from mtpinspect import drift

        return getattr(drift, name)
    raise AttributeError(f"module 'mtpinspect' has no attribute {name!r}")
