"""A table's header words read into column kinds (a figure, a key, a draft length, a drafter's switch or setting), and
the shapes a table's words give it: a grid of one figure by two keys, metrics by row, acceptance beside tokens' pace."""

from __future__ import annotations

import re

from mtpinspect.logread.tables.cut import Table
from mtpinspect.logread.tables.words import (
    _ABSENT,
    _AR_CELL,
    _ARROW,
    _BASELINE,
    _CHANGE,
    _DEPTH_COLUMN,
    _GRID_CORNER,
    _KEY,
    _NO,
    _RATIO,
    _SETTING_ONLY,
    _SPEED_UNIT,
    _SPEEDUP,
    _TIE,
    _TOKEN_PACE,
    _YES,
    _cell_acceptance,
    _cell_figure,
    _figure,
    _number,
    _setting,
    _words,
)


def _measured_by_row(table: Table, kinds: list[str | None]) -> bool:
    """Whether a table gives its metrics by row and its conditions by column: no column named by a figure or a key, a
    row labelled by an acceptance measure (speculative decoding's own: "avg_spec_accept_length", "accept rate"), its
    other cells figures."""
    if kinds[0] is not None or any(k is not None for k in kinds[1:]) or len(table.header) < 2:
        return False
    return any(_figure(_words(row[0])) in ("rate", "length") and _TIE.search(_words(row[0])) and
               all(_number(c) is not None for c in row[1:]) for row in table.rows)


def _column_kind(cell: str, column: list[str], first: bool) -> tuple[str | None, bool | None]:
    """What a header cell's column holds, and the setting its words name (a run per column when they do)."""
    words = _words(cell)
    named = words.partition("=")
    if named[1] and named[2].strip() and _KEY.match(named[0].strip()):
        return None, None  # "batch size=1": the table's one condition over a column of labels, not a figure
    figure = _figure(words)
    if figure in ("length", "rate", "ratio", "speedup"):
        return figure, None
    if _KEY.match(words):
        return "key", None
    if _DEPTH_COLUMN.match(words):
        return "depth", None
    if (figure == "speed" or _CHANGE.search(words)) and any(_ARROW.search(c) for c in column):
        return "arrow", None  # "Decode Δ": "22.7 → 40.6 (+79%)", before and after speculation
    values = {_words(c) for c in column if c.strip()}
    numeric = sum(1 for c in column if _number(c) is not None)
    said = _setting(words) if words else None
    if said and _AR_CELL.match(words) and numeric and all((n := _number(c)) is None or n[0] <= 1 for c in column):
        return "rate", None  # "AR" over shares of 1: an acceptance rate, not autoregressive decoding's speeds
    if said is not None and values and values <= (_YES | _NO):
        return "switch", None  # "MTP heads": yes / no
    if said is False and values and numeric * 2 < len(column):
        return "switch", None  # "spec type": none / draft-mtp, "Speculative method": baseline / ngram
    if _SETTING_ONLY.fullmatch(words) and numeric * 2 >= len(column):
        return "param", None  # "speculative_eagle_topk", "--draft-p-min": a speculative setting's values, a row's setting
    if said is not None and not first and numeric * 2 >= len(column):
        return figure, said  # a column of one setting's figures
    if figure is not None:
        return figure, None
    cell_figures = {_cell_figure(c) for c in column if c.strip()}
    if numeric * 2 >= len(column) and len(cell_figures) == 1 and None not in cell_figures:
        return cell_figures.pop(), None  # "predictable": every cell in tok/s
    if numeric * 2 >= len(column) and cell_figures == {"speed", None} and \
            all((n := _number(c)) is None or not n[1] or _cell_figure(c) == "speed" for c in column):
        return "speed", None  # "General": "101 t/s" in one row, "116 (59%)" in the next: the column's unit is its cells'
    return None, None


def _accepts_tokens(table: Table, kinds: list[str | None]) -> bool:
    """Whether a table ties itself to speculative decoding by its columns: an acceptance column beside a column of
    tokens' pace (tokens per second, TPOT) is drafts accepted while decoding, whatever the header calls the methods
    ("suffix", "lstm"). An acceptance rate beside requests or connections per second is a server's."""
    return any(k in ("rate", "length") for k in kinds) and any(
        k in ("speed", "latency") and _TOKEN_PACE.search(_words(cell)) for k, cell in zip(kinds, table.header))


def _notes_acceptance(column: list[str]) -> bool:
    """Whether most of a column's filled cells are speeds noting their acceptance."""
    filled = [c for c in column if _words(c) not in _ABSENT]
    return bool(filled) and sum(_cell_acceptance(c) is not None for c in filled) * 2 > len(filled)


def _grid(table: Table) -> re.Match[str] | None:
    """A grid's corner where the table is one: the corner cell names two keys and the other header cells are the
    column key's values."""
    corner = _GRID_CORNER.match(_words(table.header[0]))
    return corner if corner is not None and all(_number(c) is not None for c in table.header[1:]) else None


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
