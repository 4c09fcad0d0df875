"""Issue 32: whether a head matches its model.

Statically, an mtp- sidecar's embedding rows against its trunk's, read by range requests (over the loopback
Hub, the bytes and requests counted); on the probe, the copy class that any matching head drafts nearly all
of, judged with check's evidence (head_rules.py)."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pytest
from gguf.constants import GGMLQuantizationType
from gguf.quants import dequantize, quantize
from hubstub import Fault, HubStub

import mtpinspect
from mtpinspect.causes import CAUSES
from mtpinspect.diagnosis.head_rules import COPY_MATCHES, judge_head
from mtpinspect.diagnosis.probe_result import COPY_CLASS, HEAD_PROBE_SET, ProbeFigure
from mtpinspect.diagnosis.static import gather_static
from mtpinspect.errors import FormatError
from mtpinspect.formats.gguf import FIRST_READ, GGUFTensor, read_gguf_header
from mtpinspect.formats.gguf_rows import cosine, row_span, row_values
from mtpinspect.inspection.embedding import SAMPLED_ROWS
from mtpinspect.inspection.gguf_rules import FOREIGN_COSINE
from mtpinspect.runtime.build_cache import cached_tool
from mtpinspect.sources.policy import FetchPolicy
from mtpinspect.sources.reader import LocalFileReader
from mtpinspect.sweep.prompts import load_set
from mtpinspect.tiny_model import TinyModelSpec, spec_for_head_type, write_tiny_model
from mtpinspect.vocabulary import EvidenceSource

# A sidecar pair of the writer's model, wide enough for every block type (256 elements a row).
PAIR = TinyModelSpec(layout="sidecar", vocab=256, embd=256, expert_ff=256)
# One whose embedding (4 MiB) runs past the first header read (2 MiB), so rows cost range requests.
WIDE_PAIR = TinyModelSpec(layout="sidecar", vocab=1024, embd=1024)


def _pair(folder: Path, spec: TinyModelSpec = PAIR) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    main, side = write_tiny_model(folder / "tiny.gguf", spec)
    return main, side


def _retrain_embedding(sidecar: Path, seed: int = 1) -> None:
    """Give the sidecar another embedding, as a head of another training run has: its token_embd rows
    replaced by other vectors, in place (the header and every other tensor untouched)."""
    header = read_gguf_header(LocalFileReader(sidecar))
    tensor = header.tensor("token_embd.weight")
    assert tensor is not None and tensor.ggml_type == "F32"
    rng = random.Random(seed)
    values = [rng.gauss(0.0, 1.0) for _ in range(tensor.n_elements)]
    with sidecar.open("r+b") as f:
        f.seek(header.data_offset + tensor.offset)
        f.write(struct.pack(f"<{len(values)}f", *values))


# -- rows of a tensor -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q5_1", "TQ1_0"])
def test_row_values_are_gguf_pys_dequantization(kind: str) -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(0, 1, (4, 256)).astype(np.float32)
    qtype = GGMLQuantizationType[kind]
    raw = quantize(values, qtype) if kind != "F32" else values
    expected = dequantize(raw, qtype) if kind != "F32" else values
    got = row_values(raw.reshape(4, -1)[2].tobytes(), kind, 256)
    assert got is not None and len(got) == 256
    assert np.allclose(np.array(got), expected.reshape(4, 256)[2], atol=1e-6)
    # The same row, quantized, is the same vector within the type's error; another row is not.
    similar = cosine(got, tuple(float(v) for v in values[2]))
    other = cosine(got, tuple(float(v) for v in values[1]))
    assert similar is not None and other is not None
    assert similar > FOREIGN_COSINE > abs(other)


@pytest.mark.parametrize("kind", ["Q2_K", "Q4_K", "Q6_K", "IQ4_NL"])
def test_row_values_of_types_gguf_py_only_reads(kind: str) -> None:
    """gguf-py dequantizes these but cannot quantize them: any row's bytes read as it reads them."""
    qtype = GGMLQuantizationType[kind]
    from mtpinspect.formats.gguf_constants import GGML_QUANT_SIZES

    block, size = GGML_QUANT_SIZES[qtype]
    raw = np.random.default_rng(5).integers(0, 256, 256 // block * size, dtype=np.uint8)
    got = row_values(raw.tobytes(), kind, 256)
    assert got is not None
    assert np.allclose(np.array(got), dequantize(raw, qtype).reshape(-1), equal_nan=True)


def test_row_spans_are_bounded_by_the_file(tmp_path: Path) -> None:
    main, _ = _pair(tmp_path)
    header = read_gguf_header(LocalFileReader(main))
    embd = header.tensor("token_embd.weight")
    assert embd is not None and embd.shape == (256, 256)
    span = row_span(header, embd, 255)
    assert (span.length, span.width) == (256 * 4, 256)
    assert span.offset == header.data_offset + embd.offset + 255 * 1024
    with pytest.raises(FormatError, match=r"token_embd.weight: no row 256 \(it has 256\)"):
        row_span(header, embd, 256)
    odd = GGUFTensor("odd.weight", (100, 4), "Q8_0", embd.offset, 400, 136)
    with pytest.raises(FormatError, match=r"odd.weight: shape \[100, 4\] is not rows of whole Q8_0 blocks"):
        row_span(header, odd, 0)
    huge = GGUFTensor("huge.weight", (1 << 20, 2), "F32", 0, 1 << 21, 1 << 23)
    with pytest.raises(FormatError, match="more than the 1048576 any embedding has"):
        row_span(header, huge, 0)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(main.read_bytes()[: span.offset + 10])
    with pytest.raises(FormatError, match="row 255 lies past the end of the file"):
        row_span(read_gguf_header(LocalFileReader(cut)), embd, 255)


# -- check: the sidecar's embedding against the trunk's ------------------------------------------------


def test_same_release_sidecar_over_the_hub(tmp_path: Path) -> None:
    main, side = _pair(tmp_path, WIDE_PAIR)
    with HubStub() as stub:
        stub.add_repo("acme/Pair-GGUF", {"tiny.gguf": main, "mtp-tiny.gguf": side})
        report = mtpinspect.check("acme/Pair-GGUF", endpoint=stub.url, verify=False)
        served = stub.bytes_served("acme/Pair-GGUF")
        ranges = [r for r in stub.requests("acme/Pair-GGUF") if r.range]
    assert "SIDECAR_FOREIGN" not in report.codes()
    line = next(e for f in report.findings if f.code == "MTP_SIDECAR" for e in f.evidence if "token_embd" in e)
    assert f"{SAMPLED_ROWS} rows sampled" in line and "every row byte for byte the main file's" in line
    assert "output_norm identical" in line
    # Each row is 4,096 bytes (F32, 1,024 wide): the sampled rows past the headers' first reads cost one
    # range request of exactly that, and the check counts what it fetched.
    assert f"{(2 * SAMPLED_ROWS + 2) * 4096} bytes read" in line
    rows = [r for r in ranges if r.nbytes == 4096]
    assert 0 < len(rows) <= 2 * SAMPLED_ROWS
    assert report.bytes_read == served
    assert report.runtimes["llama.cpp"].status == "supported"


def test_foreign_sidecar_over_the_hub(tmp_path: Path) -> None:
    main, side = _pair(tmp_path, WIDE_PAIR)
    _retrain_embedding(side)
    with HubStub() as stub:
        stub.add_repo("acme/Pair-GGUF", {"tiny.gguf": main, "mtp-tiny.gguf": side})
        report = mtpinspect.check("acme/Pair-GGUF", endpoint=stub.url, verify=False)
        served = stub.bytes_served("acme/Pair-GGUF")
    foreign = next(f for f in report.findings if f.code == "SIDECAR_FOREIGN")
    assert foreign.severity == "error"
    assert "unrelated vectors" in foreign.evidence[0] and "output_norm identical" in foreign.evidence[0]
    cosines = [float(line.rsplit(" ", 1)[1]) for line in foreign.evidence if line.startswith("token ")]
    assert cosines and all(abs(c) < FOREIGN_COSINE for c in cosines)
    # It loads and drafts: at risk, not unsupported; the check counts every byte the Hub served it.
    assert report.runtimes["llama.cpp"].status == "at-risk"
    assert report.bytes_read == served


def _poison_embedding(sidecar: Path, value: float) -> None:
    """Fill the sidecar's token_embd with NaN or Inf, in place: a head whose embedding overflowed."""
    header = read_gguf_header(LocalFileReader(sidecar))
    tensor = header.tensor("token_embd.weight")
    assert tensor is not None and tensor.ggml_type == "F32"
    with sidecar.open("r+b") as f:
        f.seek(header.data_offset + tensor.offset)
        f.write(struct.pack("<f", value) * tensor.n_elements)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_sidecar_embedding_is_a_broken_head(tmp_path: Path, value: float) -> None:
    main, side = _pair(tmp_path, WIDE_PAIR)
    _poison_embedding(side, value)
    with HubStub() as stub:
        stub.add_repo("acme/Pair-GGUF", {"tiny.gguf": main, "mtp-tiny.gguf": side})
        report = mtpinspect.check("acme/Pair-GGUF", endpoint=stub.url, verify=False)
    broken = next(f for f in report.findings if f.code == "MTP_HEAD_NON_FINITE")
    assert broken.severity == "error" and "broken head" in broken.message
    assert sum("NaN or Inf in mtp-tiny.gguf" in line for line in broken.evidence) == SAMPLED_ROWS
    assert not any("all zero, or a type" in line for f in report.findings for line in f.evidence)
    assert report.runtimes["llama.cpp"].status == "unsupported"
    assert not report.usable and report.exit_code == 1


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_bundled_head_is_broken(tmp_path: Path, value: float) -> None:
    """A bundled head drafts with the file's own embedding: NaN or Inf rows there break it. Read on disk only
    (over the Hub the rows would cost every bundled check a wave): the Hub check says nothing of them."""
    (main,) = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(layout="bundled", vocab=1024, embd=1024))
    _poison_embedding(main, value)
    with HubStub() as stub:
        stub.add_repo("acme/Bundled-GGUF", {"tiny.gguf": main})
        remote = mtpinspect.check("acme/Bundled-GGUF", endpoint=stub.url, verify=False)
        assert remote.bytes_read == stub.bytes_served("acme/Bundled-GGUF")
    assert "MTP_HEAD_NON_FINITE" not in remote.codes()
    report = mtpinspect.check(str(main), verify=False)
    broken = next(f for f in report.findings if f.code == "MTP_HEAD_NON_FINITE")
    assert "token_embd.weight, the embedding its head drafts with" in broken.message
    assert f"{SAMPLED_ROWS} of {SAMPLED_ROWS} sampled rows" in broken.message
    assert report.runtimes["llama.cpp"].status == "unsupported" and report.exit_code == 1


def test_diagnose_counts_a_non_finite_head_as_a_head_defect(tmp_path: Path) -> None:
    (main,) = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(layout="bundled", vocab=1024, embd=1024))
    _poison_embedding(main, float("nan"))
    static = gather_static(str(main))
    assert [f.code for f in static.head_defect] == ["MTP_HEAD_NON_FINITE"]


def test_intact_bundled_head_reads_its_rows_and_says_nothing(tmp_path: Path) -> None:
    (main,) = write_tiny_model(tmp_path / "tiny.gguf", TinyModelSpec(layout="bundled", vocab=1024, embd=1024))
    report = mtpinspect.check(str(main), verify=False)
    assert "MTP_HEAD_NON_FINITE" not in report.codes()
    assert report.runtimes["llama.cpp"].status == "supported"


def test_non_finite_sidecar_checked_alone_is_broken(tmp_path: Path) -> None:
    _, side = _pair(tmp_path, WIDE_PAIR)
    _poison_embedding(side, float("nan"))
    lone = tmp_path / "alone"
    lone.mkdir()
    side.rename(lone / side.name)
    report = mtpinspect.check(str(lone / side.name), verify=False)
    assert "MTP_HEAD_NON_FINITE" in report.codes()


def test_all_zero_sidecar_rows_are_said_to_be_zero(tmp_path: Path) -> None:
    main, side = _pair(tmp_path, WIDE_PAIR)
    _poison_embedding(side, 0.0)
    report = mtpinspect.check(str(main), mtp_file=str(side), verify=False)
    assert "MTP_HEAD_NON_FINITE" not in report.codes()
    line = next(e for f in report.findings if f.code == "MTP_SIDECAR" for e in f.evidence if "token_embd" in e)
    assert line.endswith("no row could be compared (all zero)")


def test_rows_that_cannot_be_read_leave_the_check_going(tmp_path: Path) -> None:
    """The headers read, then the Hub stalls on the rows (reads past the first 2 MiB): the check says the
    rows were not compared, and why, and still gives its verdict."""
    main, side = _pair(tmp_path, WIDE_PAIR)
    with HubStub() as stub:
        stub.add_repo("acme/Pair-GGUF", {"tiny.gguf": main, "mtp-tiny.gguf": side})
        stub.add_fault("acme/Pair-GGUF", Fault("stall-body", where="mtp-tiny.gguf", after=FIRST_READ))
        report = mtpinspect.check("acme/Pair-GGUF", endpoint=stub.url, verify=False, policy=FetchPolicy(timeout=1.5))
    assert "SIDECAR_FOREIGN" not in report.codes()
    line = next(e for f in report.findings if f.code == "MTP_SIDECAR" for e in f.evidence if "not compared" in e)
    assert line.startswith("mtp-tiny.gguf: embedding rows not compared: ") and "1.5 s" in line
    assert report.runtimes["llama.cpp"].status == "supported"


def test_sidecar_pair_in_the_hugging_face_cache(tmp_path: Path) -> None:
    """The pair as `hf download` leaves it in the cache: symlinks in a snapshot to blobs named by hash. The
    rows are read through the links, as the headers are."""
    main, side = _pair(tmp_path / "made", WIDE_PAIR)
    _retrain_embedding(side)
    repo = tmp_path / "hub" / "models--acme--Pair-GGUF"
    snapshot = repo / "snapshots" / ("a" * 40)
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    for i, path in enumerate((main, side)):
        blob = repo / "blobs" / f"{i:064x}"
        path.rename(blob)
        (snapshot / path.name).symlink_to(f"../../blobs/{blob.name}")
    report = mtpinspect.check(str(snapshot), verify=False)
    foreign = next(f for f in report.findings if f.code == "SIDECAR_FOREIGN")
    assert foreign.evidence[0].startswith("mtp-tiny.gguf: token_embd.weight (F32) against tiny.gguf's (F32)")
    assert report.runtimes["llama.cpp"].status == "at-risk"


def test_requantized_sidecar_is_the_same_embedding_within_its_error(tmp_path: Path) -> None:
    """The sidecar quantized by the pinned llama-quantize (token_embd Q8_0 against the trunk's F32): the same
    vectors, not byte for byte."""
    quantizer = cached_tool("llama-quantize")
    if quantizer is None:
        pytest.skip("no cached llama-quantize (built with llama-server: mtpinspect check --verify builds it)")
    import subprocess

    main, side = _pair(tmp_path)
    q8 = tmp_path / "q8" / "mtp-tiny.gguf"
    q8.parent.mkdir()
    subprocess.run([str(quantizer), "--allow-requantize", "--token-embedding-type", "q8_0", str(side), str(q8), "Q8_0"],
                   check=True, capture_output=True, timeout=120)
    report = mtpinspect.check(str(main), mtp_file=str(q8), verify=False)
    assert "SIDECAR_FOREIGN" not in report.codes()
    line = next(e for f in report.findings if f.code == "MTP_SIDECAR" for e in f.evidence if "token_embd" in e)
    assert "token_embd.weight (Q8_0) against tiny.gguf's (F32)" in line
    assert "the same vectors within the quantization's error" in line
    low = float(line.split("(cosine ")[1].split("-")[0])
    assert low > 0.99


# -- the copy probe ------------------------------------------------------------------------------------


def test_the_copy_class_is_a_builtin_set() -> None:
    prompts = load_set(HEAD_PROBE_SET)
    assert prompts and {p.prompt_class for p in prompts} == {COPY_CLASS}


def _figure(prompt_class: str, accepted: int, drafted: int, n_max: int = 1) -> ProbeFigure:
    return ProbeFigure(f"n-max-{n_max}", n_max, prompt_class, accepted / drafted, 1 + accepted / drafted, 30.0, 1.0,
                       False, (accepted / drafted,), drafted, accepted, drafted, None)


def _static(tmp_path: Path, spec: TinyModelSpec, *, foreign: bool = False):
    tmp_path.mkdir()
    files = write_tiny_model(tmp_path / "m.gguf", spec)
    if foreign:
        _retrain_embedding(files[1])
    return gather_static(str(files[0]))


def test_copy_probe_names_the_head(tmp_path: Path) -> None:
    easy = [_figure(COPY_CLASS, 90, 100), _figure("code", 40, 100), _figure("prose-en", 85, 100)]
    weak = [_figure(COPY_CLASS, 30, 100), _figure("code", 30, 100), _figure("prose-en", 20, 100)]
    # A matching head: low acceptance on one class is the text.
    healthy = judge_head(_static(tmp_path / "a", PAIR), easy)
    assert healthy.matches is True and [c.code for c in healthy.causes] == ["PROMPT_CLASS"]
    assert "the text is hard, not the head" in healthy.causes[0].message and "code 40%" in healthy.causes[0].message
    # The same figures with a poor copy class: the head, named by what check found.
    foreign = judge_head(_static(tmp_path / "b", PAIR, foreign=True), weak)
    assert [c.code for c in foreign.causes] == ["HEAD_FOREIGN"] and foreign.matches is False
    quantized = judge_head(_static(tmp_path / "c", spec_for_head_type("TQ1_0")), weak)
    assert [c.code for c in quantized.causes] == ["HEAD_QUANTIZED"]
    plain = judge_head(_static(tmp_path / "d", PAIR), weak)
    assert [c.code for c in plain.causes] == ["HEAD_WEAK"]
    assert f"(at least {COPY_MATCHES} on every head made with its trunk)" in plain.causes[0].evidence[0]
    # A copy class that matches refutes check's SIDECAR_FOREIGN (a note), and names nothing.
    refuted = judge_head(_static(tmp_path / "e", PAIR, foreign=True), [_figure(COPY_CLASS, 95, 100)])
    assert refuted.causes == [] and "matches this model after all" in refuted.notes[0]
    assert {"HEAD_FOREIGN", "HEAD_WEAK"} <= set(CAUSES)


@pytest.mark.server
def test_diagnose_names_a_foreign_sidecar_on_the_real_server(tmp_path: Path) -> None:
    """The writer's perfect head given another embedding: llama-server drafts with the sidecar's rows, so the
    drafts go wrong on every class, the copy class included; check's rows say why."""
    from mtpinspect.diagnosis import diagnose

    main, side = _pair(tmp_path)
    _retrain_embedding(side)
    report = diagnose(str(main), server_args=("-t", "1"), n_predict=16)
    codes = [c.code for c in report.causes]
    assert codes[0] == "HEAD_FOREIGN", codes
    assert "HEAD_WEAK" not in codes and "PROMPT_CLASS" not in codes
    assert EvidenceSource.probe in report.causes[0].sources


def test_find_says_which_derivative_ships_a_foreign_head(tmp_path: Path) -> None:
    """Two GGUF derivatives of one base, each with an mtp- sidecar: the one whose sidecar's rows are another
    trunk's is `foreign`, at risk in llama.cpp."""
    good_main, good_side = _pair(tmp_path / "good", WIDE_PAIR)
    bad_main, bad_side = _pair(tmp_path / "bad", WIDE_PAIR)
    _retrain_embedding(bad_side)
    with HubStub() as stub:
        stub.add_repo("acme/Tiny", {"config.json": b"{}"})
        stub.add_repo("good/Tiny-GGUF", {"tiny.gguf": good_main, "mtp-tiny.gguf": good_side},
                      base_model=("quantized", "acme/Tiny"), downloads=1)
        stub.add_repo("bad/Tiny-GGUF", {"tiny.gguf": bad_main, "mtp-tiny.gguf": bad_side},
                      base_model=("quantized", "acme/Tiny"), downloads=2)
        census = mtpinspect.find("acme/Tiny", limit=None, verify=False, endpoint=stub.url)
    heads = {d.repo: d.head for d in census.derivatives}
    assert heads == {"good/Tiny-GGUF": "kept", "bad/Tiny-GGUF": "foreign"}, heads
    runtimes = {d.repo: d.runtimes["llama.cpp"] for d in census.derivatives}
    assert runtimes == {"good/Tiny-GGUF": "supported", "bad/Tiny-GGUF": "at-risk"}


@pytest.mark.parametrize(("kind", "nbytes"), [("Q8_K", 292), ("Q8_1", 8 * 40)])
def test_types_gguf_py_cannot_read_give_no_values(kind: str, nbytes: int) -> None:
    assert row_values(bytes(nbytes), kind, 256) is None
