"""The samples runs.py takes of a paste (:func:`table_samples`, the one entry): the runs read by words where they compare
or sweep; else the runs whose acceptance a table shows, listed runs and sentences; else acceptance figures by their
words; else a table's acceptance by a key, or its timed runs beside one without speculation."""

from __future__ import annotations

import re
from dataclasses import replace

from mtpinspect.logread.catalogue import SPECULATIVE_WORDS
from mtpinspect.logread.figures import Sample
from mtpinspect.logread.formats import Figures
from mtpinspect.logread.tables.as_runs import compares, swept, table_runs
from mtpinspect.logread.tables.columns import _drafts_beside_tokens
from mtpinspect.logread.tables.cut import drawn_row, tables
from mtpinspect.logread.tables.record import TABLE_FORMAT, TABLE_RUNS_FORMAT, TableRun
from mtpinspect.logread.tables.sentences import (
    LISTED_RUNS_FORMAT,
    _listed_run,
    labelled_samples,
    sentence_baselines,
    sentence_runs,
)
from mtpinspect.logread.tables.words import _LLAMA_TABLE, _MODEL_WORDS
from mtpinspect.vocabulary import Engine


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
    """The runs of any table that sets runs with and without speculation side by side (as_runs.py, a sample per run);
    else the runs whose acceptance or mean length a table shows (one sample per row), and results listed one run a
    line with their speeds; and whose table it is when its header says (None: no engine named); ([], None)
    when no header names such a column and no line lists a run."""
    # Any table read by its words (as_runs.py) where it sets runs with and without speculation side by side: its runs,
    # each timed under its key, replace what the shapes below read of it.
    runs, owner = table_runs(text)
    runs = runs if compares(runs) else _with_spoken_baseline(runs, text)
    if compares(runs):
        engine = Engine.llama_cpp if _LLAMA_TABLE.search(text) else owner
        return [Sample(TABLE_RUNS_FORMAT, _figures_of(run), run.line, run.number, run.span) for run in runs], engine
    tied = SPECULATIVE_WORDS.search(text) is not None or _DRAFT_LENGTH.search(text) is not None or \
        _ACCEPT_LENGTH.search(text.lower()) is not None  # the paste names a drafter, the draft length or an accept length
    # A table whose own header names drafts beside tokens' pace ("tps" | "draft acceptance", ollama's words) ties its
    # rows as much: builds or versions side by side, each drafting; one drafting run by a key ("Output Tokens").
    headed = any(_drafts_beside_tokens(table) for table in tables(text))
    if swept(runs, tied or headed) or runs and all(run.grid for run in runs):
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
    engine = Engine.llama_cpp if _LLAMA_TABLE.search(text) else None  # llama.cpp server-bench's own columns
    samples = _acceptance_rows(runs, tied or headed)
    if samples and engine is None and not tied and not headed and _MODEL_WORDS.search(text) is None:
        # A "draft acceptance" column alone is also a newsroom's, an "accept rate" beside "tokens/s" a tokenizer's or a
        # rate limiter's: the paste must name a drafter, the draft length, an engine or a model file (what the runs
        # read by words above need, ``tied``), or the table drafts beside tokens' pace.
        samples = []
    if samples or listed:
        return samples or listed, engine or owner
    labelled = labelled_samples(text)
    timed = [run for run in runs if run.speed is not None and run.unit == "tok/s" and drawn_row(run.line) and run.span != (0, 0)]
    if not labelled and any(run.baseline for run in timed):
        # A table's runs timed that compare nothing, one of them without speculation (llama-sweep-bench's depths of one
        # run without it; runs whose keys differ, "256K" beside "32K" context): read, each judged apart, no comparison.
        # Drafting runs alone, timed and compared with nothing, are settings side by side: swept() reads those.
        return [Sample(TABLE_RUNS_FORMAT, replace(_figures_of(run), group=None, setting=_named(run)), run.line, run.number,
                       run.span) for run in timed], engine or owner
    return labelled, engine


def _acceptance_rows(runs: list[TableRun], tied: bool) -> list[Sample]:
    """The rows of the tables whose runs show their drafts' acceptance or mean length (rows drawn as a table's: pipes,
    aligned columns; a comma-separated "row" is as often code or prose), where the runs compare nothing:

    - rows of one table that name no setting and no key (an output length) are one run's parts, added up;
    - in a paste naming a drafter or the draft length (``tied``), a table of acceptance by a key that is no setting
      (context length, prompt, category; "~53%") or a mechanism table (tokens per forward pass with and without MTP,
      the run without speculation carrying no speed): its runs, each under its key, none compared;
    - else rows named apart by their setting or by what changed between runs (a backend, a build, a model: each judged
      apart), and a category of one run's prompts otherwise (coding, prose: the rows add up)."""
    drawn = [run for run in runs if drawn_row(run.line) and run.span != (0, 0)]
    drafting = [run for run in drawn if not run.baseline and (run.acceptance is not None or run.mean_length is not None)]
    if not drafting:
        return []
    if len(drawn) > 1 and {(run.setting, run.key) for run in drawn} == {("(unnamed)", "")} and len({r.span for r in drawn}) == 1:
        return [Sample(TABLE_FORMAT, replace(_figures_of(run), group=None, setting=None), run.line, run.number, run.span)
                for run in drawn]
    if tied and all(run in drafting or run.baseline and run.speed is None for run in runs):
        return [Sample(TABLE_RUNS_FORMAT, _figures_of(run), run.line, run.number, run.span) for run in runs]
    changed = {name for run in drawn for name in _key_names(run.key)} & _CHANGED_BETWEEN_RUNS
    apart = changed or len({run.setting for run in drawn}) > 1
    return [Sample(TABLE_RUNS_FORMAT if apart else TABLE_FORMAT,
                   replace(_figures_of(run), group=None, setting=_named(run) if apart else None,
                           baseline=bool(apart and run.baseline)), run.line, run.number, run.span) for run in drawn]


# What changed between runs when a key column names it (a backend, a device, a build, a model, a quantization), not a
# category of one run's prompts (coding, prose), a context length or an output length.
_CHANGED_BETWEEN_RUNS = {"backend", "device", "gpu", "build", "version", "release", "image", "engine", "config",
                         "configuration", "setup", "run", "mode", "model", "quant", "quantization", "commit", "branch"}


def _key_names(key: str) -> set[str]:
    return {part.partition("=")[0].strip() for part in key.split(", ") if "=" in part}


def _named(run: TableRun) -> str:
    """A row's name: its setting, or the key it is read under where it names none ("backend=vulkan0")."""
    return ", ".join(filter(None, [run.key, run.setting if run.setting != "(unnamed)" else ""]))[:300]


def _figures_of(run: TableRun) -> Figures:
    setting = f"{run.setting} ({run.speed_from})" if run.speed_from else run.setting
    return Figures(speed=run.speed, setting=setting[:300], baseline=run.baseline, acceptance=run.acceptance,
                   mean_length=run.mean_length, group=run.key, unit=None if run.unit == "tok/s" else run.unit,
                   spec_tokens=run.depth, accepted=run.accepted, drafted=run.drafted)
