"""The one output sink of the CLI: every command renders through it, in table, JSON, CSV or Markdown.

Commands describe what to show (free text, tables, the machine-readable document) and the sink decides
how, as huggingface_hub's `hf` CLI does with its `_output` module:

- ``table``: human text, tables drawn with tabulate;
- ``md``: the same content as GitHub Markdown;
- ``json``: only the document given to :meth:`Output.document`, indented;
- ``csv``: only the tables marked ``primary`` (one header row per table).

Strings that came from files or servers may hold terminal escapes; they are made printable before
they reach a terminal (as gguf-py's ``gguf_dump`` does with ``sanitize_name``). They may also be
megabytes long (a GGUF key, a log line): every line printed in table, md or csv is cut at
``MAX_LINE_CHARS`` with its length said, so output and time stay linear (wrapping is
quadratic in a cell's length). JSON carries every value whole.
"""

from __future__ import annotations

import enum
import io
import json
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from mtpinspect.errors import OutputError
from mtpinspect.jsonable import to_jsonable

# The longest line of a string the human formats print; the rest is cut and its length said.
MAX_LINE_CHARS = 1000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LONG_LINE = re.compile(rf"[^\n]{{{MAX_LINE_CHARS + 1},}}")


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    csv = "csv"
    md = "md"


def _cut(match: re.Match[str]) -> str:
    line = match.group(0)
    return f"{line[:MAX_LINE_CHARS]}... [cut: {len(line):,} characters]"


def sanitize(text: str) -> str:
    """Cut lines longer than MAX_LINE_CHARS, and replace control characters (ANSI escapes, bells,
    carriage returns) by visible escapes."""
    if len(text) > MAX_LINE_CHARS:
        text = _LONG_LINE.sub(_cut, text)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _column_widths(body: list[list[str]], ncols: int, terminal: int) -> list[int | None]:
    """Wrap the widest columns so that a table fits the terminal; short columns keep their width."""
    natural = [max((max((len(line) for line in row[i].split("\n")), default=0) for row in body), default=0) for i in range(ncols)]
    budget = max(terminal - 2 * ncols, 40)
    widths: list[int | None] = [None] * ncols
    while sum(w if w is not None else n for w, n in zip(widths, natural)) > budget:
        i = max(range(ncols), key=lambda k: widths[k] if widths[k] is not None else natural[k])
        current = widths[i] if widths[i] is not None else natural[i]
        if current <= 24:
            break
        widths[i] = current - max(current // 10, 1)
    return widths


def _wrapped(cell: str, width: int | None) -> str:
    """A cell wrapped to its column's width, each of its lines on its own: tabulate's maxcolwidths keeps a
    cell's line breaks from 0.10 on but joins them in 0.9, which pyproject.toml pins."""
    if width is None:
        return cell
    return "\n".join(wrapped for line in cell.split("\n") for wrapped in (textwrap.wrap(line, width) or [""]))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return sanitize(str(value))


class StdoutError(OutputError):
    """stdout cannot be written (closed, a full disk): the CLI says so on stderr."""


class GuardedStdout:
    """stdout as the CLI writes to it (the sink, click's --help): a write that fails because stdout is
    closed (``>&-``) or full (``> /dev/full``) becomes a StdoutError, one line on stderr. A reader that
    left (``| head``) still raises BrokenPipeError, which ends the program quietly."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def _do(self, action: str, *args: Any) -> Any:
        if self._stream is None:
            raise StdoutError("stdout is closed: redirect it to a file or /dev/null")
        try:
            return getattr(self._stream, action)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(f"stdout: cannot write the output ({exc.strerror or exc})") from None

    def write(self, text: str) -> int:
        try:
            return int(self._do("write", text))
        except UnicodeEncodeError:
            # An ASCII locale without Python's UTF-8 mode (LC_ALL=C PYTHONUTF8=0) and a non-ASCII model path:
            # the characters it cannot show are written as escapes, as Python writes them to stderr.
            encoding = getattr(self._stream, "encoding", None) or "ascii"
            return int(self._do("write", text.encode(encoding, "backslashreplace").decode(encoding)))

    def flush(self) -> None:
        self._do("flush")

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Output:
    """Renders a command's output in one format onto one stream."""

    def __init__(
        self, fmt: OutputFormat | str = OutputFormat.table, stream: TextIO | None = None, errors: TextIO | None = None
    ) -> None:
        self.format = OutputFormat(fmt)
        self.stream = stream if stream is not None else sys.stdout
        # Messages about the run (errors, warnings, progress of a build) go here, whatever the format.
        self.errors = errors if errors is not None else sys.stderr
        if self.errors is None:  # started with stderr closed (`2>&-`): messages go nowhere
            self.errors = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (lives as long as the process)
        self._csv_tables = 0

    @property
    def is_machine(self) -> bool:
        return self.format in (OutputFormat.json, OutputFormat.csv)

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def heading(self, text: str) -> None:
        if self.format is OutputFormat.table:
            self._write("\n" + sanitize(text))
            self._write("-" * min(len(text), 100))
        elif self.format is OutputFormat.md:
            self._write(f"\n## {sanitize(text)}\n")

    def lead(self, text: str) -> None:
        """The one line a reader must not miss (a verdict): bold in Markdown."""
        if self.format is OutputFormat.md:
            self._write(f"**{sanitize(text)}**\n")
        else:
            self.text(text)

    def text(self, text: str) -> None:
        """A paragraph of prose for people (table and md formats only)."""
        if not self.is_machine:
            self._write(sanitize(text))

    def table(
        self,
        rows: Sequence[Mapping[str, Any]],
        headers: Sequence[str] | None = None,
        *,
        title: str | None = None,
        primary: bool = False,
    ) -> None:
        """A table of rows (dicts). CSV output carries only the tables marked ``primary``."""
        if headers is None:
            headers = list(rows[0].keys()) if rows else []
        if self.format is OutputFormat.csv:
            if primary:
                if self._csv_tables:
                    self._write("")
                import csv  # only CSV output writes it

                buffer = io.StringIO()
                writer = csv.writer(buffer, lineterminator="\n")
                writer.writerow(headers)
                for row in rows:
                    writer.writerow(["" if row.get(h) is None else sanitize(str(row.get(h))) for h in headers])
                self._write(buffer.getvalue().removesuffix("\n"))
                self._csv_tables += 1
            return
        if self.format is OutputFormat.json:
            return
        if title:
            self.heading(title)
        if not rows:
            self.text("(none)")
            return
        body = [[_cell(row.get(h)) for h in headers] for row in rows]
        # tabulate (with html, and wcwidth where installed) takes 1.5-2.5 ms to import: only a table drawn pays it.
        from tabulate import tabulate

        if self.format is OutputFormat.md:
            body = [[cell.replace("\n", "<br>").replace("|", "\\|") for cell in row] for row in body]
            self._write(tabulate(body, headers=[sanitize(h) for h in headers], tablefmt="github", disable_numparse=True))
            return
        widths = _column_widths(body, len(headers), shutil.get_terminal_size((120, 24)).columns)
        body = [[_wrapped(cell, width) for cell, width in zip(row, widths)] for row in body]
        self._write(tabulate(body, headers=[sanitize(h) for h in headers], tablefmt="simple", disable_numparse=True))

    def records(
        self,
        items: Sequence[tuple[str, str, Sequence[str]]],
        *,
        title: str | None = None,
        headers: tuple[str, str, str] = ("label", "text", "details"),
    ) -> None:
        """Labelled paragraphs with detail lines (a finding and its evidence): wrapped for people, one
        table row each in Markdown (details joined). Like every table not marked primary, nothing in
        csv or json: a command that wants them in CSV passes them to :meth:`table` with ``primary``."""
        if self.format is not OutputFormat.table:
            rows = [dict(zip(headers, (label, text, "\n".join(details)))) for label, text, details in items]
            self.table(rows, list(headers), title=title)
            return
        if title:
            self.heading(title)
        width = max(shutil.get_terminal_size((120, 24)).columns, 60)
        label_width = max((len(label) for label, _, _ in items), default=0) + 2
        for label, text, details in items:
            body = textwrap.wrap(sanitize(text), width - label_width) or [""]
            self._write(sanitize(label).ljust(label_width) + body[0])
            for line in body[1:]:
                self._write(" " * label_width + line)
            for detail in details:
                self._write(" " * label_width + "  " + sanitize(detail))

    def error(self, message: str, where: str = "mtpinspect") -> None:
        """The one line a user error gets (exit status 2 follows): a newline in what the user typed or a server
        sent (`check $'a/b\\n'`) is written as an escape, never as a second line."""
        self._message(f"{where}: error: {message}".replace("\r", "\\r").replace("\n", "\\n"))

    def warning(self, message: str, where: str = "mtpinspect") -> None:
        self._message(f"{where}: warning: {message}")

    def hint(self, message: str) -> None:
        """What the tool is doing or what to do next, for people watching (never part of the result)."""
        self._message(message)

    def _message(self, text: str) -> None:
        self.errors.write(sanitize(text) + "\n")
        self.errors.flush()

    def document(self, data: Any) -> None:
        """The machine-readable result: printed as JSON in json format, ignored otherwise."""
        if self.format is OutputFormat.json:
            self._write(json.dumps(to_jsonable(data), indent=2, ensure_ascii=False))

