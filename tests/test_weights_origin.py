"""Who lost the MTP weights: a config that announces MTP layers over a checkpoint without them is worded
by the checkpoint's origin (inspection/origin.py: the maker never published them, a derivative dropped
them, or unknown).

The checkpoint is the real GLM-5 config (cases/glm-5-nvfp4-no-mtp/config.json announces one nextn layer
after 78) over a safetensors stand-in without layer 78, served over the loopback Hub under a maker's
org, a derivative's org, and read from a plain local folder, with and without a derivative's card.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from casekit import CASES_ROOT, safetensors_header
from hubstub import HubStub

import mtpinspect

CONFIG = CASES_ROOT / "glm-5-nvfp4-no-mtp" / "config.json"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("no-mtp-weights")
    shutil.copy(CONFIG, folder / "config.json")
    header, _ = safetensors_header({"tensors": [
        ["model.embed_tokens.weight", "BF16", [154880, 6144]],
        ["model.layers.77.input_layernorm.weight", "BF16", [6144]],
        ["model.norm.weight", "BF16", [6144]],
        ["lm_head.weight", "BF16", [154880, 6144]],
    ]})
    (folder / "model.safetensors").write_bytes(header)
    return folder


def _missing(report: mtpinspect.CheckReport) -> tuple[str, tuple[str, ...]]:
    finding = next(f for f in report.findings if f.code == "MTP_WEIGHTS_MISSING")
    return finding.message, finding.evidence


@pytest.mark.parametrize(
    ("repo", "said", "origin"),
    [
        ("zai-org/GLM-5", "zai-org, the maker, never published the MTP weights in this release",
         "origin: maker (zai-org), decided by the Hub repo id"),
        ("someone/GLM-5-NVFP4", "this derivative by someone dropped the head in quantization or conversion",
         "origin: third-party (someone), decided by the Hub repo id"),
    ],
)
def test_missing_weights_worded_by_origin(snapshot: Path, repo: str, said: str, origin: str) -> None:
    with HubStub() as stub:
        stub.add_repo(repo, {p.name: p for p in snapshot.iterdir()})
        report = mtpinspect.check(repo, endpoint=stub.url)
    message, evidence = _missing(report)
    assert message.startswith("config announces 1 MTP layer(s) but the checkpoint has weights for 0: ")
    assert said in message and any(origin in line for line in evidence), (message, evidence)
    assert report.runtimes["vllm"].status == "unsupported" and report.exit_code == 1


def test_missing_weights_of_unknown_origin(snapshot: Path) -> None:
    message, evidence = _missing(mtpinspect.check(str(snapshot)))
    assert "cannot be told (nothing says who made this checkpoint)" in message
    assert "origin unknown: no signal tells who made this checkpoint" in evidence


def test_missing_weights_of_a_folder_whose_card_declares_a_quantization(snapshot: Path, tmp_path: Path) -> None:
    folder = tmp_path / "GLM-5-NVFP4"
    shutil.copytree(snapshot, folder)
    (folder / "README.md").write_text("---\nbase_model: zai-org/GLM-5\nbase_model_relation: quantized\n---\n")
    message, evidence = _missing(mtpinspect.check(str(folder)))
    assert "this derivative dropped the head in quantization or conversion" in message
    assert "origin: third-party, decided by the model card" in evidence
