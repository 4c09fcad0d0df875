"""`check` on every kind of SOURCE: local GGUF (+ sidecar beside it or named), split GGUF, HF cache
folder, Hub repo with --file and REPO:QUANT; and the output formats, with names from files sanitised."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from gguf_factory import Glm4MoeDims, write_nextn_gguf
from hubstub import HubStub

import mtpinspect
from mtpinspect.errors import SourceError
from mtpinspect.inspection.embedding import SAMPLED_ROWS
from mtpinspect.runtime.command_server import server_for_commands
from mtpinspect.tiny_model import TinyModelSpec, mismatched_sidecar, write_tiny_model

CHECK_SCHEMA = json.loads((Path(mtpinspect.__file__).parent / "schemas" / "check.schema.json").read_text())


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "mtpinspect", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_local_bundled_gguf(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "tiny-F32.gguf", TinyModelSpec())
    report = mtpinspect.check(str(path))
    assert (report.usable, report.layout, report.mtp_layers) == (True, "bundled", 1)
    server = server_for_commands().program  # the llama-server mtpinspect would run (tests/test_runtime_state.py)
    assert report.runtimes["llama.cpp"].command == f"{server} -m {path} --spec-type draft-mtp --spec-draft-n-max 2"
    # The first read holds the whole small file; the bundled head's sampled embedding rows (F32) are read once more.
    rows = SAMPLED_ROWS * TinyModelSpec().embd * 4
    assert report.bytes_read == path.stat().st_size + rows and report.revision is None
    assert "MTP_HEAD_NON_FINITE" not in report.codes()


def test_sidecar_found_beside_main_file(tmp_path: Path) -> None:
    main, side = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(layout="sidecar"))
    report = mtpinspect.check(str(main))
    assert (report.layout, report.mtp_layers) == ("sidecar", 1)
    assert "MTP_SIDECAR" in report.codes() and "SIDECAR_MISMATCH" not in report.codes()
    assert f"-md {side}" in report.runtimes["llama.cpp"].command


# What llama-server does with each (tiny_model.MISMATCHES): another width aborts at start, a smaller
# vocabulary on the first draft; another depth starts and drafts with a head made for another model.
@pytest.mark.parametrize(("kind", "status"), [("embd", "unsupported"), ("vocab", "unsupported"), ("layers", "at-risk")])
def test_mismatched_sidecar_named_explicitly(tmp_path: Path, kind: str, status: str) -> None:
    (main,) = write_tiny_model(tmp_path / "main.gguf", TinyModelSpec(nextn=False))
    (tmp_path / "other").mkdir()
    other = write_tiny_model(tmp_path / "other" / "x.gguf", TinyModelSpec(layout="sidecar", sidecar_from=mismatched_sidecar(kind)))
    sidecar = next(p for p in other if p.name.startswith("mtp-"))
    report = mtpinspect.check(str(main), mtp_file=str(sidecar), verify=False)
    assert "SIDECAR_MISMATCH" in report.codes(), report.codes()
    assert report.runtimes["llama.cpp"].status == status
    assert report.exit_code == (1 if status == "unsupported" else 0)


def test_no_nextn_gguf_is_not_usable(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "plain.gguf", TinyModelSpec(nextn=False))
    report = mtpinspect.check(str(path))
    assert (report.usable, report.layout, report.mtp_layers, report.exit_code) == (False, "none", 0, 1)


def test_low_bit_head_is_at_risk(tmp_path: Path) -> None:
    from mtpinspect.tiny_model import spec_for_head_type

    (path,) = write_tiny_model(tmp_path / "tq.gguf", spec_for_head_type("TQ1_0"))
    report = mtpinspect.check(str(path))
    assert "LOW_BIT_MTP_HEAD" in report.codes()
    assert report.runtimes["llama.cpp"].status == "at-risk"


def test_split_gguf_local(tmp_path: Path) -> None:
    # Two shards: the nextn tensors live in the second, as llama-gguf-split leaves them.
    from gguf_factory import glm4moe_metadata, glm4moe_tensors, write_gguf

    dims = Glm4MoeDims()
    tensors = glm4moe_tensors(dims, None, sidecar=False)
    first, second = [t for t in tensors if ".nextn." not in t.name], [t for t in tensors if ".nextn." in t.name]
    meta = {**glm4moe_metadata(dims), "tokenizer.ggml.model": "test", "tokenizer.ggml.tokens": [f"t{i}" for i in range(dims.n_vocab)],
            "split.count": 2}
    write_gguf(tmp_path / "m-00001-of-00002.gguf", arch="glm4moe", metadata={**meta, "split.no": 0}, tensors=first)
    write_gguf(tmp_path / "m-00002-of-00002.gguf", arch="glm4moe", metadata={"split.no": 1, "split.count": 2}, tensors=second)
    report = mtpinspect.check(str(tmp_path / "m-00001-of-00002.gguf"))
    assert (report.layout, report.mtp_layers) == ("bundled", 1)
    assert report.files["gguf"] == ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"]
    (tmp_path / "m-00002-of-00002.gguf").unlink()
    with pytest.raises(SourceError, match="00002-of-00002.gguf is missing"):
        mtpinspect.check(str(tmp_path / "m-00001-of-00002.gguf"))


def test_hf_cache_folder(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--acme--tiny"
    sha = "0123456789abcdef0123456789abcdef01234567"
    snap = repo / "snapshots" / sha
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    write_tiny_model(snap / "tiny-Q8_0.gguf", TinyModelSpec(head_type="Q8_0"))
    report = mtpinspect.check(str(repo))
    assert report.layout == "bundled" and report.source_kind == "local-dir"
    with pytest.raises(SourceError, match="no cached snapshot for revision 'v2'"):
        mtpinspect.check(str(repo), revision="v2")


@pytest.fixture(scope="module")
def gguf_hub(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("ggufhub")
    q8 = write_nextn_gguf(root / "Tiny-Q8_0.gguf")
    q4 = write_nextn_gguf(root / "Tiny-Q4_K_M.gguf")
    side = write_nextn_gguf(root / "mtp-Tiny-Q8_0.gguf", sidecar=True)
    with HubStub() as stub:
        stub.add_repo("acme/Tiny-GGUF", {"Tiny-Q8_0.gguf": q8, "Tiny-Q4_K_M.gguf": q4, "MTP/mtp-Tiny-Q8_0.gguf": side})
        yield stub


def test_hub_gguf_quant_selector(gguf_hub: HubStub) -> None:
    report = mtpinspect.check("acme/Tiny-GGUF:Q4_K_M", endpoint=gguf_hub.url)
    assert report.files["gguf"] == ["Tiny-Q4_K_M.gguf"]
    server = server_for_commands().program
    assert report.runtimes["llama.cpp"].command.startswith(f"{server} -hf acme/Tiny-GGUF:Q4_K_M --spec-type draft-mtp")
    assert report.revision == gguf_hub.sha("acme/Tiny-GGUF")


def test_hub_gguf_file_option_and_ambiguity(gguf_hub: HubStub) -> None:
    report = mtpinspect.check("acme/Tiny-GGUF", file="Tiny-Q8_0.gguf", endpoint=gguf_hub.url)
    assert report.files["gguf"] == ["Tiny-Q8_0.gguf"]
    with pytest.raises(SourceError, match="2 GGUF models in the repo; pick one"):
        mtpinspect.check("acme/Tiny-GGUF", endpoint=gguf_hub.url)


def test_formats_md_csv_json(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec())
    md = cli("check", str(path), "--format", "md")
    assert md.returncode == 0 and "## Findings" in md.stdout and "| finding" in md.stdout and "| runtime" in md.stdout
    rows = list(csv.DictReader(io.StringIO(cli("check", str(path), "--format", "csv").stdout)))
    assert rows[0]["code"] == "MTP_PRESENT" and rows[0]["severity"] == "info"
    doc = json.loads(cli("check", str(path), "--format", "json").stdout)
    # Version 2: the header sweep and diagnose documents share.
    assert (doc["$schema"], doc["schema_version"]) == ("https://mtpinspect.invalid/schemas/check.schema.json", 3)
    assert doc["layout"] == "bundled" and doc["mtp_size"]["parameters"] > 0
    jsonschema.validate(doc, CHECK_SCHEMA)
    codes = json.loads(cli("check", "--codes", "--format", "json", "x").stdout)
    assert {"MTP_PRESENT", "SIDECAR_MISMATCH", "LOW_BIT_MTP_HEAD", "ARCH_NO_MTP_GRAPH", "SEPARATE_DRAFTER"} <= {c["code"] for c in codes}


def test_terminal_escapes_in_names_are_sanitised(tmp_path: Path) -> None:
    path = write_nextn_gguf(tmp_path / "evil.gguf", extra_metadata={"general.name": "x\x1b[2J\x1b]0;pwned\x07y"})
    (tmp_path / "plain").mkdir()
    shutil.copy(path, tmp_path / "plain" / "evil.gguf")
    # A GGUF without its head: the finding quotes general.name.
    from gguf_factory import glm4moe_metadata, glm4moe_tensors, write_gguf

    dims = Glm4MoeDims()
    meta = {**glm4moe_metadata(dims), "general.name": "Qwen\x1b[31mRED\x1b[0m", "tokenizer.ggml.model": "test",
            "tokenizer.ggml.tokens": [f"t{i}" for i in range(dims.n_vocab)]}
    meta.pop("glm4moe.nextn_predict_layers")
    meta["glm4moe.block_count"] = dims.n_layer
    write_gguf(tmp_path / "dropped.gguf", arch="glm4moe",
               metadata=meta, tensors=[t for t in glm4moe_tensors(dims, None, sidecar=False) if not t.name.startswith(f"blk.{dims.n_layer}.")])
    out = cli("check", str(tmp_path / "dropped.gguf"))
    assert "\x1b" not in out.stdout and "\\x1b[31mRED" in out.stdout, out.stdout


def test_pytorch_index_gives_names_without_dtypes(tmp_path: Path) -> None:
    config = json.loads((Path(__file__).resolve().parents[1] / "cases" / "deepseek-v3" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config))
    shards = {"model.embed_tokens.weight": "pytorch_model-00001-of-00002.bin",
              "model.layers.61.eh_proj.weight": "pytorch_model-00002-of-00002.bin",
              "model.layers.61.enorm.weight": "pytorch_model-00002-of-00002.bin"}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": shards}))
    for shard in set(shards.values()):
        (tmp_path / shard).write_bytes(b"\x80\x02not read")
    report = mtpinspect.check(str(tmp_path))
    assert (report.mtp_layers, report.layout) == (1, "checkpoint")
    assert {"MTP_PRESENT", "HEADERS_NOT_READ"} <= set(report.codes())
    assert "PyTorch pickles" in next(f.message for f in report.findings if f.code == "HEADERS_NOT_READ")


def test_lone_pickle_leaves_mtp_undetermined(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "deepseek_v3", "num_hidden_layers": 61,
                                                      "num_nextn_predict_layers": 1}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x02not read")
    report = mtpinspect.check(str(tmp_path))
    assert report.verdict.startswith("MTP undetermined") and "MTP_WEIGHTS_MISSING" not in report.codes()
    assert report.runtimes["vllm"].status == "unknown" and report.exit_code == 1


def test_check_all_ggufs_of_a_repo(tmp_path: Path) -> None:
    from mtpinspect.tiny_model import spec_for_head_type

    (good,) = write_tiny_model(tmp_path / "Tiny-Q8_0.gguf", TinyModelSpec(head_type="Q8_0"))
    (low,) = write_tiny_model(tmp_path / "Tiny-TQ1_0.gguf", spec_for_head_type("TQ1_0"))
    (bare,) = write_tiny_model(tmp_path / "Tiny-F16.gguf", TinyModelSpec(nextn=False))
    with HubStub() as stub:
        stub.add_repo("acme/Many-GGUF", {p.name: p for p in (good, low, bare)})
        reports = mtpinspect.check_all("acme/Many-GGUF", endpoint=stub.url)
        by_file = {r.files["gguf"][0]: r for r in reports}
        assert sorted(by_file) == ["Tiny-F16.gguf", "Tiny-Q8_0.gguf", "Tiny-TQ1_0.gguf"]
        assert by_file["Tiny-Q8_0.gguf"].runtimes["llama.cpp"].status == "supported"
        assert "Q8_0" in by_file["Tiny-Q8_0.gguf"].mtp_types
        assert "LOW_BIT_MTP_HEAD" in by_file["Tiny-TQ1_0.gguf"].codes()
        assert by_file["Tiny-F16.gguf"].layout == "none"
        proc = cli("check", "acme/Many-GGUF", "--all", "--format", "json", env={"HF_ENDPOINT": stub.url})
        assert proc.returncode == 0, proc.stderr
        assert [d["files"]["gguf"][0] for d in json.loads(proc.stdout)] == sorted(by_file)
        table = cli("check", "acme/Many-GGUF", "--all", env={"HF_ENDPOINT": stub.url}).stdout
        assert "Tiny-TQ1_0.gguf" in table and "LOW_BIT_MTP_HEAD" in table


def test_without_the_verify_helper_check_says_so_and_keeps_the_rules(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec())
    empty = {"MTPINSPECT_CACHE_DIR": str(tmp_path / "no-cache")}
    table = cli("check", str(path), env=empty)
    assert table.returncode == 0
    notes = [line for line in table.stdout.splitlines() if "verify helper" in line]
    assert notes == ["note: not verified by llama.cpp: its verify helper is not built yet (`mtpinspect runtime build` builds it, once)"]
    doc = json.loads(cli("check", str(path), "--format", "json", env=empty).stdout)
    assert doc["runtimes"]["llama.cpp"]["verified"] is None and doc["memory"] is None
    assert doc["runtimes"]["llama.cpp"]["status"] == "supported"
    # --no-verify: the rules only, and no note about the helper.
    quiet = json.loads(cli("check", str(path), "--no-verify", "--format", "json", env=empty).stdout)
    assert quiet["runtimes"]["llama.cpp"]["verified"] is None and not any("verify helper" in n for n in quiet["notes"])


def test_a_gguf_says_its_own_quantization(tmp_path: Path) -> None:
    """A GGUF has no quantization config; its general.file_type is its word for it (the shipped model is the
    pinned converter's --outtype q8_0), and the MTP tensors' types sit beside it: not "none"."""
    from mtpinspect.trained_model import SHIPPED_GGUF

    report = mtpinspect.check(str(SHIPPED_GGUF), verify=False)
    assert report.quantization.gguf_file_type == "Q8_0" and report.quantization.method is None
    table = cli("check", str(SHIPPED_GGUF), "--no-verify")
    assert table.returncode == 0, table.stderr
    line = next(line for line in table.stdout.splitlines() if line.startswith("quantization"))
    assert "GGUF Q8_0 (general.file_type); MTP tensors Q8_0 x" in line and "F32 x" in line
    shown = json.loads(cli("check", str(SHIPPED_GGUF), "--no-verify", "--format", "json").stdout)
    jsonschema.validate(shown, CHECK_SCHEMA)
    assert shown["quantization"]["gguf_file_type"] == "Q8_0"


def test_a_gguf_without_a_file_type_key_is_none(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "tiny-F32.gguf", TinyModelSpec())  # our writer sets no general.file_type
    report = mtpinspect.check(str(path))
    assert report.quantization.gguf_file_type is None
