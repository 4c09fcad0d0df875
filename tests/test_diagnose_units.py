"""diagnose's parsers and ranking rule on real files (logs, metrics pages) without a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtpinspect.causes import CAUSES, MECHANISM_WEIGHT, Cause
from mtpinspect.diagnosis import diagnose
from mtpinspect.diagnosis.rank import rank
from mtpinspect.errors import FormatError, UsageError
from mtpinspect.logread.runs import read_log
from mtpinspect.runtime.flags import SPEC_FLAGS, ServerArgs
from mtpinspect.vocabulary import Mechanism

FIXTURES = Path(__file__).resolve().parent / "diagnose_fixtures"

LLAMACPP_METRICS = """\
# HELP llamacpp:spec_decode_num_draft_tokens_total Speculative: Total draft tokens generated
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 300
llamacpp:spec_decode_num_accepted_tokens_total 0
llamacpp:spec_decode_num_drafts_total 100
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 0
llamacpp:tokens_predicted_total 400
"""


def test_vllm_intervals_are_summed() -> None:
    log = read_log(FIXTURES / "vllm_decay.log")
    assert (log.kind, log.accepted, log.drafted) == ("vllm", 524 + 508, 3200)
    assert log.per_position == pytest.approx((0.755, 0.38, 0.145, 0.01))
    assert log.quantization is None and log.spec_tokens == 4


def test_vllm_decay_names_nmax_too_high() -> None:
    report = diagnose(log_files=[FIXTURES / "vllm_decay.log"])
    assert [c.code for c in report.causes] == ["NMAX_TOO_HIGH"]
    # 0.755 and 0.38 tokens per step still pay for their drafts (WORTH_DRAFTING, 0.35); 0.145 and 0.01 do not
    assert report.causes[0].fix == f"num_speculative_tokens 2 (measured by the run in {FIXTURES / 'vllm_decay.log'})"


def test_saved_metrics_page_with_zero_acceptance(tmp_path: Path) -> None:
    page = tmp_path / "metrics.txt"
    page.write_text(LLAMACPP_METRICS, encoding="utf-8")
    log = read_log(page)
    assert (log.kind, log.runtime, log.drafted, log.accepted, log.mean_length) == ("metrics", "llama.cpp", 300, 0, 1.0)
    report = diagnose(log_files=[page])
    # No model to read and no quantization named: a head that disagrees, at medium confidence.
    assert report.causes[0].code == "HEAD_DISAGREES" and report.causes[0].confidence_word == "medium"


def test_sglang_page_without_counters(tmp_path: Path) -> None:
    page = tmp_path / "sglang.prom"
    page.write_text('sglang:spec_accept_length{tp_rank="0"} 2.6\nsglang:spec_accept_rate{tp_rank="0"} 0.8\n', encoding="utf-8")
    log = read_log(page)
    assert (log.runtime, log.drafted, log.acceptance, log.mean_length) == ("sglang", None, 0.8, 2.6)
    assert diagnose(log_files=[page]).causes == []


def test_context_near_limit_from_a_llama_server_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "srv    load_model: initializing, n_slots = 1, n_ctx_slot = 256, kv_unified = 'false'\n"
        "slot print_timing: id  0 | task 1 | draft acceptance = 0.80000 (   40 accepted /    50 generated), mean len =  2.60\n"
        "slot      release: id  0 | task 1 | stop processing: n_tokens = 250, truncated = 0\n",
        encoding="utf-8",
    )
    report = diagnose(log_files=[log])
    assert [c.code for c in report.causes] == ["CONTEXT_NEAR_LIMIT"]
    assert "-c 4096" in report.causes[0].fix


def test_empty_and_wrong_logs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(FormatError, match="empty log"):
        read_log(empty)
    with pytest.raises(FormatError, match="looks like a /metrics page"):
        read_log(_write(tmp_path / "page.prom", "llamacpp:x 1\nnot a sample at all\n"))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_flags_alone() -> None:
    settings = ServerArgs.of(["-t", "4", "--spec-type", "mtp", "--temp=0.7", "--spec-draft-p-min", "0.8"]).checked()
    assert (settings.spec_type, settings.temperature, settings.p_min) == ("mtp", 0.7, 0.8)
    assert settings.without(*SPEC_FLAGS).args == ("-t", "4", "--temp=0.7", "--spec-draft-p-min", "0.8")
    with pytest.raises(UsageError, match="expects a value"):
        ServerArgs.of(["--spec-type"]).checked()


def test_ranking_rule() -> None:
    slow = Cause("SLOWER_THAN_BASELINE", 0.95, "m", (), "f", ("probe",))
    temp = Cause("HIGH_TEMPERATURE", 0.5, "m", (), "f", ("args",))
    zero = Cause("HEAD_DISAGREES", 0.6, "m", (), "f", ("log",))
    again = Cause("HEAD_DISAGREES", 0.5, "m2", ("e",), "f2", ("probe",))
    ranked = rank([slow, temp, zero, again])
    # 0.9 x (1 - 0.4 x 0.5) = 0.72 > 0.5 x 0.95 = 0.475 > 0.6 x 0.5 = 0.3
    assert [c.code for c in ranked] == ["HEAD_DISAGREES", "SLOWER_THAN_BASELINE", "HIGH_TEMPERATURE"]
    assert ranked[0].confidence == pytest.approx(0.8) and ranked[0].sources == ("log", "probe")
    assert set(MECHANISM_WEIGHT) == set(Mechanism) == {kind.mechanism for kind in CAUSES.values()}


def test_a_wrapped_table_cell_keeps_its_line_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    # A cause's evidence is one item per line: wrapping a narrow column must not run two items together
    # (tabulate 0.9's maxcolwidths joins a cell's lines before it wraps them).
    import io

    from mtpinspect.cli._output import Output

    monkeypatch.setenv("COLUMNS", "60")
    out = io.StringIO()
    evidence = "0 accepted of 692 drafted tokens (0.0%)\n" + "SpecDecoding metrics: Mean acceptance length: 1.00 " * 3
    Output("table", out).table([{"code": "MTP_WEIGHTS_QUANTIZED", "evidence": evidence}])
    lines = out.getvalue().splitlines()
    assert any(line.rstrip().endswith("(0.0%)") for line in lines), lines
    assert any(line.split("  ")[-1].strip().startswith("SpecDecoding metrics:") for line in lines), lines
    assert max(len(line) for line in lines) <= 60, lines


_UNUSED_HEAD = ("load_tensors: loading model tensors, this can take a while... (mmap = true)\n"
                "model has unused tensor blk.48.nextn.eh_proj.weight (size = 67108864 bytes) -- ignoring\n"
                "model has unused tensor blk.48.nextn.enorm.weight (size = 16384 bytes) -- ignoring\n"
                "model has unused tensor blk.48.nextn.hnorm.weight (size = 16384 bytes) -- ignoring\n")


def test_unused_nextn_tensors_without_a_command_line_give_both_readings(tmp_path: Path) -> None:
    # A loader's lines alone do not show whether MTP was asked for: no run without MTP at high confidence, but
    # both readings (MTP off, or a build without the graph) and the run that decides.
    bare = tmp_path / "bare.log"
    bare.write_text(_UNUSED_HEAD, encoding="utf-8")
    causes = diagnose(log_files=[bare]).causes
    assert [c.code for c in causes[:2]] == ["MTP_NOT_ENABLED", "NO_MTP_GRAPH"]
    assert all(c.confidence_word != "high" for c in causes)
    assert any("--spec-type draft-mtp" in line and "decides" in line for line in causes[0].evidence)
    # The command line shows the run without MTP: then the reading is certain.
    shown = tmp_path / "shown.log"
    shown.write_text("$ llama-server -m mimo-v2.5-Q4_K_M.gguf -c 8192\n" + _UNUSED_HEAD, encoding="utf-8")
    (first, *_) = diagnose(log_files=[shown]).causes
    assert first.code == "MTP_NOT_ENABLED" and first.confidence_word == "high"


# vLLM V1's SpecDecoding line (vllm/v1/spec_decode/metrics.py, SpecDecodingLogging.log): per-position rates are the
# accepted tokens each draft position adds per step. Figures written for these tests (not in cases/logs).
_SPEC_LINE = ("INFO 03-02 10:11:12 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: {mean:.2f}, "
              "Accepted throughput: 40.00 tokens/s, Drafted throughput: 80.00 tokens/s, Accepted: {acc} tokens, "
              "Drafted: {drafted} tokens, Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {pct:.1f}%\n")


def _spec_log(tmp_path: Path, rates: list[float], drafts: int = 400) -> Path:
    accepted = round(sum(rates) * drafts)
    path = tmp_path / "vllm.log"
    path.write_text(_SPEC_LINE.format(mean=1 + sum(rates), acc=accepted, drafted=drafts * len(rates),
                                      rates=", ".join(f"{r:.3f}" for r in rates),
                                      pct=100 * accepted / (drafts * len(rates))), encoding="utf-8")
    return path


def test_deepest_position_just_under_the_floor_is_no_nmax_cause(tmp_path: Path) -> None:
    # The last position adds 0.33 tokens a step, the two deepest 0.38 on average: cutting the draft gains nothing.
    assert diagnose(log_files=[_spec_log(tmp_path, [0.86, 0.64, 0.43, 0.33])]).causes == []


def test_a_tail_under_the_floor_is_nmax_too_high(tmp_path: Path) -> None:
    # The two deepest positions add 0.25 tokens per drafted token: n-max past the pay-off.
    report = diagnose(log_files=[_spec_log(tmp_path, [0.78, 0.52, 0.30, 0.20])])
    assert [c.code for c in report.causes] == ["NMAX_TOO_HIGH"]
    assert report.causes[0].fix.startswith("num_speculative_tokens 2 ")
