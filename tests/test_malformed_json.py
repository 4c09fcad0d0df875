"""config.json, index files and safetensors headers that are malformed, huge, deep or hostile.

Each case is a checkpoint checked through the CLI twice: as a local folder and as a repo on the
loopback Hub stand-in. The promise: one line that names the file, the key and the value, exit 2, no
traceback, and the child's own peak memory under a bound, whatever the file holds.
"""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_child import CliRun, assert_one_line_error, run_cli
from hubstub import HubStub

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")

MAX_RSS_MB = 200  # a check of a small checkpoint peaks near 60 MB
MTP = "model.layers.2.eh_proj.weight"
CONFIG: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "num_hidden_layers": 2,
    "num_nextn_predict_layers": 1,
    "hidden_size": 64,
    "vocab_size": 256,
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
}
HEADER: dict[str, Any] = {
    "__metadata__": {"format": "pt"},
    "model.layers.0.self_attn.q_proj.weight": {"dtype": "F8_E4M3", "shape": [64, 64], "data_offsets": [0, 4096]},
    MTP: {"dtype": "F8_E4M3", "shape": [64, 128], "data_offsets": [4096, 12288]},
    "model.layers.2.enorm.weight": {"dtype": "BF16", "shape": [64], "data_offsets": [12288, 12416]},
}


def safetensors(header: Any) -> bytes:
    encoded = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(encoded)) + encoded + bytes(12416)


def with_tensor(key: str, value: Any) -> dict[str, Any]:
    header = copy.deepcopy(HEADER)
    header[MTP][key] = value
    return header


def deep(levels: int) -> bytes:
    return b'{"model_type": "deepseek_v3", "x": ' + b"[" * levels + b"]" * levels + b"}"


def empty_objects(size: int) -> bytes:
    """A JSON object of about ``size`` bytes that parses into millions of empty dicts."""
    return b'{"weight_map": {}, "pad": [' + b"{}," * (size // 3) + b"{}]}"


# name -> (files of the checkpoint, words the one error line must hold)
CASES: dict[str, tuple[Callable[[], dict[str, bytes]], tuple[str, ...]]] = {
    # item 13: wrong types in config.json
    "architectures-int": (lambda: {"config.json": json.dumps({**CONFIG, "architectures": 5}).encode()},
                          ("config.json", "architectures", "5")),
    "mtp-count-str": (lambda: {"config.json": json.dumps({**CONFIG, "num_nextn_predict_layers": "1"}).encode()},
                      ("config.json", "num_nextn_predict_layers", "'1'")),
    "layers-negative": (lambda: {"config.json": json.dumps({**CONFIG, "num_hidden_layers": -4}).encode()},
                        ("config.json", "num_hidden_layers", "-4")),
    # item 13: safetensors headers of the wrong shape
    "header-list": (lambda: {"model.safetensors": safetensors([1, 2])}, ("model.safetensors", "header", "[1, 2]")),
    "tensor-int": (lambda: {"model.safetensors": safetensors({**HEADER, MTP: 5})}, ("model.safetensors", MTP, "5")),
    "offsets-int": (lambda: {"model.safetensors": safetensors(with_tensor("data_offsets", 7))}, (MTP, "data_offsets", "7")),
    "offsets-null": (lambda: {"model.safetensors": safetensors(with_tensor("data_offsets", None))}, (MTP, "data_offsets", "null")),
    "offsets-short": (lambda: {"model.safetensors": safetensors(with_tensor("data_offsets", [4096]))}, (MTP, "data_offsets", "[4096]")),
    "offsets-str": (lambda: {"model.safetensors": safetensors(with_tensor("data_offsets", ["4096", "12288"]))},
                    (MTP, "data_offsets", "'4096'")),
    "offsets-negative": (lambda: {"model.safetensors": safetensors(with_tensor("data_offsets", [100, -5]))}, (MTP, "data_offsets", "-5")),
    "dtype-dict": (lambda: {"model.safetensors": safetensors(with_tensor("dtype", {"a": 1}))}, (MTP, "dtype", "{'a': 1}")),
    "shape-str": (lambda: {"model.safetensors": safetensors(with_tensor("shape", ["64", 128]))}, (MTP, "shape", "'64'")),
    "shape-huge": (lambda: {"model.safetensors": safetensors(with_tensor("shape", [10**18, 10**18]))}, (MTP, "shape", "does not fill")),
    # item 11: size, nesting and number bounds
    "config-huge": (lambda: {"config.json": empty_objects(20 << 20)}, ("config.json", "MiB")),
    "index-amplifying": (lambda: {"model.safetensors.index.json": empty_objects(30 << 20)},
                         ("model.safetensors.index.json", "values")),
    "config-deep": (lambda: {"config.json": deep(100_000)}, ("config.json", "nested")),
    "config-long-integer": (lambda: {"config.json": b'{"model_type": "deepseek_v3", "num_hidden_layers": ' + b"7" * 5000 + b"}"},
                            ("config.json", "5,000 digits")),
}


# Faults huggingface_hub's safetensors parser already turned into one line; mtpinspect's own parser
# (which replaced it) must too. These passed before the parser was replaced: guards, not fixes.
KEPT: dict[str, tuple[Callable[[], dict[str, bytes]], tuple[str, ...]]] = {
    "header-not-json": (lambda: {"model.safetensors": safetensors(b"{not json")}, ("model.safetensors", "JSON")),
    "header-length-huge": (lambda: {"model.safetensors": struct.pack("<Q", 2**40) + b"{}"}, ("model.safetensors", "header")),
}


def checkpoint(name: str | None) -> dict[str, bytes]:
    """The healthy checkpoint, with case ``name``'s files in place of its own."""
    files = {"config.json": json.dumps(CONFIG).encode(), "model.safetensors": safetensors(HEADER)}
    return {**files, **((CASES | KEPT)[name][0]() if name else {})}


@pytest.fixture(scope="module")
def hub() -> Iterator[HubStub]:
    with HubStub() as stub:
        yield stub


def check(where: str, name: str, hub: HubStub, tmp_path: Path) -> CliRun:
    files = checkpoint(name)
    if where == "local":
        for path, data in files.items():
            (tmp_path / path).write_bytes(data)
        return run_cli("check", str(tmp_path))
    repo = f"acme/{name}"
    hub.add_repo(repo, files)
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    return run_cli("check", repo, env=env)


def test_the_unbroken_checkpoint_is_read(hub: HubStub, tmp_path: Path) -> None:
    """The base every case breaks: read fine, locally and on the Hub (so a case fails only by its fault)."""
    for path, data in checkpoint(None).items():
        (tmp_path / path).write_bytes(data)
    hub.add_repo("acme/unbroken", checkpoint(None))
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    for run in (run_cli("check", str(tmp_path), "--format", "json"), run_cli("check", "acme/unbroken", "--format", "json", env=env)):
        assert run.returncode in (0, 1) and not run.stderr, run.stderr
        assert json.loads(run.stdout)["mtp_layers"] == 1


@pytest.mark.parametrize("where", ["local", "hub"])
@pytest.mark.parametrize("name", list(CASES) + list(KEPT))
def test_malformed_file_is_one_line(name: str, where: str, hub: HubStub, tmp_path: Path) -> None:
    run = check(where, name, hub, tmp_path)
    line = assert_one_line_error(run, *(CASES | KEPT)[name][1])
    assert "Traceback" not in run.stderr and len(line) < 400
    assert run.peak_mb < MAX_RSS_MB, f"child peak RSS {run.peak_mb:.0f} MB"
