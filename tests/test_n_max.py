"""One source for the n-max advice (runtime/n_max.py): check's figure is the rule of thumb, or a sweep's
measured one with --sweep-report; tiny-model's is what its design gives (the constructed model) or the rule of
thumb (the trained one); each says which. Real files, the real CLI; no llama-server runs here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mtpinspect.jsonable import schema_header
from mtpinspect.runtime.n_max import RULE_OF_THUMB_N_MAX, WORTH_DRAFTING, expected_from_design
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model
from mtpinspect.trained_model import SHIPPED_GGUF
from mtpinspect.vocabulary import NMaxSource


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "mtpinspect", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "400"})
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    return done


@pytest.mark.parametrize(("lengths", "n_max"), [
    ({1: 2.0, 2: 3.0, 3: 3.94, 4: 4.85}, 4),  # every draft accepted: as deep as listed
    ({1: 1.69, 2: 2.13, 3: 2.54, 4: 2.75}, 3),  # n-max 4 adds 0.21 per drafted token
    ({1: 1.49, 2: 1.73, 3: 1.82, 4: 1.93}, 1),
    ({1: 1.0, 2: 1.0}, None),  # nothing accepted: leave MTP off
])
def test_the_design_figure_is_the_deepest_n_max_whose_drafts_pay(lengths: dict[int, float], n_max: int | None) -> None:
    advice = expected_from_design(lengths)
    assert (advice.n_max, advice.source, advice.measured) == (n_max, NMaxSource.design, False)
    assert advice.said.startswith(f"n-max {n_max if n_max else 'off'}: expected from the model's design")
    assert str(WORTH_DRAFTING) in advice.why and "`mtpinspect sweep MODEL` measures" in advice.why


def test_tiny_model_says_its_figure_is_the_designs(tmp_path: Path) -> None:
    done = _cli("tiny-model", str(tmp_path / "half.gguf"), "--acceptance", "0.5", "--format", "json")
    doc = json.loads(done.stdout)
    lengths = {row["n_max"]: row["mean_length"] for row in doc["expected"]}
    assert doc["n_max"]["source"] == "expected-from-design" and doc["n_max"]["measured"] is False
    assert doc["n_max"]["why"] == expected_from_design(lengths, str(tmp_path / "half.gguf")).why
    assert doc["n_max"]["n_max"] == 1 and doc["command"].endswith("--spec-type draft-mtp --spec-draft-n-max 1")
    shown = _cli("tiny-model", str(tmp_path / "perfect.gguf"), "--force").stdout
    assert "--spec-draft-n-max 4\nn-max 4: expected from the model's design" in shown


@pytest.mark.skipif(not SHIPPED_GGUF.is_file(), reason="the built-in trained model is not here")
def test_the_trained_model_gets_the_rule_of_thumb(tmp_path: Path) -> None:
    doc = json.loads(_cli("tiny-model", "--trained", str(tmp_path / "trained.gguf"), "--format", "json").stdout)
    assert (doc["n_max"]["n_max"], doc["n_max"]["source"]) == (RULE_OF_THUMB_N_MAX, "rule-of-thumb")
    assert doc["command"].endswith(f"--spec-draft-n-max {RULE_OF_THUMB_N_MAX}")
    assert doc["n_max"]["why"].startswith("a rule of thumb, nothing measured")


def test_check_says_rule_of_thumb_and_a_sweep_report_wins(tmp_path: Path) -> None:
    (model,) = write_tiny_model(tmp_path / "tiny-F32.gguf", TinyModelSpec())
    doc = json.loads(_cli("check", str(model), "--no-verify", "--format", "json").stdout)
    advice = doc["app_n_max"]
    assert (advice["n_max"], advice["source"], advice["measured"]) == (RULE_OF_THUMB_N_MAX, "rule-of-thumb", False)
    assert f"`mtpinspect sweep {model}` measures the best one" in advice["why"]
    assert doc["runtimes"]["llama.cpp"]["command"].endswith(f"--spec-draft-n-max {RULE_OF_THUMB_N_MAX}")
    shown = _cli("check", str(model), "--no-verify").stdout
    assert f"n-max {RULE_OF_THUMB_N_MAX}: a rule of thumb, nothing measured" in shown

    # A sweep's report.json as `mtpinspect sweep` writes its header and recommendation.
    report = tmp_path / "report.json"
    report.write_text(json.dumps({**schema_header("sweep"), "model": str(model),
                                  "recommendation": {"n_max": 3, "reason": "n-max 3 is fastest beyond noise in 4 of 4 "
                                                     "classes", "measured": True}}))
    doc = json.loads(_cli("check", str(model), "--no-verify", "--sweep-report", str(report), "--format", "json").stdout)
    advice = doc["app_n_max"]
    assert (advice["n_max"], advice["source"], advice["measured"]) == (3, "measured", True)
    assert advice["why"] == f"measured by the sweep in {report}: n-max 3 is fastest beyond noise in 4 of 4 classes"
    assert doc["runtimes"]["ollama"]["setting"] == "PARAMETER draft_num_predict 3"
