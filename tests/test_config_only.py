"""A local folder with a config and no weights (`hf download REPO --include "*.json"` without an index, or a
download that left the shards out): check cannot tell whether the head is there, and says so (NO_WEIGHT_FILES,
"MTP undetermined", the runtimes unknown, exit 1 as every undetermined verdict) with what to add; with the index
the head is judged from it. Real folders made from the real-world cases, the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from casekit import load_cases, materialize
from hubstub import HubStub

import mtpinspect

SCHEMA = json.loads((Path(mtpinspect.__file__).parent / "schemas" / "check.schema.json").read_text())
CASES = {case.id: case for case in load_cases()}


def _folder(tmp_path: Path, case_id: str, keep: str) -> Path:
    """The case's files as a partial download: only the names that end in ``keep``."""
    whole = materialize(CASES[case_id], tmp_path / "whole" / case_id)
    folder = tmp_path / case_id
    folder.mkdir()
    for path in whole.iterdir():
        if path.name.endswith(keep):
            shutil.copyfile(path, folder / path.name)
    return folder


def _check(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "mtpinspect", "check", *args, "--format", "json"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    return done.returncode, doc


@pytest.mark.parametrize(("case_id", "said"), [
    ("deepseek-v3", "config.json declares 1 MTP layer(s)"),
    # Qwen3-Next's config names no MTP depth: only its tensors would show the head.
    ("qwen3-next-80b-a3b", "config.json names no MTP depth (a qwen3_next head shows only in its tensors)"),
])
def test_a_config_without_weights_is_undetermined(tmp_path: Path, case_id: str, said: str) -> None:
    folder = _folder(tmp_path, case_id, "config.json")
    assert [p.name for p in folder.iterdir()] == ["config.json"]
    code, doc = _check(str(folder))
    assert code == 1 and doc["usable"] is False
    assert doc["verdict"].startswith(f"MTP undetermined: {said}, and this folder has no weight files")
    (finding,) = [f for f in doc["findings"] if f["code"] == "NO_WEIGHT_FILES"]
    assert finding["severity"] == "warning" and "cannot be told (config only)" in finding["message"]
    assert 'hf download ORG/NAME --include "*.json"' in finding["message"]  # what to add
    assert "MTP_WEIGHTS_MISSING" not in [f["code"] for f in doc["findings"]]
    assert {name: r["status"] for name, r in doc["runtimes"].items() if name != "transformers"} == {
        "vllm": "unknown", "sglang": "unknown", "llama.cpp": "unknown"}
    assert doc["runtimes"]["vllm"]["reason"] == "cannot tell: no weight files in the folder (config only)"


def test_a_config_that_declares_no_head_is_still_no_mtp(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "kimi-k2-instruct", "config.json")  # num_nextn_predict_layers 0
    code, doc = _check(str(folder))
    assert code == 1 and doc["verdict"].startswith("MTP not usable") and "NO_MTP" in [f["code"] for f in doc["findings"]]


def test_the_index_alone_tells_whether_the_head_is_there(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "glm-5.1", ".json")  # config and index: what --include "*.json" downloads
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors.index.json"]
    code, doc = _check(str(folder))
    assert code == 0 and doc["verdict"].startswith("MTP usable (1 MTP layer(s), checkpoint)")
    (unread,) = [f for f in doc["findings"] if f["code"] == "HEADERS_NOT_READ"]
    assert "not in this folder: its index names them, the download left them out" in unread["message"]
    assert unread["evidence"] == ["model-00003-of-00003.safetensors"]


def test_on_the_hub_the_listing_is_the_whole_repo(tmp_path: Path) -> None:
    """A Hub repo with a config and no weights lacks them: missing, not undetermined."""
    folder = _folder(tmp_path, "deepseek-v3", "config.json")
    with HubStub() as stub:
        stub.add_repo("acme/config-only", {"config.json": folder / "config.json"})
        code, doc = _check("acme/config-only", env={"HF_ENDPOINT": stub.url})
    assert code == 1 and "MTP_WEIGHTS_MISSING" in [f["code"] for f in doc["findings"]]
    assert "NO_WEIGHT_FILES" not in [f["code"] for f in doc["findings"]]
