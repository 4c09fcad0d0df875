"""A run as a table, block or line shows it (:class:`TableRun`; :class:`_Run` while it is read), how a cell's figure is
put on it, and the sample formats the tables' runs are cited under."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from mtpinspect.logread.formats import LineFormat, Scope
from mtpinspect.logread.tables.words import _SPEED_UNITS, _number

# -- a table's runs --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableRun:
    """One run a table shows: what it names, whether it ran without speculative decoding, what it measured."""

    setting: str
    baseline: bool
    key: str  # what the runs compared must share ("bs=4", "think on"; "" when the table has one condition)
    line: str
    number: int
    speed: float | None = None  # tokens per second (a per-token latency read as its inverse), or a speed-up
    speed_from: str = ""  # how the speed was read when not as a speed ("from TPOT 14.20 ms")
    unit: str = "tok/s"  # "x": a speed-up over the run without speculation (1 for that run, implied); "1/s": the inverse
    # of the time the same work took
    acceptance: float | None = None
    mean_length: float | None = None
    span: tuple[int, int] = (0, 0)  # the first and last line of the table or block it was read from
    depth: int | None = None  # its draft length, where a draft-length column gives it
    grid: bool = False  # a cell of a grid of one figure by two keys under its title ("DFLASH output tok/s")
    accepted: int | None = None  # the counts an acceptance cell gives ("0.67% (2/297)", "4,379 / 6,630")
    drafted: int | None = None


@dataclass
class _Run:
    setting: str
    baseline: bool | None
    key: str
    line: str
    number: int
    figures: dict[str, float]
    latency_cell: str = ""
    identity: str = ""  # what its name says besides the setting: the model, build or engine ("gguf q4 k m")
    unaccepted: bool = False  # its acceptance cells are marked empty ("-", "N/A") in a table that has acceptance
    depth: int | None = None  # the draft length its table's draft-length column gives ("n-max", "draft tokens")
    span: tuple[int, int] = (0, 0)
    grid: bool = False


# An acceptance cell written as the counts it comes from ("4,379 / 6,630 = 66 %", "282/453"), or noting them after its
# share ("**0.67%** (2/297)", as the NextN reports on llama.cpp's tracker write a row's draft acceptance).
_FRACTION = re.compile(r"(?P<acc>\d{1,3}(?:,\d{3}){0,4}|\d{1,12})\s?/\s?(?P<gen>\d{1,3}(?:,\d{3}){0,4}|\d{1,12})(?![\d.,])")
_COUNTS_NOTE = re.compile(r"^[\d.,\s]{1,24}%?[*_`\s]*\(\s*(?P<acc>\d{1,15})\s*/\s*(?P<gen>\d{1,15})\s*\)")


def _put(run: _Run, figure: str, cell: str, percent: bool) -> None:
    """A cell's value as the figure its column or row names."""
    read = _number(cell)
    if read is None:
        return
    value, unit = read
    if figure == "rate":
        fraction = _FRACTION.match(cell.strip(" *_`~≈"))
        if fraction is not None:  # "4,379 / 6,630 = 66 %": accepted over drafted, the counts say the rate
            accepted, drafted = (int(fraction[g].replace(",", "")) for g in ("acc", "gen"))
            if not 0 <= accepted <= drafted or not drafted:
                return  # "3/2": no share of drafts
            value, unit, percent = accepted / drafted, "", False
            counted = None  # a bare fraction is the share; a table of one run's parts adds up what it notes, not this
        elif (note := _COUNTS_NOTE.match(cell.strip(" *_`~≈"))) is not None and int(note["acc"]) <= int(note["gen"]):
            counted = (int(note["acc"]), int(note["gen"]))  # "0.67% (2/297)": the share, then its counts
        else:
            counted = None
        rate = value / 100 if percent or unit == "%" or value > 1 else value
        if 0 <= rate <= 1 and "rate" not in run.figures:
            run.figures["rate"] = rate
            if counted is not None and counted[1]:
                run.figures["accepted"], run.figures["drafted"] = counted
    elif figure == "length":
        if 1 <= value <= 64:
            run.figures.setdefault("length", value)
    elif figure == "latency":
        seconds = value / 1000 if unit in ("", "ms", "ms/tok", "ms/token") else value if unit in ("s", "s/tok", "s/token") else None
        if seconds and "latency" not in run.figures:
            run.figures["latency"] = 1 / seconds
            run.latency_cell = cell.strip(" *_`")[:40]
    elif figure == "speed" and "speed" not in run.figures and unit in _SPEED_UNITS:
        run.figures["speed"] = value  # a bare number or one in tokens per second, never "12 GB" under a speed's name
    elif figure == "speedup" and 0 < value <= 50 and unit in ("", "x", "×"):
        run.figures.setdefault("speedup", value)


def _put_duration(run: _Run, cell: str, head: re.Match[str] | None) -> None:
    """A cell of the time a run's work took, in its header's unit ("785" under "Naive(s)")."""
    read = _number(cell)
    if read is None or head is None or read[0] <= 0 or read[1]:
        return
    unit = head["unit"] or head["word"]
    run.figures.setdefault("duration", read[0] * _DURATION[unit])
    run.latency_cell = run.latency_cell or f"{cell.strip(' *_`')} {unit}"
_DURATION = {"s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0, "ms": 1e-3, "msec": 1e-3, "min": 60.0, "mins": 60.0, "minutes": 60.0}


def _as_table_runs(run: _Run) -> list[TableRun]:
    return [replace(table_run, span=run.span, grid=run.grid) for table_run in _table_runs_of(run)]


def _table_runs_of(run: _Run) -> list[TableRun]:
    """The runs a read row or column is: itself; a speculative run timed only by its speed-up, with the run without
    speculation it implies (1x, the same key)."""
    speed, source = run.figures.get("speed"), ""
    if speed is None and "latency" in run.figures:
        speed, source = run.figures["latency"], f"from {run.latency_cell} per token"
    if speed is None and "duration" in run.figures:  # the time the same work took: lower is better
        return [] if run.baseline is None else [TableRun(run.setting, bool(run.baseline), run.key, run.line, run.number,
                                                         1 / run.figures["duration"], f"took {run.latency_cell}", "1/s")]
    if run.baseline is False and speed is None and "speedup" in run.figures:
        implied = TableRun("the run without speculation (1x, as the speed-up column implies)", True, run.key, run.line,
                           run.number, 1.0, unit="x")
        return [implied, TableRun(run.setting or "(unnamed)", False, run.key, run.line, run.number, run.figures["speedup"],
                                  "speed-up as pasted", "x", run.figures.get("rate"), run.figures.get("length"))]
    if run.baseline is None or speed is None and "rate" not in run.figures and "length" not in run.figures:
        return []
    return [TableRun(run.setting or "(unnamed)", bool(run.baseline), run.key, run.line, run.number, speed, source,
                     acceptance=None if run.baseline else run.figures.get("rate"),
                     mean_length=None if run.baseline else run.figures.get("length"), depth=run.depth,
                     accepted=None if run.baseline or "accepted" not in run.figures else int(run.figures["accepted"]),
                     drafted=None if run.baseline or "drafted" not in run.figures else int(run.figures["drafted"]))]


# (runs.py's one entry: table_samples; sentence_baselines for a log's own run beside a poster's sentence)

# A table whose header names an acceptance column (llama.cpp server-bench's speed-bench "accept_rate", a
# Markdown table of a thread): the columns are read by their names, row by row, while rows keep the header's width.
# What a row is, its first column's name says: a category of one run's prompts (coding, math: the rows add up), or
# a run of its own (a backend, a build, a model: each row is judged apart, issue 42's rule on several runs).
TABLE_FORMAT = LineFormat("table with an acceptance column", Scope.interval, ("accept",), re.compile(r"accept"))
TABLE_RUNS_FORMAT = LineFormat("table with an acceptance column, a run per row", Scope.summary, ("accept",),
                               re.compile(r"accept"))
