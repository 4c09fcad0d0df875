r"""Reading a log with the engines' tables of formats.py, and adding its lines up.

One pass over the lines tries every engine's table (:func:`read_lines`): its marks tell whose log it is,
its metrics lines become :class:`Sample`\s, its settings and failure lines are kept. How the samples of
one format add up is their :class:`~mtpinspect.logread.formats.Scope`'s (:func:`combine`): per
request and per interval they are summed, running totals take the last, per-server totals the last of
each drafting implementation, a summary's fields merge; acceptance and mean length are worked out from
the counts where the counts are there (:func:`with_ratios`). A figure line wrapped after its label or a comma is read
whole (:func:`_unwrapped`); a run without speculation the poster gives in a sentence is a run of its own
(:func:`sentence_baselines`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mtpinspect.logread.catalogue import SPECULATIVE_WORDS
from mtpinspect.logread.formats import ENGINES, EngineLog, Figures, LineFormat, Scope, strip_prefixes
from mtpinspect.logread.tables import TableRun, compares, drawn_row, names_drafting, swept, table_runs, without_speculation
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


# A table whose header names an acceptance column (llama.cpp server-bench's speed-bench "accept_rate", a
# Markdown table of a thread): the columns are read by their names, row by row, while rows keep the header's width.
# What a row is, its first column's name says: a category of one run's prompts (coding, math: the rows add up), or
# a run of its own (a backend, a build, a model: each row is judged apart, issue 42's rule on several runs).
TABLE_FORMAT = LineFormat("table with an acceptance column", Scope.interval, ("accept",), re.compile(r"accept"))
TABLE_RUNS_FORMAT = LineFormat("table with an acceptance column, a run per row", Scope.summary, ("accept",),
                               re.compile(r"accept"))
_TABLE_CELLS = re.compile(r"\s*\|\s*|\s{2,}|\t")
# An acceptance column says whose: "accept rate", "acceptance rate", "draft acceptance" (never a bare "acceptance",
# which a test plan's table has); a mean length column "accept len", "acceptance length" or llama.cpp's "mean len".
_RATE_COLUMN = re.compile(r"^(?:avg[ _]?|mean[ _]?)?(?:draft[ _]accept(?:ance)?(?:[ _]rate)?|accept(?:ance)?[ _]rate|acc(?:ept)?_?rate)"
                          r"(?:\s*\(%\)|_pct|\s*%)?$|^(?:draft[ _])?accept(?:ance|ed)?\s*(?:%|\(%\))$", re.IGNORECASE)
_LENGTH_COLUMN = re.compile(r"^(?:avg_?|mean_?)?(?:accept(?:ance)?[ _](?:length|len))$|^mean[ _](?:acc(?:ept(?:ance)?)?[ _])?len$",
                            re.IGNORECASE)
# First columns whose rows are runs of their own (what was changed between them), not categories of one run's prompts.
_RUN_COLUMN = re.compile(r"^(?:backend|device|gpu|build|version|release|image|engine|config(?:uration)?|setup|run|mode|"
                         r"model|quant(?:ization)?|commit|branch|flags?|settings?|concurrency|max[-_ ]concurrency|batch[-_ ]size|"
                         r"bs|qps|n[-_ ]?max|k|num[-_ ]spec(?:ulative)?[-_ ]tokens|draft[-_ ](?:length|tokens|max))s?$",
                         re.IGNORECASE)
# A run table's decode-speed column, and the units a value column's cell is read by (a speed, "@ 88.2%" acceptance).
_SPEED_COLUMN = re.compile(r"^(?:s[ _]tg[ _]|(?:decode|gen(?:eration)?|tg|output|eval)?[ _]?)(?:tok(?:ens)?/s|t/s|tps|speed)(?:\s*\(t(?:ok(?:ens)?)?/s\))?$",
                           re.IGNORECASE)
_SWEEP_BENCH = re.compile(r"^\|?\s*PP\s*\|\s*TG\s*\|\s*N_KV\s*\|.*\bS_TG t/s\s*\|?$")
# Tables that set runs with and without speculation side by side (a speed column of each, "Baseline (t/s)" | "MTP (t/s)";
# a cell of both, "22.7 → 40.6") are tables.py's: it reads any table's runs by their words.
_SPEED_IN = re.compile(r"(?P<value>\d{1,6}(?:\.\d{1,6})?)\s*(?:(?:\+/-|±)\s*\d{1,6}(?:\.\d{1,6})?\s*)?(?:t/s|tok/s|tokens?/s)\b")
_RATE_IN = re.compile(r"(?:@|\bat)\s*(?P<value>\d{1,3}(?:\.\d{1,6})?)\s*%")
_EMPTY_CELL = re.compile(r"^[\s*_`]*(?:—|–|-{1,3}|n/?a|none)?[\s*_`]*$", re.IGNORECASE)
# A poster's line of results, one run a line: "Without MTP: 25.3 t/s", "- MTP n-max 3: **19.8 tok/s** (acceptance 71%)".
# Read only where its label names speculation or its absence (tables.py's words: one place for them).
_LISTED_RUN = re.compile(r"^[-*>#\s]{0,6}(?P<label>[^:|=\t\n]{1,80}?)(?:\s*[:=]\s*|\t\s*|\s{2,})[*_`]{0,2}(?P<value>\d{1,6}(?:\.\d{1,4})?)[*_`]{0,2}\s*"
                         r"(?:t/s|tok/s|tokens?/s|tps)\b(?P<rest>[^\n]{0,160})$", re.IGNORECASE)
_RATE_AFTER = re.compile(r"(?i)(?P<value>\d{1,3}(?:\.\d{1,4})?)\s*%\s*(?:accept|acc\b)|accept\w*\D{0,12}?(?P<after>\d{1,3}(?:\.\d{1,4})?)\s*%|@\s*(?P<at>\d{1,3}(?:\.\d{1,4})?)\s*%")
LISTED_RUNS_FORMAT = LineFormat("results listed one run a line", Scope.summary, ("/s",), re.compile(r"/s"))
# Acceptance figures read by their words wherever they stand (a benchmark's summary, a bullet, a bold "**Accpt Len:
# 1.89**", a tqdm line): the label says which figure, with or without "average"/"mean", however abbreviated.
# The label opens its clause, or follows a drafter's word: "Loan acceptance rate", "ICLR 2025 acceptance rate" are
# someone else's.
_OPENS = (r"(?:^|(?<=[^\w\s])|(?<=[^\w\s] )|" +
          "|".join(rf"(?<={word}[ _])" for word in ("spec", "mtp", "draft", "eagle", "eagle3", "speculative")) + ")")
_LABELLED_LENGTH = re.compile(r"(?i)" + _OPENS + r"(?:(?:avg\.?|average|mean)[ _])?(?:accept(?:ance|ed)?|accpt|acc)[ _.-]?len(?:gth)?\b"
                              r"[*_`\s\"']{0,3}[:=][*_`\s]{0,3}(?P<len>\d{1,3}(?:\.\d{1,12})?)(?![\d.]*\s*%)")
_LABELLED_RATE = re.compile(r"(?i)" + _OPENS + r"(?:(?:avg\.?|average|mean|draft)[ _])?(?:accept(?:ance)?|accpt)[ _.-]?rate\b"
                            r"[*_`\s\"']{0,3}[:=][*_`\s]{0,3}(?P<rate>\d{1,3}(?:\.\d{1,12})?)\s*(?P<pct>%)?")
# The share of drafted tokens accepted written before its words, as an app's footer shows it (LM Studio's "82.0% draft
# tokens accepted", apps that copy it): "draft tokens" is speculative decoding's own phrase.
_RATE_BEFORE = re.compile(r"(?i)(?<![\d.])(?P<rate>\d{1,3}(?:\.\d{1,6})?)\s?%\s(?:of\s)?(?:the\s)?draft(?:ed)?\stokens?\s(?:were\s)?accepted\b")
# The line's decode speed: its output or throughput figure where it names one (a tqdm line also times the input).
_LINE_SPEED = re.compile(r"(?i)(?:output|throughput)\W{0,4}(?P<value>\d{1,6}(?:\.\d{1,6})?)\s*(?:tokens?/s|toks/s|tok/s|t/s)\b")
# A label that names a figure, not a run ("Average Accept length", "#questions", "Throughput").
_FIGURE_NAME = re.compile(r"(?i)\b(?:accept|accpt|acc_|throughput|latency|questions|speed|length|rate|tokens?)\b|acc_")
_LINE_LABEL = re.compile(r"^[-*>#\s]{0,6}(?P<label>[^:\[\]|=\n]{1,80}?(?:=\s*\d{1,4})?)\s*[,:\[]")
_HEADING = re.compile(r"^(?:#{1,6}\s+(?P<h>[^\n]{1,80})|[*_]{2}(?P<b>[^*_\n]{1,80})[*_]{2}:?|(?P<c>[^:\n]{1,80}):)$")
LABELLED_FORMAT = LineFormat("acceptance figures by their words", Scope.summary, ("accept", "accpt", "acc "), re.compile(r"acc"))
# A row that runs without speculative decoding, by its name.
_RULE_ROW = re.compile(r"^[\s|:+-]+$")
# A cell's number (Markdown emphasis and code marks around it), in percent when it says so, and "(accepted/drafted)".
_CELL = re.compile(r"^[*_`~\s]*(?P<value>\d{1,6}(?:\.\d{1,24})?)(?![\d.]|\s*[–—-]\s*\d)\s*(?P<pct>%)?[*_`~\sx]*(?:\(\s*(?P<acc>\d{1,15})\s*/\s*(?P<gen>\d{1,15})\s*\))?")
# Column names only llama.cpp's server-bench prints (tools/server/bench: predicted tokens per second, "pred").
_LLAMA_TABLE = re.compile(r"\bspec_avg_pred_t/s\b|\bbase_avg_pred_t/s\b")


@dataclass(frozen=True)
class _Header:
    width: int
    columns: tuple[tuple[int, str, bool], ...]  # (index, "rate"/"len"/"speed"/"value", percent)
    format: LineFormat
    first: str = ""  # the first column's name (a run table's rows are "NAME: CELL")


def _header(line: str, *, raw_table: bool) -> _Header | None:
    """A table's header: one that names an acceptance column, or a Markdown table's whose first column names runs."""
    cells = _TABLE_CELLS.split(line)
    if len(cells) < 2:
        return None
    per_run = _RUN_COLUMN.match(cells[0].strip("*_` ")) is not None
    # llama-sweep-bench's table (PP | TG | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s): one run's decode speed
    # ("S_TG t/s", S for speed) at each depth of its context, a row per depth.
    per_run = per_run or _SWEEP_BENCH.match(line.strip()) is not None
    columns = tuple((i, _column_kind(cell, per_run), "%" in cell or "pct" in cell.lower()) for i, cell in enumerate(cells) if i)
    kinds = {kind for _, kind, _ in columns}
    if not kinds & {"rate", "len"} and not (per_run and raw_table):
        return None
    return _Header(len(cells), columns, TABLE_RUNS_FORMAT if per_run else TABLE_FORMAT, cells[0].strip("*_` ")[:60])


def _column_kind(cell: str, per_run: bool) -> str:
    """What a column holds, by its name: acceptance, mean length, decode speed (a run table's), else a value column
    whose cells are read by their units (a run table's) or nothing."""
    if _RATE_COLUMN.match(cell):
        return "rate"
    if _LENGTH_COLUMN.match(cell):
        return "len"
    if per_run:
        return "speed" if _SPEED_COLUMN.match(cell) else "value"
    return ""


def _row(header: _Header, line: str) -> Figures | None:
    """A row's figures; None when the row does not fit the header (the table ended)."""
    cells = _TABLE_CELLS.split(line)
    if len(cells) != header.width:
        return None
    read: dict[str, Any] = {}
    if header.format is TABLE_RUNS_FORMAT:
        # The row's name: its first cell, and the words of its other cells that are no figure (a "Mode" column's "MTP n=3").
        named = [cells[i].strip("*_` ") for i, kind, _ in header.columns if kind in ("", "value") and
                 _CELL.match(cells[i]) is None and not _EMPTY_CELL.match(cells[i])]
        read["setting"] = ", ".join([f"{header.first}: {cells[0].strip('*_` ')[:200]}", *named])[:300]
        # A row without speculation says so in its first cell or in another column naming it ("Mode: baseline").
        read["baseline"] = any(without_speculation(c, whole=i > 0) for i, c in enumerate(cells))
    for index, kind, percent in header.columns:
        if not kind or _EMPTY_CELL.match(cells[index]):
            continue
        if kind in ("speed", "value"):
            speed, rate = _SPEED_IN.search(cells[index]), _RATE_IN.search(cells[index]) if kind == "value" else None
            if speed is not None:
                read["speed"] = float(speed["value"])
            elif kind == "speed" and (number := _CELL.match(cells[index])) is not None:
                read["speed"] = float(number["value"])
            if rate is not None and float(rate["value"]) <= 100:
                read["acceptance"] = float(rate["value"]) / 100
            continue
        cell = _CELL.match(cells[index])
        if cell is None:
            return None
        value = float(cell["value"])
        if kind == "rate":
            rate = value / 100 if percent or cell["pct"] or value > 1 else value
            if 0 <= rate <= 1:
                read["acceptance"] = rate
            if cell["acc"] is not None and int(cell["acc"]) <= int(cell["gen"]):
                read["accepted"], read["drafted"] = int(cell["acc"]), int(cell["gen"])
        elif 1 <= value <= 64:
            read["mean_length"] = value
    if not (read.keys() - {"setting", "baseline"}):
        return Figures()
    return with_ratios(Figures(**read))


def _listed_run(line: str) -> Figures | None:
    """A results line of one run ("With MTP (n-max 3): 19.8 t/s, 71% accepted"), None when it is not one."""
    found = _LISTED_RUN.match(line) if "/s" in line and len(line) <= 400 else None
    if found is None:
        return None
    label = found["label"].strip(" *_`")
    baseline = without_speculation(label)
    if not baseline and not names_drafting(label):
        return None
    rate = _RATE_AFTER.search(found["rest"])
    value = next((float(v) for v in (rate.group("value", "after", "at") if rate else ()) if v is not None), None)
    return Figures(speed=float(found["value"]), setting=label[:200], baseline=baseline,
                   acceptance=value / 100 if value is not None and value <= 100 and not baseline else None)


# A speed in a sentence of the paste ("without MTP I get 41 t/s", "baseline is ~52 tok/s", "no spec: 30.1 tokens/s"): the
# words since the figure before it say whose.
_SPOKEN_SPEED = re.compile(r"(?i)(?<![\d.])(?<!\+/-\s)(?<!±\s)(?<!±)(?P<value>\d{1,6}(?:\.\d{1,4})?)\s?(?:t/s|tok/s|toks/s|tokens?/s(?:ec)?|tokens per second|tps)\b")
_SENTENCE_REACH = 60  # the words before a figure that can name its run: one clause


def sentence_baselines(text: str) -> list[Sample]:
    """Runs without speculation the poster gives in a sentence of the paste ("Without MTP I get 41 t/s"): a speed whose
    clause names the absence of drafting and no drafter after it ("MTP off: 41 t/s", never "baseline vs MTP: 30 t/s").
    A line an engine printed ("eval time = ...") is the engine's run, not a sentence."""
    return [s for s in sentence_runs(text) if s.figures.baseline]


def sentence_runs(text: str) -> list[Sample]:
    """The runs sentences of the paste give, a speed each, whose clause (the words before it, else after it, up to the
    next figure or clause) names the absence of drafting (a run without speculation) or a drafter ("52 t/s with MTP
    (accept 78%)": a run with it, its acceptance when the clause gives one)."""
    found: list[Sample] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if len(line) > 400 or "/s" not in line and "per second" not in line and "tps" not in line.lower():
            continue
        if "|" in line or re.search(r"(?i)\beval time\b|\bslot\b|\bsrv\b|\bINFO\b|throughput:", line):
            continue  # a table's row (tables.py reads it) or an engine's own line
        start = 0
        speeds = list(_SPOKEN_SPEED.finditer(line))
        for at, speed in enumerate(speeds):
            clause = line[max(start, speed.start() - _SENTENCE_REACH):speed.start()]
            start = speed.end()
            before = _CLAUSE_CUT.split(clause)[-1]
            # Or the words right after it, up to the next figure or clause: "41 t/s without MTP, 33 t/s with it".
            after = _CLAUSE_CUT.split(line[speed.end():speeds[at + 1].start() if at + 1 < len(speeds) else len(line)][:_SENTENCE_REACH])[0]
            figures: Figures | None = None
            if (words := next((w for w in (before, after) if _names_only_absence(w)), None)) is not None:
                figures = Figures(speed=float(speed["value"]), setting=words.strip(" :=-*_`")[:200], baseline=True)
            elif (words := next((w for w in (before, after) if names_drafting(w) and not without_speculation(w)), None)):
                rate = _RATE_AFTER.search(words)
                value = next((float(v) for v in (rate.group("value", "after", "at") if rate else ()) if v is not None), None)
                figures = Figures(speed=float(speed["value"]), setting=words.strip(" :=-*_`")[:200], baseline=False,
                                  acceptance=value / 100 if value is not None and value <= 100 else None)
            if figures is not None:
                found.append(Sample(LISTED_RUNS_FORMAT, figures, line[:300], number))
    return found


_CLAUSE_CUT = re.compile(r"[,;(.]\s|\b(?:and|but|while|vs\.?|versus|whereas)\b")
_NEGATED = re.compile(r"(?i)\b(?:without|w/o|no|non)[ -]\w+|\w+[ -](?:off|disabled)\b")


def _names_only_absence(words: str) -> bool:
    """Whether a clause names a run without drafting and no drafter besides the one it negates ("without MTP I get")."""
    return without_speculation(words) and not names_drafting(_NEGATED.sub("", words))


def _labelled(line: str, above: str) -> Figures | None:
    """A line's acceptance figures by their words, its speed and its run's label (the line's own, else the line above
    it when that one ends in a colon: "EAGLE-3 (num_steps=8):"); a line without speculation that times a baseline
    run ("* vanilla, [...] output: 128.64 toks/s") too; None otherwise."""
    if len(line) > 400:
        return None
    length, rate = _LABELLED_LENGTH.search(line), _LABELLED_RATE.search(line) or _RATE_BEFORE.search(line)
    speed = _LINE_SPEED.search(line)
    named = _LINE_LABEL.match(line)
    label = named["label"].strip(" *_`") if named else ""
    if above and (not label or _FIGURE_NAME.search(label)):  # "#questions: 80, ...": the heading names the run
        label = above
    baseline = bool(label) and without_speculation(label)
    if length is None and rate is None or baseline:  # a baseline's "acceptance" (acc_length=1.00) is no drafter's
        return Figures(speed=float(speed["value"]), setting=label[:200], baseline=True) if baseline and speed else None
    mean_length = float(length["len"]) if length is not None and 1 <= float(length["len"]) <= 64 else None
    value = float(rate["rate"]) if rate is not None else None
    percent = rate is not None and (rate.re is _RATE_BEFORE or rate["pct"])
    acceptance = (value / 100 if percent or value > 1 else value) if rate is not None and value is not None else None
    if acceptance is not None and not 0 <= acceptance <= 1:
        acceptance = None
    if mean_length is None and acceptance is None:
        return None
    return Figures(mean_length=mean_length, acceptance=acceptance, speed=float(speed["value"]) if speed else None,
                   setting=label[:200] or None, baseline=False)


def labelled_samples(text: str) -> list[Sample]:
    """Acceptance figures read by their words, one sample a line (each line a run of its own), where at least one line
    holds them."""
    if not any(word in text.lower() for word in ("accept", "accpt", "acc ", "acc_", "acc-", "acc.")):
        return []
    samples: list[Sample] = []
    heading = ""  # the run's name a heading above its figures gives ("**Baseline**", "EAGLE-3 (num_steps=8):")
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        figures = _labelled(line, heading) if len(line) <= 400 else None
        if figures is not None:
            samples.append(Sample(LABELLED_FORMAT, figures, line[:300], number))
        elif (head := _HEADING.match(line)) is not None:
            heading = next(g for g in head.group("h", "b", "c") if g).strip(" *_`#")
    samples = _unaccepted_as_baseline(samples)
    # A mean length is speculative decoding's own figure; an acceptance rate alone is read where the text drafts.
    lengths = any(s.figures.mean_length is not None for s in samples)
    if not lengths and SPECULATIVE_WORDS.search(text) is None and \
            not any(names_drafting(s.figures.setting or "") for s in samples):
        return []
    return samples if any(not s.figures.baseline for s in samples) else []


def _unaccepted_as_baseline(samples: list[Sample]) -> list[Sample]:
    """Lines of one shape, none naming its setting, one accepting nothing (mean length exactly 1.00, acceptance 0) and
    another accepting drafts: the one accepting nothing is the run without speculation, as a benchmark script prints it
    ("Throughput: 88.61 token/s, Acceptance length: 1.00" above "... 234.54 token/s, Acceptance length: 5.88"). A line
    whose label names a drafter keeps its zero: that is a head that drafted and was refused."""
    def unnamed(sample: Sample) -> bool:
        label = sample.figures.setting or ""
        return not names_drafting(label) and not without_speculation(label)

    def nothing(f: Figures) -> bool:
        return (f.mean_length == 1.0 or f.mean_length is None) and f.acceptance in (0.0, None) and \
            (f.mean_length, f.acceptance) != (None, None)

    accepting = [s for s in samples if not s.figures.baseline and ((s.figures.mean_length or 1.0) > 1 or (s.figures.acceptance or 0) > 0)]
    if not accepting or not all(unnamed(s) for s in samples):
        return samples
    return [replace(s, figures=replace(s.figures, baseline=True, mean_length=None, acceptance=None))
            if not s.figures.baseline and nothing(s.figures) and s.figures.speed is not None else s for s in samples]


# Words of a language model's runs (tokens, a GGUF's quantization) or a drafter's own figures ("mean len", a program's
# "accept_rate" key): a table of acceptance beside them is a drafter's.
_MODEL_WORDS = re.compile(r"(?i)\bmean[ _]len\b|\baccept(?:ance)?[ _]len|\bacc(?:ept)?_rate\b|\btok(?:en)?s?\b|\bt/s\b|\btps\b|"
                          r"\b(?:ollama|llama[.-]?\w*|vllm|sglang|lm ?studio)\b|\bgguf\b|\bbpw\b|\b(?:ud-)?i?q\d(?:_[a-z0-9]{1,4}){1,3}\b")


def _with_spoken_baseline(runs: list[TableRun], text: str) -> list[TableRun]:
    """A table of drafting runs under one condition, timed in tokens per second, and the run without speculation the
    poster gives in a sentence ("Without MTP: 30.7 t/s" above an n-max table): the sentence's run joins the table's."""
    timed = [r for r in runs if r.speed is not None]
    if not timed or any(r.key or r.unit != "tok/s" or r.speed_from or r.baseline for r in timed):
        return runs
    spoken = sentence_baselines(text)
    if len(spoken) != 1:
        return runs  # none, or several: which is this table's is not said
    base = spoken[0]
    return [*runs, TableRun(base.figures.setting or "(a sentence)", True, "", base.line, base.number, base.figures.speed,
                            span=(base.number, base.number))]


# An acceptance length by its own words (SGLang's avg_spec_accept_length, "accept length", "acc len"): tokens per step
# is speculative decoding's figure alone, whatever else the paste says.
_ACCEPT_LENGTH = re.compile(r"accept(?:ance|ed)?[ _](?:len|length)\b|\bacc[ _]len\b")
# A draft length by speculative decoding's own names for it (llama.cpp's n_max / --draft-max, vLLM's
# num_speculative_tokens); never a bare "steps", "k" or "n", which other tables use.
_DRAFT_LENGTH = re.compile(r"(?i)(?<![A-Za-z])n[ _-]?max\b|\bnum[ _]speculative[ _]tokens\b|\bdraft[ _-](?:n[ _-]?)?max\b")


def table_samples(text: str) -> tuple[list[Sample], Engine | None]:
    """The runs of any table that sets runs with and without speculation side by side (tables.py, a sample per run);
    else the acceptance and mean-length columns of each table in ``text`` (one sample per row), and results listed one
    run a line with their speeds; and whose table it is when its header says (None: no engine named); ([], None)
    when no header names such a column and no line lists a run."""
    # Any table read by its words (tables.py) where it sets runs with and without speculation side by side: its runs,
    # each timed under its key, replace what the shapes below read of it.
    runs, owner = table_runs(text)
    runs = runs if compares(runs) else _with_spoken_baseline(runs, text)
    if compares(runs):
        engine = Engine.llama_cpp if _LLAMA_TABLE.search(text) else owner
        return [Sample(TABLE_RUNS_FORMAT, _figures_of(run), run.line, run.number, run.span) for run in runs], engine
    low = text.lower()
    if "acc" not in low and "mean len" not in low and "|" not in text and "/s" not in text:
        return [], None
    listed = [Sample(LISTED_RUNS_FORMAT, figures, raw.strip()[:300], number)
              for number, raw in enumerate(text.splitlines(), 1) if (figures := _listed_run(raw.strip())) is not None]
    listed += [s for s in sentence_runs(text) if s.number not in {run.number for run in listed}]
    if len(listed) < 2 or not any(s.figures.baseline for s in listed):
        listed = []  # a run is compared with one without speculation, or it is only a speed
    samples: list[Sample] = []
    engine: Engine | None = None
    header: _Header | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip().strip("|").strip()
        if header is not None:
            if _RULE_ROW.match(line):
                continue
            figures = _row(header, line)
            if figures is not None:
                if figures != Figures():
                    samples.append(Sample(header.format, figures, raw.strip()[:300], number))
                continue
            header = None
        low = line.lower()
        if ("accept" in low or "mean len" in low or raw.lstrip().startswith("|")) and len(line) <= 2000:
            header = _header(line, raw_table=raw.lstrip().startswith("|"))
            if header is not None and _LLAMA_TABLE.search(line):
                engine = Engine.llama_cpp
    if samples and engine is None and SPECULATIVE_WORDS.search(text) is None and _MODEL_WORDS.search(text) is None:
        samples = []  # a "draft acceptance" column alone is also a newsroom's: the paste must name a drafter or a model's units
    if samples or listed:
        return samples or listed, engine
    labelled = labelled_samples(text)
    if not labelled and swept(runs):
        return [Sample(TABLE_RUNS_FORMAT, _figures_of(run), run.line, run.number, run.span) for run in runs], owner
    if not labelled and (SPECULATIVE_WORDS.search(text) is not None or _DRAFT_LENGTH.search(text) is not None
                         or _ACCEPT_LENGTH.search(low) is not None):
        # A table of acceptance by a key that is no setting (context length, prompt, category) where no shape above
        # reads it (a cell of a range, "~53%"), or a mechanism table (tokens per forward pass with and without MTP): the
        # runs tables.py reads of it, none compared (a run without speculation there carries no speed).
        # The paste must name a drafter or the draft length ("n_max", acceptance by n_max in a main-vs-PR table): an
        # acceptance rate alone is also a card payment's, a survey's or a sampler's (MCMC's by its "steps").
        # Only rows drawn as a table's (pipes, aligned columns): a comma-separated "row" is as often code or prose.
        drafting = [run for run in runs if not run.baseline and (run.acceptance is not None or run.mean_length is not None)
                    and drawn_row(run.line)]
        if drafting and all(run in drafting or run.baseline and run.speed is None for run in runs):
            return [Sample(TABLE_RUNS_FORMAT, _figures_of(run), run.line, run.number, run.span) for run in runs], owner
    return labelled, engine


def _figures_of(run: TableRun) -> Figures:
    setting = f"{run.setting} ({run.speed_from})" if run.speed_from else run.setting
    return Figures(speed=run.speed, setting=setting[:300], baseline=run.baseline, acceptance=run.acceptance,
                   mean_length=run.mean_length, group=run.key, unit=None if run.unit == "tok/s" else run.unit,
                   spec_tokens=run.depth)


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
