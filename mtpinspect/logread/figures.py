r"""Reading a log with the engines' tables of formats.py, and adding its lines up.

One pass over the lines tries every engine's table (:func:`read_lines`): its marks tell whose log it is,
its metrics lines become :class:`Sample`\s, its settings and failure lines are kept. How the samples of
one format add up is their :class:`~mtpinspect.logread.formats.Scope`'s (:func:`combine`): per
request and per interval they are summed, running totals take the last, per-server totals the last of
each drafting implementation, a summary's fields merge; acceptance and mean length are worked out from
the counts where the counts are there (:func:`with_ratios`). A figure line wrapped after its label or a comma is read
whole (:func:`_unwrapped`). What a paste shows outside the engines' lines (tables, results blocks, runs listed one a
line, acceptance figures by their words, a poster's sentences) is tables/'s to read: its samples are added up here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mtpinspect.logread.formats import ENGINES, EngineLog, Figures, LineFormat, Scope, strip_prefixes
from mtpinspect.vocabulary import Engine


@dataclass(frozen=True, slots=True)
class Sample:
    """One metrics line: its format, what it says, and the line (for evidence)."""

    format: LineFormat
    figures: Figures
    line: str
    number: int = 0  # 1-based line number in the text read (0: not known)
    span: tuple[int, int] = (0, 0)  # a table's run: the lines of the table or block it was read from


@dataclass
class Reading:
    """What one engine's table found in a log."""

    engine: EngineLog
    samples: list[Sample] = field(default_factory=list)
    marks: int = 0
    settings: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # name -> its value(s), in log order
    failures: list[str] = field(default_factory=list)  # the failure lines' matched text, first few
    # Metrics lines whose figures are not numbers ("Draft acceptance rate: ..., " as documentation writes
    # it, "0.5.5"): skipped, the first few kept to be named.
    unreadable: list[str] = field(default_factory=list)

    def setting(self, name: str) -> str | None:
        """The first value of a setting, or None."""
        values = self.settings.get(name)
        return values[0].get("value") if values else None


_MAX_FAILURES = 8
# Engines' own lines that settle whose log it is; later ones are not looked for.
_ENOUGH_MARKS = 64


@dataclass
class LogLines:
    """Every engine's reading of a log, and how many of its lines none of them recognised."""

    readings: dict[Engine, Reading]
    lines: int = 0  # non-empty lines
    unread: int = 0  # non-empty lines no table recognised (no mark, no key)


def read_lines(lines: Iterable[str]) -> LogLines:
    """Every engine's table over the lines, in one pass."""
    result = LogLines({table.engine: Reading(table) for table in ENGINES})
    marks = 0
    for number, raw in _unwrapped(lines):
        line = strip_prefixes(raw)
        if not line:
            continue
        result.lines += 1
        known = False
        for table in ENGINES:
            reading = result.readings[table.engine]
            if (marks < _ENOUGH_MARKS or not known) and _marked(table, raw, line):
                known = True
                if marks < _ENOUGH_MARKS:
                    reading.marks += 1
                    marks += 1
            if table.keys.search(line) is not None:
                known = True
                _read_line(reading, line, number)
        result.unread += not known
    return result


# A figure line a terminal or a thread wrapped after a label or a comma ("..., Per-position acceptance rate:" and the
# rates on the next line): its next lines, while they go on with a figure or a field, are its own.
_WRAPPED_END = re.compile(r"(?i)(?:accept|throughput|metrics|per.position|drafted|mean|rate)[^\n]{0,80}[,:]\s*$")
# (A line that opens a metrics line of its own, "SpecDecoding metrics: ...", is the next line, not the rest of this one.)
_GOES_ON = re.compile(r"^\s{0,8}(?:\d|(?![A-Za-z ]{0,40}metrics:)[A-Z][A-Za-z -]{2,40}: )")
_MAX_WRAPS = 4  # a wrapped line is a few lines of a terminal, not a paragraph


def _unwrapped(lines: Iterable[str]) -> Iterable[tuple[int, str]]:
    """The lines with their numbers, a wrapped figure line joined into one (its first line's number; the lines it
    took in are not read again)."""
    held: tuple[int, str] | None = None
    wraps = 0
    for number, raw in enumerate(lines, 1):
        if held is not None:
            if wraps < _MAX_WRAPS and len(raw) <= 400 and len(held[1]) <= 1600 and _GOES_ON.match(raw):
                held, wraps = (held[0], f"{held[1].rstrip()} {raw.strip()}"), wraps + 1
                if _WRAPPED_END.search(held[1][-200:]) is None:
                    yield held
                    held = None
                continue
            yield held
            held = None
        if len(raw) <= 1600 and _WRAPPED_END.search(raw[-200:]) is not None:
            held, wraps = (number, raw), 0
            continue
        yield number, raw
    if held is not None:
        yield held


def _marked(table: EngineLog, raw: str, line: str) -> bool:
    for mark in table.marks:
        if mark.search(raw) or mark.search(line):
            return True
    return False


_BARE_POSITION = re.compile(r"^Pos\.? \d")


def _read_line(reading: Reading, line: str, number: int) -> None:
    table = reading.engine
    for fmt in table.figures:
        try:
            figures = fmt.read(line)
        except ValueError:  # a field the pattern matched is not a number
            if len(reading.unreadable) < _MAX_FAILURES:
                reading.unreadable.append(line)
            break
        if figures is not None:
            if not reading.samples and _BARE_POSITION.match(line):
                break  # "Pos 2: 0.54" says whose only under acceptance figures of the same run: alone, a share of anything
            _add(reading.samples, Sample(fmt, figures, line, number))
            break
    for setting in table.settings:
        if setting.every or setting.name not in reading.settings:
            value = setting.read(line)
            if value is not None:
                value["at"] = str(number)  # its line, for evidence
                reading.settings.setdefault(setting.name, []).append(value)
    if len(reading.failures) < _MAX_FAILURES:
        for mark in table.failures:
            found = mark.search(line)
            if found is not None:
                reading.failures.append(found.group(0))


def _add(samples: list[Sample], sample: Sample) -> None:
    # The -lv 4 per-position line belongs to the acceptance line printed just before it.
    if sample.format.scope is Scope.addendum:
        if samples and samples[-1].format.scope is Scope.request and not samples[-1].figures.per_position:
            last = samples[-1]
            samples[-1] = replace(last, figures=replace(last.figures, per_position=sample.figures.per_position))
        return
    samples.append(sample)


# -- adding lines up ----------------------------------------------------------------------------------


def combine(figures: Sequence[Figures], scope: Scope) -> Figures:
    """The figures of several lines of one format, as its scope adds them up."""
    if not figures:
        return Figures()
    if scope is Scope.running:
        return with_ratios(figures[-1])
    if scope is Scope.summary:
        return _merge_fields(figures)
    if scope is Scope.server:
        last = {f.label: f for f in figures}  # each line is the running total of its implementation
        return _sum(list(last.values()))
    return _sum(figures)


def _merge_fields(figures: Sequence[Figures]) -> Figures:
    def last(name: str) -> Any:
        return next((getattr(f, name) for f in reversed(figures) if getattr(f, name) is not None), None)

    positions = {f.at: f.per_position[0] for f in figures if f.at is not None and f.per_position}
    listed = next((f.per_position for f in reversed(figures) if f.at is None and f.per_position), ())
    return with_ratios(Figures(
        accepted=last("accepted"), drafted=last("drafted"), steps=last("steps"), acceptance=last("acceptance"),
        mean_length=last("mean_length"), per_position=tuple(positions[i] for i in sorted(positions)) or listed,
        spec_tokens=last("spec_tokens"), speed=last("speed"), setting=last("setting"),
        baseline=any(f.baseline for f in figures), group=last("group"), unit=last("unit"),
    ))


def _sum(figures: Sequence[Figures]) -> Figures:
    def total(name: str) -> int | None:
        values = [getattr(f, name) for f in figures if getattr(f, name) is not None]
        return sum(values) if values else None

    # Lines weigh by the tokens they drafted when all of them say; else equally (SGLang prints no counts).
    weighted = all(f.drafted for f in figures)

    def mean(values: Sequence[tuple[Figures, float]]) -> float | None:
        if not values:
            return None
        weights = [float(f.drafted or 0) if weighted else 1.0 for f, _ in values]
        return sum(w * v for w, (_, v) in zip(weights, values)) / sum(weights) if sum(weights) else None

    counted = [f for f in figures if f.accepted is not None or f.drafted is not None]
    paired = all(f.accepted is not None and f.drafted is not None for f in counted)
    accepted, drafted = (total("accepted"), total("drafted")) if paired else (None, None)
    rows = [f for f in figures if f.per_position]
    depth = min((len(f.per_position) for f in rows), default=0)
    per_position = tuple(mean([(f, f.per_position[i]) for f in rows]) or 0.0 for i in range(depth))
    spec_tokens = next((f.spec_tokens for f in reversed(figures) if f.spec_tokens is not None), None)
    steps = total("steps") if all(f.steps is not None for f in counted) else None
    printed = Figures(
        accepted=accepted, drafted=drafted, steps=steps,
        acceptance=mean([(f, f.acceptance) for f in figures if f.acceptance is not None]),
        mean_length=mean([(f, f.mean_length) for f in figures if f.mean_length is not None]),
        per_position=per_position, spec_tokens=spec_tokens,
    )
    return with_ratios(printed)


def with_ratios(f: Figures) -> Figures:
    """Acceptance and mean length from the counts where the counts are there (printed ones are rounded)."""
    acceptance = f.accepted / f.drafted if f.accepted is not None and f.drafted else f.acceptance
    mean_length = 1 + f.accepted / f.steps if f.accepted is not None and f.steps else f.mean_length
    return replace(f, acceptance=acceptance, mean_length=mean_length)
