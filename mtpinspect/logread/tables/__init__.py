r"""Tables as users paste them, read by their words: which cell names the setting, which is a speed, which a key.

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
("tp\conc", SGLang's benchmark sweeps: :func:`_grid_runs`), a run per cell, the grids of one sweep joined by run and
key; an acceptance column is read only where the paste names a drafter, the draft length, an engine or a model file,
or its header names drafts or a speed against the baseline beside tokens' pace (a tokenizer's "accept rate" beside
"tokens/s" is not a drafter's).

Round 11: SGLang's send_one box table ("Acc Length" | "Speed (token/s)") under a poster's label line is a drafting run
with its acceptance length, the words SGLang's; a Markdown table whose cells a page copy split one per line ("| Model |",
"Architecture |") is joined back into its rows before it is cut (cut.py); a column "base <figure>" beside a drafter's
column of the same name ("base_avg_pred_t/s" | "spec_avg_pred_t/s", llama.cpp's server-bench) ran without speculation.
Markdown's delimiter cell is one dash or more (GFM): "| -- | -- |" under a row of words heads a table. llama-sweep-bench's
columns are read by their own names (PP, TG, N_KV keys; S_TG t/s the speed).

Round 12: one table reader. The older acceptance-column reader (acceptance_columns.py) is gone; the runs read by words
read what it read: an acceptance cell's counts noted after its share ("0.67% (2/297)"); the rows of one table that name
no setting and no key (an output length) are one run's parts, added up; a tied table of acceptance by a key that is no
setting keeps its runs keyed; rows named apart by a setting or by what changed between runs (a backend, a build, a
model, a quantization) are runs of their own, each judged apart, and a category of one run's prompts adds up; llama-sweep-bench's own
header ties its table (the engine's tool says whose) and, with no drafter named in the paste, its depths are one run
without speculation; an acceptance column ties its table where the paste names an engine or a model file ("bpw", a
GGUF quantization); a column whose header names no figure is a speed where its cells carry a speed's unit and the
others none ("101 t/s" over "116 (59%)"); a table's timed runs beside one without speculation that compare nothing
(their keys differ) are read, each apart.

The samples runs.py takes of a paste (:func:`table_samples`, the one entry): the runs above where they compare a run
without speculation with one with it, or sweep a speculative setting (:func:`swept`); else the runs whose drafts'
acceptance or mean length a table shows (one run's parts, or runs apart), results listed one run a line
(:func:`_listed_run`) and the runs a poster's sentences give (:func:`sentence_runs`); else acceptance figures read by
their words wherever they stand (:func:`labelled_samples`); else a table's acceptance by a key that is no setting, or
its timed runs beside one without speculation.

Each run becomes a :class:`TableRun`: its setting, whether it ran without speculation, its key, its speed and
acceptance. A "baseline" whose drafts were accepted (an earlier build with MTP) ran with speculation: a table of such
runs is settings side by side, no comparison against a run without it. A row of acceptance in a table of metrics by
row is the figure of the key a speed row names ("bs=8 accept rate"), else of its column's run (a mechanism table). Runs are compared only within one key (rules_run.py). A table that has no tie to speculative
decoding (its words or the paste's) gives no runs: a database's benchmark table with a "baseline" column is
someone else's. Every step is a pass over the lines or the cells: linear in the text.

The steps, one module each, imports pointing down (each imports only the ones above it):

- words.py: what a cell's words say (a figure, a setting with or without speculation, a key, a draft length, a number
  and its unit);
- cut.py: finding tables and results blocks in a text (:func:`tables`, :func:`field_blocks`);
- columns.py: a table's header words read into column kinds (:func:`_column_kind`), grids and metrics by row, drafts
  beside tokens' pace;
- record.py: a run as read (:class:`TableRun`) and how a cell's figure is put on it;
- commanded.py: runs under the commands that made them, and speeds before and after a drafter on one line;
- as_runs.py: a table's rows or columns, a results block, turned into runs (:func:`table_runs`, :func:`compares`,
  :func:`swept`);
- sentences.py: results listed one run a line, the runs a poster's sentences give, acceptance figures by their words;
- samples.py: the one entry runs.py takes (:func:`table_samples`).
"""

from mtpinspect.logread.tables.as_runs import compares, swept, table_runs
from mtpinspect.logread.tables.cut import Table, drawn_row, field_blocks, tables
from mtpinspect.logread.tables.record import TABLE_FORMAT, TABLE_RUNS_FORMAT, TableRun
from mtpinspect.logread.tables.samples import table_samples
from mtpinspect.logread.tables.sentences import (
           LABELLED_FORMAT,
           LISTED_RUNS_FORMAT,
           labelled_samples,
           sentence_baselines,
           sentence_runs,
)
from mtpinspect.logread.tables.words import SETTING_NAME, names_drafting, without_speculation

__all__ = ["LABELLED_FORMAT", "LISTED_RUNS_FORMAT", "SETTING_NAME", "TABLE_FORMAT", "TABLE_RUNS_FORMAT", "Table", "TableRun",
           "compares", "drawn_row", "field_blocks", "labelled_samples", "names_drafting", "sentence_baselines", "sentence_runs",
           "swept", "table_runs", "table_samples", "tables", "without_speculation"]
