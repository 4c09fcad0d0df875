"""Read a pasted text as `mtpinspect diagnose --log` does, for the unit tests of the log reader's rules."""

from __future__ import annotations

from pathlib import Path

from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import FormatError
from mtpinspect.vocabulary import Engine


def read_paste(tmp_path: Path, text: str) -> tuple[list[str], Engine | None]:
    """The causes' codes and the engine; a text refused (no line means anything) names none."""
    paste = tmp_path / "paste.log"
    paste.write_text(text, encoding="utf-8")
    try:
        report = diagnose(log_files=[paste])
    except FormatError:
        return [], None
    return [c.code for c in report.causes], report.logs[0].runtime
