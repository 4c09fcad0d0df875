"""The older reader of a table whose header names an acceptance or mean-length column (llama.cpp server-bench's
"accept_rate", a thread's Markdown table), a row at a time; used where the runs read by words compare nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mtpinspect.logread.figures import with_ratios
from mtpinspect.logread.formats import Figures, LineFormat
from mtpinspect.logread.tables.cut import Table
from mtpinspect.logread.tables.record import TABLE_FORMAT, TABLE_RUNS_FORMAT
from mtpinspect.logread.tables.words import _BASELINE, _RATIO, _SPEED_UNIT, _SPEEDUP, _TOKEN_PACE, _words, without_speculation

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
# a cell of both, "22.7 → 40.6") are as_runs.py's: it reads any table's runs by their words.
_SPEED_IN = re.compile(r"(?P<value>\d{1,6}(?:\.\d{1,6})?)\s*(?:(?:\+/-|±)\s*\d{1,6}(?:\.\d{1,6})?\s*)?(?:t/s|tok/s|tokens?/s)\b")
_RATE_IN = re.compile(r"(?:@|\bat)\s*(?P<value>\d{1,3}(?:\.\d{1,6})?)\s*%")
_EMPTY_CELL = re.compile(r"^[\s*_`]*(?:—|–|-{1,3}|n/?a|none)?[\s*_`]*$", re.IGNORECASE)
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


def _header(cells: tuple[str, ...], *, raw_table: bool) -> _Header | None:
    """A table's header: one that names an acceptance column, or a Markdown table's whose first column names runs."""
    if len(cells) < 2:
        return None
    per_run = _RUN_COLUMN.match(cells[0].strip("*_` ")) is not None
    # llama-sweep-bench's table (PP | TG | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s): one run's decode speed
    # ("S_TG t/s", S for speed) at each depth of its context, a row per depth.
    per_run = per_run or _SWEEP_BENCH.match(" | ".join(cells)) is not None
    columns = tuple((i, _acceptance_column(cell, per_run), "%" in cell or "pct" in cell.lower()) for i, cell in enumerate(cells) if i)
    kinds = {kind for _, kind, _ in columns}
    if not kinds & {"rate", "len"} and not (per_run and raw_table):
        return None
    return _Header(len(cells), columns, TABLE_RUNS_FORMAT if per_run else TABLE_FORMAT, cells[0].strip("*_` ")[:60])


def _acceptance_column(cell: str, per_run: bool) -> str:
    """What a column holds, by its name: acceptance, mean length, decode speed (a run table's), else a value column
    whose cells are read by their units (a run table's) or nothing."""
    if _RATE_COLUMN.match(cell):
        return "rate"
    if _LENGTH_COLUMN.match(cell):
        return "len"
    if per_run:
        return "speed" if _SPEED_COLUMN.match(cell) else "value"
    return ""


def _row(header: _Header, cells: tuple[str, ...]) -> Figures | None:
    """A row's figures; None when the row does not fit the header (the table ended)."""
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


# An engine's or a model file's words (an engine's name, a GGUF's quantization) or a drafter's own figures ("mean len", a
# program's "accept_rate" key): a table of acceptance in a paste holding them is a drafter's. Tokens alone are not: a
# tokenizer's, a rate limiter's or a queue's table has "tokens/s" beside an "accept rate" too.
_MODEL_WORDS = re.compile(r"(?i)\bmean[ _]len\b|\baccept(?:ance)?[ _]len|\bacc(?:ept)?_rate\b|"
                          r"\b(?:ollama|llama[.-]?\w*|vllm|sglang|lm ?studio)\b|\bgguf\b|\bbpw\b|\b(?:ud-)?i?q\d(?:_[a-z0-9]{1,4}){1,3}\b")
_DRAFTS = re.compile(r"(?<![a-z])draft(?:s|ed)?(?![a-z])")


def _drafts_beside_tokens(table: Table) -> bool:
    """Whether a table's header names drafts ("Draft Accepted/Total", "draft acceptance") or a speed against a run
    without speculation ("decode vs baseline", "speedup over baseline") beside tokens' pace ("tps", "Speed (tok/s)", a
    cell's "61 vs 90 tok/s"): drafts accepted while tokens are decoded, the acceptance what the speed-up comes from. A
    newsroom's "draft acceptance" has no tokens' pace, a tokenizer's "tokens/s" no drafts and no baseline."""
    words = [_words(cell) for cell in table.header]
    compared = any(_BASELINE.search(w) and (_RATIO.search(w) or _SPEEDUP.search(w)) for w in words)
    paced = any(_TOKEN_PACE.search(w) for w in words) or \
        compared and any(_SPEED_UNIT.search(_words(cell)) for row in table.rows for cell in row)
    return (compared or any(_DRAFTS.search(w) for w in words)) and paced
