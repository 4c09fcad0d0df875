"""Tiny MTP models: the files (keys, tensors, types) and what the real llama-server does with them.

The server tests compare three things: llama-server's own figures (timings, /metrics, its `draft
acceptance` log line), the acceptance asked for, and the draft/verify simulation the module derives
from the weights it wrote (exact per prompt).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from gguf import GGMLQuantizationType, GGUFReader

from mtpinspect.cli.tiny_model import command
from mtpinspect.errors import OutputError, UsageError
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.runtime.logs import parse_draft_lines, unused_nextn_tensors
from mtpinspect.runtime.server import LlamaServer, ServerDiedError, ServerStartError
from mtpinspect.tiny_drafts import first_token, simulate, successor
from mtpinspect.tiny_model import (
    TinyModelSpec,
    expected_acceptance,
    expected_run,
    head_drafts,
    mismatched_sidecar,
    parse_acceptance,
    sidecar_path,
    size_fields,
    spec_for_head_type,
    spec_for_size,
    write_tiny_model,
)

PROMPTS = (
    "def fibonacci(n):\n    return",
    "The quick brown fox jumps over the lazy dog.",
    "東京は日本の首都です。",
)
N_PREDICT = 64
# Per-prompt n-max 1 acceptance of the 0.5 model lies within this of 0.5 (measured: 0.476 to 0.500);
# pooled over every first token the calibration is within 0.03 for fractions 0.05 to 0.95.
FRACTION_TOLERANCE = 0.06
POOLED_TOLERANCE = 0.035

# glm4moe, L trunk blocks: token_embd, output_norm, output; 9 per dense block; the MTP block has 14
# block tensors plus eh_proj, enorm, hnorm and shared_head_head.
SHARED = {"token_embd.weight", "output_norm.weight", "output.weight"}
TRUNK_BLOCK = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "post_attention_norm",
               "ffn_gate", "ffn_up", "ffn_down")
MTP_BLOCK = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "post_attention_norm", "ffn_gate_inp",
             "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",
             "nextn.eh_proj", "nextn.enorm", "nextn.hnorm", "nextn.shared_head_head")


def _trunk_names(layers: int) -> set[str]:
    return {f"blk.{b}.{t}.weight" for b in range(layers) for t in TRUNK_BLOCK}


def _mtp_names(block: int) -> set[str]:
    return {f"blk.{block}.{t}.weight" for t in MTP_BLOCK} | {f"blk.{block}.exp_probs_b.bias"}


def _field(reader: GGUFReader, key: str) -> object:
    field = reader.get_field(key)
    return None if field is None else field.contents()


def _tensors(path: Path) -> dict[str, GGMLQuantizationType]:
    return {t.name: t.tensor_type for t in GGUFReader(path).tensors}


# -- files -----------------------------------------------------------------------------------------


def test_bundled_file_has_exactly_the_tensors_llama_cpp_requests(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "m.gguf")
    reader = GGUFReader(path)
    assert _field(reader, "general.architecture") == "glm4moe"
    assert _field(reader, "glm4moe.block_count") == 3
    assert _field(reader, "glm4moe.nextn_predict_layers") == 1
    assert _field(reader, "glm4moe.leading_dense_block_count") == 2
    assert _field(reader, "tokenizer.ggml.model") == "test"
    tokens = _field(reader, "tokenizer.ggml.tokens")
    assert isinstance(tokens, list) and len(tokens) == 64 == len(set(tokens))
    names = [t.name for t in reader.tensors]
    assert len(names) == len(set(names)) == 3 + 9 * 2 + 18  # an extra tensor is a load error
    assert set(names) == SHARED | _trunk_names(2) | _mtp_names(2)
    assert all(t.tensor_type == GGMLQuantizationType.F32 for t in reader.tensors)


def test_no_nextn_file_is_what_convert_no_mtp_writes(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "m.gguf", TinyModelSpec(nextn=False))
    reader = GGUFReader(path)
    assert _field(reader, "glm4moe.block_count") == 2
    assert reader.get_field("glm4moe.nextn_predict_layers") is None
    assert set(_tensors(path)) == SHARED | _trunk_names(2)


def test_sidecar_layout_splits_trunk_and_mtp_block(tmp_path: Path) -> None:
    main, sidecar = write_tiny_model(tmp_path / "m.gguf", TinyModelSpec(layout="sidecar"))
    assert sidecar == sidecar_path(main) == tmp_path / "mtp-m.gguf"
    (bundled,) = write_tiny_model(tmp_path / "b.gguf")

    main_reader, side_reader = GGUFReader(main), GGUFReader(sidecar)
    assert _field(main_reader, "glm4moe.block_count") == 2
    assert main_reader.get_field("glm4moe.nextn_predict_layers") is None
    assert set(_tensors(main)) == SHARED | _trunk_names(2)
    # A --mtp file keeps block_count L+N and the key, and holds only blk.L plus the shared tensors.
    assert _field(side_reader, "glm4moe.block_count") == 3
    assert _field(side_reader, "glm4moe.nextn_predict_layers") == 1
    assert set(_tensors(sidecar)) == SHARED | _mtp_names(2)

    whole = {t.name: np.array(t.data) for t in GGUFReader(bundled).tensors}
    for part in (main_reader, side_reader):
        for tensor in part.tensors:
            assert np.array_equal(np.array(tensor.data), whole[tensor.name]), tensor.name


def test_head_type_applies_to_the_mtp_block_matrices_only(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "m.gguf", TinyModelSpec(head_type="Q8_0"))
    types = _tensors(path)
    quantized = {name for name, kind in types.items() if kind == GGMLQuantizationType.Q8_0}
    matrices = {f"blk.2.{t}.weight" for t in MTP_BLOCK if not t.endswith("norm") and t != "ffn_gate_inp"}
    assert quantized == matrices
    assert types["blk.2.ffn_gate_inp.weight"] == GGMLQuantizationType.F32  # as llama-quantize leaves it
    assert types["blk.2.nextn.enorm.weight"] == GGMLQuantizationType.F32


def test_low_bit_head_needs_block_sized_dims(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="block size 256") as exc:
        TinyModelSpec(head_type="TQ1_0")
    assert "\n" not in str(exc.value)
    spec = spec_for_head_type("TQ1_0")
    assert (spec.embd, spec.expert_ff) == (256, 256)
    (path,) = write_tiny_model(tmp_path / "m.gguf", spec)
    assert _tensors(path)["blk.2.nextn.shared_head_head.weight"] == GGMLQuantizationType.TQ1_0


def test_size_presets_set_only_the_trunk_dimensions() -> None:
    assert spec_for_size("tiny") == TinyModelSpec()
    heavy = spec_for_size("heavy", acceptance=0.5)
    assert heavy == TinyModelSpec(acceptance=0.5, **size_fields("heavy"))  # type: ignore[arg-type]
    assert heavy.vocab == 64 and heavy.embd >= heavy.vocab  # the one-hot bigram construction holds
    assert heavy.trunk_layers * heavy.ff > 10 * TinyModelSpec().trunk_layers * TinyModelSpec().ff
    with pytest.raises(UsageError, match="size 'huge'") as exc:
        spec_for_size("huge")
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("kind", ["embd", "vocab", "layers"])
def test_heavy_mismatched_sidecars_differ_in_one_dimension(kind: str) -> None:
    heavy, sidecar = spec_for_size("heavy"), mismatched_sidecar(kind, "heavy")
    fields = ("embd", "vocab", "trunk_layers", "ff")
    differing = [name for name in fields if getattr(heavy, name) != getattr(sidecar, name)]
    assert differing == [{"layers": "trunk_layers"}.get(kind, kind)]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"acceptance": 1.0}, "strictly between 0 and 1"),
        ({"acceptance": 0.0}, "strictly between 0 and 1"),
        ({"acceptance": "most"}, "expected perfect, none"),
        ({"head_type": "Q4_K"}, "head type 'Q4_K'"),
        ({"head": "broken"}, "expected one of normal, zeroed"),
        ({"layout": "split"}, "expected one of bundled, sidecar"),
        ({"embd": 32}, "embd must be >= vocab"),
        ({"nextn": False, "layout": "sidecar"}, "cannot be combined with no nextn"),
        ({"sidecar_from": TinyModelSpec()}, "sidecar_from needs layout sidecar"),
    ],
)
def test_bad_specs_are_one_line_usage_errors(fields: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message) as exc:
        TinyModelSpec(**fields)
    assert "\n" not in str(exc.value)


def test_unwritable_output_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="cannot write"):
        write_tiny_model(tmp_path / "missing" / "m.gguf")
    assert not list(tmp_path.iterdir())


def test_parse_acceptance() -> None:
    assert parse_acceptance("Perfect") == "perfect" and parse_acceptance("none") == "none"
    assert parse_acceptance("0.25") == 0.25
    for bad in ("1", "0", "-0.5", "half"):
        with pytest.raises(UsageError):
            parse_acceptance(bad)


# -- what the head drafts --------------------------------------------------------------------------


def test_head_drafts_follow_the_weights_as_written() -> None:
    assert head_drafts(TinyModelSpec()).tokens == tuple(successor(x, 64) for x in range(64))
    # [0 | I] re-predicts the token just emitted: never the model's next one.
    assert head_drafts(TinyModelSpec(acceptance="none")).tokens == tuple(range(64))
    # 4-bit and 8-bit heads keep the signal; ternary quantization and a zeroed head tie every logit.
    for head_type in ("Q8_0", "Q4_0", "Q4_1", "MXFP4"):
        drafts = head_drafts(TinyModelSpec(head_type=head_type))
        assert drafts.tied == 0 and drafts.tokens == head_drafts(TinyModelSpec()).tokens
    assert head_drafts(spec_for_head_type("TQ1_0")).tied == 64
    assert head_drafts(spec_for_head_type("TQ2_0")).tied == 64
    assert head_drafts(TinyModelSpec(head="zeroed")).tied == 64


def test_simulation_reproduces_the_reference_run() -> None:
    # Measured with the pinned llama-server: 64 greedy tokens at n-max 3 gave 47/47, 16 drafts, per position 16/16/15.
    run = simulate(head_drafts(TinyModelSpec()).tokens, 5, 3, 64)
    assert (run.accepted, run.drafted, run.steps, run.per_position) == (47, 47, 16, (16, 16, 15))
    assert run.mean_length == pytest.approx(3.9375)


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5, 0.75, 0.9])
def test_fraction_is_the_per_token_acceptance_and_compounds(fraction: float) -> None:
    spec = TinyModelSpec(acceptance=fraction)
    rates = [expected_acceptance(spec, n_max).acceptance for n_max in (1, 2, 3, 4)]
    for n_max, rate in enumerate(rates, start=1):
        target = sum(fraction**i for i in range(1, n_max + 1)) / n_max
        assert rate == pytest.approx(target, abs=POOLED_TOLERANCE), n_max
    assert rates[0] > rates[3]


def test_first_token_follows_the_test_tokenizer() -> None:
    # "hello" is one 5-byte chunk: the rolling hash h*31 + byte, modulo the vocabulary.
    value = 0
    for byte in b"hello":
        value = value * 31 + byte
    assert first_token("hello", 64) == (value % 64 + 1) % 64
    with pytest.raises(UsageError):
        first_token("", 64)


# -- command line ----------------------------------------------------------------------------------


def test_cli_writes_files_and_reports_expected_acceptance(tmp_path: Path) -> None:
    out = tmp_path / "x.gguf"
    result = CliRunner().invoke(command, [str(out), "--acceptance", "0.5", "--layout", "sidecar", "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [f["file"] for f in document["files"]] == [str(out), str(tmp_path / "mtp-x.gguf")]
    assert all(Path(f["file"]).stat().st_size == f["bytes"] for f in document["files"])
    assert [row["n_max"] for row in document["expected"]] == [1, 2, 3, 4]
    assert 0 < document["expected"][2]["acceptance"] < 1
    # At n-max 1 the acceptance is the chosen per-token fraction.
    assert document["expected"][0]["acceptance"] == pytest.approx(0.5, abs=POOLED_TOLERANCE)


def test_cli_table_and_low_bit_head(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, [str(tmp_path / "t.gguf"), "--head-type", "tq1_0"])
    assert result.exit_code == 0, result.output
    assert "Files written" in result.output and "logits tie" in result.output
    assert _tensors(tmp_path / "t.gguf")["blk.2.nextn.eh_proj.weight"] == GGMLQuantizationType.TQ1_0


def test_cli_heavy_size_writes_the_heavy_trunk(tmp_path: Path) -> None:
    out = tmp_path / "heavy.gguf"
    result = CliRunner().invoke(command, [str(out), "--size", "heavy", "--acceptance", "0.5", "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    # The heavy trunk as documented (README): embd 256, FFN 8192, 4 layers.
    assert document["spec"]["size"] == "heavy"
    assert (document["spec"]["embd"], document["spec"]["ff"], document["spec"]["trunk_layers"]) == (256, 8192, 4)
    assert document["expected"][0]["acceptance"] == pytest.approx(0.5, abs=POOLED_TOLERANCE)
    reader = GGUFReader(out)
    assert _field(reader, "glm4moe.embedding_length") == 256
    assert _field(reader, "glm4moe.feed_forward_length") == 8192
    assert _field(reader, "glm4moe.block_count") == 4 + 1
    assert set(_tensors(out)) == SHARED | _trunk_names(4) | _mtp_names(4)


@pytest.mark.parametrize("value", ["1.5", "0", "lots"])
def test_cli_bad_acceptance_is_a_usage_error(tmp_path: Path, value: str) -> None:
    result = CliRunner().invoke(command, [str(tmp_path / "x.gguf"), "--acceptance", value])
    assert result.exit_code == 2
    assert "--acceptance" in result.output and "strictly between 0 and 1" in result.output
    assert not (tmp_path / "x.gguf").exists()


def test_cli_impossible_combination_raises_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, [str(tmp_path / "x.gguf"), "--no-nextn", "--layout", "sidecar"])
    assert isinstance(result.exception, UsageError)  # main() turns it into one line and exit 2


# -- the real llama-server -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def binary() -> ServerBinary:
    return find_server(build=True, progress=print)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny")


# One thread: a tiny model gains nothing from more, and spinning threads stall on a busy 2-core runner.
THREADS = ["-t", "1"]


def _mtp(n_max: int) -> list[str]:
    return [*THREADS, "--spec-type", "draft-mtp", "--spec-draft-n-max", str(n_max)]


def _draft_lines(server: LlamaServer, offset: int, *, expect: bool) -> list:
    """The draft lines logged since offset; the server may write its line just after the response."""
    deadline = time.monotonic() + (5.0 if expect else 0.2)
    while True:
        lines = parse_draft_lines(server.log_since(offset)[0])
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def _run_prompts(binary: ServerBinary, model: Path, args: list[str], log: Path) -> tuple[list[dict], str]:
    """One server, every prompt: per request the timings, /metrics delta and first token; then the log."""
    results = []
    with LlamaServer(binary, model, args, log_path=log) as server:
        for prompt in PROMPTS:
            _, offset = server.log_since(0)
            before = server.metrics()
            completion = server.complete(prompt, n_predict=N_PREDICT, return_tokens=True)
            delta = server.metrics().delta(before)
            lines = _draft_lines(server, offset, expect=completion.draft_n > 0)
            results.append({"prompt": prompt, "completion": completion, "delta": delta, "lines": lines})
        text = server.read_log()
    return results, text


def _check_against_simulation(spec: TinyModelSpec, n_max: int, results: list[dict]) -> None:
    for result in results:
        completion, delta, prompt = result["completion"], result["delta"], result["prompt"]
        assert completion.raw["tokens"][0] == first_token(prompt, spec.vocab)
        expected = expected_run(spec, prompt, n_max, N_PREDICT)
        assert (completion.draft_n_accepted, completion.draft_n) == (expected.accepted, expected.drafted)
        assert (delta.accepted_tokens, delta.draft_tokens, delta.drafts) == (
            expected.accepted, expected.drafted, expected.steps)
        (line,) = result["lines"]
        assert (line.accepted, line.generated) == (expected.accepted, expected.drafted)
        assert line.mean_length == pytest.approx(expected.mean_length, abs=0.005)


@pytest.mark.server
def test_perfect_head_accepts_every_draft(binary: ServerBinary, folder: Path) -> None:
    spec = TinyModelSpec()
    (model,) = write_tiny_model(folder / "perfect.gguf", spec)
    results, log = _run_prompts(binary, model, _mtp(3), folder / "perfect.log")
    _check_against_simulation(spec, 3, results)
    for result in results:
        completion, line = result["completion"], result["lines"][0]
        assert completion.draft_n > 0 and completion.draft_n_accepted == completion.draft_n
        assert "draft acceptance = 1.00000" in line.raw_line
        assert line.mean_length is not None and line.mean_length > 3
        # The greedy output is the bigram walk x, x+1, x+2, ...
        tokens = completion.raw["tokens"]
        assert tokens == [(tokens[0] + i) % 64 for i in range(N_PREDICT)]
    assert "creating MTP draft context" in log


@pytest.mark.server
def test_heavy_perfect_head_loads_and_accepts_every_draft(binary: ServerBinary, folder: Path) -> None:
    spec = spec_for_size("heavy")
    (model,) = write_tiny_model(folder / "heavy.gguf", spec)
    prompt, n_predict = PROMPTS[0], 16
    with LlamaServer(binary, model, _mtp(3), log_path=folder / "heavy.log") as server:
        completion = server.complete(prompt, n_predict=n_predict, return_tokens=True)
        log = server.read_log()
    expected = expected_run(spec, prompt, 3, n_predict)
    assert (completion.draft_n_accepted, completion.draft_n) == (expected.accepted, expected.drafted)
    assert completion.draft_n > 0 and completion.draft_n_accepted == completion.draft_n
    tokens = completion.raw["tokens"]
    assert tokens == [(first_token(prompt, spec.vocab) + i) % spec.vocab for i in range(n_predict)]
    assert "creating MTP draft context" in log


@pytest.mark.server
def test_none_head_accepts_nothing(binary: ServerBinary, folder: Path) -> None:
    spec = TinyModelSpec(acceptance="none")
    (model,) = write_tiny_model(folder / "none.gguf", spec)
    results, _ = _run_prompts(binary, model, _mtp(3), folder / "none.log")
    _check_against_simulation(spec, 3, results)
    for result in results:
        assert result["completion"].draft_n > 0 and result["completion"].draft_n_accepted == 0
        assert result["lines"][0].mean_length == 1.0


@pytest.mark.server
@pytest.mark.parametrize("n_max", [1, 3])
def test_fraction_head_accepts_part_of_the_drafts(binary: ServerBinary, folder: Path, n_max: int) -> None:
    spec = TinyModelSpec(acceptance=0.5)
    (model,) = write_tiny_model(folder / f"half-{n_max}.gguf", spec)
    results, _ = _run_prompts(binary, model, _mtp(n_max), folder / f"half-{n_max}.log")
    _check_against_simulation(spec, n_max, results)
    rates = [r["completion"].draft_n_accepted / r["completion"].draft_n for r in results]
    assert all(0 < rate < 1 for rate in rates)
    if n_max == 1:
        assert all(rate == pytest.approx(0.5, abs=FRACTION_TOLERANCE) for rate in rates)


@pytest.mark.server
@pytest.mark.parametrize(
    ("head_type", "accepts_all"), [("Q8_0", True), ("Q4_0", True), ("TQ1_0", False)]
)
def test_quantized_heads(binary: ServerBinary, folder: Path, head_type: str, accepts_all: bool) -> None:
    spec = spec_for_head_type(head_type)
    (model,) = write_tiny_model(folder / f"{head_type}.gguf", spec)
    # Acceptance is a property of the head's weights, not of the CPU: --no-repack keeps every CPU on
    # the same kernels. Without it, CPUs whose ggml build has an extra buffer type for Q8_0/Q4_0 (AMX
    # on some AVX-512 Xeons) crash this build at load; tests/test_engine_crash.py covers that crash.
    results, _ = _run_prompts(binary, model, [*_mtp(3), "--no-repack"], folder / f"{head_type}.log")
    _check_against_simulation(spec, 3, results)
    for result in results:
        completion = result["completion"]
        rate = completion.draft_n_accepted / completion.draft_n
        assert rate == 1.0 if accepts_all else rate < 0.02  # low-bit: one lucky draft per 64 tokens


@pytest.mark.server
def test_zeroed_head_loads_and_drafts_badly(binary: ServerBinary, folder: Path) -> None:
    spec = TinyModelSpec(head="zeroed")
    (model,) = write_tiny_model(folder / "zeroed.gguf", spec)
    results, _ = _run_prompts(binary, model, _mtp(3), folder / "zeroed.log")
    _check_against_simulation(spec, 3, results)
    assert all(r["completion"].draft_n_accepted / r["completion"].draft_n < 0.02 for r in results)


@pytest.mark.server
def test_sidecar_is_loaded_as_draft_model(binary: ServerBinary, folder: Path) -> None:
    spec = TinyModelSpec(layout="sidecar")
    main, sidecar = write_tiny_model(folder / "split.gguf", spec)
    results, log = _run_prompts(binary, main, ["-md", str(sidecar), *_mtp(3)], folder / "split.log")
    assert f"loading draft model '{sidecar}'" in log
    _check_against_simulation(spec, 3, results)
    assert all(r["completion"].draft_n_accepted == r["completion"].draft_n > 0 for r in results)

    # Without -md the trunk-only main file has no MTP layers.
    with pytest.raises(ServerStartError, match="doesn't contain MTP layers"):
        LlamaServer(binary, main, _mtp(3), log_path=folder / "split-alone.log").start()


@pytest.mark.server
def test_no_nextn_model_refuses_draft_mtp(binary: ServerBinary, folder: Path) -> None:
    (model,) = write_tiny_model(folder / "dropped.gguf", TinyModelSpec(nextn=False))
    server = LlamaServer(binary, model, _mtp(3), log_path=folder / "dropped.log")
    with pytest.raises(ServerStartError, match="doesn't contain MTP layers") as exc:
        server.start()
    assert "\n" not in str(exc.value) and not server.alive()
    assert "failed to create MTP context" in server.read_log()


@pytest.mark.server
def test_baseline_skips_the_mtp_block(binary: ServerBinary, folder: Path) -> None:
    (model,) = write_tiny_model(folder / "baseline.gguf", TinyModelSpec())
    results, log = _run_prompts(binary, model, THREADS, folder / "baseline.log")
    assert "model has unused tensor blk.2.nextn.eh_proj.weight" in log
    assert set(unused_nextn_tensors(log)) >= {"blk.2.nextn.eh_proj.weight", "blk.2.nextn.shared_head_head.weight"}
    for result in results:
        assert result["completion"].draft_n == 0 and not result["lines"]
        assert result["completion"].predicted_n == N_PREDICT


@pytest.mark.server
def test_mismatched_sidecars(binary: ServerBinary, folder: Path) -> None:
    def split(kind: str) -> tuple[Path, Path]:
        main, sidecar = write_tiny_model(
            folder / f"mm-{kind}.gguf", TinyModelSpec(layout="sidecar", sidecar_from=mismatched_sidecar(kind))
        )
        return main, sidecar

    # ggml would attach gdb for a backtrace on abort: seconds per crash, and nothing we read.
    quiet = {"GGML_NO_BACKTRACE": "1"}
    main, sidecar = split("embd")
    args = ["-md", str(sidecar), *_mtp(3)]
    with pytest.raises(ServerStartError, match="MTP input row width must match"):
        LlamaServer(binary, main, args, log_path=folder / "mm-embd.log", env=quiet).start()

    main, sidecar = split("vocab")
    args = ["-md", str(sidecar), *_mtp(3)]
    with LlamaServer(binary, main, args, log_path=folder / "mm-vocab.log", env=quiet) as server:
        with pytest.raises(ServerDiedError):
            server.complete(PROMPTS[0], n_predict=N_PREDICT)
        assert "failed to add token" in server.read_log()

    main, sidecar = split("layers")
    results, _ = _run_prompts(binary, main, ["-md", str(sidecar), *_mtp(3)], folder / "mm-layers.log")
    assert all(r["completion"].draft_n > 0 for r in results)


def test_poisoned_tokens_are_exactly_the_ones_drafted_wrong() -> None:
    spec = TinyModelSpec(acceptance=0.5, poisoned=(3, 7))
    drafts = head_drafts(spec).tokens
    wrong = [x for x, drafted in enumerate(drafts) if drafted != (x + 1) % spec.vocab]
    assert wrong == [3, 7]


@pytest.mark.parametrize("fields", [{"poisoned": (64,)}, {"acceptance": "none", "poisoned": (1,)}])
def test_bad_poisoned_tokens_are_one_line_errors(fields: dict) -> None:
    with pytest.raises(UsageError) as err:
        TinyModelSpec(**fields)
    assert "\n" not in str(err.value)
