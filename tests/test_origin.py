"""Who made a checkpoint (inspection/origin.py): each signal, read from the layouts users really have.

The checkpoints are the published tensor lists of DeepSeek-V3.2 and DeepSeek-V4-Flash (cases/), their
files cut after the header, so that huggingface_hub itself can download them from the loopback Hub into
the HF cache and into an `hf download --local-dir` folder: the layouts those folders have are the ones
huggingface_hub 2.4 writes, not ones written here. Derivatives are the same files under a model card that
declares them a quantization (as third-party repos do), or the real third-party compressed-tensors case.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from casekit import load_cases, materialize
from hubstub import HubStub
from huggingface_hub import snapshot_download

import mtpinspect
from mtpinspect.errors import FormatError
from mtpinspect.formats.card import parse_card
from mtpinspect.jsonable import to_jsonable
from mtpinspect.sources.provenance import local_download

CASES = {c.id: c for c in load_cases()}
# DeepSeek-V3.2's own card names its base model (deepseek-ai/DeepSeek-V3.2-Exp-Base) and no relation.
MAKER_CARD = "---\nlicense: mit\nlibrary_name: transformers\nbase_model:\n- deepseek-ai/DeepSeek-V3.2-Exp-Base\n---\n\n# DeepSeek-V3.2\n"
# What a third-party quantization's card says (the Hub's model tree reads these keys).
DERIVATIVE_CARD = ("---\nlicense: mit\nbase_model: deepseek-ai/DeepSeek-V3.2\nbase_model_relation: quantized\ntags:\n- fp8\n---\n\n"
                   "# DeepSeek-V3.2 FP8, re-quantized from the BF16 weights\n")


def _cut(case_id: str, dest: Path, card: str | None = None) -> Path:
    """A case's repo with its weight files cut after the header (small enough to download), plus a card."""
    folder = materialize(CASES[case_id], dest, sparse=False)
    if card is not None:
        (folder / "README.md").write_text(card)
    return folder


def _serve(stub: HubStub, repo: str, folder: Path, **kwargs: object) -> str:
    return stub.add_repo(repo, {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}, **kwargs)


def _download(stub: HubStub, repo: str, **where: Path) -> Path:
    """huggingface_hub's own download of a stub repo: into an HF cache (cache_dir) or a folder (local_dir)."""
    return Path(snapshot_download(repo, endpoint=stub.url, token=False, **where))


def _head_finding(report: mtpinspect.CheckReport):
    return next(f for f in report.findings if f.code in ("MTP_QUANTIZED", "MTP_PARTIALLY_EXCLUDED"))


def _origin(report: mtpinspect.CheckReport) -> dict:
    return to_jsonable(report)["origin"]


# ------------------------------------------------------------------ the maker's own FP8 release


@pytest.mark.parametrize("case_id", ["deepseek-v3.2", "deepseek-v4-flash"])
def test_maker_fp8_release_in_a_plain_folder_is_judged_from_the_format(case_id: str, tmp_path: Path) -> None:
    report = mtpinspect.check(str(_cut(case_id, tmp_path / case_id)))
    assert report.runtimes["vllm"].status == "supported" and report.runtimes["sglang"].status == "supported"
    assert report.quantization.mtp_excluded is False  # the head is FP8: nothing excluded it
    origin = _origin(report)
    assert (origin["kind"], origin["who"], origin["decided_by"]) == ("maker", "deepseek-ai", "quantization format")
    finding = _head_finding(report)
    assert finding.code == "MTP_QUANTIZED" and finding.severity == "info"
    assert "judged from the format" in finding.message
    assert finding.evidence[0] == "origin: maker (deepseek-ai), decided by the quantization format"
    assert "128x128 blocks, no modules_to_not_convert" in finding.evidence[1]


def test_deepseek_eh_proj_in_bf16_is_not_targeted_not_a_partial_exclusion(tmp_path: Path) -> None:
    report = mtpinspect.check(str(_cut("deepseek-v3.2", tmp_path / "v32")))
    assert report.quantization.mtp_excluded is False and "MTP_PARTIALLY_EXCLUDED" not in report.codes()
    assert "model.layers.61.eh_proj" in report.quantization.mtp_modules_kept
    assert "0 excluded by the list, 1 not targeted" in _head_finding(report).message


def test_maker_fp8_release_in_the_hf_cache(tmp_path: Path) -> None:
    folder = _cut("deepseek-v3.2", tmp_path / "repo")
    with HubStub() as stub:
        sha = _serve(stub, "deepseek-ai/DeepSeek-V3.2", folder)
        _download(stub, "deepseek-ai/DeepSeek-V3.2", cache_dir=tmp_path / "hub")
    cache = tmp_path / "hub" / "models--deepseek-ai--DeepSeek-V3.2"
    assert (cache / "refs" / "main").read_text() == sha
    report = mtpinspect.check(str(cache))
    assert report.runtimes["vllm"].status == "supported"
    origin = _origin(report)
    assert (origin["kind"], origin["who"], origin["decided_by"]) == ("maker", "deepseek-ai", "HF cache folder")
    assert origin["evidence"][0] == (f"HF cache folder models--deepseek-ai--DeepSeek-V3.2, snapshot {sha}: "
                                     "downloaded from deepseek-ai/DeepSeek-V3.2")


def test_maker_fp8_release_in_an_hf_download_local_dir_folder(tmp_path: Path) -> None:
    folder = _cut("deepseek-v3.2", tmp_path / "repo", card=MAKER_CARD)
    with HubStub() as stub:
        sha = _serve(stub, "deepseek-ai/DeepSeek-V3.2", folder)
        local = _download(stub, "deepseek-ai/DeepSeek-V3.2", local_dir=tmp_path / "DeepSeek-V3.2")
    assert (local / ".cache" / "huggingface" / "download" / "config.json.metadata").is_file()
    report = mtpinspect.check(str(local))
    assert report.runtimes["vllm"].status == "supported"
    origin = _origin(report)
    # The records hold the commit, not the repo id; the card names the maker's own base model, which does
    # not say who made this repo: the format decides, and both are evidence.
    assert (origin["kind"], origin["decided_by"]) == ("maker", "quantization format")
    files = len(list(folder.iterdir()))
    assert (f".cache/huggingface/download: {files} of {files} file(s) downloaded from the Hub with "
            f"`hf download --local-dir` at commit {sha} (the repo id is not recorded)") in origin["evidence"]
    assert "README.md: base_model: deepseek-ai/DeepSeek-V3.2-Exp-Base" in origin["evidence"]


def test_maker_fp8_release_over_the_hub_reads_the_card_from_model_info(tmp_path: Path) -> None:
    folder = _cut("deepseek-v3.2", tmp_path / "repo", card=MAKER_CARD)
    with HubStub() as stub:
        _serve(stub, "deepseek-ai/DeepSeek-V3.2", folder)
        report = mtpinspect.check("deepseek-ai/DeepSeek-V3.2", endpoint=stub.url)
        assert stub.requests("deepseek-ai/DeepSeek-V3.2", "README.md") == []  # cardData came with the listing
    assert report.runtimes["vllm"].status == "supported"
    origin = _origin(report)
    assert (origin["kind"], origin["who"], origin["decided_by"]) == ("maker", "deepseek-ai", "Hub repo id")
    assert "model info cardData: base_model: deepseek-ai/DeepSeek-V3.2-Exp-Base" in origin["evidence"]


# ------------------------------------------------------------------ a derivative's card


def test_card_declaring_a_quantization_outweighs_the_maker_format(tmp_path: Path) -> None:
    """The same native-FP8 files are the maker's without a card, a third party's under a derivative's card."""
    folder = _cut("deepseek-v3.2", tmp_path / "derivative", card=DERIVATIVE_CARD)
    report = mtpinspect.check(str(folder))
    assert report.runtimes["vllm"].status == "at-risk" and report.exit_code == 0
    finding = _head_finding(report)
    assert (finding.code, finding.severity) == ("MTP_QUANTIZED", "error")
    assert "by a third-party quantization" in finding.message
    assert finding.evidence[:2] == (
        "origin: third-party, decided by the model card",
        "README.md: base_model_relation: quantized of deepseek-ai/DeepSeek-V3.2: a quantization published as a "
        "derivative, by someone it does not name (a local name does not outweigh it)",
    )
    (folder / "README.md").unlink()
    assert mtpinspect.check(str(folder)).runtimes["vllm"].status == "supported"


@pytest.mark.parametrize("card_data", [True, False], ids=["model-info-cardData", "README-read"])
def test_derivative_card_over_the_hub(tmp_path: Path, card_data: bool) -> None:
    folder = _cut("deepseek-v3.2", tmp_path / "repo", card=DERIVATIVE_CARD)
    with HubStub() as stub:
        _serve(stub, "fp8-quants/DeepSeek-V3.2-FP8", folder, card_data=card_data)
        report = mtpinspect.check("fp8-quants/DeepSeek-V3.2-FP8", endpoint=stub.url)
        readme_reads = stub.requests("fp8-quants/DeepSeek-V3.2-FP8", "README.md")
        assert report.bytes_read == stub.bytes_served("fp8-quants/DeepSeek-V3.2-FP8")
    # Without cardData in model info (a mirror that does not parse cards), README.md is read as a small file.
    assert bool(readme_reads) is not card_data
    assert report.runtimes["vllm"].status == "at-risk"
    origin = _origin(report)
    assert (origin["kind"], origin["who"], origin["decided_by"]) == ("third-party", "fp8-quants", "model card")
    source = "model info cardData" if card_data else "README.md"
    assert origin["evidence"][0].startswith(f"{source}: base_model_relation: quantized of deepseek-ai/DeepSeek-V3.2")
    assert "Hub repo fp8-quants/DeepSeek-V3.2-FP8: published by fp8-quants" in origin["evidence"]


def test_derivative_renamed_to_the_makers_org_in_the_hf_cache(tmp_path: Path) -> None:
    """A derivative downloaded (or renamed) into models--deepseek-ai--...: the card wins over the folder name."""
    folder = _cut("deepseek-v3.2", tmp_path / "repo", card=DERIVATIVE_CARD)
    with HubStub() as stub:
        _serve(stub, "deepseek-ai/DeepSeek-V3.2", folder)
        _download(stub, "deepseek-ai/DeepSeek-V3.2", cache_dir=tmp_path / "hub")
    report = mtpinspect.check(str(tmp_path / "hub" / "models--deepseek-ai--DeepSeek-V3.2"))
    assert report.runtimes["vllm"].status == "at-risk"
    origin = _origin(report)
    assert (origin["kind"], origin["decided_by"]) == ("third-party", "model card")
    assert any(line.startswith("HF cache folder models--deepseek-ai--DeepSeek-V3.2") for line in origin["evidence"])


def test_derivative_under_the_makers_org_on_the_hub_names_its_quantizer(tmp_path: Path) -> None:
    card = DERIVATIVE_CARD.replace("base_model_relation: quantized\n", "base_model_relation: quantized\nquantized_by: QuantTrio\n")
    folder = _cut("deepseek-v3.2", tmp_path / "repo", card=card)
    with HubStub() as stub:
        _serve(stub, "deepseek-ai/DeepSeek-V3.2", folder)
        report = mtpinspect.check("deepseek-ai/DeepSeek-V3.2", endpoint=stub.url)
    assert report.runtimes["vllm"].status == "at-risk"
    origin = _origin(report)
    assert (origin["kind"], origin["who"], origin["decided_by"]) == ("third-party", "QuantTrio", "model card")
    assert origin["evidence"][0] == "model info cardData: quantized_by: QuantTrio of deepseek-ai/DeepSeek-V3.2"


def test_first_party_quantizer_named_by_the_card(tmp_path: Path) -> None:
    card = "---\nbase_model: deepseek-ai/DeepSeek-V3.2\nquantized_by: nvidia\n---\n"
    report = mtpinspect.check(str(_cut("deepseek-v3.2", tmp_path / "repo", card=card)))
    assert (_origin(report)["kind"], _origin(report)["who"]) == ("first-party-quantizer", "nvidia")
    assert "by the first-party quantizer nvidia" in _head_finding(report).message


def test_card_of_a_derivative_of_a_derivative(tmp_path: Path) -> None:
    card = "---\nbase_model: someone/DeepSeek-V3.2-abliterated\n---\n"
    report = mtpinspect.check(str(_cut("deepseek-v3.2", tmp_path / "repo", card=card)))
    origin = _origin(report)
    assert (origin["kind"], origin["decided_by"]) == ("third-party", "model card")
    assert origin["evidence"][0] == "README.md: base_model someone/DeepSeek-V3.2-abliterated is not a maker's model: a derivative"


# ------------------------------------------------------------------ no card, a third-party format


def test_no_card_and_a_third_party_format_is_at_risk_of_unknown_origin(tmp_path: Path) -> None:
    report = mtpinspect.check(str(_cut("qwen3-next-fp8-dynamic-third-party", tmp_path / "q")))
    assert report.runtimes["vllm"].status == "at-risk"
    finding = _head_finding(report)
    assert "by a quantizer of unknown origin" in finding.message
    assert finding.evidence[0] == "origin unknown: no signal tells who made this checkpoint"
    missing = finding.evidence[1]
    for signal in ("no model card (README.md)", "no repo id (not a Hub repo, not an HF cache folder models--ORG--NAME)",
                   "no `hf download --local-dir` records", "no repo id in config.json _name_or_path",
                   "compressed-tensors/float-quantized: not Qwen's own FP8 layout"):
        assert signal in missing, signal
    assert _origin(report)["kind"] == "unknown" and _origin(report)["decided_by"] is None


def test_the_same_checkpoint_over_the_hub_is_judged_by_its_repo_id(tmp_path: Path) -> None:
    folder = _cut("qwen3-next-fp8-dynamic-third-party", tmp_path / "q")
    with HubStub() as stub:
        _serve(stub, "DevQuasar/Qwen3-Next-80B-A3B-Thinking-FP8-Dynamic", folder)
        report = mtpinspect.check("DevQuasar/Qwen3-Next-80B-A3B-Thinking-FP8-Dynamic", endpoint=stub.url)
    assert report.runtimes["vllm"].status == "at-risk"
    assert "by a third-party quantization (DevQuasar)" in _head_finding(report).message
    assert _origin(report)["missing"] == []


@pytest.mark.parametrize(
    ("name", "kind", "decided_by"),
    [
        # A derivative keeps the name of the model it was quantized from: the maker's name there proves nothing.
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "unknown", None),
        ("unsloth/Qwen3-Next-80B-A3B-Thinking", "third-party", "config.json _name_or_path"),
        ("/data/checkpoints/qwen3-next", "unknown", None),  # a path, not a repo id
    ],
)
def test_name_or_path(tmp_path: Path, name: str, kind: str, decided_by: str | None) -> None:
    folder = _cut("qwen3-next-fp8-dynamic-third-party", tmp_path / "q")
    config = folder / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "_name_or_path": name}))
    origin = _origin(mtpinspect.check(str(folder)))
    assert (origin["kind"], origin["decided_by"]) == (kind, decided_by)
    if name.startswith("Qwen/"):
        assert any("_name_or_path Qwen/Qwen3-Next-80B-A3B-Thinking: the maker's repo, or a derivative" in e for e in origin["evidence"])


# ------------------------------------------------------------------ the pieces


def test_card_front_matter() -> None:
    bartowski = b"---\nquantized_by: bartowski\npipeline_tag: text-generation\nbase_model_relation: quantized\nbase_model: openai/gpt-oss-120b\n---\n\n## Llamacpp imatrix Quantizations\n"
    card = parse_card(bartowski)
    assert (card.base_models, card.relation, card.quantized_by) == (("openai/gpt-oss-120b",), "quantized", "bartowski")
    listed = parse_card(b"---\nbase_model:\n  - Qwen/Qwen3-30B-A3B\n  - Qwen/Qwen3-30B-A3B-Base\n---\ntext")
    assert listed.base_models == ("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-Base") and listed.relation is None
    assert parse_card(b"# A card without front matter\n") is None
    with pytest.raises(FormatError, match="README.md: front matter is not valid YAML metadata"):
        parse_card(b"---\nbase_model: [unclosed\n---\n")


def test_broken_card_is_a_missing_signal_not_an_error(tmp_path: Path) -> None:
    folder = _cut("qwen3-next-fp8-dynamic-third-party", tmp_path / "q", card="---\nbase_model: [unclosed\n---\n")
    report = mtpinspect.check(str(folder))
    assert report.runtimes["vllm"].status == "at-risk"
    assert _origin(report)["missing"][0].startswith("README.md: front matter is not valid YAML metadata")


def test_local_download_records_say_which_files_changed_since(tmp_path: Path) -> None:
    folder = _cut("deepseek-v3.2", tmp_path / "repo")
    with HubStub() as stub:
        sha = _serve(stub, "deepseek-ai/DeepSeek-V3.2", folder)
        local = _download(stub, "deepseek-ai/DeepSeek-V3.2", local_dir=tmp_path / "dl")
    files = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file() and ".cache" not in p.parts)
    record = local_download(local, files)
    assert (record.commits, record.recorded, record.files, record.changed) == ((sha,), len(files), len(files), ())
    later = os.stat(local / "config.json").st_mtime + 10
    os.utime(local / "config.json", (later, later))
    assert local_download(local, files).changed == ("config.json",)
    shutil.rmtree(local / ".cache")
    assert local_download(local, files) is None
