"""`mtpinspect diagnose` against the real llama-server: each failure mode, reproduced with a tiny model or
a log, must come out as the first cause."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from gguf_factory import write_nextn_gguf

from mtpinspect.cli._output import Output
from mtpinspect.cli.diagnose import command, render
from mtpinspect.diagnosis import DiagnosisReport, diagnose
from mtpinspect.diagnosis.probe_result import COPY_CLASS, PROBE_CLASSES, ProbeFigure
from mtpinspect.errors import MtpinspectError, ServerError, SourceError
from mtpinspect.jsonable import to_jsonable
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.runtime.server import LlamaServer
from mtpinspect.sweep.prompts import Prompt, load_builtin, load_prompts
from mtpinspect.tiny_drafts import DraftRun
from mtpinspect.tiny_model import (
    TinyModelSpec,
    expected_run,
    mismatched_sidecar,
    spec_for_head_type,
    write_tiny_model,
)

FIXTURES = Path(__file__).resolve().parent / "diagnose_fixtures"
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "mtpinspect" / "schemas" / "diagnose.schema.json").read_text(encoding="utf-8")
)
N_PREDICT = 32
THREADS = ("-t", "1")

# A head that drafts badly only in one stretch of the bigram chain: three of every four tokens in 0..31
# are poisoned. With a short n_predict a prompt walks 16 tokens from its first token, so the code
# prompts (first tokens 35, 41, 38) never meet a poisoned token and the prose prompts (15, 8, 19) mostly do.
CLASS_SPEC = TinyModelSpec(poisoned=tuple(t for t in range(32) if t % 4))
# Its copy.jsonl is the copy class for this model (head_rules.py), whose tokens (first tokens 42, 44, 38)
# walk the stretch the head drafts well, as copied text does for a head that matches its trunk.
CLASS_PROMPTS = FIXTURES / "prompt_classes"
N_PREDICT_SHORT = 16


@pytest.fixture(scope="module")
def server_binary() -> ServerBinary:
    return find_server(build=True, progress=print)


def _model(tmp_path: Path, spec: TinyModelSpec) -> Path:
    return write_tiny_model(tmp_path / "tiny.gguf", spec)[0]


def _diagnose(server: ServerBinary, model: Path, *args: str, **kwargs: object) -> DiagnosisReport:
    report = diagnose(str(model), server=server.path, server_args=(*THREADS, *args), n_predict=N_PREDICT, **kwargs)  # type: ignore[arg-type]
    jsonschema.validate(to_jsonable(report), SCHEMA)
    return report


def _codes(report: DiagnosisReport) -> list[str]:
    return [c.code for c in report.causes]


def _mtp_acceptance(report: DiagnosisReport) -> float:
    assert report.probe is not None
    figures = [f for f in report.probe.mtp_figures() if f.drafted]
    return sum(f.accepted for f in figures) / sum(f.drafted for f in figures)


@pytest.mark.server
def test_zeroed_head_is_a_damaged_head(server_binary: ServerBinary, tmp_path: Path) -> None:
    report = _diagnose(server_binary, _model(tmp_path, TinyModelSpec(head="zeroed")))
    first = report.causes[0]
    assert first.code == "HEAD_QUANTIZED"
    assert any("all zero" in line for line in first.evidence)
    assert "probe" in first.sources and first.confidence_word == "high"
    assert _mtp_acceptance(report) <= 0.05
    assert report.exit_code == 1


@pytest.mark.server
def test_low_bit_head_is_quantized(server_binary: ServerBinary, tmp_path: Path) -> None:
    report = _diagnose(server_binary, _model(tmp_path, spec_for_head_type("TQ1_0")))
    first = report.causes[0]
    assert first.code == "HEAD_QUANTIZED"
    assert any("LOW_BIT_MTP_HEAD" in line for line in first.evidence)
    assert "llama-quantize --tensor-type" in first.fix
    assert _mtp_acceptance(report) <= 0.05
    # The baseline ran: the model loads and decodes normally.
    assert report.probe is not None and all(f.tokens_per_second for f in report.probe.figures if f.n_max is None)


def test_low_bit_head_without_probe_is_a_medium_static_warning(tmp_path: Path) -> None:
    report = diagnose(str(_model(tmp_path, spec_for_head_type("TQ1_0"))), probe=False)
    assert _codes(report) == ["HEAD_QUANTIZED"]
    assert report.causes[0].confidence_word == "medium" and report.causes[0].sources == ("static",)
    assert report.probe is None and report.probe_skipped == "--no-probe"


@pytest.mark.server
@pytest.mark.parametrize("kind", ["embd", "vocab"])
def test_mismatched_sidecar(server_binary: ServerBinary, tmp_path: Path, kind: str) -> None:
    model = _model(tmp_path, TinyModelSpec(layout="sidecar", sidecar_from=mismatched_sidecar(kind)))
    report = _diagnose(server_binary, model)
    first = report.causes[0]
    assert first.code == "SIDECAR_MISMATCH"
    assert "probe" in first.sources and "static" in first.sources
    assert report.probe is not None and all(f.error for f in report.probe.mtp_figures())


@pytest.mark.server
def test_sidecar_without_the_shared_tensors(server_binary: ServerBinary, tmp_path: Path) -> None:
    # A published sidecar shape: the MTP block alone, without token_embd / output_norm, which llama.cpp
    # needs because it loads a draft model as a whole model.
    trunk = _model(tmp_path, TinyModelSpec(nextn=False))
    sidecar = write_nextn_gguf(tmp_path / "mtp-tiny.gguf", sidecar=True, shared=False)
    report = _diagnose(server_binary, trunk)
    first = report.causes[0]
    assert first.code == "SIDECAR_INCOMPLETE" and first.confidence_word == "high"
    assert {"probe", "static"} <= set(first.sources)
    assert any("check_tensor_dims: tensor 'token_embd.weight' not found" in line for line in first.evidence)
    assert "convert_hf_to_gguf.py MODEL_DIR --mtp" in first.fix
    # The failed start is explained, not left as a generic failure.
    assert "MTP_FAILED" not in _codes(report)
    # The same server's own log, pasted as a user would, names the same cause.
    started = subprocess.run(
        [str(server_binary.path), "-m", str(trunk), "-md", str(sidecar), "--spec-type", "draft-mtp", *THREADS,
         "--port", "0"], capture_output=True, text=True, timeout=60)
    assert started.returncode != 0
    log = tmp_path / "server.log"
    log.write_text(started.stdout + started.stderr, encoding="utf-8")
    from_log = diagnose(None, log_files=[log])
    assert _codes(from_log)[0] == "SIDECAR_INCOMPLETE" and from_log.causes[0].sources == ("log",)


@pytest.mark.server
def test_missing_nextn_tensors(server_binary: ServerBinary, tmp_path: Path) -> None:
    report = _diagnose(server_binary, _model(tmp_path, TinyModelSpec(nextn=False)))
    # check calls a glm4moe GGUF without its head MTP_DROPPED_IN_CONVERSION: the family has a head, this file lost it.
    assert report.static is not None and "MTP_DROPPED_IN_CONVERSION" in report.static.report.codes()  # type: ignore[union-attr]
    first = report.causes[0]
    assert first.code == "MTP_WEIGHTS_MISSING"
    assert any("doesn't contain MTP layers" in line for line in first.evidence)


@pytest.mark.server
def test_sidecar_not_passed(server_binary: ServerBinary, tmp_path: Path) -> None:
    model = _model(tmp_path, TinyModelSpec(layout="sidecar"))
    report = _diagnose(server_binary, model, "--spec-type", "draft-mtp")
    first = report.causes[0]
    assert first.code == "SIDECAR_NOT_PASSED"
    assert f"-md {tmp_path / 'mtp-tiny.gguf'}" in first.fix
    assert report.probe is not None and report.probe.as_given is not None
    assert "doesn't contain MTP layers" in (report.probe.as_given.failure or "")
    # With the sidecar passed, the probe's sweep measured the head: it drafts perfectly.
    assert _mtp_acceptance(report) == 1.0


@pytest.mark.server
def test_wrong_spec_type_through_the_command(server_binary: ServerBinary, tmp_path: Path) -> None:
    model = _model(tmp_path, TinyModelSpec())
    out = io.StringIO()
    args = [str(model), "--server", str(server_binary.path), "--n-predict", str(N_PREDICT), "--format", "json",
            "--", *THREADS, "--spec-type", "mtp"]
    from contextlib import redirect_stdout

    with redirect_stdout(out):
        status = command.main(args=args, prog_name="diagnose", standalone_mode=False)
    document = json.loads(out.getvalue())
    jsonschema.validate(document, SCHEMA)
    assert status == 1 and document["exit_status"] == 1
    first = document["causes"][0]
    assert first["code"] == "WRONG_SPEC_TYPE"
    assert "--spec-type draft-mtp" in first["fix"] and "--spec-type mtp" not in first["fix"]
    assert "unknown speculative type: mtp" in document["probe"]["as_given"]["failure"]


@pytest.mark.server
def test_head_that_disagrees(server_binary: ServerBinary, tmp_path: Path) -> None:
    report = _diagnose(server_binary, _model(tmp_path, TinyModelSpec(acceptance="none")))
    assert report.causes[0].code == "HEAD_DISAGREES"
    assert report.static is not None and not report.static.head_defect and not report.static.zero_tensors
    assert _mtp_acceptance(report) == 0.0


@pytest.mark.server
def test_healthy_model(server_binary: ServerBinary, tmp_path: Path) -> None:
    report = _diagnose(server_binary, _model(tmp_path, TinyModelSpec()))
    assert _mtp_acceptance(report) == 1.0
    assert report.probe is not None
    speedups = [f.speedup for f in report.probe.mtp_figures() if f.speedup is not None]
    # Nothing blocks MTP or lowers acceptance; on a tiny model the only cause may be the machine's cost.
    assert set(_codes(report)) <= {"SLOWER_THAN_BASELINE"}
    if "SLOWER_THAN_BASELINE" in _codes(report):
        assert max(speedups) < 0.95 and report.exit_code == 1
        assert any("verification step costs" in line for line in report.causes[0].evidence)
    else:
        assert max(speedups) >= 0.95 and report.exit_code == 0
    out = io.StringIO()
    render(report, Output("md", out))
    assert "## Causes, most likely first" in out.getvalue()


@pytest.mark.server
def test_spec_draft_n_max_without_spec_type_is_mtp_not_enabled(server_binary: ServerBinary, tmp_path: Path) -> None:
    model = _model(tmp_path, TinyModelSpec())
    report = _diagnose(server_binary, model, "--spec-draft-n-max", "3")
    first = report.causes[0]
    assert first.code == "MTP_NOT_ENABLED" and first.confidence_word == "high"
    assert "probe" in first.sources
    assert any("unused tensor blk.2.nextn" in line for line in first.evidence)
    # The fix keeps the user's n-max and adds the missing flag.
    assert "--spec-type draft-mtp --spec-draft-n-max 3" in first.fix
    given = report.probe.as_given if report.probe else None
    assert given is not None and given.started and given.failure is None
    assert given.log is not None and not given.log.drafted_anything
    # Switched on properly, the same head drafts perfectly: nothing but the flag was missing.
    assert _mtp_acceptance(report) == 1.0


def _pooled_run(spec: TinyModelSpec, prompts: list[Prompt], n_max: int, n_predict: int) -> DraftRun:
    """What the probe should measure for one prompt class: the simulation, summed over its prompts."""
    runs = [expected_run(spec, p.text, n_max, n_predict) for p in prompts]
    return DraftRun(drafted=sum(r.drafted for r in runs), accepted=sum(r.accepted for r in runs),
                    steps=sum(r.steps for r in runs),
                    per_position=tuple(sum(column) for column in zip(*(r.per_position for r in runs))))


def _measured(report: DiagnosisReport, n_max: int, prompt_class: str) -> ProbeFigure:
    assert report.probe is not None
    return next(f for f in report.probe.mtp_figures() if f.n_max == n_max and f.prompt_class == prompt_class)


def _assert_matches(figure: ProbeFigure, expected: DraftRun) -> None:
    assert (figure.accepted, figure.drafted, figure.drafts) == (expected.accepted, expected.drafted, expected.steps)
    assert figure.per_position == pytest.approx([n / expected.steps for n in expected.per_position])


@pytest.mark.server
def test_low_acceptance_for_one_prompt_class(server_binary: ServerBinary, tmp_path: Path) -> None:
    prompts = load_prompts(CLASS_PROMPTS)
    expected = {(c, n): _pooled_run(CLASS_SPEC, [p for p in prompts if p.prompt_class == c], n, N_PREDICT_SHORT)
                for c in ("code", "prose") for n in (1, 3)}
    # The fixture does what it is for: code drafts perfectly, prose below half (12 of 32 at n-max 1).
    assert expected["code", 1].acceptance == 1.0
    assert (expected["prose", 1].acceptance or 1.0) < 0.5

    report = diagnose(str(_model(tmp_path, CLASS_SPEC)), server=server_binary.path, server_args=THREADS,
                      n_predict=N_PREDICT_SHORT, prompts=CLASS_PROMPTS)
    jsonschema.validate(to_jsonable(report), SCHEMA)
    assert report.probe is not None and sorted(report.probe.prompt_classes) == ["code", COPY_CLASS, "prose"]
    for (prompt_class, n_max), run in expected.items():
        _assert_matches(_measured(report, n_max, prompt_class), run)

    first = report.causes[0]
    assert first.code == "PROMPT_CLASS"
    prose = expected["prose", 1].acceptance or 0.0
    assert f"code 100%, prose {prose:.0%}" in first.message
    assert any(line.startswith("probe n-max 1 prose: acceptance") for line in first.evidence)
    assert "for prose expect little gain" in first.fix
    # The copy class says the head matches the model: the text is hard, not the head (head_rules.py).
    assert first.evidence[0].startswith(f"probe n-max 1 {COPY_CLASS}: acceptance 1.00")
    assert "the text is hard, not the head" in first.message and first.fix.startswith("leave the head alone")
    # The head is healthy where it drafts: no cause says it is broken.
    assert not {"HEAD_QUANTIZED", "HEAD_DISAGREES"} & set(_codes(report))


@pytest.mark.server
def test_per_position_decay_makes_a_high_n_max_useless(server_binary: ServerBinary, tmp_path: Path) -> None:
    spec = TinyModelSpec(acceptance=0.5)
    report = _diagnose(server_binary, _model(tmp_path, spec))
    builtin = load_builtin(list(PROBE_CLASSES))
    gains = {}
    for prompt_class in PROBE_CLASSES:
        mine = [p for p in builtin if p.prompt_class == prompt_class]
        low, high = _measured(report, 1, prompt_class), _measured(report, 3, prompt_class)
        _assert_matches(low, _pooled_run(spec, mine, 1, N_PREDICT))
        _assert_matches(high, _pooled_run(spec, mine, 3, N_PREDICT))
        # Compounding acceptance: each deeper position is accepted less often than the one before.
        assert high.per_position[0] > high.per_position[1] > high.per_position[2]
        assert low.mean_length is not None and high.mean_length is not None
        gains[prompt_class] = (high.mean_length - low.mean_length) / 2
    # 1 + a vs 1 + a + a^2 + a^3 at a = 0.5: (1.875 - 1.5) / 2 = 0.19 accepted tokens per extra drafted
    # token, well under the 0.35 the rule names (rank.py).
    assert max(gains.values()) == pytest.approx(0.19, abs=0.1)

    # The decay alone names the cause; measuring n-max 3 slower than n-max 1 (timing is the machine's)
    # only raises the confidence. A head that drafts every second token everywhere drafts half of the copy
    # class too: a weak head as well (head_rules.py).
    slower = [c for c in PROBE_CLASSES
              if (_measured(report, 3, c).speedup or 0.0) < (_measured(report, 1, c).speedup or 0.0)]
    assert set(_codes(report)) == {"NMAX_TOO_HIGH", "HEAD_WEAK"}
    weak = next(c for c in report.causes if c.code == "HEAD_WEAK")
    assert weak.evidence[0].startswith(f"probe n-max 1 {COPY_CLASS}: acceptance 0.")
    first = next(c for c in report.causes if c.code == "NMAX_TOO_HIGH")
    assert "probe" in first.sources
    assert first.confidence == (0.7 if slower else 0.45)
    assert first.fix.startswith("--spec-draft-n-max 1")
    assert sorted(line.split(":")[0] for line in first.evidence) == sorted(PROBE_CLASSES)
    for line in first.evidence:
        prompt_class = line.split(":")[0]
        rates = ", ".join(f"{r:.2f}" for r in _measured(report, 3, prompt_class).per_position)
        assert line.endswith(f"per position {rates}")


def _log_without_mtp(server_binary: ServerBinary, tmp_path: Path) -> Path:
    """A real llama-server log of a model with a head, run without --spec-type."""
    log = tmp_path / "server.log"
    with LlamaServer(server_binary, _model(tmp_path, TinyModelSpec()), list(THREADS), log_path=log) as server:
        offset = server.log_since(0)[1]
        server.complete("def add(a, b):", n_predict=8)
        server.wait_for_log(offset)
    return log


@pytest.mark.server
def test_llama_server_log_where_mtp_was_not_enabled(server_binary: ServerBinary, tmp_path: Path) -> None:
    log = _log_without_mtp(server_binary, tmp_path)
    report = diagnose(log_files=[log])
    jsonschema.validate(to_jsonable(report), SCHEMA)
    first = report.causes[0]
    assert first.code == "MTP_NOT_ENABLED"
    assert "--spec-type draft-mtp" in first.fix
    assert any("nextn" in line for line in first.evidence)
    assert report.probe is None and report.model is None


def test_vllm_log_with_zero_accepted_tokens() -> None:
    out = io.StringIO()
    from contextlib import redirect_stdout

    with redirect_stdout(out):
        status = command.main(args=["--log", str(FIXTURES / "vllm_zero_acceptance.log"), "--format", "json"],
                              prog_name="diagnose", standalone_mode=False)
    document = json.loads(out.getvalue())
    jsonschema.validate(document, SCHEMA)
    assert status == 1
    first = document["causes"][0]
    assert first["code"] == "HEAD_QUANTIZED"
    assert any("quantization=compressed-tensors" in line for line in first["evidence"])
    assert document["logs"][0]["kind"] == "vllm"
    assert (document["logs"][0]["accepted"], document["logs"][0]["drafted"]) == (0, 758 + 768 + 432)


@pytest.mark.server
def test_bad_input_is_one_line(server_binary: ServerBinary, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such log file"):
        diagnose(log_files=[tmp_path / "missing.log"])
    garbage = tmp_path / "notes.txt"
    garbage.write_text("hello\nworld\n", encoding="utf-8")
    with pytest.raises(MtpinspectError, match="no line means anything to this tool"):
        diagnose(log_files=[garbage])
    with pytest.raises(MtpinspectError, match="give a MODEL"):
        diagnose()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(MtpinspectError) as caught:
        diagnose(str(broken), server=server_binary.path)
    assert "\n" not in str(caught.value)


@pytest.mark.server
def test_a_model_the_server_cannot_run_is_a_server_error(server_binary: ServerBinary, tmp_path: Path) -> None:
    # An argument llama-server rejects stops the baseline too: nothing can be diagnosed, the input is wrong.
    with pytest.raises(ServerError, match="even without MTP.*--no-such-flag") as caught:
        diagnose(str(_model(tmp_path, TinyModelSpec())), server=server_binary.path,
                 server_args=(*THREADS, "--no-such-flag"), n_predict=N_PREDICT)
    assert "\n" not in str(caught.value)
