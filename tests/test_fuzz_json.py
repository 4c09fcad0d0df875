"""Fuzzing `check` over config.json, quantization files, index files and safetensors headers.

Seeds are real checkpoints from cases/ (compressed-tensors, FP8, ModelOpt NVFP4, DeepSeek-V3's own FP8)
and a small one without an index (every shard header read). Each iteration mutates one JSON document of
one seed: a value swapped for one of another type or an absurd one, a key deleted, bytes flipped,
inserted or cut, a 5,000-digit number or 5,000 brackets spliced in, or a safetensors length prefix
changed. Each mutant is checked through the CLI's entry point (`mtpinspect.cli.main`, as a user runs
it), as a local folder and, one in four, as a repo on the loopback Hub stand-in.

The promise, for every mutant: exit 2 with one line on stderr, or exit 0/1 with a report that follows
check.schema.json; never a traceback; each batch's child process stays under a memory bound (its own
peak, read by itself). Mutants run in batches inside few child processes so that the suite spends
seconds here; MTPINSPECT_FUZZ_ITERATIONS (default 120) and MTPINSPECT_FUZZ_SEED (default 0) make long runs.
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from casekit import load_cases, materialize
from cli_child import clean_env
from hubstub import HubStub

jsonschema = pytest.importorskip("jsonschema")
pytestmark = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")

ITERATIONS = int(os.environ.get("MTPINSPECT_FUZZ_ITERATIONS", "120"))
SEED = int(os.environ.get("MTPINSPECT_FUZZ_SEED", "0"))
BATCH = 60  # mutants per child process
MAX_RSS_MB = 200
SEED_CASES = ("qwen3-next-fp8-dynamic-third-party", "glm-5.1-fp8", "qwen3.6-27b-nvfp4", "deepseek-v3")
SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "mtpinspect/schemas/check.schema.json").read_text())
HOSTILE: list[Any] = [
    None, True, False, 0, -3, 1.5, -1e308, 2**64, 10**30, "", "x", "9" * 50, [], {}, [1, "a"], [None], {"a": 1},
    {"dtype": 1}, [[[[[]]]]], "F8_E4M3", [2**63, 2**63], [-1, 5], [5, 1],
]  # fmt: skip

# The child: check each source through the CLI's entry point; a traceback is what escapes main().
_BATCH_RUNNER = """
import contextlib, io, json, sys, time, traceback
from mtpinspect.cli import main
results = []
for source in json.load(open(sys.argv[1])):
    out, err, start = io.StringIO(), io.StringIO(), time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc, tb = main(["check", source, "--format", "json"]), None
    except BaseException:
        rc, tb = None, traceback.format_exc()
    results.append({"source": source, "rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue(),
                    "traceback": tb, "seconds": time.monotonic() - start})
with open("/proc/self/status") as status:
    peak = int(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
json.dump({"results": results, "peak_kib": peak}, open(sys.argv[2], "w"))
"""


def _small_checkpoint(root: Path) -> Path:
    """A checkpoint without an index: config, an FP8 quantization_config and one shard with an MTP layer."""
    root.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 2,
              "num_nextn_predict_layers": 1, "hidden_size": 64, "vocab_size": 256,
              "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]}}
    header = {
        "__metadata__": {"format": "pt"},
        "model.layers.0.self_attn.q_proj.weight": {"dtype": "F8_E4M3", "shape": [64, 64], "data_offsets": [0, 4096]},
        "model.layers.2.eh_proj.weight": {"dtype": "BF16", "shape": [64, 128], "data_offsets": [4096, 20480]},
        "model.layers.2.self_attn.q_proj.weight": {"dtype": "F8_E4M3", "shape": [64, 64], "data_offsets": [20480, 24576]},
        "model.layers.2.self_attn.q_proj.weight_scale_inv": {"dtype": "F32", "shape": [1, 1], "data_offsets": [24576, 24580]},
    }
    (root / "config.json").write_text(json.dumps(config))
    encoded = json.dumps(header).encode()
    (root / "model.safetensors").write_bytes(struct.pack("<Q", len(encoded)) + encoded + bytes(24580))
    return root


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("fuzz-seeds")
    cases = {case.id: case for case in load_cases()}
    return [materialize(cases[name], root / name) for name in SEED_CASES] + [_small_checkpoint(root / "small")]


def _nodes(doc: Any, limit: int = 4000) -> list[tuple[Any, Any]]:
    """(container, key) pairs of the document's values, breadth first, at most ``limit``."""
    found: list[tuple[Any, Any]] = []
    queue = [doc]
    while queue and len(found) < limit:
        node = queue.pop(0)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            found.append((node, key))
            queue.append(value)
    return found


def _mutate_value(doc: Any, rng: random.Random) -> tuple[Any, str]:
    nodes = _nodes(doc)
    if not nodes or rng.random() < 0.05:
        value = rng.choice(HOSTILE)
        return value, f"document := {value!r}"
    node, key = rng.choice(nodes)
    if isinstance(node, dict) and rng.random() < 0.25:
        del node[key]
        return doc, f"del [{key!r}]"
    node[key] = rng.choice(HOSTILE)
    return doc, f"[{key!r}] := {node[key]!r}"


def _mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    kind = rng.choice(["flip", "cut", "insert", "digits", "brackets"])
    if kind == "flip" and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :], f"byte {at} flipped"
    if kind == "cut":
        return data[:at], f"cut at {at}"
    if kind == "digits":
        return data[:at] + b"7" * 5000 + data[at:], f"5000 digits at {at}"
    if kind == "brackets":
        return data[:at] + b"[" * 5000 + data[at:], f"5000 brackets at {at}"
    piece = rng.choice([b"{", b"}", b"[", b"]", b'"', b",", b":", b"null", b"\xff", b"-"])
    return data[:at] + piece + data[at:], f"{piece!r} inserted at {at}"


def _mtp_shards(seed: Path) -> list[str]:
    """The shards an MTP verdict reads: those of the index that hold MTP tensors, or every shard."""
    index = seed / "model.safetensors.index.json"
    if not index.is_file():
        return sorted(p.name for p in seed.glob("*.safetensors"))
    layers = json.loads((seed / "config.json").read_text()).get("num_hidden_layers")
    text_layers = json.loads((seed / "config.json").read_text()).get("text_config", {}).get("num_hidden_layers")
    marks = ("mtp", f".layers.{layers}.", f".layers.{text_layers}.")
    weight_map = json.loads(index.read_text())["weight_map"]
    return sorted({shard for name, shard in weight_map.items() if any(m in name for m in marks)}) or sorted(set(weight_map.values()))


def _mutant(seed: Path, dest: Path, rng: random.Random) -> str:
    """Write a mutant of ``seed`` into ``dest`` (untouched files are links to the seed's); say what changed."""
    dest.mkdir()
    documents = sorted(p.name for p in seed.iterdir() if p.suffix == ".json")
    target = rng.choice(documents + _mtp_shards(seed) * 2)
    for path in seed.iterdir():
        if path.name != target:
            (dest / path.name).symlink_to(path)
    data = (seed / target).read_bytes() if target.endswith(".json") else None
    if data is not None:
        if rng.random() < 0.6:
            doc, change = _mutate_value(json.loads(data), rng)
            data = json.dumps(doc).encode()
        else:
            data, change = _mutate_bytes(data, rng)
        (dest / target).write_bytes(data)
        return f"{seed.name}/{target}: {change}"
    with open(seed / target, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = handle.read(length)
    data_size = (seed / target).stat().st_size - 8 - length
    if rng.random() < 0.1:
        length = rng.choice([0, 1, length - 1, length + 1, 2**63, 25_000_001, 10**12])
        change = f"length prefix := {length}"
    elif rng.random() < 0.6:
        doc, change = _mutate_value(json.loads(header), rng)
        header = json.dumps(doc).encode()
        length = len(header)
    else:
        header, change = _mutate_bytes(header, rng)
        length = len(header)
    with open(dest / target, "wb") as handle:
        handle.write(struct.pack("<Q", length) + header)
        handle.truncate(8 + len(header) + data_size)  # the data section stays a hole
    return f"{seed.name}/{target}: {change}"


@pytest.fixture(scope="module")
def hub() -> Iterator[HubStub]:
    with HubStub() as stub:
        yield stub


def _run_batch(sources: list[str], work: Path, env: dict[str, str]) -> tuple[list[dict[str, Any]], float]:
    (work / "sources.json").write_text(json.dumps(sources))
    proc = subprocess.run([sys.executable, "-c", _BATCH_RUNNER, str(work / "sources.json"), str(work / "results.json")],
                          capture_output=True, text=True, timeout=120 + 5 * len(sources), env=clean_env(env))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads((work / "results.json").read_text())
    return out["results"], out["peak_kib"] / 1024


def test_fuzzed_json_gives_a_report_or_one_line(seeds: list[Path], hub: HubStub, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    mutants: dict[str, str] = {}  # source -> what was changed
    hub_sources: list[str] = []
    for i in range(ITERATIONS):
        dest = tmp_path / f"m{i}"
        change = _mutant(rng.choice(seeds), dest, rng)
        mutants[str(dest)] = change
        if i % 4 == 0:
            repo = f"fuzz/m{i}-{SEED}"
            hub.add_repo(repo, {p.name: p.resolve() for p in dest.iterdir()})
            mutants[repo] = change
            hub_sources.append(repo)
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1",
           "MTPINSPECT_TIMEOUT": "10", "MTPINSPECT_RETRIES": "0"}
    sources = list(mutants)
    problems: list[str] = []
    outcomes = {"report": 0, "error": 0}
    for start in range(0, len(sources), BATCH):
        results, peak_mb = _run_batch(sources[start : start + BATCH], tmp_path, env)
        assert peak_mb < MAX_RSS_MB, f"batch at {start}: child peak RSS {peak_mb:.0f} MB"
        for r in results:
            problem = _judge(r)
            if problem:
                problems.append(f"{r['source']} ({mutants[r['source']]}): {problem}")
            else:
                outcomes["report" if r["rc"] in (0, 1) else "error"] += 1
    print(f"{len(sources)} mutants (seed {SEED}): {outcomes}")
    assert not problems, f"{len(problems)} of {len(sources)} mutants broke the promise:\n" + "\n".join(problems[:10])
    # The mutants reach both outcomes: a fuzzer whose every mutant is rejected up front tests little.
    assert outcomes["report"] > len(sources) // 10 and outcomes["error"] > len(sources) // 10, outcomes


def _judge(result: dict[str, Any]) -> str | None:
    """What is wrong with one mutant's outcome, or None when it kept the promise."""
    if result["traceback"]:
        return "traceback:\n" + result["traceback"][-1500:]
    if result["seconds"] > 20:
        return f"took {result['seconds']:.0f} s"
    lines = [line for line in result["stderr"].splitlines() if line.strip()]
    if result["rc"] == 2:
        if len(lines) != 1 or ": error: " not in lines[0]:
            return f"exit 2 with stderr {result['stderr'][-500:]!r}"
        return None
    if result["rc"] not in (0, 1):
        return f"exit {result['rc']}"
    try:
        jsonschema.validate(json.loads(result["stdout"]), SCHEMA)
    except (ValueError, jsonschema.ValidationError) as exc:
        return f"exit {result['rc']} without a valid report: {str(exc)[:300]}"
    return None
