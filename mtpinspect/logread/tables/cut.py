"""Finding tables in a text: cells cut from pipes, box-drawing, aligned columns, commas (:func:`tables`), and results
blocks of "name: value" lines under a label (:func:`field_blocks`). Nothing here says what a cell means."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtpinspect.logread.tables.words import _GRID_CORNER, _number, _words

_MAX_LINE = 2000  # a table's line is short; a longer one is a log line or a payload
_MAX_CELLS = 24
_MAX_ROWS = 400  # a table pasted into a thread; thousands of aligned lines are a log's padding

# -- cutting a text into tables ------------------------------------------------------------------------------

_BOX_BARS = str.maketrans({"│": "|", "┃": "|", "║": "|", "┆": "|", "┊": "|"})
# A rule row of any shape: Markdown's |---|:--:|, "-- | --", box-drawing borders, a row of dashes under aligned columns.
_RULE = re.compile(r"^[\s|:+=\-\u2500-\u257f]+$")
_ALIGNED = re.compile(r"\t|\s{2,}")
# A code fence between a label and its table or block ("```", "~~~text"): not the label.
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})[\w-]*\s*$")


@dataclass(frozen=True)
class Table:
    """One table of a text: its header cells, its rows' cells, where they stand, and the line above it."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numbers: tuple[int, ...]  # each row's 1-based line number
    lines: tuple[str, ...]  # each row's line, as pasted
    heading: str  # the nearest line above the table that is not part of it ("The base model speed:")
    command: str = ""  # a results block's: the engine's command pasted above it (its flags say the run's setting)


_ASSIGNMENT = re.compile(r"^\s*[A-Za-z_][\w .()/#-]{0,60}?\s=\s")


def _cells(line: str) -> tuple[str, tuple[str, ...]]:
    """The line's shape ("pipe", "aligned", "csv" or "") and its cells."""
    if "|" in line:
        inner = line.strip()
        inner = inner[1:] if inner.startswith("|") else inner
        inner = inner[:-1] if inner.endswith("|") else inner
        return "pipe", tuple(c.strip() for c in inner.split("|"))
    aligned = tuple(c for c in _ALIGNED.split(line.strip()) if c)
    if len(aligned) >= 2:
        return "aligned", aligned
    if line.count(",") >= 1 and ": " not in line:
        return "csv", tuple(c.strip() for c in line.split(","))
    return "", ()


def drawn_row(line: str) -> bool:
    """Whether a table's row is drawn as one (cells between pipes or aligned with tabs or spaces), not comma-separated."""
    return "|" in line or _ALIGNED.search(line.strip()) is not None


def _by_gaps(block: list[tuple[int, str, tuple[str, ...]]]) -> list[tuple[int, str, tuple[str, ...]]]:
    """Columns aligned with spaces, cut where every line of the block is blank for two characters or more (a cell may
    hold one gap of its own: "MLX  nvfp4" under "engine"); tab-separated lines keep their tabs' cells."""
    if not block or len(block) > _MAX_ROWS or not _is_header(block[0][2]):
        return []  # a log's padded lines, not a table someone pasted
    if any("\t" in line for _, line, _ in block):
        return block
    texts = [line.translate(_BOX_BARS).rstrip() for _, line, _ in block]
    width = max(len(t) for t in texts)
    blank = [True] * width
    for text in texts:
        for at, char in enumerate(text):
            if char != " ":
                blank[at] = False
    cuts, at = [0], 0
    while at < width:
        if blank[at]:
            end = at
            while end < width and blank[end]:
                end += 1
            if end - at >= 2 and at > 0:
                cuts.append(end)
            at = end
        else:
            at += 1
    if len(cuts) < 2 or len(cuts) > _MAX_CELLS:
        return []
    cut = [*cuts, width]
    return [(n, line, tuple(text[a:b].strip() for a, b in zip(cut, cut[1:]))) for (n, line, _), text in zip(block, texts)]


def _padded(block: list[tuple[int, str, tuple[str, ...]]]) -> list[tuple[int, str, tuple[str, ...]]]:
    """A pipe table's rows at its header's width, as GitHub renders them (a short row's missing cells are empty, a long
    row's extra ones dropped)."""
    if not block:
        return []
    width = len(block[0][2])
    return [(n, line, (cells + ("",) * width)[:width]) for n, line, cells in block]


# A page copy of a rendered Markdown table may put each cell on a line of its own: a row's first cell between pipes
# ("| Model |"), each next cell closed by its pipe alone ("Architecture |"), as a browser's copy of a blog's table gives.
_OPENING_CELL = re.compile(r"^\s*\|[^|]{1,200}\|\s*$")
_CLOSING_CELL = re.compile(r"^\s*[^|\s][^|]{0,200}\|\s*$")


def _split_cells_joined(lines: list[str]) -> list[tuple[int, str]]:
    """The text's numbered lines, a row whose cells a page copy split one per line joined back into one ("| Model |"
    and "Architecture |" -> "| Model | Architecture |"), numbered by its first line. Each line is looked at once."""
    out: list[tuple[int, str]] = []
    row: list[str] = []  # the row being joined: its opening cell, then its closing ones
    start = 0
    for number, raw in enumerate(lines, 1):
        if row and len(row) < _MAX_CELLS and _CLOSING_CELL.match(raw):
            row.append(raw.strip())
            continue
        if row:
            out.append((start, " ".join(row)) if len(row) > 1 else (start, row[0]))
            row = []
        if _OPENING_CELL.match(raw):
            row, start = [raw.strip()], number
            continue
        out.append((number, raw))
    if row:
        out.append((start, " ".join(row)) if len(row) > 1 else (start, row[0]))
    return out


def tables(text: str) -> list[Table]:
    """The tables of ``text``: runs of consecutive lines of one shape and width, the first one the header (its
    cells mostly words), at least one row below it."""
    found: list[Table] = []
    block: list[tuple[int, str, tuple[str, ...]]] = []
    shape, width, heading, above = "", 0, "", ""
    delimited = False  # the block's first row has Markdown's delimiter row under it

    def close() -> None:
        above_header = heading
        if shape == "pipe" and len(block) >= 3 and not _is_header(block[0][2]) and _is_header(block[1][2]):
            # A spreadsheet pasted as pipes: a title row of merged cells ("| TPOT ms |   |   |") above the header
            # row. It says what the table's cells measure: the table's heading, the header the row below it.
            above_header = " ".join(c for c in block[0][2] if c)[:200] or heading
            del block[0]
        if shape == "aligned" and sum(1 for _, line, _ in block if _ASSIGNMENT.match(line)) * 2 > len(block):
            return  # "eval time =   25447.71 ms / ...": an engine's statements padded to line up, not a table's rows
        # Tab-separated rows may hold fewer cells than their header (an empty cell is no tab): at the header's width too.
        lines = _padded(_by_gaps(block)) if shape == "aligned" else _padded(block) if shape == "pipe" else block
        # Markdown's delimiter row right under the first row makes it the header whatever its cells ("| Metric | 100
        # questions | 300 questions |": conditions named by a count).
        if len(lines) >= 2 and (_is_header(lines[0][2]) or delimited and shape == "pipe"):
            rows = lines[1:]
            found.append(Table(lines[0][2], tuple(c for _, _, c in rows), tuple(n for n, _, _ in rows),
                               tuple(line.strip()[:300] for _, line, _ in rows), above_header))

    for number, raw in _split_cells_joined(text.splitlines()):
        line = raw.translate(_BOX_BARS) if len(raw) <= _MAX_LINE else ""
        stripped = line.strip()
        if block and stripped and _RULE.match(line):
            if len(block) == 1 and shape == "pipe":
                delimited = _delimits(block[0][2], line)
            if shape == "pipe" and len(block) >= 2 and _new_head(block[-1][2], line):
                # Markdown's delimiter row under a row of words: that row heads a second table pasted right below the
                # first (the prose between them dropped), "| Model | MTP Disabled | MTP Enabled |" under a table of runs.
                head = block.pop()
                close()
                block, width, heading, delimited = [head], len(head[2]), "", True  # the table above is no heading
            continue  # a rule row inside a table (or under its head)
        kind, cells = _cells(line) if stripped else ("", ())
        fits = bool(kind) and 2 <= len(cells) <= _MAX_CELLS
        if fits and block and kind == shape and (kind in ("aligned", "pipe") or len(cells) == width):
            block.append((number, raw, cells))
            continue
        close()
        block = []
        delimited = False
        if fits:
            block, shape, width, heading = [(number, raw, cells)], kind, len(cells), above
        if stripped and not _RULE.match(line) and not _FENCE.match(line):
            above = stripped[:200]
    close()
    return found


# Markdown's delimiter row (GFM): a cell of dashes, colons for alignment, a cell per column of the row it heads.
_DELIMITER_CELL = re.compile(r"^:?-+:?$")


def _delimits(cells: tuple[str, ...], rule: str) -> bool:
    """Whether a rule is Markdown's delimiter row for the row above it: a cell of dashes for each of its cells."""
    _, rule_cells = _cells(rule)
    return len(rule_cells) == len(cells) and all(_DELIMITER_CELL.match(c) for c in rule_cells)


def _new_head(cells: tuple[str, ...], rule: str) -> bool:
    """Whether a Markdown delimiter row makes the row above it a new table's header: as many cells as that row, and
    that row words (a table drawn with a rule between every row has figures in them)."""
    return _delimits(cells, rule) and _is_header(cells)


# A results block: "name: value" lines under a label ("spec 7b", "**Without MTP**"), as a client script or a
# benchmark prints them: a table of one run, its metrics by row.
_FIELD = re.compile(r"^[-*>\s]{0,6}[\"']?(?P<name>[A-Za-z#(][^:=|\n\"']{0,70}?)[\"']?\s*[:=]\s+[*_`]{0,2}(?P<value>[~≈]?\d[^\n]{0,60})$")


# Lines inside a results block that are no figure of it: "Backend: sglang" (and a section banner, _banner).
_WORDED_FIELD = re.compile(r"^[-*>\s]{0,6}[A-Za-z][^:=|\n]{0,70}?:\s+\S[^\n]{0,80}$")


def _banner(line: str) -> bool:
    """A section line of a results block: "============ Serving Benchmark Result ============", "----End-to-End----"."""
    text = line.strip()
    return len(text) >= 6 and all(c in "=-#*" for c in text[:3]) and all(c in "=-#*" for c in text[-3:])


# An engine's server command as pasted (environment settings before it, a line's "\\" continuing it), and the flags
# of one that drafts: the results block below such a command is that run's.
_ENGINE_COMMAND = re.compile(r"^\s*(?:\$\s+)?(?:[A-Z_]{2,40}=\S{0,80}\s+){0,4}(?:python3?\s+-m\s+(?:vllm\.entrypoints\.openai\.api_server|"
                             r"sglang\.launch_server)|vllm\s+serve|\S{0,80}llama-server)\b")
_DRAFTING_FLAG = re.compile(r"\s--?(?:speculative[-_](?:model|config|algorithm|draft[-_]model[-_]path)|spec[-_](?:type|draft[-_]n[-_]max)|"
                            r"model[-_]draft|md)\b")


def field_blocks(text: str) -> list[Table]:
    """Blocks of two or more "name: value" lines with the label above them (a line of words, not a banner nor a field),
    each a table of one run (its header: the label), metrics by row; a blank line ends a block. A block keeps the
    engine's command pasted above it: the one command since the block before it (two commands above two blocks say
    neither which is whose)."""
    found: list[Table] = []
    block: list[tuple[int, str, tuple[str, ...]]] = []
    above, label, command, continued, commands = "", "", "", False, 0

    def close() -> None:
        nonlocal commands
        if len(block) >= 2 and label:
            found.append(Table(("", label), tuple(c for _, _, c in block), tuple(n for n, _, _ in block),
                               tuple(line.strip()[:300] for _, line, _ in block), label,
                               command[:2000] if commands == 1 else ""))
            commands = 0

    for number, raw in enumerate(text.splitlines(), 1):
        short = len(raw) <= 200
        if _ENGINE_COMMAND.match(raw[:300]) or continued:
            commands += not continued
            command = raw if not continued else command + " " + raw[:300]
            continued = raw.rstrip().endswith("\\")
        field = _FIELD.match(raw) if short else None
        if field is not None:
            if not block:
                label = above
            block.append((number, raw, (field["name"].strip(" *_`"), field["value"].strip())))
            continue
        if short and (_WORDED_FIELD.match(raw) or _banner(raw)):
            continue  # inside a block, or between its label and its first figure
        close()
        block = []
        if raw.strip() and not _FENCE.match(raw):
            # A statement an engine printed ("eval time = 25447.71 ms / 812 tokens (...)") names no run below it.
            above = raw.strip(" #*_>-:")[:80] if len(raw) <= 120 and not _ASSIGNMENT.match(raw) else ""
    close()
    return found


def _is_header(cells: tuple[str, ...]) -> bool:
    """A header row: most of its cells are words (an empty first cell is a header's corner)."""
    worded = sum(1 for c in cells if c.strip(" *_`") and _number(c) is None)
    if len(cells) >= 2 and _GRID_CORNER.match(_words(cells[0])) and all(_number(c) is not None for c in cells[1:]):
        return True  # a grid's corner ("tp\\conc") over its column key's values
    return worded * 2 > len(cells) and not any(c.rstrip().endswith(":") for c in cells[:1])
