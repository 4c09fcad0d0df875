"""Tables as users paste them, read by their words: which cell names the setting, which is a speed, which a key.

A thread compares speculative decoding with a run without it in a table far more often than in a log. The
tables come in every shape (Markdown pipes with or without outer pipes, box-drawing, columns aligned with
spaces or tabs, comma-separated rows, several tables in one paste, a table cut after its head) and every
orientation (a run per row, a run per column with metrics by row). None of that says what a cell means: the
words do. So a table is first cut into cells (:func:`tables`), then each header cell and each row's first cell
is classified by its words (:func:`_column_kind`, :func:`_setting`, :func:`_figure`):

- a setting: a run without speculative decoding (baseline, no spec, without MTP, vanilla, off, n-max 0) or with
  it (MTP, NextN, EAGLE, draft, spec, n-max k, num_speculative_tokens k); a column whose cells say yes/no under
  a drafter's name ("MTP heads"); a draft-length column (n-max, num_draft, steps, topk);
- a figure: a speed (tok/s, t/s, tokens/s, throughput: higher is better), a per-token latency (TPOT, ITL,
  ms/token: lower is better, read as tokens per second), a speed-up (the speculative run over a 1x run without it;
  other ratios say no whose), a speed before and after ("22.7 → 40.6"), an acceptance rate (a cell of counts,
  "4,379 / 6,630", is accepted over drafted), an acceptance length (AL, mean len, tokens accepted per pass); the
  prompt's speed (pp512, prefill, TTFT), requests per second, the mechanism's own pace and counts (passes/s, forward
  passes, drafted tokens) and other quantities (GPU util %, VRAM GB, power W) are no decode speed;
- a key: what the runs compared must share (batch size, concurrency, prompt, dataset, llama-bench's test; a speed
  column's own words, "think ON", "eager"; the model a row with speculation and one without both name).

A spreadsheet pasted as pipes may carry a title row of merged cells above its header ("| TPOT ms |  |"): it is the
table's heading, and the figure it names is that of cells whose row and unit name none. A cell "31.00/0.07" (a mean
over its std) is its mean; a header cell "batch size=1" is the table's one condition over a column of labels; a worded
cell in a draft-length column ("Draft off") names its row's setting; "X over Y" is a ratio; two drafters' columns
beside one baseline ("vanilla", "EAGLE 1", "EAGLE 3") are each compared with it (a header's words key a column only
where both sides name them); a column named by a run and a time unit ("Naive(s)",
"Medusa(s)") is the time its work took, per key (lower is better), and "naive" decoding is the run without
speculation.

Results blocks ("name: value" lines under a label, as a client script or a serving benchmark prints them) are
tables of one run, metrics by row (:func:`field_blocks`); a field that names its setting and a speed or the time the
same work took is a run of its own. A block under the one engine command pasted since the block before it is that command's
run: with a drafter's flag (--speculative-model, --speculative-algorithm, --spec-type, -md) or without one.

Beyond tables and blocks (issue 42, round 4): a row's metric may stand in any label column ("Batch" | "Metric"); a row
whose acceptance is marked empty ("-", "N/A") beside rows that accept drafts ran without speculation, and an acceptance
column beside a column of tokens' pace ties a table whatever its methods are called; Chinese setting words ("不开mtp");
runs under the commands that made them (a script's timed output lines under the same program's command with a
drafter's flag and without one, compared batch by batch); a line of speeds before and after a drafter ("MTP: 22.7 →
40.6 tok/s"). An engine's padded "name = value" statements (llama-server's print_timing) are no table.

Round 5: a Markdown delimiter row under a row of words starts the next table (two tables pasted back to back, the prose
between them dropped); several acceptance columns without a speed are each a condition of their own ("acceptance
(main)" | "acceptance (PR)").

Round 7: a table sweeping a speculative setting by its engine's own name (llama.cpp's --draft-p-min, --draft-max,
--spec-draft-n-max; vLLM's num_speculative_tokens; SGLang's speculative_num_steps) in its header or first column is a
table of runs, settings side by side (:func:`swept`); metrics by row under columns of conditions ("Metric" | "100
questions", a row naming an acceptance measure) are a drafting run per column; Markdown's delimiter row makes the row
above it the header whatever its cells; a drafter's on/off column outranks a row label's "baseline"; an engine's own
flags (--enforce-eager, --disable-cuda-graph, --n-gpu-layers) name it before a figure's words do.

Round 8: beside a column without speculation, a column of speeds whose cells note their acceptance ("3.90 t/s @ 93%")
drafted, whatever its header calls the build; a grid of one figure by two keys under its title, its corner naming both
("tp\\conc", SGLang's benchmark sweeps: :func:`_grid_runs`), a run per cell, the grids of one sweep joined by run and
key; an acceptance column is read only where the paste names a drafter, the draft length, an engine or a model file,
or its header names drafts or a speed against the baseline beside tokens' pace (a tokenizer's "accept rate" beside
"tokens/s" is not a drafter's).

The samples runs.py takes of a paste (:func:`table_samples`, the one entry): the runs above where they compare a run
without speculation with one with it, or sweep a speculative setting (:func:`swept`); else the acceptance and
mean-length columns of a table (:func:`_header`, :func:`_row`: a row a category of one run's prompts, or a run of its
own when its first column names what changed), results listed one run a line (:func:`_listed_run`) and the runs a
poster's sentences give (:func:`sentence_runs`); else acceptance figures read by their words wherever they stand
(:func:`labelled_samples`).

Each run becomes a :class:`TableRun`: its setting, whether it ran without speculation, its key, its speed and
acceptance. A "baseline" whose drafts were accepted (an earlier build with MTP) ran with speculation: a table of such
runs is settings side by side, no comparison against a run without it. A row of acceptance in a table of metrics by
row is the figure of the key a speed row names ("bs=8 accept rate"), else of its column's run (a mechanism table). Runs are compared only within one key (rules_run.py). A table that has no tie to speculative
decoding (its words or the paste's) gives no runs: a database's benchmark table with a "baseline" column is
someone else's. Every step is a pass over the lines or the cells: linear in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from mtpinspect.logread.catalogue import SPECULATIVE_WORDS
from mtpinspect.logread.figures import Sample, with_ratios
from mtpinspect.logread.formats import Figures, LineFormat, Scope
from mtpinspect.vocabulary import Engine

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

    for number, raw in enumerate(text.splitlines(), 1):
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
_DELIMITER_CELL = re.compile(r"^:?-{3,}:?$")


def _delimits(cells: tuple[str, ...], rule: str) -> bool:
    """Whether a rule is Markdown's delimiter row for the row above it: a cell of dashes for each of its cells."""
    _, rule_cells = _cells(rule)
    return len(rule_cells) == len(cells) and all(_DELIMITER_CELL.match(c) for c in rule_cells)


def _new_head(cells: tuple[str, ...], rule: str) -> bool:
    """Whether a Markdown delimiter row makes the row above it a new table's header: as many cells as that row, and
    that row words (a table drawn with a rule between every row has figures in them)."""
    return _delimits(cells, rule) and _is_header(cells)


_NUMBER = re.compile(r"^[*_`~≈\s]*(?P<value>\d{1,3}(?:,\d{3}){1,4}(?:\.\d{1,20})?(?![\d,])|\d{1,9}(?:\.\d{1,20})?)(?![\d.]|\s*[–—-]\s*\d)\s*(?P<unit>(?!/\s?\d)(?:%|[a-zA-Zµ/×]{1,12}(?:/s)?))?")  # "31.00/0.07": a mean over its std


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


def _number(cell: str) -> tuple[float, str] | None:
    """A cell's leading number and the unit after it ("11.91 tok/s" -> (11.91, "tok/s"), "87%" -> (87, "%"))."""
    found = _NUMBER.match(cell)
    if found is None:
        return None
    return float(found["value"].replace(",", "")), (found["unit"] or "").lower()  # "1,735.90": thousands


def _is_header(cells: tuple[str, ...]) -> bool:
    """A header row: most of its cells are words (an empty first cell is a header's corner)."""
    worded = sum(1 for c in cells if c.strip(" *_`") and _number(c) is None)
    if len(cells) >= 2 and _GRID_CORNER.match(_words(cells[0])) and all(_number(c) is not None for c in cells[1:]):
        return True  # a grid's corner ("tp\\conc") over its column key's values
    return worded * 2 > len(cells) and not any(c.rstrip().endswith(":") for c in cells[:1])


# -- what a cell's words say ----------------------------------------------------------------------------------

# Read on the cell's words with "_" and "-" as spaces: "no_mtp_eager" is "no mtp eager".
_BASELINE = re.compile(r"\b(?:baseline|base model|no spec(?:ulation|ulative(?: decoding)?)?|without (?:speculation|speculative|spec|"
                       r"mtp|draft(?:ing|er)?|eagle\d?|nextn|ngram)|w/o (?:spec\w*|mtp|draft\w*|eagle\d?)|(?:spec(?:ulative)?(?: ?dec(?:oding|ode)?)?|"
                       r"speculation|mtp|draft(?:ing)?|eagle\d?|nextn) ?[=:]? ?(?:off|disabled|false|0)(?![\w.])|no (?:mtp|draft(?:ing|er)?|eagle\d?|nextn|ngram)|"
                       r"non mtp|vanilla|naive(?! (?:draft|spec|mtp|eagle|ngram|medusa))|autoregressive|target (?:model )?only|(?:plain|standard|normal|regular) decoding|"
                       # Chinese headers: "不开mtp" (MTP not on), "关闭投机" (speculation off), "基线" (baseline)
                       r"(?:不开启?|未开启?|关闭|不使用|不用|禁用|无|没有) ?(?:mtp|eagle\d?|nextn|draft|投机|推测|草稿)|基线)\b")
# "Speculative" naming another field's technique (a CPU's or a database's speculative execution, prefetch, loads,
# stores or reads, a CPU's measured in instructions per cycle, "speculative_ipc"; a parser's speculative parsing): not speculative decoding, so no run setting and no tie.
_OTHER_SPECULATION = r"(?! (?:prefetch|execut|exec\b|load|stor|fetch|read|branch|retriev|pag|pars|compil|lock|writ|ipc\b|cycl|instr)\w*)"
_SPEC = re.compile(r"(?<![a-z])(?:mtp|nextn|eagle\d?|draft(?:ing|er)?|spec(?:ulative" + _OTHER_SPECULATION + r"|ulation)?|spec ?dec(?:oding|ode)?|medusa|"
                   r"dflash|ngram|lookahead|n ?max|num speculative tokens)(?![a-z])")
_WITH = re.compile(r"^(?:with|w/) \w")
# Words only speculative decoding uses: a table holding one is tied to it on its own. A bare "draft" or "spec" is
# not (a blog's "draft posts", a build's "spec" target): those tables need the paste's tie (SPECULATIVE_WORDS).
# The engines' own names of a speculative setting, as a header or a row's label writes them (read as _words: "-" and "_"
# as spaces): llama.cpp's flags (common/arg.cpp: --draft-max, --draft-min, --draft-p-min / --spec-draft-p-min,
# --draft-p-split, --spec-draft-n-max, --spec-type, --spec-ngram-*, --model-draft), vLLM's (num_speculative_tokens,
# prompt_lookup_max / _min), SGLang's (speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens). A
# table sweeping one of them is a table of runs.
_SETTING_NAME = (r"draft (?:p (?:min|split)|n(?: min| max)?|min|max)|spec (?:draft|type|ngram)|model draft|prompt lookup (?:max|min)|"
                 r"num draft tokens|num speculative tokens|n ?max|speculative (?:num (?:steps|draft tokens)|eagle topk)")
_TIE = re.compile(r"(?<![a-z])(?:mtp|nextn|eagle\d?|medusa|dflash|speculative" + _OTHER_SPECULATION + r"|speculation|spec ?dec(?:oding|ode)?|"
                  + _SETTING_NAME + r"|draft (?:model|tokens?|len(?:gth)?)|accept(?:ance|ed)? (?:rate|len(?:gth)?)|"
                  r"acc len)(?![a-z])")
SETTING_NAME = re.compile(r"(?<![a-z])(?:" + _SETTING_NAME + r")(?![a-z])")
_SETTING_ONLY = re.compile(r"(?:" + _SETTING_NAME + r")")  # a header that is a setting's name and nothing else ("n-max 2" is a run)
# A draft length: "n-max 3", "--spec-draft-n-max 0", "n=2", "k=4", "num_speculative_tokens: 5".
_DEPTH_IN = re.compile(r"(?:n ?max|draft n ?max|draft max|num speculative tokens|num draft(?: tokens)?|\bn|\bk)\s*[=: ]\s*(?P<n>\d{1,3})\b")
_DEPTH_COLUMN = re.compile(r"^(?:spec(?:ulative)? )?(?:n ?max|draft n ?max|draft max|num draft(?: tokens)?|num speculative tokens|spec(?:ulative)? tokens|"
                           r"draft (?:tokens|length|len)|steps|num steps|topk|top k|k|gamma)$")
# A speed-up column: the speculative run's speed over the run without it ("Speedup", "1.8x"); other ratios say no whose.
_SPEEDUP = re.compile(r"\bspeed ?ups?\b")
# "E1 over vanilla": one run's over another's; a change against another run ("Speed Increase": "+59.5%", "Baseline").
_RATIO = re.compile(r"\bratio\b|\bgain\b|×|\bvs\b|\w \bover\b \w|\bincrease\b|\bimprovement\b|\buplift\b")
_LATENCY = re.compile(r"\b(?:tpot|itl|tbt|ms ?/ ?tok(?:en)?|ms per token|s ?/ ?tok(?:en)?|inter token latency|(?:per )?token latency|time per output token)\b")
_SPEED_UNIT = re.compile(r"tok(?:en)?s? ?/ ?s(?:ec)?\b|\btok(?:en)?s? s\b|\bt ?/ ?s\b|\btk ?/ ?s\b|\btps\b|tokens per second|\bthroughput\b")
# A time of the whole request or its first token: lower is better, and not a speed ("decode time", "TTFT").
_TIME = re.compile(r"\b(?:time|duration|latency|ttft|e2e|elapsed)\b")
# A column named by a run and the unit of the time its work took ("Naive(s)", "Medusa (ms)"): lower is better.
# A field name may carry it as its last word instead ("baseline_ms", "speculative_sec"): never a bare "s" or "min",
# which end other words' abbreviations.
_DURATION_HEAD = re.compile(r"(?:\((?P<unit>s|sec|secs|seconds|ms|min|mins|minutes)\)|(?<= )(?P<word>ms|msec|sec|secs|seconds|mins|minutes))$")
_NOT_DECODE = re.compile(r"\bpp\d*\b|\bprompt\b|prefill|\binput\b|\breq(?:uests?)?\b|\bttft\b|\btotal tok")
_SPEED = re.compile(r"\bspeed\b|\bdecode\b|\btg\d*\b|\bgen(?:eration)? rate\b|\beval rate\b")
_LENGTH = re.compile(r"\baccept(?:ance|ed)? len(?:gth)?\b|\bacc len\b|\bmean len\b|\bavg len\b|\bal\b|\btau\b|τ|acceptance length|"
                     r"\btok(?:en)?s? (?:accepted |emitted |generated )?per (?:pass|step|forward|verif\w*|iteration|target (?:pass|step))\b")
# A quantity a table sets beside the speeds that is none ("GPU util (%)", "VRAM (GB)", "power draw (W)").
_OTHER_QUANTITY = re.compile(r"%|°c|\(w\)|\b(?:util(?:i[sz]ation)?|power|watts?|memory|mem|vram|ram|gb|gib|mb|mib|"
                             r"temp(?:erature)?|energy|joules?|cost|price|size|params|parameters|"
                             # counts of the mechanism's work ("forward passes", "drafted tokens"): fewer is the point
                             r"pass(?:es)?|forwards?|iterations?|calls|requests|"
                             r"(?:draft(?:ed)?|output|generated|total|prompt|input) tokens|tokens (?:drafted|generated))\b")
# A count per second of something other than tokens ("main-model passes/s", "steps/s", "req/s"): no decode speed.
_OTHER_PER_SECOND = re.compile(r"\b(?:pass(?:es)?|steps?|forwards?|iterations?|iters?|batch(?:es)?|calls?|rounds?|images?|frames?|ops|"
                               r"quer(?:y|ies))\s?(?:/\s?s(?:ec)?|per s(?:ec(?:ond)?)?)\b")
_RATE = re.compile(r"\baccept(?:ance|ed)?\b|\bacc rate\b|\bacc %|\baccpt\b|\bdraft (?:rate|acc)\b")  # "draft rate": llama.cpp's own words
_KEY = re.compile(r"^(?:bs|batch(?: size)?|concurrency|conc|c|max concurrency|parallel|np|qps|request rate|rps|prompt|prompts|case|dataset|task|"
                  r"category|input len|output len|isl|osl|ctx|context|seq len|gpu|gpus|tp|scenario|workload|test|depth|hardware|device|"
                  r"backend|platform|machine|quant|quants|quantization|quant type|dtype|precision|context length|ctx len|n ctx|"
                  r"context size|kv cache|kv type|prompt length|input length|output length|max tokens|temperature|temp)$")
# One key spelled several ways in one paste's tables ("bs" in one, "batch size" in the next).
_KEY_NAMES = {"batch": "bs", "batch size": "bs", "c": "concurrency", "conc": "concurrency",
              "max concurrency": "concurrency", "prompts": "prompt", "gpus": "gpu", "ctx": "context",
              "context length": "context", "ctx len": "context", "n ctx": "context", "context size": "context",
              "quants": "quant", "quantization": "quant", "quant type": "quant", "temp": "temperature"}
# A cell of speeds before and after speculation was turned on ("22.7 → 40.6 (+79%)"), under a speed's or a change's name.
_ARROW = re.compile(r"(?P<before>\d{1,6}(?:\.\d{1,6})?)\s{0,8}(?:t/s|tok/s|tps)?\s{0,8}(?:→|->|=>|⇒)\s{0,8}(?P<after>\d{1,6}(?:\.\d{1,6})?)")
_CHANGE = re.compile(r"δ|\bdelta\b|\bchange\b")
_PROMPT_ROW = re.compile(r"\bpp\d*\b|\bprefill\b|\bprompt (?:processing|eval)|\bttft\b|\binput\b")
_SPEED_UNITS = frozenset({"", "tok/s", "t/s", "tokens/s", "token/s", "tps", "toks/s", "tok/sec", "tokens/sec", "tk/s"})
_PROMPT_TEST = re.compile(r"^(?:pp\d*|prefill|prompt processing)$")
_ABSENT = frozenset({"-", "—", "–", "n/a", "na", "none", "", "/"})  # a cell left empty on purpose (words: "_" and "-" read as spaces)
_YES = frozenset({"yes", "y", "on", "true", "enabled", "✓", "✔", "x"})
_NO = frozenset({"no", "n", "off", "false", "disabled", "✗", "✘", "-", "—", "none", "0"})
_FILLER = re.compile(r"\b(?:mean|avg|average|median|p50|output|total|decode|gen(?:eration)?|token|tokens|tok|per|s|ms|ts|"
                     r"latency|throughput|tpot|itl|speed|t|tps|sec|eval)\b")


def _words(cell: str) -> str:
    """A cell's words, lowercased, emphasis and code marks dropped, "_" and "-" read as spaces."""
    return re.sub(r"\s+", " ", re.sub(r"[*`_\-]+", " ", cell.lower())).strip()


def _figure(words: str) -> str | None:
    """The figure a header or row label names: "length", "rate", "ratio", "latency", "speed"; None."""
    if _LENGTH.search(words):
        return "length"
    if _RATE.search(words):
        return "rate"
    if _SPEEDUP.search(words):
        return "speedup"
    if _RATIO.search(words):
        return "ratio"
    if _OTHER_PER_SECOND.search(words):
        return "time"  # the mechanism's own pace (passes, steps per second): not the tokens a user gets
    if _LATENCY.search(words):
        return "latency"
    if (_SPEED_UNIT.search(words) or _SPEED.search(words)) and _NOT_DECODE.search(words):
        return "time"  # the prompt's speed, requests per second, prompt and output together: not decoding's
    if _SPEED_UNIT.search(words):
        return "speed"
    if _OTHER_QUANTITY.search(words) and not _SPEED.search(words):
        return "time"  # a row or column of GPU utilisation, memory, power, a count: not decoding's pace, whatever its numbers
    if _TIME.search(words):
        return "time"
    if _DURATION_HEAD.search(words) and _setting(words) is not None:
        return "duration"  # the time a run's work took, per key (each key the same work for every run)
    if _SPEED.search(words):
        return "speed"
    return None


_AR_CELL = re.compile(r"^ar(?: decoding| baseline)?(?: ?[(\[][^)\]]{0,30}[)\]])?$")


def _setting(words: str) -> bool | None:
    """True: the words name a run without speculative decoding; False: one with it; None: neither."""
    if _BASELINE.search(words) or _AR_CELL.match(words):  # "AR (tok/s)": autoregressive decoding, the whole cell
        return True
    depth = _DEPTH_IN.search(words)
    if depth is not None and int(depth["n"]) == 0 and _SPEC.search(words):
        return True  # "--spec-draft-n-max 0": drafting off (a row's own figures can still show it drafted)
    if _SPEC.search(words):
        return False
    return None


def without_speculation(text: str, whole: bool = False) -> bool:
    """Whether a label names a run without speculative decoding ("Baseline", "no MTP", "Normal decoding speed");
    ``whole``: the label is nothing else (a cell "baseline", not "baseline vs MTP")."""
    words = _words(text)
    return (_BASELINE.fullmatch(words) if whole else _BASELINE.search(words)) is not None


def names_drafting(text: str) -> bool:
    """Whether a label names a drafter or speculative decoding ("MTP n-max 3", "EAGLE-3", "ngram")."""
    return _SPEC.search(_words(text)) is not None


def _key_of(words: str) -> str:
    """What is left of a label once its setting and figure words are taken out: the key runs must share."""
    words = _BASELINE.sub(" ", words)
    words = _SPEC.sub(" ", words)
    words = _FILLER.sub(" ", _LENGTH.sub(" ", _RATE.sub(" ", words)))
    return " ".join(re.sub(r"[^\w.=]+", " ", words).split())


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


# An acceptance cell written as the counts it comes from ("4,379 / 6,630 = 66 %", "282/453").
_FRACTION = re.compile(r"(?P<acc>\d{1,3}(?:,\d{3}){0,4}|\d{1,12})\s?/\s?(?P<gen>\d{1,3}(?:,\d{3}){0,4}|\d{1,12})(?![\d.,])")


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
        rate = value / 100 if percent or unit == "%" or value > 1 else value
        if 0 <= rate <= 1:
            run.figures.setdefault("rate", rate)
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


def _cell_figure(cell: str) -> str | None:
    """The figure a cell's own unit names ("11.91 tok/s", "9.19 ms", "87%")."""
    read = _number(cell)
    if read is None:
        return None
    unit = read[1]
    return "speed" if unit in _SPEED_UNITS - {""} else \
        "latency" if unit in ("ms", "ms/tok", "ms/token") else None


def _rows_as_runs(table: Table, kinds: list[str | None]) -> list[_Run]:
    """A run per row: label and setting columns say what it is, figure columns what it measured."""
    runs: list[_Run] = []
    header = [_words(c) for c in table.header]
    speeds = [i for i, k in enumerate(kinds) if k in ("speed", "latency")]
    # Several acceptance columns and no speed: each column its own condition ("acceptance (main)" | "acceptance (PR)").
    rates = [i for i, k in enumerate(kinds) if k == "rate"] if not speeds else []
    for cells, number, line in zip(table.rows, table.numbers, table.lines):
        names, keys, baseline, drafting, prompt = [], [], None, False, False
        depth: int | None = None
        switched: bool | None = None  # what a drafter's on/off column says: it outranks a label's "baseline"
        for i, cell in enumerate(cells):
            words = _words(cell)
            if kinds[i] == "key":
                keys.append(f"{_KEY_NAMES.get(header[i], header[i])}={words}")
                prompt = prompt or _PROMPT_TEST.match(words) is not None
            elif kinds[i] == "depth":
                read = _number(cell)
                if read is not None:
                    names.append(f"{table.header[i]} {cell.strip(' *_`')}")
                    drafting = drafting or read[0] > 0
                    depth = int(read[0]) if read[0] == int(read[0]) and 0 < read[0] <= 64 else depth
                    baseline = True if read[0] == 0 and baseline is None else baseline
                elif words:  # "Draft off" in an n-max column: the row's setting in words; "none": no draft length
                    names.append(cell.strip(" *_`")[:80])
                    said = True if words in _NO else _setting(words)
                    baseline = True if said is True else baseline
                    drafting = drafting or said is False
            elif kinds[i] == "param" and words:  # "speculative_eagle_topk 4": set, so the row drafts
                names.append(f"{table.header[i].strip(' *_`')[:60]} {cell.strip(' *_`')[:20]}")
                drafting = drafting or words not in _NO
            elif kinds[i] == "switch" and words:
                said = True if words in _NO else False if words in _YES else _setting(words)
                if said is None and _TIE.search(header[i]):
                    said = False  # a method under a drafter's header ("Speculative method: ngram")
                if said is True:
                    baseline = True
                elif said is False:
                    drafting = True
                switched = said if said is not None else switched
                names.append(f"{table.header[i]}: {cell.strip(' *_`')}")
            elif kinds[i] is None and i == 0 and header[0] and _number(cell) is not None:
                names.append(f"{table.header[0].strip(' *_`')[:60]} {cell.strip(' *_`')[:20]}")  # "p_min 0.5": the row's value
            elif kinds[i] is None and words and _number(cell) is None:
                names.append(cell.strip(" *_`")[:80])
                said = _setting(words)
                if said is True:
                    baseline = True
                elif said is False:
                    drafting = True
        labels = " ".join(_words(cells[i]) for i in range(len(cells)) if kinds[i] is None and _number(cells[i]) is None)
        if prompt:
            continue  # a prompt-processing test's row (llama-bench's pp512): its speed is not decoding's
        # "baseline (as-deployed)" with "MTP: on": the deployment compared against, drafting; its switch says so.
        said_run = switched if switched is not None else baseline if baseline else (False if drafting else None)
        run = _Run(", ".join(names)[:200], said_run, ", ".join(keys), line, number, {}, identity=_key_of(labels), depth=depth)
        accepting = [cells[i] for i in range(len(cells)) if kinds[i] in ("rate", "length")]
        run.unaccepted = bool(accepting) and all(_words(c) in _ABSENT for c in accepting)
        for i, cell in enumerate(cells):
            if kinds[i] in ("rate", "length", "speedup"):
                _put(run, kinds[i] or "", cell, "%" in table.header[i])
        if run.figures.get("rate", 0) > 0 or run.figures.get("length", 1) > 1:
            run.baseline = False if run.baseline is True else run.baseline  # "n-max 0" or a "baseline" build that
            # drafted: its acceptance says so (an earlier build with MTP, not a run without speculation)
        arrow = next((found for i, cell in enumerate(cells) if kinds[i] == "arrow" and (found := _ARROW.search(cell))), None)
        if arrow is not None:  # "22.7 → 40.6 (+79%)": the row's run without speculation, then with it
            key = ", ".join(filter(None, [run.key, run.setting or run.identity or str(number)]))
            runs.append(_Run(f"{run.setting} (without speculation)", True, key, line, number,
                             {"speed": float(arrow["before"])}))
            runs.append(_Run(run.setting, False, key, line, number, {**run.figures, "speed": float(arrow["after"])}))
            continue
        if len(speeds) > 1:  # several speed columns: each its own condition ("think ON", "predictable")
            for i in speeds:
                one = _Run(run.setting, run.baseline, ", ".join(filter(None, [run.key, _key_of(header[i]) or header[i]])),
                           line, number, dict(run.figures), identity=run.identity, unaccepted=run.unaccepted, depth=run.depth)
                _put(one, kinds[i] or "", cells[i], False)
                runs.append(one)
        elif len(rates) > 1:
            for i in rates:
                one = _Run(run.setting, run.baseline, ", ".join(filter(None, [run.key, _key_of(header[i]) or header[i]])),
                           line, number, {k: v for k, v in run.figures.items() if k != "rate"}, identity=run.identity,
                           unaccepted=run.unaccepted, depth=run.depth)
                _put(one, "rate", cells[i], "%" in table.header[i])
                runs.append(one)
        else:
            for i in speeds:
                _put(run, kinds[i] or "", cells[i], False)
            runs.append(run)
    # A row that names no setting and whose acceptance is marked empty ("-", "N/A") beside rows whose drafts were
    # accepted drafted nothing: the run without speculation ("llama3.1-70B" above "suffix", "lstm").
    if any(r.figures.get("rate", 0) > 0 or r.figures.get("length", 1) > 1 for r in runs):
        for run in runs:
            if run.baseline is None and run.unaccepted and not run.figures.keys() & {"rate", "length"}:
                run.baseline = True
    return runs


def _measured_by_row(table: Table, kinds: list[str | None]) -> bool:
    """Whether a table gives its metrics by row and its conditions by column: no column named by a figure or a key, a
    row labelled by an acceptance measure (speculative decoding's own: "avg_spec_accept_length", "accept rate"), its
    other cells figures."""
    if kinds[0] is not None or any(k is not None for k in kinds[1:]) or len(table.header) < 2:
        return False
    return any(_figure(_words(row[0])) in ("rate", "length") and _TIE.search(_words(row[0])) and
               all(_number(c) is not None for c in row[1:]) for row in table.rows)


def _columns_as_runs(table: Table, kinds: list[str | None], settings: list[bool | None], named_only: bool = False) -> list[_Run]:
    """A run per setting column ("Baseline" | "With flag", "no_mtp_graph" | "mtp_graph", "no EAGLE" | "EAGLE"), per
    row: the row names the key and, where the column does not, the figure (metrics by row). ``named_only``: a row that
    names no figure is none (the columns are conditions, not settings whose cells default to speeds)."""
    runs: dict[tuple[int, str], _Run] = {}
    header = [_words(c) for c in table.header]
    # The row's label: every cell outside the setting columns that is no figure ("B=1" under "Batch", "TPOT (ms)" under
    # "Metric"): the metric a row measures may stand in any of them, not only in the first.
    labels = [i for i, s in enumerate(settings) if s is None and (i == 0 or kinds[i] in (None, "key"))] \
        if settings[0] is None else []
    # The header's own words are a key only where one setting has several columns ("no_mtp_eager", "no_mtp_graph"):
    # else they only say more of the setting ("EAGLE pre-fix (--enable-multi-layer-eagle)").
    families = sum(1 for s in settings if s is True) > 1 or sum(1 for s in settings if s is False) > 1
    both = True in settings and False in settings
    # A header's own words are a key only where both sides name it ("no_mtp_eager" and "mtp_eager"): "EAGLE 1" and
    # "EAGLE 3" beside one "vanilla" are two drafters, each compared with it.
    sides = {side: {_key_of(header[i]) for i, s in enumerate(settings) if s is side} for side in (True, False)}
    shared = sides[True] & sides[False] if both else sides[True] | sides[False]
    # The conditions the table's speed rows name ("bs=1 tok/s"): a row of acceptance naming one of them ("bs=1 accept
    # rate") is that condition's; one naming none ("draft acceptance, whole turn") is its column's run's.
    # A title naming what every cell measures ("TPOT ms" above a spreadsheet's header): the figure of a row that names
    # none and of a cell without its own unit.
    titled = _figure(_words(table.heading))
    titled = titled if titled in ("latency", "length", "rate") else None
    timed_keys = {_key_of(words) for row in table.rows if labels and
                  _figure(words := _label_words(row, labels)) not in ("rate", "length", "ratio", "speedup", "time")}
    for cells, number, line in zip(table.rows, table.numbers, table.lines):
        row_words = _label_words(cells, labels)
        if _PROMPT_ROW.search(row_words):
            continue  # the prompt's processing (prefill, pp512, TTFT): not decoding, whatever its unit
        row_figure = _figure(row_words)
        timed = {settings[i] for i, cell in enumerate(cells) if settings[i] is not None and _number(cell) is not None}
        if both and timed != {True, False} and row_figure not in ("rate", "length"):
            continue  # a speed on one side only ("—" for the other): no pair to compare
        row_key = _key_of(row_words)
        if row_figure in ("rate", "length"):  # "bs=1 accept rate": bs=1's; "accepted tokens per pass": its column's run's
            row_key = " ".join(w for w in row_key.split() if w not in ("rate", "pct", "%"))
            row_key = row_key if row_key in timed_keys else ""
        extra = {kinds[i]: cell for i, cell in enumerate(cells) if kinds[i] in ("rate", "length")}
        for i, cell in enumerate(cells):
            if settings[i] is None:
                continue
            figure = kinds[i] if kinds[i] in ("speed", "latency", "duration") else \
                row_figure or _cell_figure(cell) or titled or (None if named_only else "speed")
            if figure in ("ratio", "speedup", "time", None):
                continue
            key = ", ".join(filter(None, [_key_of(header[i]) if families and _key_of(header[i]) in shared else "", row_key]))
            run = runs.setdefault((i, key), _Run(table.header[i].strip(" *_`")[:120], settings[i], key, line, number, {}))
            if figure == "duration":
                _put_duration(run, cell, _DURATION_HEAD.search(header[i]))
            else:
                _put(run, figure, cell, False)
                noted = _cell_acceptance(cell) if settings[i] is False and figure == "speed" else None
                if noted is not None:
                    run.figures.setdefault("rate", noted)  # "3.90 t/s @ 93%"
            if settings[i] is False:
                for kind, value in extra.items():
                    _put(run, kind or "", value, "%" in value)
    for run in runs.values():
        if run.baseline is True and (run.figures.get("rate", 0) > 0 or run.figures.get("length", 1) > 1):
            run.baseline = False  # a "baseline (pre-fix)" column whose drafts were accepted: an earlier build drafting
    return [run for run in runs.values() if run.figures]


def _label_words(cells: tuple[str, ...], labels: list[int]) -> str:
    return " ".join(filter(None, (_words(cells[i]) for i in labels)))


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
    return None, None


# A column of tokens' pace: a speed in tokens or a per-token latency (not a request's or a connection's).
_TOKEN_PACE = re.compile(r"\btok(?:en)?s?\b|\btpot\b|\bitl\b|\bt ?/ ?s\b|\btps\b|time per output token")


def _accepts_tokens(table: Table, kinds: list[str | None]) -> bool:
    """Whether a table ties itself to speculative decoding by its columns: an acceptance column beside a column of
    tokens' pace (tokens per second, TPOT) is drafts accepted while decoding, whatever the header calls the methods
    ("suffix", "lstm"). An acceptance rate beside requests or connections per second is a server's."""
    return any(k in ("rate", "length") for k in kinds) and any(
        k in ("speed", "latency") and _TOKEN_PACE.search(_words(cell)) for k, cell in zip(kinds, table.header))


# ik_llama.cpp's and llama.cpp's threads write a run's acceptance after its speed with "@" ("3.90 t/s @ 93%"); "at 90%"
# is as often a GPU's load or a power limit.
_AT_RATE = re.compile(r"@\s*(?P<at>\d{1,3}(?:\.\d{1,4})?)\s*%")


def _cell_acceptance(cell: str) -> float | None:
    """The share of drafts accepted a speed's cell notes after the speed ("3.90 t/s @ 93%", "19.8 tok/s (acceptance
    71%)"), as a fraction; None where it notes none."""
    if _cell_figure(cell) != "speed":
        return None
    note = _RATE_NOTE.search(cell) or _AT_RATE.search(cell)
    value = next((float(v) for v in (note.groupdict().values() if note else ()) if v is not None), None)
    return value / 100 if value is not None and value <= 100 else None


def _notes_acceptance(column: list[str]) -> bool:
    """Whether most of a column's filled cells are speeds noting their acceptance."""
    filled = [c for c in column if _words(c) not in _ABSENT]
    return bool(filled) and sum(_cell_acceptance(c) is not None for c in filled) * 2 > len(filled)


# A grid's corner names its rows' key and its columns' ("tp\\conc": tensor-parallel size by concurrency), as SGLang's
# benchmark sweeps print one grid per figure under its title (benchmark/dflash/bench_dflash_gsm8k_sweep.py's
# _format_table: "DFLASH output tok/s", "Baseline output tok/s", "Speedup (DFLASH / baseline)", "DFLASH acceptance
# length (mean spec_accept_length)"), aligned with spaces or as Markdown pipes.
_GRID_CORNER = re.compile(r"^(?P<rows>[a-z][a-z ]{0,20}?)\s?\\\s?(?P<columns>[a-z][a-z ]{0,20})$")


def _grid(table: Table) -> re.Match[str] | None:
    """A grid's corner where the table is one: the corner cell names two keys and the other header cells are the
    column key's values."""
    corner = _GRID_CORNER.match(_words(table.header[0]))
    return corner if corner is not None and all(_number(c) is not None for c in table.header[1:]) else None


def _grid_runs(table: Table, corner: re.Match[str], tie: bool) -> list[_Run]:
    """A run per cell of a grid of one figure (its title names the figure and the run: "DFLASH output tok/s" drafted,
    "Baseline output tok/s" did not; a speed-up is the drafting run's over the one without), keyed by its row's and its
    column's values. A title that names no drafter, in a paste that names none, is someone else's grid."""
    title = _words(table.heading)
    figure = _figure(title)
    if figure not in ("speed", "latency", "length", "rate", "speedup") or not (tie or _TIE.search(title)):
        return []
    said = False if figure == "speedup" else _setting(title)
    if said is None:
        return []
    rows_key, columns_key = (_KEY_NAMES.get(k.strip(), k.strip()) for k in corner.group("rows", "columns"))
    runs: list[_Run] = []
    for cells, number, line in zip(table.rows, table.numbers, table.lines):
        for value, cell in zip(table.header[1:], cells[1:]):
            key = f"{rows_key}={_words(cells[0])}, {columns_key}={_words(value)}"
            run = _Run(table.heading[:120], said, key, line, number, {}, grid=True)
            _put(run, figure, cell, False)
            if run.figures:
                runs.append(run)
    return runs


def _merged_grids(runs: list[_Run]) -> list[_Run]:
    """The runs of a sweep's grids joined by run and key: a drafting run's speed from one grid, its acceptance length
    from the next."""
    merged: dict[tuple[bool | None, str], _Run] = {}
    out: list[_Run] = []
    for run in runs:
        if not run.grid:
            out.append(run)
        elif (found := merged.get((run.baseline, run.key))) is None:
            merged[(run.baseline, run.key)] = run
            out.append(run)
        else:
            for name, value in run.figures.items():
                found.figures.setdefault(name, value)
    return out


def _runs_of(table: Table, tie: bool) -> list[_Run]:
    if len(table.header) < 2:
        return []
    corner = _grid(table)
    if corner is not None:
        return _grid_runs(table, corner, tie)
    columns = [[row[i] for row in table.rows] for i in range(len(table.header))]
    read = [_column_kind(cell, columns[i], i == 0) for i, cell in enumerate(table.header)]
    kinds, settings = [k for k, _ in read], [s for _, s in read]
    if not tie and not any(_TIE.search(_words(c)) for c in (*table.header, table.heading, *(r[0] for r in table.rows))) \
            and not _accepts_tokens(table, kinds):
        return []
    if True in settings and False not in settings:
        # Beside a "Baseline" column, a column of figures named "With <something>" is the setting compared with it
        # ("With flag", "With the patch"): in a table tied to speculative decoding, its speculation.
        settings = [False if s is None and kinds[i] in (None, "speed", "latency") and _WITH.match(_words(cell)) else s
                    for i, (cell, s) in enumerate(zip(table.header, settings))]
        # So is a column of speeds whose cells carry the share of drafts accepted ("3.90 t/s @ 93%", "41 tok/s (78%
        # accepted)"), whatever its header calls the build or the draft length ("main d=2", "this PR d=1").
        settings = [False if s is None and kinds[i] in (None, "speed") and _notes_acceptance(columns[i]) else s
                    for i, s in enumerate(settings)]
    if any(s is not None for s in settings):
        return _columns_as_runs(table, kinds, settings)
    if _measured_by_row(table, kinds):
        # Metrics by row under columns of conditions ("Metric" | "100 questions" | "300 questions", a row naming the
        # acceptance length): each column a drafting run, only the rows that name a figure read.
        return _columns_as_runs(table, kinds, [None, *(False if k is None else None for k in kinds[1:])], named_only=True)
    runs = _paired_by_name(_rows_as_runs(table, kinds))
    # Where a row with speculation names the same model or build as a row without ("GGUF q4_K_M" and "GGUF mtp-q4_K_M"),
    # what the rows name is part of the key: another engine's row ("MLX nvfp4") has no baseline of its own to beat.
    plain = {r.identity for r in runs if r.baseline is True and r.identity}
    if any(r.baseline is False and r.identity in plain for r in runs):
        for run in runs:
            run.key = ", ".join(filter(None, [run.key, run.identity]))
    heading = _setting(_words(table.heading))
    for run in runs:
        if run.baseline is None and heading is not None:
            run.baseline = heading  # "The base model speed:" above a table of speeds
            run.setting = run.setting or table.heading[:120]
        if run.baseline is None and ("rate" in run.figures or run.figures.get("length", 1) > 1):
            run.baseline = False
    return runs


# The words a table borrows from one engine's own output or flags (when no engine line names its writer): its settings'
# names first (a flag is one engine's), then its figures' ("draft acceptance rate" is both vLLM's and llama.cpp's words:
# a "--draft-p-min" beside it says whose).
# Flags beside them are one engine's too: vLLM's --enforce-eager, --gpu-memory-utilization, --max-num-seqs,
# --max-model-len (vllm/engine/arg_utils.py); SGLang's --mem-fraction-static, --disable-cuda-graph, --cuda-graph-max-bs
# (sglang/srt/server_args.py); llama.cpp's --n-gpu-layers, --ctx-size, --cache-type-k (common/arg.cpp).
# SGLang's benchmark sweeps print their grids with the corner "tp\\conc" (_GRID_CORNER): the format names its writer.
_ENGINE_WORDS = ((Engine.vllm, re.compile(r"\bvllm\b|num speculative tokens|speculative config|enforce eager|gpu memory utilization|"
                                          r"max num seqs|max model len")),
                 (Engine.sglang, re.compile(r"\bsglang\b|\btp ?\\ ?conc\b|speculative num steps|speculative algorithm|speculative eagle topk|num draft\b|"
                                            r"enable multi layer eagle|\btopk\b|mem fraction static|disable cuda graph|cuda graph max bs")),
                 (Engine.llama_cpp, re.compile(r"llama server|llama\.cpp|llama cpp|\bn max\b|spec draft|\bdraft (?:p (?:min|split)|max|min)\b|"
                                               r"\bgguf\b|\bollama\b|n gpu layers|ctx size|cache type k")),
                 (Engine.vllm, re.compile(r"mean acceptance length|draft acceptance rate|spec decode accept")),
                 (Engine.sglang, re.compile(r"\bacc(?:ept)? len\b|accept length|spec accept (?:rate|len)")))


def _block_runs(blocks: list[Table], tie: bool) -> list[_Run]:
    """The run each results block shows, named by its label; an unlabelled block named like a speculative one ("7b"
    beside "spec 7b") ran without speculation."""
    runs: list[_Run] = []
    # A block that prints speculative decoding's own figure ("Accept length: 2.03") ties the blocks beside it: the
    # run without speculation is the block that lacks it ("no spec").
    tie = tie or any(_TIE.search(_words(name)) for block in blocks for name, _ in block.rows)
    for block in blocks:
        words = _words(block.heading)
        if not tie and not _TIE.search(words):
            continue
        said = _setting(words)
        if said is None and block.command:  # the command above it: with a drafter's flag or without one
            said = _DRAFTING_FLAG.search(block.command) is None
        run = _Run(block.heading, said, "", block.lines[0], block.numbers[0], {}, identity=_key_of(words))
        for (name, value), number, line in zip(block.rows, block.numbers, block.lines):
            listed = _listed(name, value, line, number, _figure(words) == "speed")
            if listed is not None:  # "Baseline (non-speculative): 215.84 s": a run of its own
                runs.append(listed)
                continue
            figure = _figure(_words(name))
            if figure in ("speed", "latency", "rate", "length"):
                timed = "speed" in run.figures or "latency" in run.figures
                _put(run, figure, value, "%" in name)
                if not timed and ("speed" in run.figures or "latency" in run.figures):
                    run.line, run.number = line, number  # the line its speed is read from, cited
        if run.baseline is None and ("rate" in run.figures or run.figures.get("length", 1) > 1):
            run.baseline = False
        run.span = (block.numbers[0], block.numbers[-1])
        runs.append(run)
    return _paired_by_name(runs)


_RATE_NOTE = re.compile(r"(?i)(?P<before>\d{1,3}(?:\.\d{1,4})?)\s*%\s*(?:accept|acc\b)|accept\w*\D{0,12}?(?P<after>\d{1,3}(?:\.\d{1,4})?)\s*%")
_DURATION = {"s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0, "ms": 1e-3, "msec": 1e-3, "min": 60.0, "mins": 60.0, "minutes": 60.0}


def _listed(name: str, value: str, line: str, number: int, in_speed: bool = False) -> _Run | None:
    """A field that is a run of its own: its name says the setting, its value a decode speed or the time the same work
    took ("Speculative decoding model: 133.24 s"); None otherwise. ``in_speed``: the block's label gives the unit of its
    bare values ("Results (tok/s):")."""
    words = _words(name)
    said = _setting(words)
    read = _number(value)
    if said is None or read is None or _figure(words) in ("length", "rate", "ratio", "speedup", "latency"):
        return None
    amount, unit = read
    run = _Run(name.strip(" *_`")[:120], said, "", line, number, {}, identity=_key_of(words))
    if _cell_figure(value) == "speed" or not unit and (_figure(words) == "speed" or in_speed):  # "baseline_tps": 41.2
        run.figures["speed"] = amount
        note = _RATE_NOTE.search(value)  # "19.8 tok/s (acceptance 71%)"
        if note is not None and not said and float(note["after"] or note["before"]) <= 100:
            run.figures["rate"] = float(note["after"] or note["before"]) / 100
    elif unit in _DURATION and amount > 0:
        run.figures["duration"] = amount * _DURATION[unit]
        run.latency_cell = value.strip()[:40]
    else:
        return None
    return run


def _paired_by_name(runs: list[_Run]) -> list[_Run]:
    """A run that names no setting but the same model as a speculative one ("Qwen3-8B" beside "Qwen3-8B-MTP", "7b"
    beside "spec 7b") ran without speculation."""
    drafting = {r.identity for r in runs if r.baseline is False and r.identity}
    for run in runs:
        if run.baseline is None and run.identity in drafting:
            run.baseline = True
    return runs


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
                     mean_length=None if run.baseline else run.figures.get("length"), depth=run.depth)]


# -- runs under the commands that made them ------------------------------------------------------------------------

# A command as pasted under a shell prompt or on its own: a script, an engine, a benchmark (environment settings first).
_COMMAND = re.compile(r"^\s{0,4}(?:[$#>]\s{1,4})?(?:[A-Z_][A-Z0-9_]{0,40}=\S{0,80}\s+){0,4}(?P<program>(?:python3?(?:\.\d+)?|uv run|"
                      r"torchrun|accelerate launch)\s+(?:-m\s+)?[\w./-]{1,120}|\./[\w./-]{1,120}|[\w./-]{0,80}(?:llama-[\w-]{1,40}|"
                      r"vllm(?:\s+(?:serve|bench\s+\w+))?|sglang\.\w+))(?=\s|$)")
# A flag that turns a drafter on ("--with_speculation True", "--speculative-model ...", "--spec-type draft-mtp", "-md
# f.gguf"), and the values that turn it off ("--num-speculative-tokens 0", "--use-mtp false").
# A bare "draft" is a blog's too ("--with-draft-posts"): only the drafter's own flags (--draft-max, --model-draft).
_COMMAND_DRAFTING = re.compile(r"\s--?(?P<flag>[\w-]{0,30}(?<![a-z])(?:spec(?:ulati\w{0,8})?|mtp|eagle\d?|ngram|nextn|medusa|lookahead)"
                               r"(?![a-z])[\w-]{0,30}|(?:model[-_])?draft(?:[-_](?:max|min|n|p|model|tokens?)[\w-]{0,20})?|md)"
                               r"(?:[ =](?P<value>[^\s-]\S{0,200})|(?=\s|$))", re.IGNORECASE)
_OFF_VALUES = frozenset({"0", "false", "no", "none", "off", "disabled", "0.0"})
# A line's decode speed as a script or engine prints it under its command: the output's or the decode's tokens per
# second ("est. speed input: 40.85 toks/s, output: 305.54 toks/s", "eval rate: 41.2 tokens/s"); a unit cut at the
# line's end ("toks/") still says tokens per second.
_OUTPUT_SPEED = re.compile(r"(?i)\b(?:output|decode|decoding|generation|gen|eval rate)\b[^\n\d]{0,12}?(?P<value>\d{1,6}(?:\.\d{1,6})?)\s?"
                           r"(?:tok(?:en)?s?\s?/\s?s(?:ec)?\b|tok(?:en)?s?/$|t/s\b|tps\b|tokens per second)")
_MAX_COMMANDS = 64  # commands pasted one under another in a thread; more are a log's own lines


def _command_runs(text: str) -> list[_Run]:
    """Runs under the commands that made them: the lines of a command's output that time its decoding (a benchmark
    script's progress bars, one a batch), the command's flags its setting. A command with a drafter's flag beside the
    same program's command without one: the second ran without speculation; each one's k-th timed line is compared with
    the other's k-th (the same batch of the same script). Commands of different programs say nothing of each other."""
    commands: list[tuple[str, bool, list[tuple[int, str, float]]]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if len(raw) > 2000:
            continue
        command = _COMMAND.match(raw)
        if command is not None and len(commands) < _MAX_COMMANDS:
            drafting = any((m["value"] or "").strip("'\"").lower() not in _OFF_VALUES for m in _COMMAND_DRAFTING.finditer(raw))
            commands.append((" ".join(command["program"].split()), drafting, []))
            continue
        speed = _OUTPUT_SPEED.search(raw) if commands and not _FIELD.match(raw) else None
        if speed is not None:
            commands[-1][2].append((number, raw.strip()[:300], float(speed["value"])))
    programs = {(program, drafting) for program, drafting, timed in commands if timed}
    runs: list[_Run] = []
    for program, drafting, timed in commands:
        if (program, not drafting) not in programs:
            continue  # no run of the same program on the other side: nothing to compare with
        for at, (number, line, value) in enumerate(timed, 1):
            runs.append(_Run(f"{program} ({'with' if drafting else 'without'} a drafter's flag)", not drafting,
                             f"timed line {at} under its command", line, number, {"speed": value},
                             span=(timed[0][0], timed[-1][0])))
    return runs


# A line of speeds before and after a drafter was turned on, outside a table ("MTP: 22.7 → 40.6 tok/s", "decode 41 t/s
# -> 33 t/s with n-gram"): the unit after the second speed says they are decode speeds.
_ARROW_LINE = re.compile(_ARROW.pattern + r"\s{0,4}(?:t/s|tok/s|toks/s|tokens?/s|tps)\b", re.IGNORECASE)
_ARROWS = re.compile(r"→|->|=>|⇒")


def _arrow_runs(text: str) -> list[_Run]:
    """Runs a line gives as its speed before and after speculation ("MTP: 22.7 → 40.6 tok/s"): the line must name a
    drafter; an arrow between two settings ("n-max 2 -> 4: 40 -> 35 t/s") is a run without speculation only where its
    left side names none ("no spec -> MTP: 41 -> 33 t/s")."""
    runs: list[_Run] = []
    for number, raw in enumerate(text.splitlines(), 1):
        whole = raw.strip()
        if len(whole) > 300 or "|" in whole or not names_drafting(whole):
            continue
        # Several conditions in one line ("batch=1: 41 -> 58 tok/s (MTP), batch=32: 900 -> 610 tok/s (MTP)"): each its own.
        clauses = _CLAUSES.split(whole) if len(_ARROW_LINE.findall(whole)) > 1 else [whole]
        for clause in clauses:
            runs += _arrow_run(clause, number)
    return runs


_CLAUSES = re.compile(r"[;,]\s+(?=\D)")


def _arrow_run(line: str, number: int) -> list[_Run]:
    """The two runs one clause gives as its speeds before and after a drafter; none where it names no drafter or its
    arrow is between two settings."""
    arrow = _ARROW_LINE.search(line)
    if arrow is None or not names_drafting(line):
        return []
    label = line[:arrow.start()] + " " + line[arrow.end():]
    sides = _ARROWS.split(label, maxsplit=1)
    if len(sides) > 1 and not without_speculation(sides[0]):
        return []  # one setting against another ("n-max 2 -> 4"): no run without speculation here
    key = " ".join(re.sub(r"[^\w.=]+", " ", _words(label)).split())[:60] or f"line {number}"
    name = label.strip(" :-*_`")[:100]
    return [_Run(f"{name} (before)", True, key, line, number, {"speed": float(arrow["before"])}, span=(number, number)),
            _Run(f"{name} (after)", False, key, line, number, {"speed": float(arrow["after"])}, span=(number, number))]


def table_runs(text: str) -> tuple[list[TableRun], Engine | None]:
    """The runs of every table and results block in ``text`` tied to speculative decoding, and the engine their words
    name (None: none)."""
    tie = SPECULATIVE_WORDS.search(text) is not None
    found: list[_Run] = []
    words = []
    cut = tables(text)
    # A sweep's grids tie one another: the drafter's title ("DFLASH output tok/s") makes "Baseline output tok/s" its
    # run without speculation.
    grids_tie = any(_grid(t) is not None and _TIE.search(_words(t.heading)) for t in cut)
    for table in cut:
        read = _runs_of(table, tie or grids_tie and _grid(table) is not None)
        for run in read:
            run.span = (table.numbers[0], table.numbers[-1])
        found += read
        words.append(" ".join(_words(c) for c in (*table.header, table.heading, *(r[0] for r in table.rows))))
    blocks = field_blocks(text)
    found += _block_runs(blocks, tie)
    words += [_words(b.heading) for b in blocks]
    found += _command_runs(text)
    found += _arrow_runs(text)
    runs = [table_run for run in _merged_grids(found) for table_run in _as_table_runs(run)]
    joined = " ".join(words)
    engine = next((e for e, pattern in _ENGINE_WORDS if pattern.search(joined)), None)
    return runs, engine if runs else None


def compares(runs: list[TableRun]) -> bool:
    """Whether the runs hold a comparison: a run without speculation and one with it, timed under one key."""
    keys = {(r.key, r.baseline) for r in runs if r.speed is not None}
    return any((key, True) in keys for key, baseline in keys if not baseline)


def swept(runs: list[TableRun], tied: bool = False) -> bool:
    """Whether the runs sweep a speculative setting: two or more, each drafting and timed in tokens per second, each
    named by the setting's own name with a value of its own ("--spec-draft-p-min 0.1" beside "0.75",
    "num_speculative_tokens 3" beside "5") or, where the paste names a drafter (``tied``), showing its drafts accepted
    beside its speed (an "accept rate" beside "tokens/s" is also a rate limiter's): settings side by side, no run
    without speculation to compare with."""
    settings = {_words(r.setting) for r in runs}
    return len(runs) >= 2 and len(settings) == len(runs) and all(
        not r.baseline and r.speed is not None and r.unit == "tok/s" and
        (SETTING_NAME.search(_words(r.setting)) or tied and (r.acceptance is not None or r.mean_length is not None)) for r in runs)


# -- the samples a paste's tables, listed runs, labelled lines and sentences give ------------------------------------
# (runs.py's one entry: table_samples; sentence_baselines for a log's own run beside a poster's sentence)

# A table whose header names an acceptance column (llama.cpp server-bench's speed-bench "accept_rate", a
# Markdown table of a thread): the columns are read by their names, row by row, while rows keep the header's width.
# What a row is, its first column's name says: a category of one run's prompts (coding, math: the rows add up), or
# a run of its own (a backend, a build, a model: each row is judged apart, issue 42's rule on several runs).
TABLE_FORMAT = LineFormat("table with an acceptance column", Scope.interval, ("accept",), re.compile(r"accept"))
TABLE_RUNS_FORMAT = LineFormat("table with an acceptance column, a run per row", Scope.summary, ("accept",),
                               re.compile(r"accept"))
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
    tied = SPECULATIVE_WORDS.search(text) is not None or _DRAFT_LENGTH.search(text) is not None or \
        _ACCEPT_LENGTH.search(text.lower()) is not None  # the paste names a drafter, the draft length or an accept length
    if swept(runs, tied) or runs and all(run.grid for run in runs):
        # A speculative setting swept, read by any table's words (before the acceptance columns' names); a sweep's grids
        # of one drafter's figures by key (its run without speculation skipped): settings side by side.
        return [Sample(TABLE_RUNS_FORMAT, _figures_of(run), run.line, run.number, run.span) for run in runs], owner
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
    drafted = False  # a table's own header names drafts beside tokens' pace
    for table in tables(text):  # the same cut tables as the runs above, read here by their acceptance columns
        header = _header(table.header, raw_table=table.lines[0].lstrip().startswith("|"))
        if header is None:
            continue
        engine = Engine.llama_cpp if _LLAMA_TABLE.search(" | ".join(table.header)) or \
            _SWEEP_BENCH.match(" | ".join(table.header)) else engine  # llama-sweep-bench's own columns
        drafted = drafted or _drafts_beside_tokens(table)
        for cells, number, line in zip(table.rows, table.numbers, table.lines):
            figures = _row(header, cells)
            if figures is None:
                break  # a row that does not fit the header: the table ended
            if figures != Figures():
                samples.append(Sample(header.format, figures, line, number))
    if samples and engine is None and not tied and not drafted and _MODEL_WORDS.search(text) is None:
        # A "draft acceptance" column alone is also a newsroom's, an "accept rate" beside "tokens/s" a tokenizer's or a
        # rate limiter's: the paste must name a drafter, the draft length, an engine or a model file (what the runs
        # read by words above need, ``tied``), or the table drafts beside tokens' pace.
        samples = []
    if samples or listed:
        return samples or listed, engine or owner
    labelled = labelled_samples(text)
    if not labelled and tied:
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
