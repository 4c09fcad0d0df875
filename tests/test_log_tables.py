"""Tables as users paste them, read by their words (mtpinspect/logread/tables/), and the runs they show compared.

The texts are written here from the shapes the engines' and tools' own outputs take, none of them in cases/logs/:
rich's box-drawing tables (llama-benchy prints its results with rich.table), the `name: value` summary that
`python -m sglang.bench_serving` and `vllm bench serve` print ("Output token throughput (tok/s):", "Mean TPOT (ms):"),
Markdown tables with and without outer pipes as GitHub renders them, space-aligned and comma-separated rows. The
negatives are the same shapes from software that has nothing to do with speculative decoding.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mtpinspect.diagnosis import diagnose
from mtpinspect.errors import MtpinspectError
from mtpinspect.logread.runs import read_log, read_runs
from mtpinspect.logread.tables import (
    TABLE_FORMAT,
    TABLE_RUNS_FORMAT,
    compares,
    table_runs,
    table_samples,
    tables,
    without_speculation,
)
from mtpinspect.vocabulary import Engine


def _causes(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "paste.log"
    path.write_text(text, encoding="utf-8")
    try:
        report = diagnose(log_files=[path])
    except MtpinspectError:
        return []  # refused: no cause
    return [c.code for c in report.causes]


def _cause(tmp_path: Path, text: str, code: str):
    path = tmp_path / "paste.log"
    path.write_text(text, encoding="utf-8")
    report = diagnose(log_files=[path])
    found = [c for c in report.causes if c.code == code]
    assert found, [c.code for c in report.causes]
    return found[0], report


# -- shapes ----------------------------------------------------------------------------------------------------


def test_pipes_without_outer_pipes_and_an_empty_corner() -> None:
    found = tables("Results:\n\n| | Baseline | With MTP |\n|---|---|---|\n| run 1 | 40.1 | 55.0 |\n\n"
                   "bs | throughput\n-- | --\n1 | 222.5\n4 | 566.2\n")
    assert [t.header for t in found] == [("", "Baseline", "With MTP"), ("bs", "throughput")]
    assert found[0].rows == (("run 1", "40.1", "55.0"),) and found[0].heading == "Results:"
    assert found[1].rows == (("1", "222.5"), ("4", "566.2")) and found[1].numbers == (9, 10)


def test_box_drawing_table_as_rich_prints_it() -> None:
    text = ("                 Results\n"
            "┏━━━━━━━━━━━━┳━━━━━━━━┓\n"
            "┃ Config     ┃ tg t/s ┃\n"
            "┡━━━━━━━━━━━━╇━━━━━━━━┩\n"
            "│ no spec    │   48.2 │\n"
            "│ MTP n-max 3│   39.1 │\n"
            "└────────────┴────────┘\n")
    (table,) = tables(text)
    assert table.header == ("Config", "tg t/s")
    assert table.rows == (("no spec", "48.2"), ("MTP n-max 3", "39.1"))


def test_aligned_columns_cut_where_every_line_is_blank() -> None:
    # "MLX  nvfp4" holds a two-space gap of its own; the header's "engine" covers it, so it is one cell.
    text = ("engine        MTP    decode\n"
            "------------  -----  ----------\n"
            "GGUF q4       no     12.0 tok/s\n"
            "MLX  nvfp4    yes    38.4 tok/s\n")
    (table,) = tables(text)
    assert table.header == ("engine", "MTP", "decode")
    assert table.rows == (("GGUF q4", "no", "12.0 tok/s"), ("MLX  nvfp4", "yes", "38.4 tok/s"))


def test_tab_and_comma_separated_rows() -> None:
    assert tables("metric\tbaseline\tEAGLE3\nMean TPOT (ms)\t9.1\t7.0\n")[0].rows == (("Mean TPOT (ms)", "9.1", "7.0"),)
    assert tables("concurrency,mode,output_tok_s\n1,baseline,120.5\n")[0].header == ("concurrency", "mode", "output_tok_s")


def test_a_table_cut_after_its_head_has_no_rows(tmp_path: Path) -> None:
    text = "| config | decode tok/s | accept rate |\n|---|---|---|\n"
    assert tables(text) == []
    assert _causes(tmp_path, text) == []


# -- runs compared within their key -----------------------------------------------------------------------------


def test_box_table_with_a_slower_mtp_row_is_slower_than_baseline(tmp_path: Path) -> None:
    text = ("┏━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━┓\n"
            "┃ Config       ┃ tg t/s ┃ accept % ┃\n"
            "┡━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━┩\n"
            "│ no spec      │   48.2 │        — │\n"
            "│ MTP n-max 2  │   39.1 │       81 │\n"
            "│ MTP n-max 3  │   36.0 │       74 │\n"
            "└──────────────┴────────┴──────────┘\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "48.2" in cause.message and "39.1" in cause.message and "74%" in cause.message
    assert any("line 4:" in e for e in cause.evidence)
    # the same table where drafting pays: no cause
    assert _causes(tmp_path, text.replace("39.1", "61.9").replace("36.0", "66.0")) == []


def test_csv_rows_are_compared_at_their_own_concurrency(tmp_path: Path) -> None:
    # Speculation pays at concurrency 1 and loses at 64: slower there, and the cause says where.
    text = ("EAGLE-3 vs no speculation\n"
            "concurrency,mode,output_tok_s\n"
            "1,baseline,120.5\n1,eagle3,180.2\n64,baseline,2100.0\n64,eagle3,1510.4\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "concurrency=64" in cause.message and "1510.4" in cause.message
    assert _causes(tmp_path, text.replace("1510.4", "2400.0")) == []


def test_metrics_by_row_under_setting_columns(tmp_path: Path) -> None:
    # Runs are the columns; each row names a figure (sglang.bench_serving's "Mean TPOT (ms)", its output throughput).
    text = ("| metric | no spec | EAGLE3 (--speculative-num-steps 3) |\n| --- | --- | --- |\n"
            "| Mean TPOT (ms) | 8.10 | 11.40 |\n| Output token throughput (tok/s) | 123.0 | 88.0 |\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "88" in cause.message and "123" in cause.message
    # a per-token latency alone is compared as its inverse (lower is better)
    latency = "| metric | no spec | EAGLE3 |\n| --- | --- | --- |\n| Mean TPOT (ms) | 8.10 | 11.40 |\n"
    assert _cause(tmp_path, latency, "SLOWER_THAN_BASELINE")[0].message
    assert _causes(tmp_path, latency.replace("11.40", "5.20")) == []


def test_two_results_blocks_under_their_labels(tmp_path: Path) -> None:
    block = ("============ Serving Benchmark Result ============\n"
             "Backend:                                 sglang\n"
             "Successful requests:                     100\n"
             "Request throughput (req/s):              {req}\n"
             "Input token throughput (tok/s):          {inp}\n"
             "Output token throughput (tok/s):         {out}\n"
             "Mean TPOT (ms):                          {tpot}\n")
    text = ("Without speculative decoding:\n" + block.format(req=1.9, inp=240.2, out=250.3, tpot=30.1) + "\n"
            "With EAGLE-3 (num_steps 3, accept length 2.4):\n" + block.format(req=1.3, inp=160.9, out=161.0, tpot=45.0))
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "161" in cause.message and "250.3" in cause.message  # the output throughput, not requests or input


def test_a_yes_no_column_and_the_model_both_rows_name(tmp_path: Path) -> None:
    # The MTP row of the same model is slower than its row without; another engine's row has no baseline of its own.
    text = ("model               speculative   decode\n"
            "Qwen3-8B q8         off           80.1 tok/s\n"
            "Qwen3-8B q8         on            62.0 tok/s\n"
            "Qwen3-8B mlx        on            95.0 tok/s\n")
    _cause(tmp_path, text, "SLOWER_THAN_BASELINE")


def test_the_tables_words_name_its_engine() -> None:
    runs, _ = table_runs("bs | num_draft | throughput | acc len\n-- | -- | -- | --\n1 | 4 | 150.2 | 2.1\n\n"
                         "bs | throughput\n-- | --\n1 | 200.0\n")
    assert not compares(runs)  # the second table names no setting and has no label above it: no baseline
    runs, engine = table_runs("Base model:\n\nbs | throughput\n-- | --\n1 | 200.0\n\nEAGLE3:\n\n"
                              "bs | num_draft | throughput | acc len\n-- | -- | -- | --\n1 | 4 | 150.2 | 2.1\n")
    assert engine is Engine.sglang and [(r.key, r.baseline, r.speed) for r in runs] == [("bs=1", True, 200.0),
                                                                                         ("bs=1", False, 150.2)]


# -- negatives: the same shapes from software not about speculative decoding ----------------------------------------


@pytest.mark.parametrize("text", [
    # a database's benchmark (pgbench-like) with a baseline column
    "| workload | baseline tps | patched tps |\n|---|---|---|\n| read-only | 51234 | 48810 |\n| read-write | 9120 | 8011 |\n",
    # a compiler's benchmark, aligned columns
    "benchmark      baseline    -O3 draft\n-----------    --------    ---------\nnbody          1.20 s      1.45 s\nfannkuch       2.31 s      2.90 s\n",
    # a blog app's load test of its draft posts, comma-separated
    "endpoint,baseline req/s,draft posts req/s\n/posts,820,640\n/drafts,610,400\n",
    # a results block of a web benchmark under a "baseline" label
    "Baseline:\nRequests per sec:    9120.33\nTransfer/sec:        1.20MB\n\nWith cache:\nRequests per sec:    7000.10\n"
    "Transfer/sec:        0.90MB\n",
])
def test_no_cause_for_tables_of_other_software(tmp_path: Path, text: str) -> None:
    assert table_runs(text) == ([], None)
    assert _causes(tmp_path, text) == []


def test_a_spec_type_column_with_none_and_a_test_key(tmp_path: Path) -> None:
    # llama-bench-style rows: the prompt tests (pp512) are not decoding and are not compared; tg128 is slower with MTP.
    text = ("| spec type | test | t/s |\n|---|---|---|\n| none | pp512 | 5000.1 |\n| none | tg128 | 120.5 ± 0.4 |\n"
            "| draft-mtp | pp512 | 2100.0 |\n| draft-mtp | tg128 | 98.0 ± 0.9 |\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "test=tg128" in cause.message and "98" in cause.message
    assert _causes(tmp_path, text.replace("98.0", "150.0")) == []  # pp512's drop is not decoding's


def test_ollama_verbose_blocks_under_fenced_labels(tmp_path: Path) -> None:
    # `ollama run --verbose` prints its timings as "eval rate: N tokens/s" (cmd/cmd.go, api.Metrics.Summary).
    block = ("```\ntotal duration:       {total}s\nload duration:        15.3775ms\nprompt eval count:    14 token(s)\n"
             "prompt eval duration: 102.26ms\nprompt eval rate:     {prompt} tokens/s\neval count:           538 token(s)\n"
             "eval duration:        8.33598s\neval rate:            {rate} tokens/s\n```\n")
    text = ("Without MTP:\n" + block.format(total=8.4, prompt=136.9, rate=64.54) + "\n"
            "With MTP (draft-mtp, n-max 3):\n" + block.format(total=11.0, prompt=300.0, rate=48.10))
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed) for r in runs] == [(True, 64.54), (False, 48.10)]
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "48.1" in cause.message and "64.54" in cause.message


def test_a_speedup_column_implies_the_run_without_speculation(tmp_path: Path) -> None:
    # A PR's results by batch size: the speed-up is the speculative run over the run without it (1x).
    text = ("EAGLE-3 results:\n\n| batch size | Speedup | accept length |\n|---|---|---|\n| 1 | 1.82x | 3.1 |\n"
            "| 16 | 1.21x | 3.0 |\n| 64 | 0.84x | 3.0 |\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "bs=64" in cause.message and "0.84 against 1x" in cause.message
    assert _causes(tmp_path, text.replace("0.84x", "1.05x")) == []


def test_a_pipe_row_short_of_cells_is_padded(tmp_path: Path) -> None:
    # GitHub renders a row with fewer cells than its header; its missing cells are empty.
    text = "| config | decode tok/s | accept rate |\n|---|---|---|\n| MTP off | 50.0 |\n| MTP n-max 2 | 41.0 | 72% |\n"
    assert tables(text)[0].rows[0] == ("MTP off", "50.0", "")
    _cause(tmp_path, text, "SLOWER_THAN_BASELINE")


def test_a_row_named_like_a_speculative_one_is_its_baseline(tmp_path: Path) -> None:
    text = "| model | gen t/s |\n|---|---|\n| Qwen3-8B Q8 | 50.2 |\n| Qwen3-8B-MTP Q8 | 40.1 |\n| Llama-3-8B | 61.0 |\n"
    runs, _ = table_runs(text)
    assert [(r.setting, r.baseline) for r in runs] == [("Qwen3-8B Q8", True), ("Qwen3-8B-MTP Q8", False)]
    _cause(tmp_path, text, "SLOWER_THAN_BASELINE")


def test_runs_listed_by_the_time_the_same_work_took(tmp_path: Path) -> None:
    # A PR's test plan: each field names its setting, its value the time the same samples took (lower is better).
    text = ("EAGLE-3 drafter, 200 samples, 10 concurrency:\n"
            "Baseline (non-speculative): 133.24 s\nSpeculative decoding model: 215.84 s\nTotal output tokens: 106,678\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "took 215.84 s against 133.24 s" in cause.message
    assert _causes(tmp_path, text.replace("215.84", "99.10")) == []


def test_a_comparison_table_beside_the_engines_own_lines_is_judged_apart(tmp_path: Path) -> None:
    # vLLM's SpecDecoding line (v1/spec_decode/metrics.py's format) and the poster's table of both runs' speeds.
    text = ("(APIServer pid=1) INFO 05-06 06:11:23 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.61, "
            "Accepted throughput: 50.10 tokens/s, Drafted throughput: 62.00 tokens/s, Accepted: 5010 tokens, Drafted: "
            "6200 tokens, Per-position acceptance rate: 0.850, 0.760, Avg Draft acceptance rate: 80.8%\n\n"
            "| config | output tok/s |\n|---|---|\n| no spec | 100.4 |\n| MTP k=2 | 81.0 |\n")
    path = tmp_path / "paste.log"
    path.write_text(text, encoding="utf-8")
    report = diagnose(log_files=[path])
    assert report.logs[0].runtime is Engine.vllm and report.logs[0].accepted == 5010  # the log's run, first, as read
    assert [log.speed for log in report.logs[1:]] == [100.4, 81.0]
    assert "SLOWER_THAN_BASELINE" in [c.code for c in report.causes]


def test_metrics_by_row_leave_out_the_prompts_speed_and_other_units(tmp_path: Path) -> None:
    # Prefill slows down with a drafter loaded; decoding is what speculation is for. Memory in GB is no speed.
    text = ("| | baseline | MTP |\n|---|---|---|\n| Prefill | 2400 | 1900 |\n| VRAM | 20 GB | 14 GB |\n"
            "| Decode | 50.1 | 71.3 |\n")
    assert _causes(tmp_path, text) == []
    assert _cause(tmp_path, text.replace("71.3", "40.2"), "SLOWER_THAN_BASELINE")


def test_one_key_spelled_two_ways_across_two_tables(tmp_path: Path) -> None:
    text = ("**Without speculative decoding**\n\n| batch size | throughput |\n|---|---|\n| 1 | 95.0 |\n| 8 | 610.0 |\n\n"
            "**With MTP (2 draft tokens)**\n\n| bs | throughput | accept len |\n|---|---|---|\n| 1 | 150.0 | 2.4 |\n"
            "| 8 | 480.0 | 2.3 |\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "bs=8" in cause.message and "480" in cause.message


def test_a_serving_benchmark_table_with_thousands_separators(tmp_path: Path) -> None:
    # `vllm bench serve` metrics set side by side: requests per second and TTFT are no decode speed; "1,200.5" is one
    # number.
    text = ("| Metric | baseline | EAGLE-3 (k=3) |\n|---|---|---|\n| Request throughput (req/s) | 2.10 | 2.55 |\n"
            "| Output token throughput (tok/s) | 1,200.5 | 1,050.2 |\n| Mean TTFT (ms) | 120 | 160 |\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "1050.2 against 1200.5" in cause.message


def test_a_with_column_beside_a_baseline_column(tmp_path: Path) -> None:
    # "With <something>" beside "Baseline" is the setting compared, where the table is tied to speculative decoding.
    text = "| | Baseline | With the patch | n-max |\n|---|---|---|---|\n| 3090 | 44.0 | 35.2 (-20%) | 3 |\n"
    _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert _causes(tmp_path, text.replace("35.2 (-20%)", "61.0 (+39%)")) == []
    # the same shape from a database's changelog: nothing ties it to speculative decoding
    assert table_runs(text.replace("n-max", "shards")) == ([], None)


def test_a_mechanism_table_is_the_drafting_runs_figures(tmp_path: Path) -> None:
    # Metrics by row of how drafting works, beside the speeds: the target's passes per second are no decode speed
    # (fewer passes is the point of drafting), tokens per pass is the mean acceptance length (llama-server's
    # "draft acceptance rate = ... ( N accepted / M generated)" as a fraction cell), not a rate in percent.
    text = ("## How it works\n\n| | no MTP | MTP (n-max 3) |\n|---|---|---|\n| target forward passes/s | 48 | 22 |\n"
            "| tokens accepted per step | 1.00 | 2.41 |\n| draft acceptance | n/a | 912 / 1,530 = 60 % |\n")
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed, r.mean_length) for r in runs] == [(True, None, None), (False, None, 2.41)]
    assert runs[1].acceptance == pytest.approx(912 / 1530)
    assert _causes(tmp_path, text) == []
    # counts that are no share of drafts ("8/4": tokens per step over the draft length) are no rate
    assert table_runs(text.replace("912 / 1,530 = 60 %", "8/4"))[0][1].acceptance is None
    # the decode speeds beside it are still compared
    slower = text + "\n| prompt | no MTP | MTP (n-max 3) |\n|---|---|---|\n| chat | 61.0 tok/s | 40.5 tok/s |\n"
    _cause(tmp_path, slower, "SLOWER_THAN_BASELINE")


def test_a_table_of_acceptance_by_context_length(tmp_path: Path) -> None:
    # One drafter's acceptance by a key that is no setting (the context length), cells as posters write them ("~61%",
    # a range): each row with one figure is a run with speculation, none compared with a baseline.
    text = ("| Context | Accept rate | MTP vs no MTP |\n|---|---|---|\n| 2K | 70-85% | +90% |\n| 32K | ~61% | +35% |\n"
            "| 128K | ~48% | +5% |\n")
    runs, _ = table_runs(text)
    assert [(r.key, r.acceptance) for r in runs] == [("context=32k", 0.61), ("context=128k", 0.48)]
    path = tmp_path / "paste.log"
    path.write_text(text, encoding="utf-8")
    report = diagnose(log_files=[path])
    assert [log.acceptance for log in report.logs] == [0.61, 0.48] and report.causes == []


@pytest.mark.parametrize("text", [
    # a payments dashboard's card acceptance by region, drawn as a table with "~" cells
    "| Region | Acceptance rate | Volume |\n|---|---|---|\n| EU | ~23% | 1.2M |\n| US | 10-30% | 3.4M |\n",
    # a physics code's mechanism table: passes per second and a fraction cell, nothing of drafting
    "| | baseline | patched |\n|---|---|---|\n| solver passes/s | 48 | 22 |\n| accepted moves per step | 1.00 | 2.41 |\n"
    "| Metropolis acceptance | n/a | 912 / 1,530 = 60 % |\n",
])
def test_no_cause_for_acceptance_tables_of_other_software(tmp_path: Path, text: str) -> None:
    assert not compares(table_runs(text)[0])
    assert _causes(tmp_path, text) == []


def test_headings_that_name_each_run_and_its_speed(tmp_path: Path) -> None:
    # A docs PR's results: each heading names a run and its speed, the run without speculation by the decoding it does
    # ("Normal decoding"), each command in a fence below it (sglang.launch_server's flags).
    text = ("## Normal decoding speed (SGLang): 140 token/s\n```\npython3 -m sglang.launch_server --model m\n```\n\n"
            "## EAGLE decoding speed (SGLang): 121 token/s, 70% accepted\n```\npython3 -m sglang.launch_server --model m "
            "--speculative-algorithm EAGLE\n```\n")
    _, report = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert [(log.speed, log.baseline, log.acceptance) for log in report.logs] == [(140.0, True, None), (121.0, False, 0.7)]
    assert _causes(tmp_path, text.replace("121 token/s", "260 token/s")) == []
    # a tokenizer's benchmark in the same shape: no run names a drafter, nothing is compared
    other = "## Normal decoding speed (HF tokenizers): 156 tokens/s\n\n## Fast decoding speed (Rust): 97 tokens/s\n"
    assert _causes(tmp_path, other) == []


def test_results_blocks_tied_by_an_accept_length_field(tmp_path: Path) -> None:
    # sglang/benchmark/gsm8k/bench_sglang.py prints "Latency: ... s", "Output throughput: ... token/s" and, with
    # speculation, "Accept length: ..." per run; a PR pastes one block per setting under its label. The block without an
    # accept length is the run without speculation; the engine's own summary lines inside the blocks are read once.
    text = ("baseline\nLatency: 90.500 s\nOutput throughput: 70.100 token/s\n\n"
            "topk 4 steps 3\nLatency: 120.250 s\nOutput throughput: 52.400 token/s\nAccept length: 2.310\n")
    _, report = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert [(log.speed, log.baseline, log.mean_length) for log in report.logs] == [(70.1, True, None), (52.4, False, 2.31)]
    assert _causes(tmp_path, text.replace("52.400", "95.000")) == []
    # a web benchmark's blocks in the same shape: no field of speculative decoding's, nothing compared
    other = ("baseline\nLatency: 90.500 s\nOutput throughput: 70.100 token/s\n\n"
             "gzip on\nLatency: 120.250 s\nOutput throughput: 52.400 token/s\nCache hit rate: 0.31\n")
    assert table_runs(other) == ([], None) and _causes(tmp_path, other) == []


def test_acceptance_rows_join_the_speed_rows_condition() -> None:
    # Metrics by row per batch size: "bs=8 accept rate" is bs=8's drafting run's acceptance; a row of acceptance that
    # names no speed row's condition is its column's run's (the mechanism table above).
    text = ("| | no spec | MTP |\n|---|---|---|\n| bs=1 tok/s | 50 | 70 |\n| bs=1 accept rate | - | 60% |\n"
            "| bs=8 tok/s | 300 | 200 |\n| bs=8 accept rate | - | 20% |\n")
    runs, _ = table_runs(text)
    assert [(r.key, r.baseline, r.speed, r.acceptance) for r in runs] == [
        ("bs=1", True, 50.0, None), ("bs=1", False, 70.0, 0.6), ("bs=8", True, 300.0, None), ("bs=8", False, 200.0, 0.2)]


def test_rows_of_other_quantities_beside_the_speeds_are_no_speed(tmp_path: Path) -> None:
    # A poster's table of what else changed with MTP on (nvidia-smi's utilisation, memory, power): lower utilisation or
    # power with MTP is no slowdown; the decode row is the speed compared.
    text = ("| | without MTP | with MTP |\n|---|---|---|\n| GPU util (%) | 95 | 80 |\n| VRAM (GB) | 20 | 22 |\n"
            "| power draw (W) | 300 | 260 |\n| decode tok/s | 40 | 61 |\n")
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed) for r in runs] == [(True, 40.0), (False, 61.0)]
    assert _causes(tmp_path, text) == []
    _cause(tmp_path, text.replace("| 40 | 61 |", "| 40 | 31 |"), "SLOWER_THAN_BASELINE")


def test_a_mechanism_table_of_counts_alone(tmp_path: Path) -> None:
    # Counts of the mechanism's work (forward passes, output tokens) are no speeds: fewer passes with MTP is the point.
    # Tokens per forward pass is the mean acceptance length; with nothing else, the drafting run is read from it.
    text = ("| | no MTP | MTP |\n|---|---|---|\n| tokens per forward | 1 | 2.4 |\n| forward passes | 1000 | 420 |\n"
            "| output tokens | 1000 | 1000 |\n")
    path = tmp_path / "paste.log"
    path.write_text(text, encoding="utf-8")
    report = diagnose(log_files=[path])
    assert [(log.baseline, log.speed, log.mean_length) for log in report.logs] == [(True, None, None), (False, None, 2.4)]
    assert report.causes == []


@pytest.mark.parametrize("text", [
    # the "baseline" is the build before a fix, and its drafts were accepted: two drafting runs, no run without drafting
    "| | baseline (pre-fix) | MTP fix |\n|---|---|---|\n| decode tok/s | 80 | 70 |\n| acceptance | 70% | 72% |\n",
    "All runs with --spec-type draft-mtp.\n\n| build | tok/s | accept |\n|---|---|---|\n| baseline b8000 | 70.1 | 75% |\n"
    "| PR #123 | 60.2 | 74% |\n",
])
def test_a_baseline_whose_drafts_were_accepted_is_no_run_without_speculation(tmp_path: Path, text: str) -> None:
    runs, _ = table_runs(text)
    assert runs and not any(r.baseline for r in runs) and not compares(runs)
    assert _causes(tmp_path, text) == []


def test_a_draft_length_column_spelled_as_its_flag(tmp_path: Path) -> None:
    # llama-server's --spec-draft-n-max as a column: 0 is the run without drafting.
    text = "| spec-draft-n-max | tok/s | acceptance |\n|---|---|---|\n| 0 | 50.0 | - |\n| 2 | 41.0 | 81% |\n"
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed) for r in runs] == [(True, 50.0), (False, 41.0)]
    _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert _causes(tmp_path, text.replace("41.0", "71.0")) == []


# -- round 3: shapes of the fifth set's tables, written anew -----------------------------------------------------

# A spreadsheet pasted into GitHub: the merged title cell is a row of its own above the header ("| ITL ms |  |"),
# and it says what the cells measure (here a per-token latency: lower is better).
_SPREADSHEET = """\
 | ITL ms |   |   |
-- | -- | -- | --
concurrency 4 | autoregressive | MTP 2 | MTP 2 over autoregressive
Q1 | 12.4 | 8.1 | 1.53
Q2 | 12.6 | 8.4 | 1.50
"""


def test_a_spreadsheets_title_row_is_the_tables_heading_and_its_figure() -> None:
    found = tables(_SPREADSHEET)
    assert [t.header for t in found] == [("concurrency 4", "autoregressive", "MTP 2", "MTP 2 over autoregressive")]
    assert found[0].heading == "ITL ms"
    runs, _ = table_runs(_SPREADSHEET)
    by = {(r.key, r.baseline): r.speed for r in runs}
    # read as per-token latencies (ms), not speeds: 12.4 ms is 80.6 tok/s, 8.1 ms is 123 tok/s; the ratio column is no run
    assert round(by[("q1", True)], 1) == 80.6 and round(by[("q1", False)], 1) == 123.5
    assert compares(runs) and len(runs) == 4


def test_a_spreadsheet_of_latencies_faster_with_drafting_is_healthy(tmp_path: Path) -> None:
    assert _causes(tmp_path, _SPREADSHEET) == []


def test_a_spreadsheet_title_row_of_a_database_benchmark_gives_no_runs() -> None:
    text = " | p99 ms |   |\n-- | -- | --\nquery | baseline | patched\nselect | 4.2 | 3.9\n"
    assert [t.heading for t in tables(text)] == ["p99 ms"]
    assert table_runs(text)[0] == []


# Two drafters beside one run without speculation: each is compared with it, not keyed apart by its own name.
def test_two_drafter_columns_beside_one_baseline_share_its_key() -> None:
    text = "| prompt | no spec | EAGLE | EAGLE-3 |\n|---|---|---|---|\n| chat | 40 t/s | 30 t/s | 31 t/s |\n"
    runs, _ = table_runs(text)
    assert {r.key for r in runs} == {"chat"} and compares(runs)


# llama-spec-bench style cells "mean/std": the speed is the mean.
def test_a_cell_of_mean_over_std_is_its_mean(tmp_path: Path) -> None:
    text = ("| task | no-spec | n_max=2 |\n|---|---|---|\n| math | 22.10/0.05 | 18.40/0.11 (0.83x) |\n"
            "| chat | 22.30/0.02 | 17.95/0.20 (0.80x) |\n")
    runs, owner = table_runs(text)
    assert {(r.key, r.baseline, r.speed) for r in runs} >= {("math", True, 22.1), ("math", False, 18.4)}
    assert owner is Engine.llama_cpp
    assert "SLOWER_THAN_BASELINE" in _causes(tmp_path, text)


def test_a_fraction_in_a_database_table_is_still_no_run() -> None:
    assert table_runs("| table | baseline | patched |\n|---|---|---|\n| orders | 120/3 | 98/2 |\n")[0] == []


# A header cell "batch size=1" is the table's one condition over a column of labels, not a quantity.
def test_a_header_cell_naming_the_tables_condition_is_a_label_column() -> None:
    text = "batch size=1 | Output throughput\n-- | --\nQwen3-8B +MTP | 150.2 token/s\nQwen3-8B | 98.7 token/s\n"
    runs, _ = table_runs(text)
    assert {(r.baseline, r.speed) for r in runs} == {(False, 150.2), (True, 98.7)}
    assert compares(runs)


def test_a_header_cell_naming_a_condition_in_a_web_server_table_gives_no_runs() -> None:
    text = "batch size=1 | Requests served\n-- | --\nnginx +gzip | 1520 req/s\nnginx | 1610 req/s\n"
    assert table_runs(text)[0] == []


# "Draft off" in an n-max column: the run without drafting, compared with the drafting rows.
def test_a_worded_cell_in_a_draft_length_column_names_its_setting() -> None:
    text = "| n-max | tok/s |\n|---|---|\n| Draft off | 30.0 |\n| 2 | 24.0 |\n| 4 | 20.0 |\n"
    runs, _ = table_runs(text)
    assert [(r.setting, r.baseline) for r in runs] == [("Draft off", True), ("n-max 2", False), ("n-max 4", False)]
    assert compares(runs)


# A table of the time the same work took, a column per run named with its unit ("Naive(s)", "EAGLE(s)"), as vLLM's
# V0 threads time a batch of requests: lower is better; "naive" decoding is the run without speculation.
_TIMED = ("| Batch | Naive(s) | EAGLE(s) |\n|---|---|---|\n| 1 | 400 | 300 |\n| 8 | 120 | 150 |\n| 16 | 90 | 110 |\n")


def test_columns_of_the_time_each_run_took_are_compared_lower_is_better(tmp_path: Path) -> None:
    runs, _ = table_runs(_TIMED)
    by = {(r.key, r.baseline): r for r in runs}
    assert by[("1", True)].unit == "1/s" and by[("1", True)].speed == pytest.approx(1 / 400)
    assert by[("8", False)].speed == pytest.approx(1 / 150) and compares(runs)
    cause, _ = _cause(tmp_path, _TIMED, "SLOWER_THAN_BASELINE")
    assert "at 8 " in cause.message and "150 s against 120 s" in cause.message


def test_naive_drafting_is_no_run_without_speculation() -> None:
    assert not without_speculation("naive drafting") and without_speculation("Naive(s)")


def test_a_database_table_of_times_by_naive_and_indexed_joins_gives_no_runs() -> None:
    text = "| Rows | Naive(s) | Indexed(s) |\n|---|---|---|\n| 1000 | 4 | 1 |\n| 100000 | 400 | 9 |\n"
    assert table_runs(text)[0] == []


# llama-sweep-bench's table (ik_llama.cpp's examples/sweep-bench prints it: PP, TG, N_KV, T_PP s, S_PP t/s, T_TG s,
# S_TG t/s): one run's decode speed at each depth of its context. Without any drafter's word it is a run without
# speculation: read (not refused), no cause.
_SWEEP = ("|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
          "|-------|--------|--------|----------|----------|----------|----------|\n"
          "|   512 |    128 |      0 |    0.412 |  1242.72 |    3.101 |    41.28 |\n"
          "|   512 |    128 |    512 |    0.430 |  1190.70 |    3.187 |    40.16 |\n")


def test_a_sweep_bench_table_is_a_run_read_by_its_decode_speed(tmp_path: Path) -> None:
    from mtpinspect.logread.runs import read_runs

    path = tmp_path / "sweep.log"
    path.write_text(_SWEEP, encoding="utf-8")
    runs = read_runs(path)
    assert [r.speed for r in runs] == [41.28, 40.16]  # S_TG t/s, not the prompt's S_PP t/s
    assert {r.runtime for r in runs} == {Engine.llama_cpp}
    assert _causes(tmp_path, _SWEEP) == []


def test_a_table_of_another_programs_columns_without_the_sweep_bench_header_is_refused(tmp_path: Path) -> None:
    text = "| PP | TG | rows | T_TG s |\n|---|---|---|---|\n| 3 | 1 | 1200 | 0.2 |\n"
    path = tmp_path / "paste.log"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MtpinspectError):
        diagnose(log_files=[path])


# Results blocks each under the server command it measured, as a poster pastes them (SGLang's launch_server flags,
# python -m sglang.launch_server --help; a client's "name: value" summary): the command's drafter flag says the setting.
_COMMANDED = """\
python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --port 30000

Result:
output throughput: 210.5 tok/s
mean tpot: 4.7 ms

python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --port 30000 \\
  --speculative-algorithm EAGLE3 --speculative-draft-model-path AngelSlim/Qwen3-8B_eagle3

Result:
output throughput: 160.2 tok/s
mean tpot: 6.2 ms
"""


def test_a_results_block_takes_its_setting_from_the_command_above_it(tmp_path: Path) -> None:
    runs, _ = table_runs(_COMMANDED)
    assert [(r.baseline, r.speed) for r in runs] == [(True, 210.5), (False, 160.2)]
    assert "SLOWER_THAN_BASELINE" in _causes(tmp_path, _COMMANDED)


def test_two_commands_above_two_blocks_say_neither_whose() -> None:
    first, second = _COMMANDED.split("\n\n")[0], _COMMANDED.split("\n\n")[2]
    text = f"{first}\n{second}\n\nResult:\noutput throughput: 210.5 tok/s\n\nResult:\noutput throughput: 160.2 tok/s\n"
    assert not compares(table_runs(text)[0])


def test_a_block_under_another_programs_command_takes_no_setting_from_it() -> None:
    text = ("python3 -m http.server 8000 --directory drafts\n\nResult:\nrequests: 120 per s\nmean latency: 4.7 ms\n\n"
            "python3 -m http.server 8000 --directory drafts --speculative\n\nResult:\nrequests: 90 per s\n"
            "mean latency: 6.2 ms\n")
    assert table_runs(text)[0] == []


# -- round 4: any grid of figures (issue 42) --------------------------------------------------------------------------


def test_the_metric_named_in_a_label_column_that_is_not_the_first(tmp_path: Path) -> None:
    # The batch in the first column, the metric in the second: the TPOT row is a latency (lower is better), never a
    # speed of 6.1 tok/s beside 9.4.
    text = ("| Batch | Metric | no spec | EAGLE-3 | Speedup |\n|---|---|---|---|---|\n"
            "| bs=1 | TPOT (ms) | 9.4 | 6.1 | 1.54x |\n| bs=1 | Output throughput (tok/s) | 106.0 | 163.1 | 1.54x |\n"
            "| bs=16 | Output throughput (tok/s) | 810.2 | 1102.9 | 1.36x |\n")
    runs, _ = table_runs(text)
    assert [(r.key, r.baseline, r.speed) for r in runs] == [("bs=1", True, 106.0), ("bs=1", False, 163.1),
                                                            ("bs=16", True, 810.2), ("bs=16", False, 1102.9)]
    assert _causes(tmp_path, text) == []


def test_chinese_headers_name_the_run_without_mtp(tmp_path: Path) -> None:
    # Headers as vllm-ascend users write them: "关闭MTP" (MTP off) and "开启MTP" (MTP on), concurrency "并发" beside.
    text = "并发\tparallel\t关闭MTP (tok/s)\t开启MTP (tok/s)\n1\t4\t21.50\t19.02\n"
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed) for r in runs] == [(True, 21.5), (False, 19.02)]
    assert _causes(tmp_path, text) == ["SLOWER_THAN_BASELINE"]


def test_a_draft_rate_column_and_a_none_row_in_an_n_max_column(tmp_path: Path) -> None:
    # llama.cpp's own "draft rate"; "none" in the n-max column is the run without drafting; past n-max 2 the speed falls
    # below the shorter drafts' (and below the run without drafting at n-max 6).
    text = ("| n-max | T/s (Vulkan) | draft rate |\n|---|---|---|\n| none | 30.0 | N/A |\n| 1 | 36.1 | 0.61 |\n"
            "| 2 | 38.4 | 0.52 |\n| 4 | 33.0 | 0.31 |\n| 6 | 27.5 | 0.18 |\n")
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed, r.acceptance) for r in runs][:2] == [(True, 30.0, None), (False, 36.1, 0.61)]
    assert _causes(tmp_path, text) == ["NMAX_TOO_HIGH"]


def test_a_row_whose_acceptance_is_marked_empty_is_the_run_without_drafting(tmp_path: Path) -> None:
    # Methods no rule names ("prompt-lookup", "suffix"), tied by their acceptance column beside tokens' pace; the
    # model's own row, its acceptance "-", is the run without speculation: both methods are faster, no cause.
    text = ("| method | ttft (ms) | tpot (ms) | accept ratio |\n|---|---|---|---|\n| qwen2.5-32b | 310.2 | 41.0 | - |\n"
            "| prompt-lookup | 300.8 | 30.5 | 68.1% |\n| suffix | 305.1 | 28.9 | 72.6% |\n")
    runs, _ = table_runs(text)
    assert [(r.setting, r.baseline) for r in runs] == [("qwen2.5-32b", True), ("prompt-lookup", False), ("suffix", False)]
    assert _causes(tmp_path, text) == []
    slower = text.replace("| 30.5 |", "| 45.5 |").replace("| 28.9 |", "| 44.0 |")
    assert _causes(tmp_path, slower) == ["SLOWER_THAN_BASELINE"]


@pytest.mark.parametrize("text", [
    # a web server's benchmark: an accept rate beside requests per second, a row without one
    "| server | req/s | p99 (ms) | accept rate |\n|---|---|---|---|\n| nginx | 41000 | 3.1 | - |\n| haproxy | 38000 | 3.4 | 97% |\n",
    # an email app's drafts: an acceptance column beside a throughput of messages
    "| queue | throughput (msg/s) | draft acceptance |\n|---|---|---|\n| baseline | 1200 | - |\n| drafts | 900 | 81% |\n",
    # a Chinese database benchmark: "关闭缓存" (cache off) vs "开启缓存" (cache on)
    "并发\t关闭缓存 (qps)\t开启缓存 (qps)\n16\t5120\t4410\n",
])
def test_no_cause_for_grids_of_other_software(tmp_path: Path, text: str) -> None:
    assert not compares(table_runs(text)[0])
    assert _causes(tmp_path, text) == []


def test_a_line_accepting_nothing_beside_one_that_accepts_is_the_run_without_speculation(tmp_path: Path) -> None:
    # A benchmark script's two result lines, as bench_sglang-style scripts print them: acceptance length 1.00 is what
    # the run without a drafter prints; the drafting run is faster: no cause (never HEAD_DISAGREES for the first).
    text = ("#prompts: 120, Throughput: 61.20 token/s, Acceptance length: 1.00\n"
            "#prompts: 120, Throughput: 140.75 token/s, Acceptance length: 3.41\n")
    assert _causes(tmp_path, text) == []
    # Where each line names its drafter, a 1.00 is a head that drafted and had nothing accepted: a fault stays one.
    named = ("EAGLE-3 head v1: Throughput: 61.20 token/s, Acceptance length: 1.00\n"
             "EAGLE-3 head v2: Throughput: 140.75 token/s, Acceptance length: 3.41\n")
    assert _causes(tmp_path, named) != []


# -- lists of figures in any layout: a wrapped metrics line, one position a line -------------------------------------


def test_a_metrics_line_wrapped_after_its_label_is_read_whole(tmp_path: Path) -> None:
    # vLLM's SpecDecodingLogging line (vllm/v1/spec_decode/metrics.py) as a narrow terminal wraps it: the per-position
    # rates on the next line are the line's own; the deepest positions are rarely accepted.
    text = ("SpecDecoding metrics: Mean acceptance length: 1.58, Accepted throughput: 9.10 tokens/s,\n"
            "Drafted throughput: 62.40 tokens/s, Per-position acceptance rate:\n"
            "0.420, 0.120, 0.030, 0.010, Avg Draft acceptance rate: 14.6%\n")
    log = read_log(_write(tmp_path, text))
    assert log.per_position == (0.42, 0.12, 0.03, 0.01) and log.mean_length == 1.58
    assert _causes(tmp_path, text)[:1] == ["NMAX_TOO_HIGH"]


def test_positions_listed_one_a_line_under_acceptance_figures(tmp_path: Path) -> None:
    # A log-summary script's output: its mean length and one position a line ("Pos k: share of steps").
    text = "Mean acceptance length: 2.05\n\nPos 1: 0.610\nPos 2: 0.290\nPos 3: 0.110\nPos 4: 0.040\n"
    log = read_log(_write(tmp_path, text))
    assert log.per_position == (0.61, 0.29, 0.11, 0.04)
    assert _causes(tmp_path, text)[:1] == ["NMAX_TOO_HIGH"]


@pytest.mark.parametrize("text", [
    # an aligner's read statistics, one position a line: no acceptance figure above them
    "Reads aligned by mapping quality\nPos 1: 0.912\nPos 2: 0.540\nPos 3: 0.210\nPos 4: 0.050\n",
    # a web benchmark's summary wrapped after its labels
    "Throughput summary: requests per second,\n1200, 1180, 1175\nMean latency per request:\n12.5 ms\n",
])
def test_no_cause_for_lists_of_other_software(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "list.log"
    path.write_text(text, encoding="utf-8")
    return path


# -- runs under the commands that made them ---------------------------------------------------------------------------

_SCRIPT_RUNS = """$ python bench_offline.py --model Qwen/Qwen3-8B
Processed prompts: 100%|██████████| 16/16 [00:20<00:00,  1.25s/it, est. speed input: 51.20 toks/s, output: 410.33 toks/s]
Processed prompts: 100%|██████████| 16/16 [00:21<00:00,  1.31s/it, est. speed input: 49.80 toks/s, output: 398.10 toks/s]

$ python bench_offline.py --model Qwen/Qwen3-8B --speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'
Processed prompts: 100%|██████████| 16/16 [00:41<00:00,  2.60s/it, est. speed input: 25.01 toks/s, output: 190.72 toks/s]
Processed prompts: 100%|██████████| 16/16 [00:39<00:00,  2.44s/it, est. speed input: 26.40 toks/s, output: 201.94 toks/s]
"""


def test_progress_bars_under_a_command_with_and_without_a_drafters_flag(tmp_path: Path) -> None:
    # vLLM's LLM.generate progress bar (vllm/entrypoints/llm.py: "est. speed input: %.2f toks/s, output: %.2f toks/s")
    # under the same script run without and with --speculative-config: each batch compared with the same batch.
    runs, _ = table_runs(_SCRIPT_RUNS)
    assert [(r.baseline, r.speed) for r in runs] == [(True, 410.33), (True, 398.1), (False, 190.72), (False, 201.94)]
    assert _causes(tmp_path, _SCRIPT_RUNS)[:1] == ["SLOWER_THAN_BASELINE"]
    faster = _SCRIPT_RUNS.replace("190.72", "610.72").replace("201.94", "630.94")
    assert _causes(tmp_path, faster) == []
    # The flag turned off ("num_speculative_tokens" 0 is still a config; "--num-speculative-tokens 0" is off): both
    # commands without a drafter, nothing compared.
    off = _SCRIPT_RUNS.replace("""--speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'""",
                               "--num-speculative-tokens 0")
    assert not compares(table_runs(off)[0])


@pytest.mark.parametrize("text", [
    # a blog app's seeder, with and without its draft posts: a bare "draft" flag is no drafter's
    "$ python seed.py\nwrote 900 rows, output: 412.5 tokens/s\n\n$ python seed.py --with-draft-posts\n"
    "wrote 1400 rows, output: 300.1 tokens/s\n",
    # a lexer's benchmark with an inspection flag ("--inspect" holds "spec" inside a word)
    "$ ./lexbench corpus.txt\noutput: 1200.0 tok/s\n$ ./lexbench corpus.txt --inspect\noutput: 950.0 tok/s\n",
    # two different programs, one with a speculative flag: nothing says the first is its baseline
    "$ python serve_a.py\noutput: 80.0 tok/s\n$ python serve_b.py --speculative-model x\noutput: 60.0 tok/s\n",
])
def test_no_comparison_for_commands_that_are_not_a_drafters_pair(tmp_path: Path, text: str) -> None:
    assert not compares(table_runs(text)[0])
    assert "SLOWER_THAN_BASELINE" not in _causes(tmp_path, text)


# -- a run without speculation given in a sentence of the paste ---------------------------------------------------------

_SERVER_RUN = """slot print_timing: id  0 | task 12 |
prompt eval time =    1187.45 ms /   780 tokens (    1.52 ms per token,   656.87 tokens per second)
       eval time =   25447.71 ms /   812 tokens (   31.34 ms per token,    31.91 tokens per second)
      total time =   26635.16 ms /  1592 tokens
draft acceptance rate = 0.71234 (  578 accepted /   811 generated)
"""


def test_a_baseline_in_a_sentence_is_compared_with_the_logs_run(tmp_path: Path) -> None:
    # llama-server's own lines (tools/server/server.cpp print_timing, the draft acceptance line) and the poster's
    # sentence beside them: the sentence's speed is the run without MTP.
    text = "Without MTP I get 41.5 t/s on the same prompt, with it:\n\n" + _SERVER_RUN
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    assert _causes(tmp_path, "I get 41.5 t/s without MTP, and this with it:\n\n" + _SERVER_RUN)[:1] == ["SLOWER_THAN_BASELINE"]
    assert _causes(tmp_path, "Baseline (no MTP) is about 25 t/s. With MTP:\n\n" + _SERVER_RUN) == []
    assert _causes(tmp_path, _SERVER_RUN) == []  # nothing to compare with


@pytest.mark.parametrize("sentence", [
    "Baseline vs MTP: 41.5 t/s",  # the figure is the comparison's, not the baseline's
    "Our baseline web server handles 9000 req/s; the app below is unrelated.",  # someone else's baseline, not tokens
    "With MTP I get 41.5 t/s on the other box.",  # a run with speculation
])
def test_sentences_that_are_no_baseline(tmp_path: Path, sentence: str) -> None:
    assert _causes(tmp_path, sentence + "\n\n" + _SERVER_RUN) == []


def test_an_engines_padded_statements_are_no_table_and_no_results_block(tmp_path: Path) -> None:
    # llama-server's print_timing lines line up with spaces and read "name = value": the engine's own lines, read by its
    # formats (the request's acceptance, its decode speed), never an aligned table nor a results block.
    log = read_log(_write(tmp_path, _SERVER_RUN))
    assert log.formats[0] == "llama.cpp draft acceptance (per request)"
    assert (log.accepted, log.drafted) == (578, 811) and log.speed == pytest.approx(31.91)
    assert tables(_SERVER_RUN) == [] and table_runs(_SERVER_RUN)[0] == []


def test_a_ladder_of_draft_acceptance_by_quant_is_read(tmp_path: Path) -> None:
    # A drafter's acceptance by its target's quantization ("mean draft acceptance", cells "a% / b%" of two prompts):
    # read as acceptance; at 6-9% the existing rules name nothing from a log (HEAD_DISAGREES only at 5% or less).
    text = ("| target quant | mean draft acceptance |\n|---|---:|\n| Q4_K_M (~4.8 bpw) | 6.2% / 7.0% |\n"
            "| Q6_K (~6.6 bpw) | 8.8% / 9.1% |\n")
    log = read_log(_write(tmp_path, text))
    assert log.acceptance is not None and 0.06 <= log.acceptance <= 0.092
    assert _causes(tmp_path, text) == []


def test_a_newsrooms_draft_acceptance_table_is_no_drafters(tmp_path: Path) -> None:
    # Editors accepting reporters' drafts: no drafter's word, no tokens, no model in the paste (it was HEAD_DISAGREES).
    text = "| desk | draft acceptance |\n|---|---|\n| metro | 3% |\n| sports | 4% |\n"
    assert _causes(tmp_path, text) == []


def test_a_scripts_padded_keys_and_positions_with_their_counts(tmp_path: Path) -> None:
    # vLLM's spec_decode.py summary keys (examples/offline_inference/spec_decode.py: num_drafts, mean acceptance length,
    # acceptance at token i) as a script pads them into a column, its positions as "accept@pos i : rate  (count)".
    text = ("num_spec_tokens     : 4\nnum_drafts          : 5120\nmean acceptance len : 2.104\n"
            "  accept@pos 0      : 0.640  (3277)\n  accept@pos 1      : 0.301  (1541)\n"
            "  accept@pos 2      : 0.121  (620)\n  accept@pos 3      : 0.042  (215)\n")
    log = read_log(_write(tmp_path, text))
    assert log.runtime is Engine.vllm and log.per_position == (0.64, 0.301, 0.121, 0.042) and log.mean_length == 2.104
    assert _causes(tmp_path, text)[:1] == ["NMAX_TOO_HIGH"]


def test_a_line_of_speeds_before_and_after_a_drafter(tmp_path: Path) -> None:
    # A poster's results outside a table: the speed before the arrow is the run without speculation.
    text = "Results on the 4090:\n- Qwen3-8B with MTP: 52.4 → 41.0 tok/s\n- Qwen3-32B with MTP: 21.3 → 17.9 tok/s\n"
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed) for r in runs] == [(True, 52.4), (False, 41.0), (True, 21.3), (False, 17.9)]
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    assert _causes(tmp_path, text.replace("41.0", "71.0").replace("17.9", "29.9")) == []
    # Two conditions in one line, each its own key: speculation loses at batch 32.
    one_line = "batch=1: 41.2 -> 58.1 tok/s (MTP), batch=32: 900 -> 610 tok/s (MTP)\n"
    assert {r.key for r in table_runs(one_line)[0]} == {"batch=1 mtp", "batch=32 mtp"}
    assert _causes(tmp_path, one_line)[:1] == ["SLOWER_THAN_BASELINE"]


@pytest.mark.parametrize("text", [
    "n-max 2 -> 4: 40.2 -> 35.1 t/s with MTP\n",  # one drafting setting against another
    "Upgrade v1 -> v2 of the draft posts: 30 -> 20 tok/s\n",  # a blog's draft posts, no drafter
    "build 5.1 -> 5.2: 40 -> 45 t/s\n",  # a build against a build
])
def test_arrows_that_are_no_drafters_before_and_after(text: str) -> None:
    assert table_runs(text)[0] == []


def test_tab_separated_rows_short_of_cells_are_padded(tmp_path: Path) -> None:
    # A manual's tab-separated table whose rows leave cells out (dpkg's triggers.txt): read at its header's width, never
    # a traceback; nothing speculative in it.
    text = "Command line\tTrigproc\tTrigproc\tConfigure\nthese\t\tany triggered\n--unpack\t\tno\t\tusually[1]\tnone\n"
    assert all(len(row) == 4 for table in tables(text) for row in table.rows)
    assert _causes(tmp_path, text) == []


def test_an_ar_column_is_the_run_without_speculation(tmp_path: Path) -> None:
    # Papers and PRs name plain decoding "AR" (autoregressive): a whole cell, beside the drafters' columns.
    text = "| dataset | AR (tok/s) | EAGLE-3 (tok/s) |\n|---|---|---|\n| MT-bench | 38.2 | 30.1 |\n| GSM8K | 37.9 | 29.4 |\n"
    runs, _ = table_runs(text.replace(" (tok/s)", ""))
    assert [(r.baseline, r.key) for r in runs][:2] == [(True, "mt bench"), (False, "mt bench")]
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    # "AR" inside other words ("AR glasses", "VAR") names nothing.
    assert table_runs("| device | AR glasses tok/s | MTP tok/s |\n|---|---|---|\n| a | 3.1 | 2.0 |\n")[0][0].baseline is not True


def test_a_sentences_baseline_joins_a_table_of_drafting_runs(tmp_path: Path) -> None:
    text = ("Without MTP I get 30.0 t/s on this box. With draft-mtp:\n\n| n-max | tok/s | acceptance |\n|---|---|---|\n"
            "| 1 | 27.5 | 0.71 |\n| 2 | 26.0 | 0.62 |\n| 3 | 24.1 | 0.55 |\n")
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    assert "SLOWER_THAN_BASELINE" not in _causes(tmp_path, text.replace("30.0 t/s", "20.0 t/s"))
    # Two sentences' baselines: which is this table's is not said.
    two = "Without MTP I get 30.0 t/s here and without MTP 18.0 t/s on the laptop.\n" + text.split("\n", 1)[1]
    assert "SLOWER_THAN_BASELINE" not in _causes(tmp_path, two)


def test_runs_compared_within_their_quant_and_context(tmp_path: Path) -> None:
    # A run per row, the quant and the context length their keys: Q8_0 loses at 32k, whatever Q4_K_M does.
    text = ("| quant | context length | mode | tok/s |\n|---|---|---|---|\n| Q4_K_M | 4096 | baseline | 40.0 |\n"
            "| Q4_K_M | 4096 | MTP | 52.0 |\n| Q8_0 | 32768 | baseline | 30.0 |\n| Q8_0 | 32768 | MTP | 26.0 |\n")
    runs, _ = table_runs(text)
    assert {r.key for r in runs} == {"quant=q4 k m, context=4096", "quant=q8 0, context=32768"}
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "quant=q8 0" in cause.message


def test_setting_words_with_an_equals_sign_and_an_ar_column_of_rates(tmp_path: Path) -> None:
    text = "| prompt | MTP=off tk/s | MTP=on tk/s |\n|---|---|---|\n| code | 44.0 | 39.0 |\n"
    assert [(r.baseline, r.speed) for r in table_runs(text)[0]] == [(True, 44.0), (False, 39.0)]
    # "AR" over shares of 1 is an acceptance rate column, not autoregressive decoding's speeds.
    rates = "| n-max | tok/s | AR |\n|---|---|---|\n| 1 | 40.1 | 0.81 |\n| 3 | 44.0 | 0.62 |\n"
    assert [(r.baseline, r.acceptance) for r in table_runs(rates)[0]] == [(False, 0.81), (False, 0.62)]


def test_json_fields_whose_names_carry_the_setting_and_the_unit(tmp_path: Path) -> None:
    # A script's JSON result, pretty-printed: "baseline_tps" and "mtp_tps" are two runs timed in tokens per second.
    text = '{\n  "baseline_tps": 41.2,\n  "mtp_tps": 35.0,\n  "acceptance": 0.71\n}\n'
    assert [(r.baseline, r.speed) for r in table_runs(text)[0] if r.speed] == [(True, 41.2), (False, 35.0)]
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    # A database's benchmark JSON: transactions per second, a blog's "draft" table: no drafter.
    db = '{\n  "baseline_tps": 5120.4,\n  "draft_tps": 4810.2,\n  "p99_ms": 3.1\n}\n'
    assert not compares(table_runs(db)[0]) and _causes(tmp_path, db) == []


def test_a_sentence_that_gives_both_runs(tmp_path: Path) -> None:
    text = "Qwen3.6 27B Q4_K_M on a 3090: 58 t/s without MTP, 52 t/s with MTP (accept 78%).\n"
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    assert _causes(tmp_path, text.replace("58 t/s", "38 t/s")) == []


@pytest.mark.parametrize("text", [
    # a typing test: "draft suggestions" beside no run without drafting
    "Typing test: 38 t/s without autocorrect, 52 t/s with draft suggestions on.\n",
    # a marketing line: speeds of two products, no drafter's absence named
    "The spec sheet says 52 tokens/s for the Pro and 38 tokens/s for the Air.\n",
])
def test_sentences_of_other_software_name_no_runs_to_compare(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []


def test_runs_listed_with_tabs_or_aligned_spaces(tmp_path: Path) -> None:
    text = "MTP off\t52.1 tok/s\nMTP on (n-max 2)\t47.3 tok/s (acceptance 77%)\n"
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    aligned = "baseline          52.1 t/s\nMTP n-max 2       47.3 t/s  (acceptance 77%)\n"
    assert _causes(tmp_path, aligned)[:1] == ["SLOWER_THAN_BASELINE"]


def test_the_draft_length_column_gives_each_row_its_depth(tmp_path: Path) -> None:
    # "draft tokens" 0 is the run without drafting; 4 drafts a step and decodes slower than 2: NMAX_TOO_HIGH.
    text = ("| draft tokens | tok/s | accept |\n|---|---|---|\n| 0 | 40.0 | - |\n| 2 | 47.0 | 0.71 |\n"
            "| 4 | 41.5 | 0.52 |\n")
    assert [(r.baseline, r.depth) for r in table_runs(text)[0]] == [(True, None), (False, 2), (False, 4)]
    assert _causes(tmp_path, text)[:1] == ["NMAX_TOO_HIGH"]


def test_a_blocks_label_gives_the_unit_of_its_bare_values(tmp_path: Path) -> None:
    text = "Results (tok/s):\n  no-spec : 40.1\n  eagle3  : 36.2  (accept len 2.9)\n"
    assert [(r.baseline, r.speed) for r in table_runs(text)[0] if r.speed] == [(True, 40.1), (False, 36.2)]
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    # A label naming no speed: bare values say nothing ("Results:" over scores).
    assert not compares(table_runs("Results:\n  no-spec : 40.1\n  eagle3  : 36.2\n")[0])


_BANNERED = """=== baseline ===
INFO 06-06 14:20:34 [loggers.py:116] Engine 000: Avg prompt throughput: 1124.6 tokens/s, Avg generation throughput: 867.6 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 9.5%, Prefix cache hit rate: 0.5%
INFO 06-06 14:20:44 [loggers.py:116] Engine 000: Avg prompt throughput: 1152.5 tokens/s, Avg generation throughput: 826.0 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 16.3%, Prefix cache hit rate: 0.6%

=== ngram, num_speculative_tokens=4 ===
INFO 06-06 15:20:34 [loggers.py:116] Engine 000: Avg prompt throughput: 1124.6 tokens/s, Avg generation throughput: 610.6 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 9.5%, Prefix cache hit rate: 0.5%
INFO 06-06 15:20:34 [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: 58.8%, Mean acceptance length: 2.96, Accepted: 750 tokens, Drafted: 1276 tokens, Per-position acceptance rate: 0.743, 0.657, 0.564, 0.387
"""


def test_runs_under_a_posters_bannered_labels(tmp_path: Path) -> None:
    # vLLM's own interval lines (vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py) under "=== baseline ===" and
    # "=== ngram ... ===": two runs, the first without speculation, compared by vLLM's generation throughput.
    runs = diagnose(log_files=[_write(tmp_path, _BANNERED)]).logs
    assert [(r.baseline, round(r.speed or 0, 1)) for r in runs] == [(True, 846.8), (False, 610.6)]
    assert _causes(tmp_path, _BANNERED)[:1] == ["SLOWER_THAN_BASELINE"]
    # A field line ("- spec_decode_acceptance_length: 2.73") is no label: one run.
    fields = ("- spec_decode_acceptance_length: 2.73\n- spec_decode_num_drafts: 23975\n- spec_decode_draft_tokens: 71925\n"
              "- spec_decode_accepted_tokens: 41570\n")
    assert len(diagnose(log_files=[_write(tmp_path, fields)]).logs) == 1


# -- a column's unit as its name's last word; "speculative" as another field's technique ----------------------------
# (the seventh set's negative: `column -t` over a database benchmark's baseline_ms / speculative_prefetch_ms columns
# was read as tokens per second of a speculative decoder, SLOWER_THAN_BASELINE)


def test_a_field_names_last_word_gives_its_time_unit(tmp_path: Path) -> None:
    # Lower is better: 388.9 ms is the faster run, 1012.4 ms the slower one, read in seconds, never as tok/s.
    text = ("workload    baseline_ms  mtp_ms  speedup\n"
            "btree-scan  412.3        388.9   1.06\n"
            "hash-join   958.1        1012.4  0.95\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "1.0124 s against 0.9581 s" in cause.message and "tok/s" not in cause.message


@pytest.mark.parametrize("text", [
    # a database benchmark as `column -t` aligns it
    "workload    baseline_ms  speculative_prefetch_ms  speedup\nbtree-scan  412.3        388.9                    1.06\n"
    "hash-join   958.1        1012.4                   0.95\n",
    # a CPU simulator's results: speculative execution and loads
    "| benchmark | baseline IPC | speculative execution IPC |\n|---|---|---|\n| mcf | 0.41 | 0.38 |\n| gcc | 1.12 | 1.05 |\n",
    "kernel, no_spec_loads_ns, speculative_loads_ns\nstream, 812, 790\nchase, 2210, 2305\n",
])
def test_speculative_as_another_fields_technique_ties_nothing(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []


# -- round 5: two Markdown tables pasted back to back; a drafting run no faster than the run without it ---------------
# (GFM: a delimiter row makes the row above it a header, so a second header row under a table's rows starts a new
# table; an app user's "MTP Disabled" / "MTP Enabled" rows, as LM Studio names its toggle)


def test_a_delimiter_row_under_a_row_of_words_starts_the_next_table() -> None:
    text = ("| Setting | Decode |\n|---|---|\n| MTP Disabled | ~21 tokens/s |\n| MTP Enabled | ~20 tokens/s |\n"
            "| Model | MTP Disabled | MTP Enabled |\n|:---|---:|---:|\n| Gemma-4-12B-MTP-GGUF | ~30 tokens/s | ~52 tokens/s |\n")
    found = tables(text)
    assert [t.header for t in found] == [("Setting", "Decode"), ("Model", "MTP Disabled", "MTP Enabled")]
    assert [len(t.rows) for t in found] == [2, 1] and found[1].heading == ""


def test_a_table_with_a_rule_under_every_row_stays_one_table() -> None:
    # Rows of figures between rules are the same table's rows (no row of words above a rule but the header).
    text = "| run | tok/s |\n|---|---|\n| baseline | 30.1 |\n|---|---|\n| mtp n-max 2 | 41.7 |\n|---|---|\n"
    assert [len(t.rows) for t in tables(text)] == [2]


def test_a_drafting_run_as_fast_as_the_run_without_it_is_no_gain(tmp_path: Path) -> None:
    # One model's runs no faster with MTP (the other model of the second table gains: one key is enough).
    text = ("| Setting | Decode |\n|---|---|\n| MTP Disabled | ~21 tokens/s |\n| MTP Enabled | ~21 tokens/s |\n"
            "| Model | MTP Disabled | MTP Enabled |\n|---|---|---|\n| Gemma-4-12B-MTP-GGUF | ~30 tokens/s | ~52 tokens/s |\n")
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "no faster" in cause.message and "best 21 against 21" in cause.message


def test_a_drafting_run_faster_than_the_run_without_it_names_nothing(tmp_path: Path) -> None:
    text = "| Setting | Decode |\n|---|---|\n| MTP Disabled | ~21 tokens/s |\n| MTP Enabled | ~23 tokens/s |\n"
    assert _causes(tmp_path, text) == []


@pytest.mark.parametrize("text", [
    # two benchmark tables of a web framework pasted back to back, "disabled" / "enabled" naming a cache
    "| Setting | Throughput |\n|---|---|\n| Cache Disabled | 1200 req/s |\n| Cache Enabled | 1200 req/s |\n"
    "| Route | Cache Disabled | Cache Enabled |\n|---|---|---|\n| /api/users | 900 req/s | 2400 req/s |\n",
    # a CPU simulator: a branch predictor's speculative IPC no better than its baseline
    "trace    predictor  baseline_ipc  speculative_ipc  speedup\n-------  ---------  ------------  ---------------  -------\n"
    "mcf      gshare     0.62          0.62             1.00\ngcc      tage       1.21          1.21             1.00\n",
])
def test_other_softwares_tables_as_fast_either_way_name_nothing(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []


# -- round 5: pastes that hold a drafter's figures or a drafting run are read, never refused ---------------------------


def test_an_apps_footer_with_the_share_of_draft_tokens_accepted(tmp_path: Path) -> None:
    # LM Studio's message footer shape ("tok/sec", "N% draft tokens accepted"), as apps that copy it print it.
    path = _write(tmp_path, "`⌾ 41 tok/sec · ab 388 tokens · 67.5% draft tokens accepted`\n")
    report = diagnose(log_files=[path])
    assert report.causes == [] and report.logs[0].acceptance == pytest.approx(0.675)


def test_a_vllm_serving_benchmark_without_speculation_is_a_reading(tmp_path: Path) -> None:
    # benchmarks/benchmark_serving.py's block (no "Backend:" line, no Speculative Decoding section): vLLM, no cause.
    text = ("============ Serving Benchmark Result ============\nSuccessful requests:                     200\n"
            "Benchmark duration (s):                  61.04\nTotal input tokens:                      40960\n"
            "Total generated tokens:                  51200\nRequest throughput (req/s):              3.28\n"
            "Output token throughput (tok/s):         838.80\nTotal Token throughput (tok/s):          1509.80\n"
            "---------------Time to First Token----------------\nMean TTFT (ms):                          95.12\n")
    report = diagnose(log_files=[_write(tmp_path, text)])
    assert report.causes == [] and str(report.logs[0].runtime) == "vllm"


def test_sglangs_serving_benchmark_under_the_same_banner_stays_sglangs(tmp_path: Path) -> None:
    text = ("============ Serving Benchmark Result ============\nBackend:                                 sglang\n"
            "Traffic request rate:                    inf\nSuccessful requests:                     200\n"
            "Output token throughput (tok/s):         838.80\n")
    assert str(diagnose(log_files=[_write(tmp_path, text)]).logs[0].runtime) == "sglang"


def test_acceptance_by_n_max_in_a_table_is_read(tmp_path: Path) -> None:
    # A PR's Markdown table of acceptance by the draft length, before and after the change: healthy drafting runs.
    text = "| n_max | acceptance (before) | acceptance (after) |\n|---:|---:|---:|\n| 1 | 91.2% | 93.0% |\n| 2 | 78.4% | 80.1% |\n"
    report = diagnose(log_files=[_write(tmp_path, text)])
    assert report.causes == []
    # Each acceptance column is its own condition: a run per row and column.
    assert [round(log.acceptance or 0, 3) for log in report.logs] == [0.912, 0.93, 0.784, 0.801]


@pytest.mark.parametrize("text", [
    # a newsroom's editorial stats
    "`12 drafts · 4 editors · 82.0% draft posts accepted`\n",
    # an MCMC sampler's acceptance by its number of steps
    "| steps | acceptance rate |\n|---:|---:|\n| 1000 | 23.4% |\n| 5000 | 24.1% |\n",
])
def test_other_softwares_acceptance_figures_are_no_drafters(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []
    path = _write(tmp_path, text)
    try:
        logs = diagnose(log_files=[path]).logs
    except MtpinspectError:
        return  # refused: nothing read
    assert all(log.acceptance is None for log in logs)


# -- round 7: tables sweeping a speculative setting, metrics by row under conditions ------------------------------
# Setting names from the engines' own flags and fields: llama.cpp common/arg.cpp (--draft-max, --draft-p-min /
# --spec-draft-p-min, --spec-draft-n-max), vLLM's SpeculativeConfig (num_speculative_tokens), SGLang's ServerArgs
# (speculative_num_steps, speculative_num_draft_tokens) and its server-info field avg_spec_accept_length.

_P_MIN_SWEEP = ("llama-server -m qwen2.5-14b-q4_k_m.gguf -md qwen2.5-0.5b-q8_0.gguf\n\n"
                "| setting | decode |\n|---|---|\n| `--draft-p-min 0.5` | 31.2 t/s |\n| `--draft-p-min 0.8` | 34.9 t/s |\n"
                "| `--draft-p-min 0.9` | 33.0 t/s |\n")


@pytest.mark.parametrize("text", [
    _P_MIN_SWEEP,
    "Config                    Tokens/s\n--spec-draft-p-min 0.6    28.4\n--spec-draft-p-min 0.9    30.1\n",
    "| speculative_num_steps | output tok/s |\n|---|---|\n| 3 | 182.5 |\n| 5 | 201.7 |\n",
])
def test_a_table_sweeping_a_speculative_setting_is_a_table_of_runs(tmp_path: Path, text: str) -> None:
    runs, _ = table_runs(text)
    assert len(runs) >= 2 and not any(r.baseline for r in runs) and not compares(runs)
    logs = read_runs(_write(tmp_path, text))
    assert len(logs) == len(runs) and all(log.speed is not None for log in logs)  # a run per row, not refused
    assert _causes(tmp_path, text) == []  # settings side by side: nothing to compare against


def test_a_p_min_sweep_names_llama_cpp_by_its_flag(tmp_path: Path) -> None:
    _, engine = table_runs(_P_MIN_SWEEP.split("\n\n", 1)[1])
    assert engine is Engine.llama_cpp


def test_a_draft_max_sweep_slower_when_deeper_is_nmax_too_high(tmp_path: Path) -> None:
    text = "| --draft-max | tg (t/s) |\n|---|---|\n| 4 | 41.0 |\n| 8 | 36.2 |\n| 16 | 30.5 |\n"
    cause, _ = _cause(tmp_path, text, "NMAX_TOO_HIGH")
    assert cause.confidence < 0.8


def test_a_change_column_is_no_speed_of_its_own() -> None:
    runs, _ = table_runs("| Configuration | Token/s | Speed Increase |\n|---|---|---|\n| Without draft | 20.0 | Baseline |\n"
                         "| Draft max 8 | 30.0 | +50% |\n")
    assert [(r.baseline, r.speed, r.key) for r in runs] == [(True, 20.0, ""), (False, 30.0, "")]


@pytest.mark.parametrize(("text", "engine"), [
    ("| Metric | MT-Bench | GSM8K |\n|---|---|---|\n| Accuracy | 0.71 | 0.93 |\n| `avg_spec_accept_length` | 2.95 | 3.61 |\n",
     Engine.sglang),
    ("| | 128 prompts | 512 prompts |\n|---|---|---|\n| Mean acceptance length | 2.41 | 2.38 |\n", Engine.vllm),
])
def test_metrics_by_row_under_columns_of_conditions(tmp_path: Path, text: str, engine: Engine) -> None:
    runs, owner = table_runs(text)
    assert owner is engine and [r.mean_length for r in runs] == [float(c) for c in text.split("|")[-3:-1]]
    assert all(not r.baseline and r.speed is None for r in runs)
    report = diagnose(log_files=[_write(tmp_path, text)])
    assert [c.code for c in report.causes] == [] and report.logs[0].runtime is engine


@pytest.mark.parametrize("text", [
    # a lender's report: an acceptance rate by quarter, no drafter anywhere
    "| Metric | Q1 | Q2 |\n|---|---|---|\n| Loan acceptance rate | 0.62 | 0.58 |\n| Applications | 1200 | 1350 |\n",
    # a CMS's bench: drafts, a baseline and steps, none a speculative setting
    "| Config | Draft saves/s | Steps |\n|---|---|---|\n| baseline | 120 | 3 |\n| --draft-autosave 5 | 98 | 4 |\n",
    # a sampler's settings side by side (no speculative setting's name)
    "| setting | decode |\n|---|---|\n| `--temp 0.7` | 31.2 t/s |\n| `--temp 1.0` | 30.8 t/s |\n",
    # a paper's review table: accept / reject counts by track
    "| Track | Accept | Reject | Acceptance rate |\n|---|---|---|---|\n| Main | 412 | 1630 | 20.2% |\n| Findings | 390 | 1240 | 23.9% |\n",
])
def test_other_softwares_setting_and_acceptance_tables_name_nothing(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []


@pytest.mark.parametrize(("text", "engine"), [
    # SGLang's server arguments as a sweep's columns, its "accept length" beside the throughput
    ("| speculative_num_steps | speculative_eagle_topk | speculative_num_draft_tokens | accept length | throughput (tok/s) |\n"
     "|---|---|---|---|---|\n| 3 | 1 | 4 | 3.1 | 210 |\n| 5 | 4 | 8 | 3.9 | 240 |\n", Engine.sglang),
    # vllm bench serve's result keys as columns, a row per k
    ("| run | spec_decode_acceptance_rate | spec_decode_acceptance_length |\n|---|---|---|\n| k=3 | 62.1 | 2.86 |\n"
     "| k=5 | 48.0 | 3.40 |\n", Engine.vllm),
    # a value swept in the first column with the drafts' acceptance beside the speed, under a line naming the drafter
    ("MTP on, p_min swept:\n\n| p_min | acceptance | t/s |\n|---|---|---|\n| 0.5 | 52% | 30.1 |\n| 0.75 | 68% | 33.4 |\n",
     Engine.llama_cpp),
])
def test_a_sweep_with_acceptance_is_a_run_per_row(tmp_path: Path, text: str, engine: Engine) -> None:
    logs = read_runs(_write(tmp_path, text))
    assert len(logs) == 2 and {log.runtime for log in logs} == {engine}
    assert _causes(tmp_path, text) == []


@pytest.mark.parametrize("text", [
    # an MCMC sampler's step-size sweep: acceptance beside samples per second, no token's pace
    "| step size | acceptance rate | samples/s |\n|---|---|---|\n| 0.1 | 0.92 | 1500 |\n| 0.5 | 0.41 | 1480 |\n| 1.0 | 0.08 | 1490 |\n",
    # a job queue's draft stage: a bare "steps" and "draft" with accepted counts
    "| steps | draft jobs | accepted | jobs/s |\n|---|---|---|---|\n| 2 | 40 | 38 | 12.1 |\n| 4 | 40 | 31 | 9.8 |\n",
    # a rate limiter's token bucket: "tokens/s" refilled, requests accepted (no drafter named anywhere)
    "| burst | refill tokens/s | accept rate |\n|---|---|---|\n| 1 | 5 | 0.05 |\n| 2 | 5 | 0.09 |\n",
    # a benchmark's baseline against a patched build, "accept()" calls per second
    "| Build | accept/s | latency (ms) |\n|---|---|---|\n| baseline | 41000 | 0.9 |\n| patched | 45500 | 0.8 |\n",
])
def test_other_softwares_sweeps_name_nothing(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []


def test_a_drafters_switch_outranks_a_labels_baseline(tmp_path: Path) -> None:
    # "baseline" names the deployment compared against; its MTP column says it drafts (the poster's own words)
    text = ("| config | MTP | tok/s |\n|---|---|---|\n| baseline (prod) | on (n=3) | 30.2 |\n| candidate | on (n=3) | 31.0 |\n"
            "| candidate, MTP off | off | 36.4 |\n")
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed) for r in runs] == [(False, 30.2), (False, 31.0), (True, 36.4)]
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert cause.confidence < 0.8


@pytest.mark.parametrize(("flag", "engine"), [
    ("`--enforce-eager`", Engine.vllm), ("`--gpu-memory-utilization`", Engine.vllm),
    ("`--disable-cuda-graph`", Engine.sglang), ("`--mem-fraction-static`", Engine.sglang),
    ("`--n-gpu-layers`", Engine.llama_cpp), ("`--cache-type-k`", Engine.llama_cpp),
])
def test_an_engines_flag_in_a_tables_header_names_it(flag: str, engine: Engine) -> None:
    text = (f"| config | {flag} | MTP | tok/s |\n|---|---|---|---|\n| a | on | off | 40.0 |\n| b | on | on | 52.0 |\n")
    runs, owner = table_runs(text)
    assert compares(runs) and owner is engine


def test_a_build_flag_table_of_other_software_names_no_engine() -> None:
    # a C project's CI matrix: flags and times, no drafter: no runs, no engine
    text = "| config | `--enable-lto` | build (s) |\n|---|---|---|\n| baseline | off | 412 |\n| lto | on | 498 |\n"
    assert table_runs(text) == ([], None)


def test_a_speculative_settings_column_is_a_rows_setting_not_a_run() -> None:
    # "speculative_eagle_topk" holds values of a setting (SGLang's ServerArgs), not one setting's figures
    text = ("| speculative_num_steps | speculative_eagle_topk | speculative_num_draft_tokens | Mean acceptance length | "
            "output tok/s |\n|---|---|---|---|---|\n| 3 | 1 | 4 | 2.7 | 180.0 |\n| 5 | 4 | 8 | 3.4 | 205.5 |\n")
    runs, _ = table_runs(text)
    assert [(r.speed, r.mean_length, r.baseline) for r in runs] == [(180.0, 2.7, False), (205.5, 3.4, False)]
    assert "speculative_eagle_topk 4" in runs[1].setting


# -- round 8: a drafting column named by no drafter, and acceptance tables of other software --------------------------

# A pull request's comparison as ik_llama.cpp's and llama.cpp's threads write it: the command with its drafter's flags
# (ik_llama.cpp's -mtp and --draft-max, common/arg.cpp's --draft-p-min), then a column per build and draft length whose
# cells carry the speed and, after "@", the share of drafts accepted.
_BUILD_COLUMNS = ("./llama-server -m model-MTP-Q8_0.gguf -ngl 99 -mtp --draft-max N --draft-p-min 0.0\n"
                  "| Prompt | no MTP | old build d=1 | new build d=1 | old build d=3 |\n|---|---:|---:|---:|---:|\n"
                  "| Story | 20.1 t/s | 27.5 t/s @ 88% | 28.0 t/s @ 89% | {story} t/s @ 55% |\n"
                  "| JSON | 22.4 t/s | 31.0 t/s @ 92% | 30.2 t/s @ 91% | {json} t/s @ 57% |\n")


def test_a_column_noting_acceptance_beside_a_baseline_column_drafted(tmp_path: Path) -> None:
    text = _BUILD_COLUMNS.format(story="19.0", json="21.7")
    runs, owner = table_runs(text)
    drafting = [r for r in runs if not r.baseline]
    assert owner is Engine.llama_cpp and len(drafting) == 6 and compares(runs)
    assert {(r.setting, r.acceptance) for r in drafting if r.key.startswith("story")} == \
        {("old build d=1", 0.88), ("new build d=1", 0.89), ("old build d=3", 0.55)}
    # The one condition slower than the run without it under every key: named, whatever the other columns show.
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "'old build d=3'" in cause.message and "19 against 20.1, 21.7 against 22.4" in cause.message
    assert cause.confidence < 0.8


@pytest.mark.parametrize(("story", "json"), [("19.0", "23.9"), ("24.0", "25.5")])
def test_a_condition_slower_under_one_key_only_is_no_slowdown(tmp_path: Path, story: str, json: str) -> None:
    assert _causes(tmp_path, _BUILD_COLUMNS.format(story=story, json=json)) == []


def test_a_power_limit_noted_with_at_beside_a_baseline_is_no_drafter(tmp_path: Path) -> None:
    # llama-bench under GPU power limits, "@ 70%" the limit: no drafter, no draft length in the paste, no runs
    text = ("| test | baseline | limited |\n|---|---:|---:|\n| tg128 | 41.2 t/s | 35.0 t/s @ 70% |\n"
            "| tg256 | 40.8 t/s | 34.1 t/s @ 70% |\n")
    assert table_runs(text) == ([], None)
    assert _causes(tmp_path, text) == []


@pytest.mark.parametrize("text", [
    # a tokenizer benchmark: tokens per second, and the share of inputs its validator accepted
    "| tokenizer | tokens/s | accept rate |\n|---|---|---|\n| bpe-fast | 1200000 | 2% |\n| unigram | 800000 | 3% |\n",
    # a token-bucket rate limiter: tokens refilled per second, requests accepted
    "| limiter | tokens/s | accept rate |\n|---|---|---|\n| strict | 10 | 1.5% |\n| burst | 50 | 4% |\n",
    # a message queue's consumers under load, tokens as its auth tokens
    "queue      tokens/s  acceptance rate\n---------  --------  ---------------\norders     900       3.1%\nbilling    450       2.2%\n",
    # an A/B test of a code assistant's suggestions: users accepting completions, the model's speed beside it
    "| variant | tok/s | accept rate |\n|---|---|---|\n| A (control) | 61.0 | 4.1% |\n| B (new ranker) | 60.2 | 3.2% |\n",
    # a web server's admission control against its baseline: requests, not tokens
    "| policy | accept rate | throughput vs baseline |\n|---|---|---|\n| shed-50 | 2% | -8% (920 vs 1000 req/s) |\n"
    "| shed-90 | 4% | -3% (970 vs 1000 req/s) |\n",
])
def test_acceptance_tables_of_other_software_with_tokens_are_no_drafters(tmp_path: Path, text: str) -> None:
    # An accept rate beside tokens per second is not a drafter's (it was HEAD_DISAGREES at 0.7 through the acceptance
    # columns' reader): the paste names no drafter, no draft length, no engine and no model file.
    assert _causes(tmp_path, text) == []


def test_drafts_beside_tokens_pace_or_a_drafters_word_keep_an_acceptance_table(tmp_path: Path) -> None:
    # The same shape where the header names drafts beside tokens' pace, or the paste names a drafter: a drafter's table,
    # read (its acceptance), and at 2-3% the head is refused (HEAD_DISAGREES), as before.
    drafts = "| prompt | tok/s | draft accepted/total | accept rate |\n|---|---|---|---|\n| a | 30.1 | 2/100 | 2% |\n" \
             "| b | 29.5 | 3/100 | 3% |\n"
    # (a decode speed against the run without speculation beside the acceptance says the same: the speed-up it buys)
    versus = "| backend | accept rate | decode vs baseline |\n|---|---|---|\n| CUDA | 2.5% | -40% (30 vs 50 tok/s) |\n" \
             "| Vulkan | 3% | -35% (32 vs 49 tok/s) |\n"
    named = "EAGLE3 draft head, first try:\n\n| prompt | tokens/s | accept rate |\n|---|---|---|\n| a | 30.1 | 2% |\n" \
            "| b | 29.5 | 3% |\n"
    for text in (drafts, versus, named):
        log = read_log(_write(tmp_path, text))
        assert log.acceptance is not None and log.acceptance <= 0.03
        assert _causes(tmp_path, text)[:1] == ["HEAD_DISAGREES"]


# SGLang's benchmark sweeps (benchmark/dflash/bench_dflash_gsm8k_sweep.py's _print_summary and _format_table): one grid
# per figure under its title, the corner "tp\conc" (tensor-parallel size by concurrency), cells right-aligned with two
# spaces (newer) or Markdown pipes (older), "N/A" where a run is missing, thousands with commas.
def _grid(title: str, rows: list[list[str]], pipes: bool = False) -> str:
    header = ["tp\\conc", "1", "8", "32"]
    if pipes:
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * 4) + " |"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(x[i]) for x in [header, *rows]) for i in range(4)]
        lines = ["  ".join(c.rjust(w) for c, w in zip(header, widths)), "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return f"\n{title}\n" + "\n".join(lines) + "\n"


def _sweep_summary(dflash_32: str, pipes: bool = False) -> str:
    return ("=== DFLASH Sweep Summary ===\nworkload=gsm8k\nskip_baseline=False\n\n=== Backend: fa3 ===\n"
            + _grid("Baseline output tok/s", [["1", "310.50", "2,101.00", "6,880.25"]], pipes)
            + _grid("Baseline request e2e latency p50 (s)", [["1", "6.100", "7.020", "9.850"]], pipes)
            + _grid("DFLASH output tok/s", [["1", "1,020.40", "4,480.10", dflash_32]], pipes)
            + _grid("DFLASH request e2e latency p50 (s)", [["1", "1.900", "3.300", "11.200"]], pipes)
            + _grid("DFLASH accuracy", [["1", "0.940", "0.938", "0.941"]], pipes)
            + _grid("DFLASH acceptance length (mean spec_accept_length)", [["1", "6.210", "6.180", "6.190"]], pipes))


@pytest.mark.parametrize("pipes", [False, True])
def test_a_sweeps_grids_by_tp_and_concurrency(tmp_path: Path, pipes: bool) -> None:
    text = _sweep_summary("7,950.00", pipes)
    runs, owner = table_runs(text)
    assert owner is Engine.sglang and compares(runs)
    by_key = {(r.baseline, r.key): r for r in runs}
    assert len(runs) == 6 and by_key[(True, "tp=1, concurrency=32")].speed == 6880.25
    dflash = by_key[(False, "tp=1, concurrency=8")]
    assert (dflash.speed, dflash.mean_length) == (4480.10, 6.18)  # the acceptance length's grid joins the speed's
    assert _causes(tmp_path, text) == []
    # slower than the baseline at concurrency 32: speculation loses there
    assert _causes(tmp_path, _sweep_summary("5,200.00", pipes))[:1] == ["SLOWER_THAN_BASELINE"]


def test_a_sweeps_grid_with_its_baseline_skipped_is_read_without_a_cause(tmp_path: Path) -> None:
    # --skip-baseline: only the drafter's grid, read (the engine its format's), no comparison, no cause
    text = _grid("DFLASH output tok/s", [["1", "1,164.20", "5,010.00", "15,181.06"], ["2", "N/A", "6,100.50", "18,020.00"]])
    log = read_log(_write(tmp_path, text))
    assert log.runtime is Engine.sglang
    assert len(table_runs(text)[0]) == 5 and _causes(tmp_path, text) == []


def test_a_speedup_grid_under_one_is_a_slowdown(tmp_path: Path) -> None:
    text = _grid("Speedup (DFLASH / baseline)", [["1", "3.120", "2.010", "0.880"]])
    runs, _ = table_runs(text)
    assert {r.speed for r in runs if not r.baseline} == {3.12, 2.01, 0.88}
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]


@pytest.mark.parametrize("text", [
    # a database benchmark's grids: threads by clients, its baseline build's queries per second
    "Baseline QPS\nthreads\\clients     1      32\n---------------  -----  ------\n              4  1,200  18,300\n",
    # a storage cluster's latency by shards and replicas
    "| shards\\replicas | 1 | 3 |\n|---|---|---|\n| 2 | 4.1 ms | 6.0 ms |\n| 8 | 3.2 ms | 5.1 ms |\n",
    # a web framework's throughput grid, a speed but no drafter
    "\nbaseline requests/s\nworkers\\conns  1  64\n-------------  --  ----\n            2  900  14000\n",
])
def test_grids_of_other_software_are_no_runs(tmp_path: Path, text: str) -> None:
    assert table_runs(text) == ([], None)
    assert _causes(tmp_path, text) == []


def test_a_deeper_column_slower_than_a_shallower_one_stays_nmax_too_high(tmp_path: Path) -> None:
    # The slower condition is the deeper draft length beside a shallower one that pays: the setting to change
    # (NMAX_TOO_HIGH), before "that column is slower than the baseline under each key".
    text = ("| bs | no spec | MTP n-max 2 | MTP n-max 4 |\n|---|---|---|---|\n| 1 | 40 t/s | 55 t/s | 38 t/s |\n"
            "| 8 | 200 t/s | 240 t/s | 180 t/s |\n")
    assert _causes(tmp_path, text)[:1] == ["NMAX_TOO_HIGH"]


# -- a table of runs one a row beside the engine's own figure lines (issue 42, round 9) -------------------------------
# llama-server prints "draft acceptance rate = R (A accepted / G generated)" per request (tools/server/server-context.cpp)
# and the "statistics <impl>:" totals (common/speculative.cpp); vLLM its "SpecDecoding metrics:" line
# (v1/spec_decode/metrics.py). A poster pastes the run that works and sums the others up in a table, one backend,
# build or GPU a row (the NextN Vulkan/HIP reports on llama.cpp's tracker take this shape).

_SERVER_LINES = ("draft acceptance rate = 0.74000 (   74 accepted /   100 generated)\n"
                 "statistics mtp: #calls(b,g,a) = 1 99 73, #gen drafts = 99, #acc drafts = 70, #gen tokens = 100, "
                 "#acc tokens = 74,\n")


def test_a_table_of_backends_beside_the_servers_lines_is_judged_row_by_row(tmp_path: Path) -> None:
    text = _SERVER_LINES + ("\n| Backend | MTP | tg t/s | Accept rate |\n|---|---|---|---|\n"
                            "| CUDA | on | 61.2 | **74.0%** (74/100) |\n| SYCL | on | n/a | **0.9%** (1/110) |\n"
                            "| SYCL | off | 40.5 | n/a |\n")
    cause, report = _cause(tmp_path, text, "HEAD_DISAGREES")
    assert report.logs[0].accepted == 74 and report.logs[0].drafted == 100  # the log's run, first, as read
    assert [(log.accepted, log.drafted) for log in report.logs[1:]] == [(74, 100), (1, 110), (None, None)]
    assert any("| SYCL | on |" in line for line in cause.evidence)


def test_a_table_of_gpus_beside_vllms_line_is_judged_row_by_row(tmp_path: Path) -> None:
    text = ("INFO 05-06 06:11:23 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.61, Accepted: 5010 "
            "tokens, Drafted: 6200 tokens, Per-position acceptance rate: 0.850, 0.760, Avg Draft acceptance rate: 80.8%\n\n"
            "| GPU | acceptance rate |\n|---|---|\n| H100 | 80.8% |\n| MI300X | 1.2% |\n")
    _, report = _cause(tmp_path, text, "HEAD_DISAGREES")
    assert report.logs[0].runtime is Engine.vllm and report.logs[0].accepted == 5010
    assert [log.acceptance for log in report.logs[1:]] == pytest.approx([0.808, 0.012])


def test_a_table_of_healthy_backends_beside_the_servers_lines_gives_no_cause(tmp_path: Path) -> None:
    text = _SERVER_LINES + "\n| Build | Accept rate |\n|---|---|\n| b9100 | 73% |\n| b9246 | 75% |\n"
    assert _causes(tmp_path, text) == []


@pytest.mark.parametrize("text", [
    # a load balancer's upstreams: connections accepted of those offered, one backend a row, beside its access log
    '10.0.0.7 - - [06/May/2026:06:11:23 +0000] "GET /health HTTP/1.1" 200 2 "-" "kube-probe/1.29"\n\n'
    "| Backend | Accept rate |\n|---|---|\n| app-1 | 99.1% (991/1000) |\n| app-2 | 0.4% (4/1000) |\n",
    # a CI dashboard's builds: pull requests accepted by the merge queue, one build a row
    "| Build | Accept rate | Queue time |\n|---|---|---|\n| nightly | 92% (46/50) | 12 min |\n| release | 1% (1/100) | 3 h |\n",
])
def test_no_cause_for_tables_of_runs_of_other_software(tmp_path: Path, text: str) -> None:
    assert _causes(tmp_path, text) == []


# -- a run's draft length in its own label or column head (issue 42, round 10) ---------------------------------------
# The engines' and their benchmarks' tables name a run's draft length in its label: llama.cpp's speculative PRs
# compare "draft 4" with "draft 8" (common/arg.cpp's --draft, n_draft; examples/speculative prints "n_draft = 8"),
# "main d=1" with "this PR d=2"; vLLM's benchmark tables sweep num_speculative_tokens; EAGLE's and SGLang's sweeps
# write "k=4". Read where the paste is about speculative decoding (a drafter's flag or word): a k-means "k=8" or a
# "d=3" dimension is other software's.


def test_a_draft_length_in_a_column_head_is_that_runs_depth(tmp_path: Path) -> None:
    # llama.cpp's speculative example, target and draft model: draft 8 decodes slower than draft 4 on chat.
    text = ("./llama-speculative -m target-Q4_K_M.gguf -md draft-Q8_0.gguf --draft 8\n"
            "| prompt | no draft | draft 4 | draft 8 |\n|---|---|---|---|\n"
            "| code | 30.1 t/s | 52.3 t/s | 61.0 t/s |\n| chat | 29.8 t/s | 41.2 t/s | 38.0 t/s |\n")
    runs, _ = table_runs(text)
    assert {(r.setting, r.depth) for r in runs if not r.baseline} == {("draft 4", 4), ("draft 8", 8)}
    assert {r.setting for r in runs if r.baseline} == {"no draft"}
    assert _causes(tmp_path, text)[:1] == ["NMAX_TOO_HIGH"]


def test_a_draft_length_in_a_row_label_is_that_runs_depth(tmp_path: Path) -> None:
    # An EAGLE-3 sweep on SGLang, a row per draft length "k=N" beside the run without speculation.
    text = ("EAGLE-3, sglang.launch_server --speculative-algorithm EAGLE3\n"
            "| setting | output tok/s | accept len |\n|---|---|---|\n| baseline | 95.0 | - |\n"
            "| k=2 | 150.2 | 2.4 |\n| k=4 | 171.3 | 3.1 |\n| k=8 | 160.0 | 3.5 |\n")
    runs, _ = table_runs(text)
    assert [(r.baseline, r.depth) for r in runs] == [(True, None), (False, 2), (False, 4), (False, 8)]
    assert _causes(tmp_path, text)[:1] == ["NMAX_TOO_HIGH"]


@pytest.mark.parametrize(("label", "depth"), [("num_speculative_tokens 3", 3), ("num_speculative_tokens=5", 5),
                                              ("n_draft=8", 8), ("--draft 16", 16), ("MTP d=2", 2)])
def test_the_engines_names_of_a_draft_length_in_a_label(label: str, depth: int) -> None:
    # vLLM's benchmark rows (num_speculative_tokens), llama.cpp's (n_draft, --draft), a PR's "d=2".
    text = (f"vllm serve --speculative-config '{{\"method\": \"mtp\"}}'\n| config | Output tok/s | Mean TPOT (ms) |\n"
            f"|---|---|---|\n| no spec | 80.1 | 12.4 |\n| {label} | 121.7 | 8.2 |\n")
    runs, _ = table_runs(text)  # a run per speed column (tok/s, TPOT), each row's depth on both
    assert {(r.baseline, r.depth) for r in runs} == {(True, None), (False, depth)} and len(runs) == 4


def test_two_builds_at_two_draft_lengths_are_judged_against_the_baseline(tmp_path: Path) -> None:
    # "main d=2" slower than "main d=1" while "this PR d=2" is the fastest: the builds are compared, not the length;
    # main's d=2 is slower than the run without MTP under each prompt.
    text = ("./llama-server -m model-MTP-Q8_0.gguf -mtp --draft-max N\n"
            "| Task | No MTP | main d=1 | this PR d=1 | main d=2 | this PR d=2 |\n|---|---:|---:|---:|---:|---:|\n"
            "| Story | 10.1 t/s | 13.0 t/s @ 90% | 13.2 t/s @ 91% | 9.6 t/s @ 62% | 15.0 t/s @ 86% |\n"
            "| Math | 10.4 t/s | 14.1 t/s @ 94% | 14.0 t/s @ 95% | 10.0 t/s @ 60% | 16.3 t/s @ 90% |\n")
    assert {(r.setting, r.depth) for r in table_runs(text)[0] if not r.baseline and r.key.startswith("story")} == \
        {("main d=1", 1), ("this PR d=1", 1), ("main d=2", 2), ("this PR d=2", 2)}
    cause, _ = _cause(tmp_path, text, "SLOWER_THAN_BASELINE")
    assert "'main d=2'" in cause.message and _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]


@pytest.mark.parametrize("text", [
    # scikit-learn's k-means elbow: k clusters, inertia and silhouette
    "KMeans(n_init=10) on the embeddings\n| clusters | inertia | silhouette | fit (samples/s) |\n|---|---|---|---|\n"
    "| k=2 | 1520.3 | 0.61 | 41000 |\n| k=4 | 880.1 | 0.55 | 38000 |\n| k=8 | 610.7 | 0.42 | 30500 |\n",
    # a vector index's throughput by dimension (faiss IndexFlatL2), "d=3" a dimension
    "faiss IndexFlatL2 search, nq=10000\n| index | d=3 | d=64 | d=128 |\n|---|---|---|---|\n"
    "| Flat | 12000 qps | 8000 qps | 4100 qps |\n| IVF4096,Flat | 52000 qps | 30100 qps | 17000 qps |\n",
    # a physics code's timestep table: draft in its own sense (a draft of the paper), k a wavenumber
    "Draft 2 of the paper, table 3\n| k=1 | k=2 | k=4 |\n|---|---|---|\n| 0.91 | 0.72 | 0.40 |\n",
])
def test_draft_length_words_of_other_software_are_no_runs(tmp_path: Path, text: str) -> None:
    assert table_runs(text) == ([], None)
    assert _causes(tmp_path, text) == []


# -- round 11: SGLang's send_one box tables, a page copy's split cells ----------------------------------------


def _send_one(latency: str, tokens: str, acc: str, speed: str) -> str:
    # python/sglang/test/send_one.py: tabulate(rows, headers=["Latency (s)", "Tokens", "Acc Length",
    # "Speed (token/s)"], tablefmt="pretty"), the values centred.
    return ("+-------------+--------+------------+-----------------+\n"
            "| Latency (s) | Tokens | Acc Length | Speed (token/s) |\n"
            "+-------------+--------+------------+-----------------+\n"
            f"|    {latency}    |  {tokens}   |   {acc}    |      {speed}      |\n"
            "+-------------+--------+------------+-----------------+\n")


def test_sglang_send_one_tables_under_their_settings_are_a_sweep_of_sglangs(tmp_path: Path) -> None:
    # A poster's label line above each send_one table: speculative settings side by side, no run without speculation.
    text = ("FP8 TP = 4, EAGLE3 (3 1 4)\n" + _send_one("3.402", "256", "3.117", "75.25") +
            "FP8 TP = 4, EAGLE3 (7 4 16)\n" + _send_one("3.911", "256", "3.560", "65.46"))
    runs, engine = table_runs(text)
    assert engine is Engine.sglang and [(r.baseline, r.mean_length, r.speed) for r in runs] == \
        [(False, 3.117, 75.25), (False, 3.56, 65.46)]
    report = diagnose(log_files=[_write(tmp_path, text)])
    assert report.causes == [] and report.logs[0].runtime is Engine.sglang


@pytest.mark.parametrize("text", [
    # a CNC controller's feed test: "Acc" an acceleration, its length a travel
    "+--------+---------+------------+-------------+\n| Axis   | Acc     | Length     | Speed (mm/s) |\n"
    "+--------+---------+------------+-------------+\n| X      | 1200    | 300        | 85.0        |\n"
    "+--------+---------+------------+-------------+\n",
    # a bank statement export: an account's number and a statement's length in pages
    "+------------+------------+-----------------+\n| Acc Number | Acc Length | Speed (pages/s) |\n"
    "+------------+------------+-----------------+\n| 11-204     | 12         | 3.5             |\n"
    "+------------+------------+-----------------+\n",
])
def test_acc_length_words_of_other_software_are_no_runs(tmp_path: Path, text: str) -> None:
    assert table_runs(text) == ([], None)
    assert _causes(tmp_path, text) == []


def _split_cells(rows: list[list[str]]) -> str:
    # A browser's copy of a blog's rendered Markdown table: each row's first cell between pipes, each next cell on a
    # line of its own closed by its pipe.
    return "".join(f"| {row[0]} |\n" + "".join(f"{cell} |\n" for cell in row[1:]) for row in rows)


def test_a_tables_cells_split_one_per_line_are_joined_into_rows() -> None:
    text = "Results\n" + _split_cells([["GPU", "Baseline tok/s", "MTP tok/s"], ["RX 7900 XTX", "31.2 t/s", "44.0 t/s"]])
    found = tables(text)
    assert [(t.header, t.rows, t.numbers) for t in found] == \
        [(("GPU", "Baseline tok/s", "MTP tok/s"), (("RX 7900 XTX", "31.2 t/s", "44.0 t/s"),), (5,))]


def test_a_split_cell_table_of_mtp_slower_than_its_baseline(tmp_path: Path) -> None:
    text = ("llama-server -m Qwen3.6-35B-A3B-MTP-Q4_K_M.gguf --spec-type draft-mtp --spec-draft-n-max 3\n"
            "Decode speed, baseline vs MTP\n" +
            _split_cells([["Model", "Quant", "Baseline TPS", "MTP TPS", "Speedup"],
                          ["Qwen 3.6 35B", "Q4_K_M", "52.0 t/s", "47.5 t/s", "-8.7%"],
                          ["Qwen 3.6 27B", "Q4_K_M", "12.1 t/s", "11.0 t/s", "-9.1%"]]))
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    faster = text.replace("47.5 t/s", "60.5 t/s").replace("11.0 t/s", "19.0 t/s")
    assert _causes(tmp_path, faster) == []
    assert [r.baseline for r in table_runs(faster)[0]] == [True, False, True, False]


def test_split_cell_tables_of_other_software_are_no_runs(tmp_path: Path) -> None:
    # A database blog's index benchmark copied the same way: a "Baseline" column, nothing of speculative decoding.
    text = ("Query latency with and without the index\n" +
            _split_cells([["Query", "Baseline (ms)", "With index (ms)"], ["point lookup", "41.0", "0.9"],
                          ["range scan", "380.2", "22.5"]]))
    assert len(tables(text)) == 1
    assert table_runs(text) == ([], None) and _causes(tmp_path, text) == []


def test_base_and_spec_columns_of_one_name_are_the_runs_without_and_with_speculation(tmp_path: Path) -> None:
    # llama.cpp's server-bench speed-bench (tools/server-bench, PR #23869): "base_<figure>" beside "spec_<figure>".
    text = ("category   base_avg_pred_t/s  spec_avg_pred_t/s  decode_speedup  base_avg_latency  spec_avg_latency  accept_rate\n"
            "---------  -----------------  -----------------  --------------  ----------------  ----------------  -----------\n"
            "summary    44.10              39.20              0.89x           8.100s            9.020s            0.7120\n"
            "translate  44.30              40.05              0.90x           7.950s            8.770s            0.7388\n")
    runs, _ = table_runs(text)
    assert [(r.setting, r.baseline, r.key, r.speed, r.acceptance) for r in runs] == [
        ("base_avg_pred_t/s", True, "summary", 44.1, None), ("spec_avg_pred_t/s", False, "summary", 39.2, 0.712),
        ("base_avg_pred_t/s", True, "translate", 44.3, None), ("spec_avg_pred_t/s", False, "translate", 40.05, 0.7388)]
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    # The same under an MTP column and a "Base" one (LM Studio threads' "MTP tok/s | Base tok/s").
    piped = "| Test | MTP tok/s | Base tok/s |\n|---|---:|---:|\n| chat | 9.5 | 24.0 |\n| code | 11.0 | 23.1 |\n"
    assert compares(table_runs(piped)[0]) and _causes(tmp_path, piped)[:1] == ["SLOWER_THAN_BASELINE"]


@pytest.mark.parametrize("text", [
    # a novelist's word counts: a chapter's base text beside its draft
    "| chapter | base words | draft words |\n|---|---|---|\n| 1 | 4100 | 5200 |\n| 2 | 3900 | 3100 |\n",
    # a lone "base" speed beside columns of prompt kinds names no drafter: whose base is not said
    "| quant | base tok/s | code | prose |\n|---|---|---|---|\n| Q4_K_M | 15.1 | 19.7 | 13.7 |\n| Q8_0 | 11.4 | 25.4 | 16.9 |\n",
])
def test_base_columns_without_a_drafters_twin_are_no_runs(tmp_path: Path, text: str) -> None:
    assert not compares(table_runs(text)[0])
    assert _causes(tmp_path, text) == []


def test_a_delimiter_row_of_short_dashes_under_a_shell_pipeline_heads_the_table_below_it(tmp_path: Path) -> None:
    # GFM takes a delimiter cell of one dash or more ("| -- | -- |"); a shell loop with pipes pasted right above the
    # table is no header of it. ollama's server log prints "draft acceptance" (the runner's words), beside "tps".
    text = ('for v in 0.35.0 0.35.1 ; do ollama serve | tee log ; grep "draft acceptance" log | tail -1 ; done\n'
            "| version | tps | draft acceptance |\n| -- | -- | -- |\n"
            "| 0.35.0 | 61.20 | 0.7710 |\n| 0.35.1 | 64.85 | 0.7904 |\n")
    assert [t.header for t in tables(text)][-1] == ("version", "tps", "draft acceptance")
    runs, _ = table_runs(text)
    assert [(r.setting, r.baseline, r.speed, r.acceptance) for r in runs] == \
        [("0.35.0", False, 61.2, 0.771), ("0.35.1", False, 64.85, 0.7904)]
    samples, _ = table_samples(text)  # read as runs, settings side by side: no run without speculation to beat
    assert [s.format for s in samples] == [TABLE_RUNS_FORMAT] * 2 and _causes(tmp_path, text) == []


def test_a_newsrooms_draft_acceptance_under_short_dashes_is_no_run(tmp_path: Path) -> None:
    text = "| desk | drafts | draft acceptance |\n| - | - | - |\n| metro | 41 | 0.62 |\n| sports | 30 | 0.71 |\n"
    assert table_runs(text) == ([], None) and _causes(tmp_path, text) == []


def test_one_drafting_run_by_output_length_is_read_as_runs_by_its_words() -> None:
    # A fork's bench table: one drafter's speed and acceptance by the output length asked for, its header naming drafts
    # ("Draft Accepted/Total") beside tokens' pace. Read by the runs reader (the only one since round 12): its rows name
    # nothing apart (one setting, no key), so they are one run's parts, a line each.
    text = ("| Output Tokens | Speed (tok/s) | Draft Accepted/Total | Accept % |\n|---|---|---|---|\n"
            "| 100 | **81.4** | 60/150 | 40.0% |\n| 400 | **52.9** | 170/700 | 24.3% |\n")
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed) for r in runs] == [(False, 81.4), (False, 52.9)]
    read, _ = table_samples(text)
    assert [(s.format, s.number, s.figures.acceptance) for s in read] == \
        [(TABLE_FORMAT, 3, 0.4), (TABLE_FORMAT, 4, 170 / 700)]


def test_a_baseline_row_under_the_prompt_column_is_every_prompts_baseline(tmp_path: Path) -> None:
    # A PR comment's table: the "Test" column names the run without drafting in its first row, prompts in the others.
    text = ("| Test | Sampling | Decode | Accept rate |\n|---|---|---|---|\n"
            "| Baseline, no draft | temp=0.7 | 30.2 t/s | — |\n"
            "| Story prompt | temp=0.7 | 26.1 t/s | 71.0% |\n"
            "| JSON extraction | temp=0.7 | 27.9 t/s | 80.2% |\n")
    runs, _ = table_runs(text)
    assert compares(runs) and {(r.key, r.baseline) for r in runs} == {
        ("test=story prompt", True), ("test=story prompt", False), ("test=json extraction", True), ("test=json extraction", False)}
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    faster = text.replace("26.1 t/s", "48.0 t/s").replace("27.9 t/s", "52.3 t/s")
    assert _causes(tmp_path, faster) == []


def test_a_baseline_row_among_several_of_its_kind_keys_nothing_new(tmp_path: Path) -> None:
    # Two rows without drafting, each under its own test: no row stands for every key.
    text = ("| Test | Decode | Accept rate |\n|---|---|---|\n| Baseline story | 30.2 t/s | — |\n"
            "| Baseline code | 31.0 t/s | — |\n| Story prompt | 26.1 t/s | 71.0% |\n")
    assert not any(r.key == "test=story prompt" and r.baseline for r in table_runs(text)[0])


def test_a_baseline_row_of_a_load_balancers_table_is_no_run(tmp_path: Path) -> None:
    # nginx's limit_req test: a baseline without limits, then endpoints with their accept rate and requests per second.
    text = ("| Test | Throughput (req/s) | Accept rate |\n|---|---|---|\n| Baseline, no limit | 9100 | — |\n"
            "| /api/login | 4200 | 46.0% |\n| /api/search | 7900 | 86.8% |\n")
    assert not compares(table_runs(text)[0]) and _causes(tmp_path, text) == []  # requests per second: no decode speed


@pytest.mark.parametrize(("plain", "drafting"), [("`24.6 +/- 0.3 t/s`", "`21.0 +/- 0.8 t/s @ 83.5% +/- 4.1%`"),
                                                 ("24.6 ± 0.3 t/s", "21.0 ± 0.8 t/s @ 83.5%")])
def test_a_mode_value_table_of_means_and_spreads(tmp_path: Path, plain: str, drafting: str) -> None:
    # ik_llama.cpp PR comments' smoke tables: a mean and its spread, the acceptance after "@".
    text = (f"| Mode | Value |\n|---|---:|\n| Baseline smoke | {plain} |\n| `--draft-max 2` smoke | {drafting} |\n")
    runs, _ = table_runs(text)
    assert [(r.baseline, r.speed, r.acceptance) for r in runs] == [(True, 24.6, None), (False, 21.0, 0.835)]
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]


def test_a_mode_value_table_of_other_software_is_no_run(tmp_path: Path) -> None:
    # a web server's load test: a mean and its spread in requests per second, "@ 95%" a percentile
    text = ("| Mode | Value |\n|---|---:|\n| Baseline (no cache) | 1200 +/- 40 req/s |\n"
            "| With cache | 1100 +/- 35 req/s @ 95% |\n")
    assert not compares(table_runs(text)[0]) and _causes(tmp_path, text) == []


def _sweep_bench(*rows: tuple[int, float]) -> str:
    # llama-sweep-bench's table (ik_llama.cpp examples/sweep-bench): PP, TG, N_KV, then seconds and speeds.
    head = ("|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
            "|-------|--------|--------|----------|----------|----------|----------|\n")
    return head + "".join(f"|   512 |    128 | {n_kv:6d} |    0.430 |  1190.70 | {128 / s_tg:8.3f} | {s_tg:8.2f} |\n"
                          for n_kv, s_tg in rows)


def test_sweep_bench_tables_without_and_with_mtp_are_compared_by_depth(tmp_path: Path) -> None:
    text = ("Without MTP:\n" + _sweep_bench((0, 43.97), (512, 42.81)) + "\n"
            "With MTP (-mtp --draft-max 2):\n" + _sweep_bench((0, 38.67), (512, 37.62)))
    runs, engine = table_runs(text)
    assert engine is Engine.llama_cpp and [(r.baseline, r.key, r.speed) for r in runs] == [
        (True, "pp=512, tg=128, n kv=0", 43.97), (True, "pp=512, tg=128, n kv=512", 42.81),
        (False, "pp=512, tg=128, n kv=0", 38.67), (False, "pp=512, tg=128, n kv=512", 37.62)]
    assert _causes(tmp_path, text)[:1] == ["SLOWER_THAN_BASELINE"]
    faster = text.replace("38.67", "55.10").replace("37.62", "53.90")
    assert _causes(tmp_path, faster) == []


def test_one_sweep_bench_table_naming_no_drafter_is_a_run_without_speculation(tmp_path: Path) -> None:
    # Its header is llama-sweep-bench's own (the engine's tool says whose), no drafter named: the depths of one run
    # without speculation, nothing to compare them with, no cause (round 12: the runs reader reads it alone).
    text = _sweep_bench((0, 43.97), (512, 42.81))
    runs, engine = table_runs(text)
    assert engine is Engine.llama_cpp and [(r.baseline, r.speed) for r in runs] == [(True, 43.97), (True, 42.81)]
    assert not compares(runs) and _causes(tmp_path, text) == []


# -- round 12: the one table reader reads what the older acceptance-column reader read --------------------------------
# A thread's summary table of topics (ik_llama.cpp discussions compare a drafter with the run without it per prompt
# topic): the header names no figure, the cells carry "t/s" in one row and bare speeds noting acceptance in the next.
_TOPICS = ("| Config | General | Code |\n|---|---|---|\n| Baseline (no MTP) | 101 t/s | 101 t/s |\n"
           "| MTP draft-3, p-min 0.0 | 80 (59%) | 133 (73%) |\n")


def test_a_column_whose_cells_carry_the_speed_unit_is_a_speed_per_key(tmp_path: Path) -> None:
    runs, _ = table_runs(_TOPICS)
    assert [(r.baseline, r.key, r.speed) for r in runs] == [
        (True, "general", 101.0), (True, "code", 101.0), (False, "general", 80.0), (False, "code", 133.0)]
    assert compares(runs)


def test_a_column_of_latencies_and_bare_numbers_is_no_speed(tmp_path: Path) -> None:
    # a web cache's warm and cold times: "ms" and bare numbers, no speed's unit, no drafter
    text = "| Setup | Warm | Cold |\n|---|---|---|\n| Baseline | 120 ms | 340 |\n| With cache | 80 ms | 200 |\n"
    assert not compares(table_runs(text)[0]) and _causes(tmp_path, text) == []


def test_runs_whose_keys_differ_beside_one_without_speculation_are_read_apart(tmp_path: Path) -> None:
    # The same topics with each run's context size: "256K" beside "32K" keys no pair, so nothing is compared; the
    # runs are read (not refused), each apart, and give no cause.
    text = ("| Config | General | Code | Context |\n|---|---|---|---|\n| Baseline (no MTP) | 101 t/s | 101 t/s | 256K |\n"
            "| MTP draft-3, p-min 0.0 | 80 (59%) | 133 (73%) | 32K |\n")
    runs = read_runs(_write(tmp_path, text))
    assert sorted(r.speed for r in runs) == [80.0, 101.0, 101.0, 133.0]
    assert _causes(tmp_path, text) == []


def test_an_acceptance_cells_noted_counts_are_the_runs(tmp_path: Path) -> None:
    # The NextN reports on llama.cpp's tracker write a row's acceptance as its share, then its counts.
    text = ("| Backend | NextN | tg t/s | Accept rate |\n|---|---|---|---|\n| Vulkan | ON | 40.1 | **0.67%** (2/297) |\n"
            "| HIP | ON | 61.0 | 81.2% (134/165) |\n")
    runs, _ = table_runs(text)
    assert [(r.acceptance, r.accepted, r.drafted) for r in runs] == [(0.0067, 2, 297), (0.812, 134, 165)]


def test_a_bare_fraction_is_only_the_share(tmp_path: Path) -> None:
    text = ("| Output Tokens | Speed (tok/s) | Draft Accepted/Total |\n|---|---|---|\n| 100 | 81.4 | 60/150 |\n")
    runs, _ = table_runs(text)
    assert [(r.acceptance, r.accepted, r.drafted) for r in runs] == [(0.4, None, None)]
