"""The second built-in model, a tiny Qwen3.5-family (qwen35) trunk with a trained MTP layer: every command
on it through the CLI on the real llama-server (short settings), and what the pinned llama.cpp does with
a hybrid trunk's rejected drafts."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from cliproc import error_line, run_cli
from gguf import GGUFReader
from head_probe import assert_foreign_head

from mtpinspect.runtime.find import ServerBinary
from mtpinspect.runtime.logs import VERIFY_LINE, verify_steps
from mtpinspect.runtime.server import LlamaServer
from mtpinspect.trained_model import QWEN35_GGUF, SHIPPED_QWEN35
from mtpinspect.training import missing

needs_converter = pytest.mark.skipif(bool(missing(("torch", "transformers"))), reason="the train extra is not installed")


def test_shipped_qwen35_is_a_hybrid_trunk_with_one_mtp_layer() -> None:
    reader = GGUFReader(QWEN35_GGUF)
    fields = {f.name: f.contents() for f in reader.fields.values()}
    assert fields["general.architecture"] == "qwen35"
    assert fields["qwen35.nextn_predict_layers"] == 1
    names = {t.name for t in reader.tensors}
    blocks = fields["qwen35.block_count"]
    trunk = blocks - 1
    # Gated DeltaNet layers (ssm_*) and attention layers (attn_q) both in the trunk; the MTP layer is an
    # attention block with the nextn tensors.
    assert any(n.startswith("blk.0.ssm_") for n in names) and f"blk.{trunk - 1}.attn_q.weight" in names
    assert {f"blk.{trunk}.nextn.eh_proj.weight", f"blk.{trunk}.nextn.enorm.weight", f"blk.{trunk}.nextn.hnorm.weight"} <= names
    assert QWEN35_GGUF.stat().st_size < 40 << 20
    record = json.loads((SHIPPED_QWEN35 / "training.json").read_text())
    assert record["recipe"]["family"] == "qwen35" and record["recipe"]["corpus"] == "debian"
    assert record["recipe"]["steps"] == 1100 and "llama-quantize Q8_0" in record["gguf"]
    # A trained model, not a degenerate one: on held-out text its greedy tokens are many different ones
    # (the 64-step stopgap's were one token, distinct share 0.000-0.001) and its head agrees with its trunk.
    for figures in record["held_out"]:
        assert figures["distinct_share"] > 0.01 and figures["main_accuracy"] > 0.2, figures
        assert 0.4 < figures["agreement"] < 0.95 and figures["top_token_share"] < 0.3, figures


def test_unknown_built_in_model_is_one_line(tmp_path: Path) -> None:
    error_line(run_cli("sweep", "builtin:nope", "--out", str(tmp_path / "out")), "builtin:nope", "builtin:qwen35")


def test_verify_steps_count_the_traced_steps_and_restores() -> None:
    """The pinned server's LLAMA_TRACE=1 lines (server-context.cpp), as printed; text that is not a step
    line says nothing."""
    log = ("0.07.529.866 I slot   operator(): id  0 | task 0 | accepted  0/ 1 draft tokens\n"
           "slot   operator(): id  0 | task 6 | accepted  1/ 3 draft tokens (restore checkpoint)\n"
           "slot   operator(): id  0 | task 6 | accepted  2/ 2 draft tokens\n"
           "slot print_timing: id  0 | task 6 | draft acceptance = 0.25000 (    1 accepted /     4 generated), mean len =  1.50\n")
    steps = verify_steps(log)
    assert steps is not None and (steps.steps, steps.restores) == (3, 1)
    assert verify_steps("srv  update_slots: all slots are idle\nThe accepted 3/4 of the tokens were drafts.\n") is None
    assert verify_steps("") is None


@pytest.mark.server
def test_sweep_of_the_qwen35_model_drafts_and_counts_its_restores(tmp_path: Path) -> None:
    """sweep builtin:qwen35 across n-max on the real llama-server, greedy, on the 12 built-in prompts: its
    trained head drafts as a real head does (part of its drafts rejected, fewer accepted per drafted token
    the deeper it drafts, figures that differ by class), the traced step lines are read and the restores
    counted. The pinned llama.cpp rolls a qwen35 trunk back without a checkpoint: with draft-mtp it keeps
    n_rs_seq = n-max recurrent states per sequence (common.h need_n_rs_seq, llm_arch_supports_rs_rollback)
    and restores a checkpoint only for a rollback longer than that, which a draft of at most n-max tokens
    never needs: 0 restores, however many drafts are rejected."""
    out = tmp_path / "out"
    done = run_cli("sweep", "builtin:qwen35", "--n-max", "1,3", "--repeat", "1", "--n-predict", "48",
                   "--out", str(out), "--format", "json", "--no-plot", "--", "-t", "2", timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    groups = {(g["prompt_class"], g["n_max"]): g for g in report["results"] if g["n_max"] is not None}
    classes = {c for c, _ in groups}
    assert classes == {"code", "extraction", "prose-en", "prose-ja"} and {n for _, n in groups} == {1, 3}
    for (cls, n_max), group in groups.items():
        low, high = (0.4, 0.97) if n_max == 1 else (0.2, 0.9)
        assert group["acceptance"] is not None and low < group["acceptance"] < high, (cls, n_max, group["acceptance"])
        assert group["log_agrees"] is True and group["rss_peak_bytes"]
        assert group["drafted"] > group["accepted"]  # drafts were rejected ...
        assert group["checkpoint_restores"] == 0  # ... and rolled back without a checkpoint
    for cls in classes:
        assert groups[(cls, 3)]["acceptance"] < groups[(cls, 1)]["acceptance"]
    assert len({round(groups[(cls, 1)]["acceptance"], 2) for cls in classes}) > 1  # not one figure for every text
    logs = "".join(p.read_text(errors="replace") for p in (out / "logs").glob("n-max-*.log"))
    steps = verify_steps(logs)
    assert steps is not None and steps.restores == 0
    assert steps.steps >= sum(g["drafts"] for g in groups.values())


_STEP = re.compile(r"accepted\s+(\d+)/\s*(\d+) draft tokens")


@pytest.mark.server
def test_a_longer_ngram_draft_beside_draft_mtp_takes_the_restore_path(built_server: ServerBinary, tmp_path: Path) -> None:
    """The pinned llama.cpp's checkpoint restore on a hybrid trunk, reached on purpose: with draft-mtp it
    keeps n_rs_seq = n-max recurrent states, so it restores only a rollback longer than that
    (server-context.cpp: ``n_rollback > llama_n_rs_seq``). An n-gram drafter run beside it drafts up to its
    own length (here 8 tokens, n-max 2): a rejected n-gram draft takes the restore path. The server neither
    crashes nor miscounts there: the replayed step that follows a restore re-verifies the accepted tokens
    and is not counted as drafts again, and its replayed token is taken off the accepted count."""
    args = ["-t", "1", "-c", "1024", "--spec-type", "draft-mtp,ngram-simple", "--spec-draft-n-max", "2",
            "--spec-ngram-simple-size-n", "2", "--spec-ngram-simple-size-m", "8"]
    prompt = "def add(a, b):\n    return a + b\n\n" * 4 + "def add(a, b):\n    return"
    with LlamaServer(built_server, QWEN35_GGUF, args, log_path=tmp_path / "server.log",
                     env={**os.environ, "LLAMA_TRACE": "1"}) as srv:
        done = srv.complete(prompt, n_predict=64, temperature=1.0, seed=1, timeout=120)
        log = srv.read_log()
    steps = [(int(m.group(1)), int(m.group(2)), VERIFY_LINE.search(line).group("restore") is not None)
             for line in log.splitlines() if (m := _STEP.search(line))]
    restores = [i for i, (_, _, restore) in enumerate(steps) if restore]
    assert restores, log[-3000:]
    assert all(steps[i][1] > 2 for i in restores)  # only drafts longer than n_rs_seq = n-max
    replays = {i + 1 for i in restores}
    assert all(i < len(steps) and steps[i][1] == steps[i - 1][0] + 1 for i in replays)  # the accepted tokens, again
    drafted = sum(d for i, (_, d, _) in enumerate(steps) if i not in replays)
    accepted = sum(a - (i in replays) for i, (a, _, restore) in enumerate(steps) if not restore)
    assert (done.draft_n, done.draft_n_accepted) == (drafted, accepted), steps
    assert verify_steps(log).restores == len(restores)


@pytest.mark.server
def test_check_verifies_the_qwen35_model_with_the_engine() -> None:
    done = run_cli("check", str(QWEN35_GGUF), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["usable"], report["mtp_layers"], report["layout"]) == (True, 1, "bundled")
    llama = report["runtimes"]["llama.cpp"]
    assert llama["status"] == "supported" and llama["verified"]["ok"] is True


@pytest.mark.server
def test_drift_at_one_thread_on_the_hybrid_model(tmp_path: Path) -> None:
    """At -t 1, MTP on the hybrid trunk (drafts verified in a batch, rejected ones rolled back in the
    recurrent state) gives the baseline's temperature-0 text, as on the all-attention model."""
    out = tmp_path / "out"
    done = run_cli("drift", "builtin:qwen35", "--prompts", "code", "--n-predict", "48", "--n-max", "2", "--threads", "0",
                   "--out", str(out), "--format", "json", timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    by_trigger = {c["trigger"]: c for c in report["comparisons"]}
    mtp = by_trigger["mtp"]
    assert mtp["acceptance"] is not None and mtp["acceptance"] > 0
    assert mtp["matching"] == mtp["compared"] > 0, mtp
    assert by_trigger["control"]["matching"] == by_trigger["control"]["compared"]


@pytest.fixture(scope="module")
def qwen35_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two steps of the qwen35 recipe with seed 1 (the shipped model is seed 0) on the sample corpus: a
    Hugging Face folder the pinned converter reads, and another training run's head."""
    out = tmp_path_factory.mktemp("qwen35") / "run"
    done = run_cli("train", str(out), "--family", "qwen35", "--corpus", "sample", "--steps", "2", "--seed", "1",
                   "--format", "json", timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return out / "checkpoint"


@needs_converter
def test_the_run_gguf_is_llama_quantize_of_the_converter_at_f32(qwen35_checkpoint: Path, tmp_path: Path) -> None:
    """The qwen35 recipe makes its GGUF as Qwen3.5 releases are made: the pinned converter at F32, then
    llama-quantize Q8_0; remade from the checkpoint the same way it is the run's file byte for byte. (Its
    tensors are also the converter's own --outtype q8_0 ones, bit for bit: the two Q8_0 quantizers agree.)"""
    from mtpinspect.training.toolchain import convert, quantize

    run_gguf = qwen35_checkpoint.parent / "model-Q8_0.gguf"
    record = json.loads((qwen35_checkpoint / "training.json").read_text())
    assert "llama-quantize Q8_0" in record["gguf"]
    full = convert(qwen35_checkpoint, tmp_path / "model-F32.gguf", "f32")
    again = quantize(full, tmp_path / "again.gguf", "Q8_0", {})
    assert again.read_bytes() == run_gguf.read_bytes()
    by_converter = convert(qwen35_checkpoint, tmp_path / "converter.gguf", "q8_0")
    ours = {t.name: (t.tensor_type.name, t.data.tobytes()) for t in GGUFReader(run_gguf).tensors}
    assert ours == {t.name: (t.tensor_type.name, t.data.tobytes()) for t in GGUFReader(by_converter).tensors}


@needs_converter
@pytest.mark.server
def test_diagnose_names_a_qwen35_conversion_without_its_mtp_layer(qwen35_checkpoint: Path, tmp_path: Path) -> None:
    """The pinned converter's --no-mtp drops the MTP layer: check and diagnose say so, before any server runs."""
    from mtpinspect.training.toolchain import convert

    trunk = convert(qwen35_checkpoint, tmp_path / "trunk.gguf", "q8_0", mtp="trunk")
    fields = {f.name: f.contents() for f in GGUFReader(trunk).fields.values()}
    assert fields["general.architecture"] == "qwen35" and "qwen35.nextn_predict_layers" not in fields
    done = run_cli("diagnose", str(trunk), "--format", "json", "--n-predict", "32", "--", "-t", "2", timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads(done.stdout)
    first = report["causes"][0]
    assert first["code"] == "MTP_WEIGHTS_MISSING", report["causes"]
    assert any("nextn_predict_layers = None" in line for line in first["evidence"]), first["evidence"]


@needs_converter
@pytest.mark.server
def test_diagnose_names_a_foreign_head_on_the_qwen35_trunk(qwen35_checkpoint: Path, tmp_path: Path) -> None:
    """The shipped trunk without its MTP layer (as the converter's --no-mtp writes it) and the mtp- sidecar
    of another training run (seed 1, the converter's --mtp): it loads and drafts, the trunk rejects about
    every draft; check finds the sidecar's embedding rows another trunk's (SIDECAR_FOREIGN), and diagnose
    names a foreign head with the copy class's figure, as on the glm4moe model."""
    from gguf_factory import drop_mtp_layer

    from mtpinspect.training.toolchain import convert

    trunk = drop_mtp_layer(QWEN35_GGUF, tmp_path / "trunk.gguf")
    other = convert(qwen35_checkpoint, tmp_path / "mtp-other.gguf", "q8_0", mtp="sidecar")
    assert_foreign_head(trunk, other)


@pytest.mark.server
def test_diagnose_names_a_low_bit_qwen35_head(tmp_path: Path) -> None:
    """The shipped GGUF with its MTP block requantized by the pinned llama-quantize to TQ1_0. At hidden 128
    only the 256-wide eh_proj takes it (TQ1_0 and the k-quants pack rows of 256); llama-quantize gives the
    128- and 384-wide matrices its fallback, Q4_0. The ternary eh_proj is the head's input: check flags it
    (LOW_BIT_MTP_HEAD) and diagnose's probe on the real llama-server puts the lost acceptance down to it."""
    from mtpinspect.training.toolchain import quantize

    out = quantize(QWEN35_GGUF, tmp_path / "tq1.gguf", "Q8_0", {r"blk\.4\.": "tq1_0"})
    types = {t.name: t.tensor_type.name for t in GGUFReader(out).tensors if t.name.startswith("blk.4.")}
    assert types["blk.4.nextn.eh_proj.weight"] == "TQ1_0" and types["blk.4.attn_q.weight"] == "Q4_0"
    done = run_cli("diagnose", str(out), "--format", "json", "--n-predict", "48", "--", "-t", "2", timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert "HEAD_QUANTIZED" in [c["code"] for c in report["causes"]], report["causes"]
    figures = {(r["prompt_class"], r["n_max"]): r["acceptance"] for r in report["probe"]["results"] if r["n_max"]}
    assert figures and all(a < 0.5 for a in figures.values()), figures


def _mtp_memory(model: str, gguf: Path, tmp_path: Path) -> tuple[int, int]:
    """check's estimate of what MTP adds (llama.cpp's own figures at -c 4096), and what it added to the
    post-load RSS of the real llama-server at n-max 1, same context (the model's 4096)."""
    done = run_cli("check", str(gguf), "--format", "json")
    assert done.returncode == 0, done.stderr
    memory = json.loads(done.stdout)["memory"]
    assert memory["context"] == 4096
    done = run_cli("sweep", model, "--n-max", "1", "--repeat", "1", "--prompts", "code", "--n-predict", "8", "--no-plot",
                   "--out", str(tmp_path / "out"), "--format", "json", "--", "-t", "2", timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {g["n_max"]: g["rss_post_load_bytes"] for g in json.loads(done.stdout)["results"]}
    return memory["mtp_bytes"], loaded[1] - loaded[None]


@pytest.mark.server
@pytest.mark.parametrize("model", ["builtin:glm4moe", "builtin:qwen35"])
def test_check_memory_estimate_covers_what_mtp_adds(model: str, tmp_path: Path) -> None:
    from mtpinspect.trained_model import built_in

    estimate, measured = _mtp_memory(model, built_in(model), tmp_path)
    assert measured <= 1.5 * estimate + (4 << 20), (estimate, measured)
