"""`check` on files whose numbers lie: a GGUF cut short, counts of the wrong type or out of range, MTP layer
counts no tensor backs, safetensors offsets and shapes that cannot be, and an exclusion regex that
backtracks for ever. Each one gets one line and exit 2, or a verdict that says what is wrong, in
bounded time and memory (each child's own peak RSS).

Every case runs the real CLI in a subprocess on real files on disk or the loopback Hub stand-in.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from casekit import safetensors_header
from cli_child import run_cli
from gguf import GGUFValue
from gguf.constants import GGUFValueType
from gguf_factory import write_nextn_gguf
from hubstub import HubStub

import mtpinspect
from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

CHECK_SCHEMA = json.loads((Path(mtpinspect.__file__).parent / "schemas" / "check.schema.json").read_text())
MAX_RSS_MB = 200

def check(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    return subprocess.run([sys.executable, "-m", "mtpinspect", "check", *args], capture_output=True, text=True,
                          timeout=timeout, env={**base, **(env or {})})


def one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- item 3: a GGUF cut short ---------------------------------------------------------------------------


def test_truncated_local_gguf_is_refused(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "cut.gguf", TinyModelSpec())
    full = path.stat().st_size
    os.truncate(path, 8000)
    line = one_error_line(check(str(path)), str(path), "truncated: 8000 bytes, header declares")
    declared = int(line.rsplit("header declares ", 1)[1].split()[0].replace(",", ""))
    assert 8000 < declared <= full, line


def test_truncated_split_shard_is_refused(tmp_path: Path) -> None:
    from gguf_factory import Glm4MoeDims, glm4moe_metadata, glm4moe_tensors, write_gguf

    dims = Glm4MoeDims()
    tensors = glm4moe_tensors(dims)
    meta = {**glm4moe_metadata(dims), "tokenizer.ggml.model": "test", "split.count": 2}
    write_gguf(tmp_path / "m-00001-of-00002.gguf", arch="glm4moe", metadata={**meta, "split.no": 0}, tensors=tensors[:10])
    second = write_gguf(tmp_path / "m-00002-of-00002.gguf", arch="glm4moe", metadata={"split.no": 1, "split.count": 2},
                        tensors=tensors[10:])
    os.truncate(second, second.stat().st_size - 1)
    one_error_line(check(str(tmp_path / "m-00001-of-00002.gguf")), "m-00002-of-00002.gguf", "truncated")


def test_truncated_remote_gguf_is_refused_from_its_listed_size(tmp_path: Path) -> None:
    (path,) = write_tiny_model(tmp_path / "tiny-Q8_0.gguf", TinyModelSpec())
    cut = path.read_bytes()[:8000]
    with HubStub() as stub:
        stub.add_repo("acme/cut-GGUF", {"tiny-Q8_0.gguf": cut})
        proc = check("acme/cut-GGUF", env={"HF_ENDPOINT": stub.url, "HF_HOME": str(tmp_path / "hf")})
    one_error_line(proc, "acme/cut-GGUF/tiny-Q8_0.gguf", "truncated: 8000 bytes, header declares")


# -- items 4 and 14: counts of the wrong type or out of range ---------------------------------------------

NEXTN = "glm4moe.nextn_predict_layers"
BLOCKS = "glm4moe.block_count"


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        (NEXTN, GGUFValue(-3, GGUFValueType.INT32), "-3"),
        (NEXTN, GGUFValue(True, GGUFValueType.BOOL), "True"),
        (NEXTN, GGUFValue("1", GGUFValueType.STRING), "'1'"),
        (NEXTN, GGUFValue(1.0, GGUFValueType.FLOAT32), "1.0"),
        (NEXTN, GGUFValue([1, 2], GGUFValueType.ARRAY, GGUFValueType.INT32), "[1, 2]"),
        (NEXTN, GGUFValue(1, GGUFValueType.UINT64), "1"),
        (NEXTN, GGUFValue(4, GGUFValueType.UINT32), "4"),  # more than the 3 blocks
        (BLOCKS, GGUFValue("3", GGUFValueType.STRING), "'3'"),
        (BLOCKS, GGUFValue(-4, GGUFValueType.INT32), "-4"),
        (BLOCKS, GGUFValue(0, GGUFValueType.UINT32), "0"),
        ("glm4moe.embedding_length", GGUFValue(64.0, GGUFValueType.FLOAT32), "64.0"),
        ("general.architecture", GGUFValue(7, GGUFValueType.UINT32), "7"),
    ],
    ids=["nextn-negative", "nextn-bool", "nextn-string", "nextn-float", "nextn-array", "nextn-u64", "nextn-above-blocks",
         "blocks-string", "blocks-negative", "blocks-zero", "embd-float", "arch-int"],
)
def test_gguf_count_of_wrong_type_or_range_is_one_line(tmp_path: Path, key: str, value: GGUFValue, shown: str) -> None:
    path = write_nextn_gguf(tmp_path / "m.gguf", extra_metadata={key: value})
    one_error_line(check(str(path)), "m.gguf", f"{key} = {shown}")


def test_config_count_out_of_range_is_one_line(tmp_path: Path) -> None:
    # The line names the file, the key and the value (in whatever words).
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gemma4_assistant", "num_hidden_layers": -4}))
    one_error_line(check(str(tmp_path)), "config.json", "num_hidden_layers", "-4")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "deepseek_v3", "num_hidden_layers": 61,
                                                      "num_nextn_predict_layers": True}))
    one_error_line(check(str(tmp_path)), "config.json", "num_nextn_predict_layers", "true")


def _safetensors(path: Path, entries: dict[str, dict]) -> None:
    header = json.dumps({"__metadata__": {"format": "pt"}, **entries}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(64))


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ({"dtype": "BF16", "shape": [2, 2], "data_offsets": [100, -5]}, "-5"),
        ({"dtype": "BF16", "shape": [10**18, 10**18], "data_offsets": [0, 8]}, "1000000000000000000"),
    ],
    ids=["negative-offset", "absurd-shape"],
)
def test_safetensors_offsets_and_shapes_that_cannot_be(tmp_path: Path, entry: dict, needle: str) -> None:
    config = json.loads((Path(__file__).resolve().parents[1] / "cases" / "deepseek-v3" / "config.json").read_text())
    config.pop("quantization_config", None)
    (tmp_path / "config.json").write_text(json.dumps(config))
    _safetensors(tmp_path / "model.safetensors", {"model.layers.61.eh_proj.weight": entry})
    one_error_line(check(str(tmp_path)), "model.safetensors", "model.layers.61.eh_proj.weight", needle)


# -- item 5: MTP layer counts that no tensor backs ----------------------------------------------------------


def test_mtp_count_far_above_the_tensors_is_a_finding(tmp_path: Path) -> None:
    path = write_nextn_gguf(tmp_path / "m.gguf", extra_metadata={NEXTN: 100, BLOCKS: 102})
    proc = check(str(path), "--format", "json")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, CHECK_SCHEMA)
    assert doc["mtp_layers"] == 1 and doc["mtp_layers_declared"] == 100
    missing = next(f for f in doc["findings"] if f["code"] == "MTP_WEIGHTS_MISSING")
    assert "100" in missing["message"] and "1 MTP layer" in missing["message"], missing


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")
def test_twenty_million_mtp_layers_cost_nothing(tmp_path: Path) -> None:
    path = write_nextn_gguf(tmp_path / "m.gguf", extra_metadata={NEXTN: 20_000_000, BLOCKS: 20_000_002})
    started = time.monotonic()
    proc = run_cli("check", str(path), timeout=60)
    peak_mb = proc.peak_mb
    one_error_line(proc, "m.gguf", f"{BLOCKS} = 20000002")
    assert peak_mb < MAX_RSS_MB and time.monotonic() - started < 30, (peak_mb, time.monotonic() - started)


# -- item 10: an exclusion regex that backtracks for ever ---------------------------------------------------


def test_catastrophic_exclusion_regex_is_bounded_and_reported(tmp_path: Path) -> None:
    pattern = r"re:mtp\.(a|aa)+\.x"
    config = {
        "model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"], "num_hidden_layers": 2,
        "quantization_config": {"quant_method": "compressed-tensors", "format": "float-quantized",
                                "ignore": ["lm_head", pattern], "config_groups": {"group_0": {"targets": ["Linear"]}}},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    name = "mtp." + "a" * 42 + ".weight"
    header, data = safetensors_header({"tensors": [[name, "F8_E4M3", [16, 16]], ["mtp.fc.weight", "F8_E4M3", [16, 32]]]})
    (tmp_path / "model.safetensors").write_bytes(header + bytes(data))
    started = time.monotonic()
    proc = check(str(tmp_path), "--format", "json", timeout=60)
    elapsed = time.monotonic() - started
    assert proc.returncode in (0, 1), proc.stderr
    assert elapsed < 20, elapsed
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, CHECK_SCHEMA)
    finding = next(f for f in doc["findings"] if f["code"] == "PATTERN_NOT_EVALUATED")
    assert any(pattern in line for line in finding["evidence"]), finding
