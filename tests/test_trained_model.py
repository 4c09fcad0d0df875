"""The built-in trained model: what `tiny-model --trained` writes, its checkpoint folder, its quantized-head
and sidecar variants, and the training recipe itself (a few steps), each judged by the real tools: the
pinned converter, llama-quantize, llama-server and `mtpinspect check`."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cliproc import CLI, error_line, run_cli
from gguf import GGUFReader
from head_probe import assert_foreign_head

from mtpinspect.runtime.find import ServerBinary
from mtpinspect.runtime.server import Completion, LlamaServer
from mtpinspect.trained_model import SHIPPED_GGUF, mtp_block
from mtpinspect.training import missing, sample
from mtpinspect.training.corpus import (
    CLASSES,
    DEBIAN,
    SAMPLE,
    SAMPLE_DIR,
    SAMPLE_RECORD,
    CorpusClass,
    documents,
    fetch,
    held_out,
    japanese_share,
    packages,
    roff_text,
)

needs_converter = pytest.mark.skipif(bool(missing(("torch", "transformers"))), reason="the train extra is not installed")
needs_apt = pytest.mark.skipif(shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None,
                               reason="apt-get or dpkg-deb is not on PATH: the Debian corpus cannot be fetched here "
                                      "(the training tests use the sample corpus, which needs neither)")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tensors(path: Path) -> dict[str, tuple[str, bytes]]:
    return {t.name: (t.tensor_type.name, t.data.tobytes()) for t in GGUFReader(path).tensors}


def _check(target: Path) -> dict:
    done = run_cli("check", str(target), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _drafts(server: ServerBinary, model: Path, tmp_path: Path, *extra: str) -> Completion:
    """One greedy request with MTP at n-max 2, as llama-server answers it."""
    args = [*extra, "--spec-type", "draft-mtp", "--spec-draft-n-max", "2", "-c", "512", "-t", "2"]
    with LlamaServer(server, model, args, log_path=tmp_path / "server.log") as srv:
        return srv.complete("def parse(spec):\n    out = []\n    for part in spec.split(','):\n", n_predict=32,
                            seed=1, timeout=120)


def test_tiny_model_trained_writes_the_shipped_gguf(tmp_path: Path) -> None:
    out = tmp_path / "trained.gguf"
    done = run_cli("tiny-model", "--trained", str(out), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"][0]["bytes"] == SHIPPED_GGUF.stat().st_size
    assert _sha256(out) == _sha256(SHIPPED_GGUF)
    # By the one safe-write rule: a regular file is replaced whole, a symbolic link only with --force, a
    # FIFO never; nothing else is left in the folder.
    out.write_bytes(b"old")
    assert run_cli("tiny-model", "--trained", str(out)).returncode == 0 and _sha256(out) == _sha256(SHIPPED_GGUF)
    link = tmp_path / "link.gguf"
    link.symlink_to(tmp_path / "target.gguf")
    error_line(run_cli("tiny-model", "--trained", str(link)), str(link), "symbolic link")
    assert run_cli("tiny-model", "--trained", str(link), "--force").returncode == 0
    assert _sha256(tmp_path / "target.gguf") == _sha256(SHIPPED_GGUF) and link.is_symlink()
    fifo = tmp_path / "fifo.gguf"
    os.mkfifo(fifo)
    error_line(run_cli("tiny-model", "--trained", str(fifo), "--force"), str(fifo), "not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.gguf", "link.gguf", "target.gguf", "trained.gguf"]
    # Options of the constructed models say nothing about the trained one.
    error_line(run_cli("tiny-model", "--trained", str(tmp_path / "x.gguf"), "--acceptance", "0.5"), "--acceptance")


@pytest.mark.server
def test_shipped_gguf_checks_bundled_and_verified_by_the_engine() -> None:
    report = _check(SHIPPED_GGUF)
    assert (report["usable"], report["mtp_layers"], report["layout"]) == (True, 1, "bundled")
    llama = report["runtimes"]["llama.cpp"]
    assert llama["status"] == "supported" and llama["verified"]["ok"] is True
    assert "LOW_BIT_MTP_HEAD" not in [f["code"] for f in report["findings"]]


def test_checkpoint_folder_is_a_checkpoint_with_one_mtp_layer(tmp_path: Path) -> None:
    folder = tmp_path / "ck"
    done = run_cli("tiny-model", "--trained", "--checkpoint", str(folder))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "training.json"]
    config = json.loads((folder / "config.json").read_text())
    assert config["num_nextn_predict_layers"] == 1 and config["architectures"] == ["Glm4MoeForCausalLM"]
    report = _check(folder)
    assert (report["usable"], report["mtp_layers"], report["layout"]) == (True, 1, "checkpoint")
    # A checkpoint is refused without --force and replaced with it; a folder holding anything the tool did
    # not write is refused even with --force (issue 29), one line, and left as it was.
    error_line(run_cli("tiny-model", "--trained", "--checkpoint", str(folder)), str(folder), "not empty")
    (folder / "note.txt").write_text("mine")
    error_line(run_cli("tiny-model", "--trained", "--checkpoint", str(folder), "--force"), str(folder), "note.txt")
    assert (folder / "note.txt").read_text() == "mine"
    (folder / "note.txt").unlink()
    assert run_cli("tiny-model", "--trained", "--checkpoint", str(folder), "--force").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no staging folder left behind


@needs_converter
def test_checkpoint_converts_back_to_the_shipped_tensors_bit_for_bit(tmp_path: Path) -> None:
    from mtpinspect.training.toolchain import convert

    folder = tmp_path / "ck"
    assert run_cli("tiny-model", "--trained", "--checkpoint", str(folder)).returncode == 0
    again = convert(folder, tmp_path / "again.gguf", "q8_0")
    shipped, converted = _tensors(SHIPPED_GGUF), _tensors(again)
    assert shipped.keys() == converted.keys()
    assert [name for name in shipped if shipped[name] != converted[name]] == []


@pytest.mark.server
def test_low_bit_head_from_llama_quantize(built_server: ServerBinary, tmp_path: Path) -> None:
    out = tmp_path / "q2k.gguf"
    assert run_cli("tiny-model", "--trained", str(out), "--head-type", "Q2_K", timeout=300).returncode == 0
    shipped, quantized = _tensors(SHIPPED_GGUF), _tensors(out)
    head = f"blk.{mtp_block()}."
    # The head's matrices only: the trunk, the embedding and the output are the shipped bytes.
    assert {n: t for n, (t, _) in quantized.items() if n.startswith(head) and t not in ("F32",)} == {
        n: "Q2_K" for n, (t, _) in shipped.items() if n.startswith(head) and t != "F32"}
    assert all(quantized[n] == shipped[n] for n in shipped if not n.startswith(head))
    report = _check(out)
    assert report["layout"] == "bundled" and "LOW_BIT_MTP_HEAD" in [f["code"] for f in report["findings"]]
    # llama-server drafts with it.
    assert _drafts(built_server, out, tmp_path).draft_n > 0
    error_line(run_cli("tiny-model", "--trained", str(tmp_path / "x.gguf"), "--head-type", "Q9_9"), "--head-type")


@pytest.fixture(scope="module")
def shipped_pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped model as the converter's trunk (its mtp- sidecar beside it), from `tiny-model --trained`."""
    out = tmp_path_factory.mktemp("pair") / "trunk.gguf"
    done = run_cli("tiny-model", "--trained", str(out), "--layout", "sidecar", timeout=300)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def few_steps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`mtpinspect train` for 6 steps with seed 1 (the shipped model is seed 0) on the sample corpus (real
    text from the same packages, no apt-get needed): its folder and the run."""
    out = tmp_path_factory.mktemp("train") / "run"
    done = subprocess.run([*CLI, "train", str(out), "--steps", "6", "--seed", "1", "--corpus", "sample", "--format", "json"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


@needs_converter
@pytest.mark.server
def test_sidecar_layout_from_the_converter(built_server: ServerBinary, shipped_pair: Path, tmp_path: Path) -> None:
    out = shipped_pair
    sidecar = out.with_name("mtp-trunk.gguf")
    assert sidecar.is_file() and not any(n.startswith(f"blk.{mtp_block()}.") for n in _tensors(out))
    report = _check(out)
    assert (report["usable"], report["layout"]) == (True, "sidecar")
    assert report["runtimes"]["llama.cpp"]["verified"]["ok"] is True
    assert _drafts(built_server, out, tmp_path, "-md", str(sidecar)).draft_n > 0


def test_converter_needs_the_train_extra(tmp_path: Path) -> None:
    # torch made unimportable in the child, as on an install without the extra.
    blocker = (
        "import sys, importlib.abc\n"
        "class Absent(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch': raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "sys.argv = ['mtpinspect', *sys.argv[1:]]\n"
        "import runpy; runpy.run_module('mtpinspect', run_name='__main__')\n"
    )
    for args in (["train", str(tmp_path / "run")], ["tiny-model", "--trained", str(tmp_path / "s.gguf"), "--layout", "sidecar"]):
        done = subprocess.run([sys.executable, "-c", blocker, *args], capture_output=True, text=True, timeout=60)
        error_line(done, "torch", "pip install '.[train]'")
    assert list(tmp_path.iterdir()) == []


@needs_converter
@pytest.mark.server
def test_training_a_few_steps_makes_a_model_llama_server_drafts_with(
    built_server: ServerBinary, few_steps: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    out, done = few_steps
    curve = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert [row["step"] for row in curve] == [1, 2, 3, 4, 5, 6]
    assert curve[-1]["main_loss"] < curve[0]["main_loss"] and curve[-1]["mtp_loss"] < curve[0]["mtp_loss"]
    record = json.loads(done.stdout)["record"]
    assert sorted(f["cls"] for f in record["held_out"]) == ["code", "prose-en", "prose-ja"]
    # training.json says which text it was: the sample, of the packages' versions the sample was taken from.
    assert json.loads((out / "checkpoint" / "training.json").read_text()) == record
    shipped = json.loads((SAMPLE_DIR / SAMPLE_RECORD).read_text())["packages"]
    assert record["recipe"]["corpus"] == "sample"
    assert record["packages"] == {name: entry["version"] for name, entry in shipped.items()}
    assert record["documents"] == {entry["class"]: {"train": sum(not f["held_out"] for f in entry["files"]),
                                                    "held_out": sum(f["held_out"] for f in entry["files"])}
                                   for entry in shipped.values()}
    report = _check(out / "checkpoint")
    assert (report["mtp_layers"], report["layout"]) == (1, "checkpoint")
    gguf = out / "model-Q8_0.gguf"
    assert _check(gguf)["runtimes"]["llama.cpp"]["verified"]["ok"] is True
    assert _drafts(built_server, gguf, tmp_path).draft_n > 0
    # A second run into the same folder is refused unless --force.
    error_line(run_cli("train", str(out), "--steps", "1"), str(out), "not empty")


def test_missing_corpus_package_is_named(tmp_path: Path) -> None:
    from mtpinspect.errors import SourceError

    with pytest.raises(SourceError, match="mtpinspect-no-such-package"):
        fetch(CorpusClass("code", "mtpinspect-no-such-package", r".*"), tmp_path)


def test_debian_corpus_without_apt_get_says_so_and_names_the_sample(tmp_path: Path) -> None:
    """On a machine without Debian's tools (PATH without apt-get, as on Fedora or macOS) the default corpus
    is refused in one line that names what is missing and the corpus that needs it not; nothing is left."""
    empty = tmp_path / "bin"
    empty.mkdir()
    out = tmp_path / "run"
    done = run_cli("train", str(out), "--steps", "1", env={**os.environ, "PATH": str(empty)})
    error_line(done, "apt-get not found", "--corpus sample")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


@needs_apt
def test_debian_corpus_is_fetched_and_the_sample_is_its_files(tmp_path: Path) -> None:
    """The Debian corpus as `train` fetches it (apt-get download, dpkg-deb): every class has documents on
    both sides of the held-out split, and the shipped sample is the packages' own files at the same paths,
    the same bytes where the machine's lists give the version the sample was taken from."""
    fetched = packages(DEBIAN, tmp_path / "debs")
    for cls in CLASSES:
        sides = [doc.held_out for doc in documents(cls, fetched[cls.name])]
        assert sides.count(False) > 100 and sides.count(True) > 5, (cls.name, len(sides))
    shipped = json.loads((SAMPLE_DIR / SAMPLE_RECORD).read_text())["packages"]
    for cls in CLASSES:
        package, entry = fetched[cls.name], shipped[cls.package]
        ours = {f["path"]: f["sha256"] for f in entry["files"]}
        theirs = {path: _sha256(package.root / path) for path in ours if (package.root / path).is_file()}
        assert theirs.keys() == ours.keys(), cls.name
        if package.version == entry["version"]:
            assert theirs == ours, cls.name
    # Written again from the fetched packages, the sample is the shipped one, byte for byte, where the
    # versions are the same.
    again = sample.write(tmp_path / "again", fetched)["packages"]
    same = [name for name, entry in shipped.items() if entry["version"] == again[name]["version"]]
    assert {name: again[name] for name in same} == {name: shipped[name] for name in same}
    assert [_sha256(tmp_path / "again" / f"{name}.tar") for name in same] == [_sha256(SAMPLE_DIR / f"{name}.tar") for name in same]


def test_sample_corpus_is_real_text_on_both_sides_of_the_split(tmp_path: Path) -> None:
    """The shipped sample (what `train --corpus sample` and the training tests read): the files sample.json
    records and nothing else, a few documents of each class on each side of the same held-out rule (the
    hash of the path in the package), the manual pages' roff stripped to Japanese prose, and small."""
    record = json.loads((SAMPLE_DIR / SAMPLE_RECORD).read_text())
    assert sorted(p.name for p in SAMPLE_DIR.iterdir()) == sorted([SAMPLE_RECORD, *(f"{name}.tar" for name in record["packages"])])
    assert sum(p.stat().st_size for p in SAMPLE_DIR.iterdir()) < 300_000
    found = packages(SAMPLE, tmp_path)
    for cls in CLASSES:
        entry, root = record["packages"][cls.package], found[cls.name].root
        assert found[cls.name].version == entry["version"] and entry["licence"]
        recorded = {f["path"]: f["sha256"] for f in entry["files"]}
        unpacked = {p.relative_to(root).as_posix(): _sha256(p) for p in root.rglob("*") if p.is_file()}
        assert set(unpacked) == set(recorded) | ({entry["copyright"]} if entry["copyright"] else set())
        assert {path: unpacked[path] for path in recorded} == recorded
        assert all(f["held_out"] == held_out(f["path"]) for f in entry["files"])
        docs = list(documents(cls, found[cls.name]))
        assert [d.path for d in docs] == list(recorded)
        assert sum(d.held_out for d in docs) >= 2 and sum(not d.held_out for d in docs) >= 4, cls.name
    assert record["packages"]["manpages-ja"]["copyright"] and record["packages"]["python3.11-doc"]["copyright"]
    # The manual pages are roff, as the package has them; the text is what a reader sees (its title request,
    # comments and font escapes gone).
    manpages = next(cls for cls in CLASSES if cls.name == "prose-ja")
    for doc in documents(manpages, found["prose-ja"]):
        source = gzip.decompress((found["prose-ja"].root / doc.path).read_bytes()).decode("utf-8", errors="replace")
        marks = [mark for mark in (".TH ", '.\\"', "\\f") if mark in source]
        assert ".TH " in marks and not any(mark in doc.text for mark in marks), doc.path
        assert japanese_share(doc.text) >= 0.2, doc.path


def test_roff_text_keeps_what_a_reader_sees() -> None:
    source = '.\\" comment\n.TH LS 1\n.SH 名前\nls \\- ディレクトリの内容\n.B \\-a\n\\fB\\-\\-all\\fR で始まる要素\n.PP\n'
    assert roff_text(source) == "名前\nls - ディレクトリの内容\n-a\n--all で始まる要素"
    assert japanese_share("名前 ls") == pytest.approx(2 / 5)


def test_held_out_split_depends_on_the_path_alone() -> None:
    paths = [f"usr/lib/python3.11/m{i}.py" for i in range(2000)]
    chosen = [p for p in paths if held_out(p)]
    assert chosen == [p for p in paths if held_out(p)]
    assert 0.03 < len(chosen) / len(paths) < 0.07


@needs_converter
def test_compact_vocabulary_is_an_exact_full_vocabulary_model() -> None:
    """Training over kept tokens plus one shared row (+log N) gives the very probabilities of the
    full-vocabulary model that checkpoint.published_tensors writes, for kept and rare tokens alike."""
    import numpy as np
    import torch

    from mtpinspect.training.checkpoint import from_published, published_tensors
    from mtpinspect.training.model import Shape, TinyGlm, Vocabulary

    torch.manual_seed(0)
    vocab = Vocabulary(np.array([0, 3, 5, 7, 11, 12]), 20)
    shape = Shape(vocab=20, hidden=32, layers=1, heads=2, ff=64, expert_ff=32)
    compact = TinyGlm(shape, vocab)
    cfg = {"vocab_size": 20, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
           "intermediate_size": 64, "n_routed_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 32,
           "n_shared_experts": 1, "rope_theta": 10000.0, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-5,
           "max_position_embeddings": 64, "routed_scaling_factor": 1.0, "norm_topk_prob": False}
    full = from_published(published_tensors(compact, vocab), cfg)
    ids = torch.tensor([[1, 2, 4, 0, 3, 5]])  # compact ids: tokens 3, 5, 11, 0, 7, 12
    every = torch.tensor(vocab.kept)[ids]  # the same tokens by their own ids
    with torch.no_grad():
        small = torch.log_softmax(compact.logits(compact.trunk(ids)), -1)
        big = torch.log_softmax(full.logits(full.trunk(every)), -1)
        head_small = torch.log_softmax(compact.logits(compact.mtp_hidden(compact.trunk(ids), ids)), -1)
        head_big = torch.log_softmax(full.logits(full.mtp_hidden(full.trunk(every), every)), -1)
    kept = torch.tensor(vocab.kept)
    assert torch.allclose(small[..., : len(kept)], big[..., kept], atol=1e-5)
    assert torch.allclose(head_small[..., : len(kept)], head_big[..., kept], atol=1e-5)
    # A rare token's probability is the shared class's, split evenly over its N rows.
    rare = [t for t in range(20) if t not in vocab.kept]
    assert torch.allclose(small[..., vocab.rare] - np.log(len(rare)), big[..., rare[0]], atol=1e-5)


@pytest.mark.server
def test_diagnose_names_the_ternary_head(tmp_path: Path) -> None:
    """A TQ1_0 head keeps part of its skill (bench: 0.46-0.68 accepted at n-max 1 against 0.82-0.89), and
    diagnose's probe on the real llama-server puts it down to the quantized head."""
    out = tmp_path / "tq1.gguf"
    assert run_cli("tiny-model", "--trained", str(out), "--head-type", "TQ1_0", timeout=300).returncode == 0
    done = run_cli("diagnose", str(out), "--format", "json", "--n-predict", "48", "--", "-t", "2", timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert "HEAD_QUANTIZED" in [c["code"] for c in report["causes"]]
    figures = {(r["prompt_class"], r["n_max"]): r["acceptance"] for r in report["probe"]["results"] if r["n_max"]}
    assert figures and all(0.0 < a < 0.8 for a in figures.values()), figures


@needs_converter
@pytest.mark.server
def test_diagnose_names_a_head_from_another_training_run(
    shipped_pair: Path, few_steps: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    """The head of a barely trained run (6 steps, seed 1), converted by the pinned converter's --mtp, as the
    sidecar of the shipped trunk: it loads and drafts, and the trunk rejects about every draft. check finds its
    embedding rows another trunk's (SIDECAR_FOREIGN), so diagnose names a foreign head, with the copy class's
    figure (bench/bench_heads.py measures the 30- and 240-step heads the same way)."""
    from mtpinspect.training.toolchain import convert

    other = convert(few_steps[0] / "checkpoint", tmp_path / "mtp-other.gguf", "q8_0", mtp="sidecar")
    assert_foreign_head(shipped_pair, other)
