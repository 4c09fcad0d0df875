"""Tables' rows or columns, grids and results blocks turned into runs (:func:`table_runs`), and whether the runs compare
a run without speculation with one with it (:func:`compares`) or sweep a speculative setting (:func:`swept`)."""

from __future__ import annotations

import re

from mtpinspect.logread.catalogue import SPECULATIVE_WORDS
from mtpinspect.logread.tables.columns import _accepts_tokens, _column_kind, _grid, _measured_by_row, _notes_acceptance
from mtpinspect.logread.tables.commanded import _arrow_runs, _command_runs
from mtpinspect.logread.tables.cut import _DRAFTING_FLAG, Table, field_blocks, tables
from mtpinspect.logread.tables.record import _DURATION, TableRun, _as_table_runs, _put, _put_duration, _Run
from mtpinspect.logread.tables.words import (
    _ABSENT,
    _ARROW,
    _DURATION_HEAD,
    _KEY_NAMES,
    _MODEL_WORDS,
    _NO,
    _PROMPT_ROW,
    _PROMPT_TEST,
    _RATE_NOTE,
    _TIE,
    _WITH,
    _YES,
    SETTING_NAME,
    _cell_acceptance,
    _cell_figure,
    _figure,
    _key_of,
    _number,
    _setting,
    _words,
    draft_length,
)
from mtpinspect.vocabulary import Engine

_SPEC_WORD = re.compile(r"spec|mtp|nextn|eagle\d?|draft|dflash|medusa|ngram")  # a drafter's one word, a column name's prefix


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
            if kinds[i] == "key" and _setting(words) is True and _number(cell) is None:
                names.append(cell.strip(" *_`")[:80])  # "Baseline, no draft" under "Test": the row's setting, no key
                baseline = True
            elif kinds[i] == "key":
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
                depth = (draft_length(words) or None) if depth is None else depth  # "k=4", "draft 8": the row's draft length
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
                           line, number, {k: v for k, v in run.figures.items() if k not in ("rate", "accepted", "drafted")}, identity=run.identity,
                           unaccepted=run.unaccepted, depth=run.depth)
                _put(one, "rate", cells[i], "%" in table.header[i])
                runs.append(one)
        else:
            for i in speeds:
                _put(run, kinds[i] or "", cells[i], False)
                noted = _cell_acceptance(cells[i]) if run.baseline is not True else None
                if noted is not None:
                    run.figures.setdefault("rate", noted)  # "10.0 +/- 0.4 t/s @ 88.2%": the row's acceptance
            runs.append(run)
    # One run without speculation keyed by nothing (its key cell named its setting) above drafting rows each keyed by its
    # own prompt: the baseline of every key ("Baseline, no draft" over "Count 1→150", "Realistic code").
    plain = [r for r in runs if r.baseline is True]
    if len(plain) == 1 and not plain[0].key and "speed" in plain[0].figures:
        keyed = list(dict.fromkeys(r.key for r in runs if r is not plain[0] and r.key))
        if keyed and all(r.key for r in runs if r is not plain[0]):
            at = runs.index(plain[0])
            runs[at:at + 1] = [_Run(plain[0].setting, True, key, plain[0].line, plain[0].number, dict(plain[0].figures),
                                    identity=plain[0].identity) for key in keyed]
    # A row that names no setting and whose acceptance is marked empty ("-", "N/A") beside rows whose drafts were
    # accepted drafted nothing: the run without speculation ("llama3.1-70B" above "suffix", "lstm").
    if any(r.figures.get("rate", 0) > 0 or r.figures.get("length", 1) > 1 for r in runs):
        for run in runs:
            if run.baseline is None and run.unaccepted and not run.figures.keys() & {"rate", "length"}:
                run.baseline = True
    return runs


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
            if settings[i] is None or kinds[i] == "time" and row_figure is None and _cell_figure(cell) is None:
                continue  # "spec_avg_latency" over "9.02s" (a request's seconds): no decode figure; "24.2 t/s" is one
            figure = kinds[i] if kinds[i] in ("speed", "latency", "duration") else \
                row_figure or _cell_figure(cell) or titled or (None if named_only else "speed")
            if figure in ("ratio", "speedup", "time", None):
                continue
            key = ", ".join(filter(None, [_key_of(header[i]) if families and _key_of(header[i]) in shared else "", row_key]))
            run = runs.setdefault((i, key), _Run(table.header[i].strip(" *_`")[:120], settings[i], key, line, number, {},
                                                 depth=draft_length(header[i]) or None if settings[i] is False else None))
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


# A column named "base" and the rest of a drafting column's name: llama.cpp's server-bench speed-bench prints
# "base_avg_pred_t/s" beside "spec_avg_pred_t/s" (a base server against a speculative one, tools/server-bench, PR #23869).
_BASE_PREFIX = re.compile(r"^base (?P<rest>.{1,80})$")


def _base_beside_drafter(header: list[str], settings: list[bool | None]) -> list[bool | None]:
    """The settings of a header's columns, a column "base <rest>" read as the run without speculation where another
    column is "<drafter> <rest>" ("base avg pred t/s" beside "spec avg pred t/s"): a lone "base tok/s" says no whose."""
    drafting = {words.partition(" ")[2] for words, said in zip(header, settings) if said is False and " " in words
                and _SPEC_WORD.fullmatch(words.partition(" ")[0])}
    return [True if said is None and (found := _BASE_PREFIX.match(words)) and found["rest"] in drafting else said
            for words, said in zip(header, settings)]


_SWEEP_BENCH_HEAD = {"pp", "tg", "n kv", "s tg t/s"}  # words of llama-sweep-bench's header (_words: "_" as a space)
_SWEEP_BENCH_KINDS = {"pp": "key", "tg": "key", "n kv": "key", "t pp s": "time", "s pp t/s": "time", "t tg s": "time",
                      "s tg t/s": "speed"}


def _runs_of(table: Table, tie: bool, modelled: bool = False) -> list[_Run]:
    if len(table.header) < 2:
        return []
    corner = _grid(table)
    if corner is not None:
        return _grid_runs(table, corner, tie)
    columns = [[row[i] for row in table.rows] for i in range(len(table.header))]
    read = [_column_kind(cell, columns[i], i == 0) for i, cell in enumerate(table.header)]
    kinds, settings = [k for k, _ in read], [s for _, s in read]
    header_words = [_words(c) for c in table.header]
    if _SWEEP_BENCH_HEAD <= set(header_words):
        # llama-sweep-bench's own columns (ik_llama.cpp, llama.cpp examples/sweep-bench): PP and TG are the tokens each
        # step processes and generates and N_KV the context depth (keys), T_ the seconds, S_PP the prompt's speed;
        # S_TG t/s alone is decoding's.
        kinds = [_SWEEP_BENCH_KINDS.get(words, kind) for words, kind in zip(header_words, kinds)]
    own = _SWEEP_BENCH_HEAD <= set(header_words)  # an engine's own tool's table: its header says whose
    accepting = modelled and any(k in ("rate", "length") for k in kinds)  # a drafter's acceptance beside a model file
    if not tie and not own and not accepting and not _accepts_tokens(table, kinds) and \
            not any(_TIE.search(_words(c)) for c in (*table.header, table.heading, *(r[0] for r in table.rows))):
        return []
    settings = _base_beside_drafter([_words(c) for c in table.header], settings)
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
        if own and not tie and run.baseline is None:
            run.baseline = True  # llama-sweep-bench's depths in a paste that names no drafter: a run without speculation
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
# SGLang's send_one prints "Acc Length" beside "Speed (token/s)" in its box table (python/sglang/test/send_one.py).
# SGLang's benchmark sweeps print their grids with the corner "tp\\conc" (_GRID_CORNER): the format names its writer.
_ENGINE_WORDS = ((Engine.vllm, re.compile(r"\bvllm\b|num speculative tokens|speculative config|enforce eager|gpu memory utilization|"
                                          r"max num seqs|max model len")),
                 (Engine.sglang, re.compile(r"\bsglang\b|\btp ?\\ ?conc\b|speculative num steps|speculative algorithm|speculative eagle topk|num draft\b|"
                                            r"enable multi layer eagle|\btopk\b|mem fraction static|disable cuda graph|cuda graph max bs")),
                 (Engine.llama_cpp, re.compile(r"llama server|llama\.cpp|llama cpp|\bs tg t/s\b|\bn max\b|spec draft|\bdraft (?:p (?:min|split)|max|min)\b|"
                                               r"\bgguf\b|\bollama\b|n gpu layers|ctx size|cache type k")),
                 (Engine.vllm, re.compile(r"mean acceptance length|draft acceptance rate|spec decode accept")),
                 (Engine.sglang, re.compile(r"\bacc(?:ept)? len(?:gth)?\b|accept length|spec accept (?:rate|len)")))


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


def table_runs(text: str) -> tuple[list[TableRun], Engine | None]:
    """The runs of every table and results block in ``text`` tied to speculative decoding, and the engine their words
    name (None: none)."""
    tie = SPECULATIVE_WORDS.search(text) is not None
    modelled = _MODEL_WORDS.search(text) is not None  # an engine or a model file named: an acceptance column is a drafter's
    found: list[_Run] = []
    words = []
    cut = tables(text)
    # A sweep's grids tie one another: the drafter's title ("DFLASH output tok/s") makes "Baseline output tok/s" its
    # run without speculation.
    grids_tie = any(_grid(t) is not None and _TIE.search(_words(t.heading)) for t in cut)
    for table in cut:
        read = _runs_of(table, tie or grids_tie and _grid(table) is not None, modelled)
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
