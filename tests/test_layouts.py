"""`check` on the folders users really have: several models with their mtp- sidecars side by side, a
Hugging Face cache snapshot (symlinks into blobs/), split sets, an unrelated mtp- file, `--all` over a
folder with a corrupt file, and `check /`.

Every case runs the real CLI in a subprocess on real files on disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from gguf_factory import Glm4MoeDims, glm4moe_metadata, glm4moe_tensors, write_gguf, write_split_gguf

import mtpinspect
from mtpinspect.runtime.command_server import server_for_commands
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

CHECK_SCHEMA = json.loads((Path(mtpinspect.__file__).parent / "schemas" / "check.schema.json").read_text())
SHA = "0123456789abcdef0123456789abcdef01234567"
TINY = Glm4MoeDims()


def check(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    return subprocess.run([sys.executable, "-m", "mtpinspect", "check", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env)


def check_json(*args: str, cwd: Path | None = None) -> tuple[int, dict]:
    proc = check(*args, "--format", "json", cwd=cwd)
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, CHECK_SCHEMA)
    return proc.returncode, doc


def evidence_of(doc: dict, code: str) -> list[str]:
    return next(f["evidence"] for f in doc["findings"] if f["code"] == code)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def two_models(folder: Path) -> None:
    """a.gguf and b.gguf, two models of different widths, each converted with its head in mtp-<name>.gguf."""
    folder.mkdir(parents=True, exist_ok=True)
    write_tiny_model(folder / "a.gguf", TinyModelSpec(layout="sidecar"))
    write_tiny_model(folder / "b.gguf", TinyModelSpec(layout="sidecar", embd=128))


# -- item 1: sidecars pair by name, then by header identity ----------------------------------------


@pytest.mark.parametrize("name", ["a", "b"])
def test_each_model_gets_its_own_sidecar(tmp_path: Path, name: str) -> None:
    two_models(tmp_path)
    code, doc = check_json(str(tmp_path / f"{name}.gguf"))
    assert code == 0, doc["verdict"]
    assert doc["files"]["sidecar"] == [f"mtp-{name}.gguf"]
    assert "SIDECAR_MISMATCH" not in [f["code"] for f in doc["findings"]]
    assert f"-md {tmp_path / f'mtp-{name}.gguf'}" in doc["runtimes"]["llama.cpp"]["command"]
    paired = evidence_of(doc, "MTP_SIDECAR")[0]
    assert f"mtp-{name}.gguf" in paired and "name" in paired, paired


def test_all_pairs_each_model_with_its_own_sidecar(tmp_path: Path) -> None:
    two_models(tmp_path)
    proc = check(str(tmp_path), "--all", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    assert {d["files"]["gguf"][0]: d["files"]["sidecar"] for d in docs} == {"a.gguf": ["mtp-a.gguf"], "b.gguf": ["mtp-b.gguf"]}
    assert all(d["runtimes"]["llama.cpp"]["status"] == "supported" for d in docs)
    table = check(str(tmp_path), "--all").stdout
    assert "b.gguf + mtp-b.gguf" in table, table


def test_sidecar_of_another_model_is_not_paired(tmp_path: Path) -> None:
    # plain.gguf lost its head in conversion; mtp-x.gguf is x.gguf's head (same widths, so only the names tell).
    write_tiny_model(tmp_path / "plain.gguf", TinyModelSpec(nextn=False))
    write_tiny_model(tmp_path / "x.gguf", TinyModelSpec(layout="sidecar"))
    code, doc = check_json(str(tmp_path / "plain.gguf"))
    assert code == 1 and not doc["usable"], doc["verdict"]
    assert doc["files"]["sidecar"] == [] and doc["layout"] == "none"
    lines = evidence_of(doc, "MTP_DROPPED_IN_CONVERSION")
    assert any("mtp-x.gguf" in line and "x.gguf" in line for line in lines), lines


@pytest.mark.parametrize("main", ["Tiny-Q4_K_M.gguf", "Tiny-UD-Q4_K_XL.gguf"])
def test_same_model_sidecar_of_another_quantization(tmp_path: Path, main: str) -> None:
    # One MTP file per model serves every quantization of it (as unsloth publishes them); the other model's
    # sidecar sorts first and must not be taken.
    write_tiny_model(tmp_path / "Other-Q4_K_M.gguf", TinyModelSpec(layout="sidecar", embd=128))
    os.replace(tmp_path / "mtp-Other-Q4_K_M.gguf", tmp_path / "mtp-Other-Q8_0.gguf")
    write_tiny_model(tmp_path / main, TinyModelSpec(layout="sidecar"))
    os.replace(tmp_path / f"mtp-{main}", tmp_path / "mtp-Tiny-Q8_0.gguf")
    code, doc = check_json(str(tmp_path / main))
    assert code == 0, doc["verdict"]
    assert doc["files"]["sidecar"] == ["mtp-Tiny-Q8_0.gguf"]
    assert "same model" in evidence_of(doc, "MTP_SIDECAR")[0]


def test_sidecar_paired_by_header_identity_says_so(tmp_path: Path) -> None:
    write_tiny_model(tmp_path / "model.gguf", TinyModelSpec(layout="sidecar"))
    os.replace(tmp_path / "mtp-model.gguf", tmp_path / "mtp-head.gguf")  # renamed: the name no longer tells
    code, doc = check_json(str(tmp_path / "model.gguf"))
    assert code == 0 and doc["files"]["sidecar"] == ["mtp-head.gguf"]
    paired = evidence_of(doc, "MTP_SIDECAR")[0]
    assert "header" in paired and "mtp-head.gguf" in paired, paired


def _trunk_only(path: Path, dims: Glm4MoeDims = TINY) -> None:
    meta = {**glm4moe_metadata(dims), "tokenizer.ggml.model": "test", "tokenizer.ggml.tokens": [f"t{i}" for i in range(dims.n_vocab)]}
    meta.pop("glm4moe.nextn_predict_layers")
    meta["glm4moe.block_count"] = dims.n_layer
    write_gguf(path, arch="glm4moe", metadata=meta,
               tensors=[t for t in glm4moe_tensors(dims) if not t.name.startswith(f"blk.{dims.n_layer}.")])


def _sidecar(folder: Path, name: str, dims: Glm4MoeDims = TINY, *, shards: int = 1) -> None:
    """An MTP-only GGUF (the nextn block), in ``shards`` split files when asked."""
    meta = {**glm4moe_metadata(dims), "tokenizer.ggml.model": "test", "tokenizer.ggml.tokens": [f"t{i}" for i in range(dims.n_vocab)]}
    tensors = glm4moe_tensors(dims, sidecar=True)
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    if shards == 1:
        write_gguf(folder / name, arch="glm4moe", metadata=meta, tensors=tensors)
    else:
        write_split_gguf(folder / name, arch="glm4moe", metadata=meta, tensors=tensors, n_shards=shards)


@pytest.mark.parametrize(
    ("sidecar", "shards", "expected"),
    [
        ("mtp-m.gguf", 1, ["mtp-m.gguf"]),
        ("m-mtp.gguf", 1, ["m-mtp.gguf"]),
        ("MTP/m.gguf", 1, ["MTP/m.gguf"]),
        ("MTP/mtp-m.gguf", 1, ["MTP/mtp-m.gguf"]),
        ("mtp-m.gguf", 2, ["mtp-m-00001-of-00002.gguf", "mtp-m-00002-of-00002.gguf"]),
    ],
)
def test_sidecar_naming_forms(tmp_path: Path, sidecar: str, shards: int, expected: list[str]) -> None:
    # A decoy: another model's sidecar, which sorts before m's and has another width.
    wide = Glm4MoeDims(n_embd=128)
    _trunk_only(tmp_path / "a-other.gguf", wide)
    _sidecar(tmp_path, "mtp-a-other.gguf", wide)
    _trunk_only(tmp_path / "m.gguf")
    _sidecar(tmp_path, sidecar, shards=shards)
    code, doc = check_json(str(tmp_path / "m.gguf"))
    assert code == 0, doc["verdict"]
    assert doc["files"]["sidecar"] == expected
    assert f"-md {tmp_path / expected[0]}" in doc["runtimes"]["llama.cpp"]["command"]


def test_split_main_pairs_with_its_sidecar(tmp_path: Path) -> None:
    dims = Glm4MoeDims()
    _trunk_only(tmp_path / "whole.gguf", dims)
    _sidecar(tmp_path, "mtp-a-other.gguf", Glm4MoeDims(n_embd=128))
    _sidecar(tmp_path, "mtp-m.gguf", dims)
    # m-0000k-of-00002: the trunk of whole.gguf split in two, as gguf-py's writer splits it.
    tensors = [t for t in glm4moe_tensors(dims) if not t.name.startswith(f"blk.{dims.n_layer}.")]
    meta = {**glm4moe_metadata(dims), "tokenizer.ggml.model": "test", "tokenizer.ggml.tokens": [f"t{i}" for i in range(dims.n_vocab)]}
    meta.pop("glm4moe.nextn_predict_layers")
    meta["glm4moe.block_count"] = dims.n_layer
    write_split_gguf(tmp_path / "m.gguf", arch="glm4moe", metadata=meta, tensors=tensors, n_shards=2)
    (tmp_path / "whole.gguf").unlink()
    code, doc = check_json(str(tmp_path / "m-00001-of-00002.gguf"))
    assert code == 0, doc["verdict"]
    assert doc["files"]["gguf"] == ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"]
    assert doc["files"]["sidecar"] == ["mtp-m.gguf"]


# -- item 2: Hugging Face cache snapshots --------------------------------------------------------------


def hf_cache_repo(root: Path, files: dict[str, Path]) -> Path:
    """models--acme--tiny-GGUF with each file a blob under blobs/ and a relative symlink in snapshots/SHA/."""
    repo = root / "models--acme--tiny-GGUF"
    snap = repo / "snapshots" / SHA
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(SHA)
    for index, (name, source) in enumerate(sorted(files.items())):
        blob = repo / "blobs" / f"{index:064x}"
        shutil.move(source, blob)
        link = snap / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snap


def test_hf_cache_snapshot_finds_its_sidecar(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    write_tiny_model(plain / "tiny-Q8_0.gguf", TinyModelSpec(layout="sidecar"))
    staged = tmp_path / "staged"
    shutil.copytree(plain, staged)
    snap = hf_cache_repo(tmp_path / "hub", {p.name: p for p in staged.iterdir()})
    code, doc = check_json(str(snap / "tiny-Q8_0.gguf"))
    code_plain, doc_plain = check_json(str(plain / "tiny-Q8_0.gguf"))
    assert (code, doc["verdict"], doc["layout"]) == (code_plain, doc_plain["verdict"], doc_plain["layout"]) == (
        0, "MTP usable (1 MTP layer(s), sidecar) in llama.cpp, ollama", "sidecar")
    assert [f["code"] for f in doc["findings"]] == [f["code"] for f in doc_plain["findings"]]
    assert doc["source"] == str(snap / "tiny-Q8_0.gguf")
    command = doc["runtimes"]["llama.cpp"]["command"]
    server = server_for_commands().program
    assert command.startswith(f"{server} -m {snap / 'tiny-Q8_0.gguf'} -md {snap / 'mtp-tiny-Q8_0.gguf'} "), command
    assert "blobs" not in proc_text(check(str(snap / "tiny-Q8_0.gguf")))


def proc_text(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


def test_diagnose_in_hf_cache_snapshot_fixes_with_the_users_paths(tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    staged.mkdir()
    write_tiny_model(staged / "tiny-Q8_0.gguf", TinyModelSpec(layout="sidecar"))
    snap = hf_cache_repo(tmp_path / "hub", {p.name: p for p in staged.iterdir()})
    proc = subprocess.run([sys.executable, "-m", "mtpinspect", "diagnose", str(snap / "tiny-Q8_0.gguf"), "--no-probe",
                           "--format", "json", "--", "--spec-type", "draft-mtp"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    cause = json.loads(proc.stdout)["causes"][0]
    assert cause["code"] == "SIDECAR_NOT_PASSED", cause
    server = server_for_commands().program
    assert cause["fix"].startswith(f"{server} -m {snap / 'tiny-Q8_0.gguf'} -md {snap / 'mtp-tiny-Q8_0.gguf'} "), cause


def test_hf_cache_snapshot_reads_every_split_shard(tmp_path: Path) -> None:
    dims = Glm4MoeDims()
    tensors = glm4moe_tensors(dims)
    meta = {**glm4moe_metadata(dims), "tokenizer.ggml.model": "test", "tokenizer.ggml.tokens": [f"t{i}" for i in range(dims.n_vocab)]}
    staged = tmp_path / "staged"
    staged.mkdir()
    # The MTP block (nextn tensors included) comes last, in the second shard.
    write_split_gguf(staged / "m.gguf", arch="glm4moe", metadata=meta, tensors=tensors, n_shards=2)
    snap = hf_cache_repo(tmp_path / "hub", {p.name: p for p in staged.iterdir()})
    code, doc = check_json(str(snap / "m-00001-of-00002.gguf"))
    assert code == 0, doc["verdict"]
    assert (doc["layout"], doc["mtp_layers"]) == ("bundled", 1)
    assert doc["files"]["gguf"] == ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"]


# -- item 22: `check DIR --all` with a corrupt file ----------------------------------------------------


def test_all_prints_every_row_with_a_corrupt_file(tmp_path: Path) -> None:
    write_tiny_model(tmp_path / "good.gguf", TinyModelSpec())
    (tmp_path / "broken.gguf").write_bytes(b"GGUF" + bytes(20))  # version 0: not a GGUF we can read
    shutil.copy(tmp_path / "good.gguf", tmp_path / "split-00001-of-00002.gguf")  # its second shard is missing
    proc = check(str(tmp_path), "--all")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith(("good.gguf", "broken.gguf", "split-"))}
    assert set(rows) == {"good.gguf", "broken.gguf", "split-00001-of-00002.gguf"}, proc.stdout
    assert "supported" in rows["good.gguf"] and "error:" in rows["broken.gguf"], proc.stdout
    flat = " ".join(proc.stdout.split())  # the cells may wrap
    assert "error: unsupported GGUF version 0" in flat and "split-00002-of-00002.gguf is missing" in flat, proc.stdout
    docs = json.loads(check(str(tmp_path), "--all", "--format", "json").stdout)
    failed = {d["files"]["gguf"][0]: d for d in docs if "error" in d}
    assert len(docs) == 3 and sorted(failed) == ["broken.gguf", "split-00001-of-00002.gguf"]
    for doc in docs:
        jsonschema.validate(doc, CHECK_SCHEMA)


def test_all_is_exit_2_only_when_nothing_could_be_read(tmp_path: Path) -> None:
    (tmp_path / "one.gguf").write_bytes(b"nope")
    (tmp_path / "two.gguf").write_bytes(b"GGUF" + bytes(20))
    proc = check(str(tmp_path), "--all")
    line = one_error_line(proc)
    assert "none of the 2 GGUF models" in line, line
    assert "one.gguf" in proc.stdout and "two.gguf" in proc.stdout


# -- item 18: `check /` ---------------------------------------------------------------------------------


def test_check_root_is_one_line() -> None:
    line = one_error_line(check("/", timeout=60))
    assert line.startswith("mtpinspect: error: /: "), line
