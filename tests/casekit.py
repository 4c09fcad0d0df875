"""Load the real-world cases in cases/ and materialise them as repos on disk or on the Hub stand-in.

Each case folder holds `case.json` and the real published files it copies. `case.json` lists the
repo's files: copies (`{"copy": NAME}`, plus `"derived": WHY` when the copy is not a verbatim
published file), safetensors stand-ins (`{"safetensors": {"tensors": [[name, dtype, shape], ...]}}`),
a generated `model.safetensors.index.json` (`{"index": true}` or `{"index": {"shards": [...]}}`),
and GGUF stand-ins (`{"gguf": {"arch", "kv", "vocab_size", "tensors": [[name, ggml_type, ne]]}}`,
written with gguf-py's GGUFWriter; shapes in ggml `ne` order). Stand-in headers are true; the tensor
data is a sparse hole (`sparse=True`: the file has its real size and costs no disk) or absent
(`sparse=False`: the file is cut after its header). Tensor names may use brace expansion:
`experts.{0..255}.{gate,up}_proj.weight`. See cases/README.md.

Run `python tests/casekit.py OUTDIR` to write every case as a local snapshot directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType, GGUFWriter
from hubstub import HubStub  # tests/ is on sys.path under pytest and when run as a script

CASES_ROOT = Path(__file__).resolve().parent.parent / "cases"
FILE_KINDS = ("copy", "safetensors", "index", "gguf")
EXPECT_KEYS = {"exit", "mtp_layers", "layout", "quantization", "codes", "runtimes"}
LAYOUTS = {"bundled", "sidecar", "separate-checkpoint", "checkpoint", "none"}
QUANT_METHODS = {"fp8", "compressed-tensors", "modelopt", "awq", "gptq", "quark", "bitsandbytes", "mxfp4", None}
MTP_EXCLUDED = {True, False, "partial", "undeclared", None}
RUNTIMES = {"llama.cpp", "vllm", "sglang"}
RUNTIME_STATUSES = {"supported", "at-risk", "unsupported", "unknown"}
CODES = {
    "MTP_PRESENT",
    "NO_MTP",
    "MTP_WEIGHTS_MISSING",
    "MTP_QUANTIZED",
    "MTP_PARTIALLY_EXCLUDED",
    "MTP_EXCLUDED",
    "MTP_SIDECAR",
    "SIDECAR_MISMATCH",
    "LOW_BIT_MTP_HEAD",
    "ARCH_NO_MTP_GRAPH",
    "SEPARATE_DRAFTER",
    "MTP_DROPPED_IN_CONVERSION",
    "MTP_FROM_TENSORS_ONLY",
    "FUSED_NAME_MISMATCH",
    "MTP_UNDECLARED_BF16",
    "MTP_UNDETERMINED",
    "MTP_HEAD_NON_FINITE",
}
SAFETENSORS_DTYPE_SIZES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
    "U32": 4, "I32": 4, "F32": 4,
    "U64": 8, "I64": 8, "F64": 8,
}  # fmt: skip
GGUF_VALUE_TYPES = {
    "u8": GGUFValueType.UINT8, "i8": GGUFValueType.INT8, "u16": GGUFValueType.UINT16,
    "i16": GGUFValueType.INT16, "u32": GGUFValueType.UINT32, "i32": GGUFValueType.INT32,
    "u64": GGUFValueType.UINT64, "i64": GGUFValueType.INT64, "f32": GGUFValueType.FLOAT32,
    "f64": GGUFValueType.FLOAT64, "bool": GGUFValueType.BOOL, "str": GGUFValueType.STRING,
}  # fmt: skip
# Stamp format version: bump when the bytes materialise() writes for the same case.json change.
STAMP_VERSION = b"casekit-1"
_BRACE = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Case:
    """One real-world case: a repo to serve and the verdict `mtpinspect check` should reach."""

    id: str
    repo_id: str
    description: str
    provenance: str
    files: Mapping[str, Mapping[str, Any]]
    expect: Mapping[str, Any]
    folder: Path

    @property
    def spec_path(self) -> Path:
        return self.folder / "case.json"


# -- loading and validation ---------------------------------------------------------------------------


def load_cases(root: Path = CASES_ROOT) -> list[Case]:
    """Every case under `root` (folders holding a case.json), sorted by id, validated."""
    cases = [_load_case(spec) for spec in sorted(Path(root).glob("*/case.json"))]
    repo_ids = [case.repo_id for case in cases]
    duplicates = sorted({r for r in repo_ids if repo_ids.count(r) > 1})
    if duplicates:
        raise ValueError(f"{root}: repo ids used by more than one case: {duplicates}")
    return cases


def _load_case(spec: Path) -> Case:
    data = json.loads(spec.read_text())
    case = Case(
        id=data["id"],
        repo_id=data["repo_id"],
        description=data["description"],
        provenance=data["provenance"],
        files=data["files"],
        expect=data["expect"],
        folder=spec.parent,
    )
    problems = _problems(case)
    if problems:
        raise ValueError(f"{spec}: " + "; ".join(problems))
    return case


def _problems(case: Case) -> list[str]:
    problems = []
    if case.id != case.folder.name:
        problems.append(f"id {case.id!r} differs from folder name {case.folder.name!r}")
    if case.repo_id.count("/") != 1:
        problems.append(f"repo_id {case.repo_id!r} is not 'namespace/name'")
    for name, spec in case.files.items():
        kinds = [k for k in FILE_KINDS if k in spec]
        extra = set(spec) - set(FILE_KINDS) - ({"derived"} if kinds == ["copy"] else set())
        if len(kinds) != 1 or extra:
            problems.append(f"{name}: needs exactly one of {FILE_KINDS} (a copy may add 'derived')")
        elif kinds == ["copy"] and not (case.folder / spec["copy"]).is_file():
            problems.append(f"{name}: copied file {spec['copy']!r} is missing")
    problems.extend(_expect_problems(case.expect))
    return problems


def _expect_problems(expect: Mapping[str, Any]) -> list[str]:
    problems = [f"expect: unknown key {key!r}" for key in expect if key not in EXPECT_KEYS]
    if expect.get("exit", 0) not in (0, 1):
        problems.append("expect.exit must be 0 or 1")
    if not isinstance(expect.get("mtp_layers", 0), int):
        problems.append("expect.mtp_layers must be an int")
    if expect.get("layout", "none") not in LAYOUTS:
        problems.append(f"expect.layout must be one of {sorted(LAYOUTS)}")
    quantization = expect.get("quantization", {})
    if quantization.get("method") not in QUANT_METHODS:
        problems.append(f"expect.quantization.method {quantization.get('method')!r} is unknown")
    if quantization.get("mtp_excluded") not in MTP_EXCLUDED:
        problems.append("expect.quantization.mtp_excluded must be true, false, 'partial', 'undeclared' or null")
    problems.extend(f"expect.codes: unknown code {code!r}" for code in expect.get("codes", []) if code not in CODES)
    for runtime, status in expect.get("runtimes", {}).items():
        if runtime not in RUNTIMES or status not in RUNTIME_STATUSES:
            problems.append(f"expect.runtimes: bad entry {runtime!r}: {status!r}")
    return problems


# -- tensor name expansion ----------------------------------------------------------------------------


def expand_name(pattern: str) -> list[str]:
    """Bash-style brace expansion: `a.{0..2}.{x,y}` -> a.0.x, a.0.y, a.1.x, ... (in that order)."""
    match = _BRACE.search(pattern)
    if match is None:
        return [pattern]
    body = match.group(1)
    if ".." in body:
        low, high = (int(n) for n in body.split(".."))
        choices = [str(n) for n in range(low, high + 1)]
    else:
        choices = body.split(",")
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [name for choice in choices for name in expand_name(head + choice + tail)]


def expand_tensors(entries: Sequence[Sequence[Any]]) -> Iterator[tuple[str, str, list[int]]]:
    """(name, dtype, shape) for every tensor of a `tensors` list, braces expanded."""
    for pattern, dtype, shape in entries:
        for name in expand_name(pattern):
            yield name, dtype, list(shape)


# -- safetensors --------------------------------------------------------------------------------------


def safetensors_header(spec: Mapping[str, Any]) -> tuple[bytes, int]:
    """The 8-byte length + JSON header of a safetensors stand-in, and the size of its data section."""
    header: dict[str, Any] = {"__metadata__": spec.get("metadata", {"format": "pt"})}
    offset = 0
    for name, dtype, shape in expand_tensors(spec["tensors"]):
        if name in header:
            raise ValueError(f"duplicate tensor {name}")
        nbytes = prod(shape) * SAFETENSORS_DTYPE_SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the safetensors writer pads the header with spaces to 8 bytes
    return struct.pack("<Q", len(encoded)) + encoded, offset


def _write_safetensors(path: Path, spec: Mapping[str, Any], sparse: bool) -> None:
    header, data_size = safetensors_header(spec)
    path.write_bytes(header)
    if sparse:
        os.truncate(path, len(header) + data_size)


def _index(case: Case, spec: Mapping[str, Any] | bool) -> bytes:
    shards = spec["shards"] if isinstance(spec, Mapping) else sorted(
        name for name, file in case.files.items() if "safetensors" in file
    )
    weight_map: dict[str, str] = {}
    total = 0
    for shard in shards:
        tensors = list(expand_tensors(case.files[shard]["safetensors"]["tensors"]))
        weight_map.update((name, shard) for name, _, _ in tensors)
        total += sum(prod(shape) * SAFETENSORS_DTYPE_SIZES[dtype] for _, dtype, shape in tensors)
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    return (json.dumps(index, indent=2) + "\n").encode()


# -- GGUF ---------------------------------------------------------------------------------------------


def gguf_tensor_nbytes(ggml_type: str, ne: Sequence[int]) -> int:
    block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType[ggml_type]]
    if ne[0] % block_size:
        raise ValueError(f"{ggml_type}: first dimension {ne[0]} is not a multiple of {block_size}")
    return prod(ne) // block_size * type_size


def _kv_value(value: Any) -> tuple[Any, GGUFValueType, GGUFValueType | None]:
    """A case.json kv value: plain JSON (int -> u32, float -> f32) or {"type": T, "value": V}."""
    if isinstance(value, Mapping):
        vtype = value["type"]
        if vtype.startswith("array:"):
            return value["value"], GGUFValueType.ARRAY, GGUF_VALUE_TYPES[vtype.split(":", 1)[1]]
        return value["value"], GGUF_VALUE_TYPES[vtype], None
    if isinstance(value, bool):
        return value, GGUFValueType.BOOL, None
    if isinstance(value, int):
        return value, GGUFValueType.UINT32, None
    if isinstance(value, float):
        return value, GGUFValueType.FLOAT32, None
    if isinstance(value, str):
        return value, GGUFValueType.STRING, None
    raise ValueError(f"unsupported GGUF kv value {value!r}")


def _write_gguf(path: Path, spec: Mapping[str, Any], sparse: bool) -> None:
    writer = GGUFWriter(path, spec["arch"] or "unused")
    if spec["arch"] is None:  # non-first split shards carry only the split.* keys
        writer.kv_data[0].clear()
    for key, raw in spec.get("kv", {}).items():
        value, vtype, sub_type = _kv_value(raw)
        writer.add_key_value(key, value, vtype, sub_type)
    if spec.get("vocab_size"):
        # Real vocabulary size, made-up token strings (<tokN>): the reference data has sizes, not vocabularies.
        tokens = [f"<tok{i}>" for i in range(spec["vocab_size"])]
        writer.add_key_value("tokenizer.ggml.tokens", tokens, GGUFValueType.ARRAY, GGUFValueType.STRING)
    data_size = 0
    for name, ggml_type, ne in expand_tensors(spec["tensors"]):
        nbytes = gguf_tensor_nbytes(ggml_type, ne)
        # GGUFWriter takes numpy order (reversed ggml ne) and writes ne order back.
        writer.add_tensor_info(name, list(reversed(ne)), np.dtype(np.float32), nbytes, GGMLQuantizationType[ggml_type])
        data_size += GGUFWriter.ggml_pad(nbytes, writer.data_alignment)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    assert writer.fout is not None
    header_end = writer.fout[0].tell()
    writer.close()
    if sparse:
        os.truncate(path, GGUFWriter.ggml_pad(header_end, writer.data_alignment) + data_size)


# -- materialising and serving ------------------------------------------------------------------------


def _stamp(case: Case, sparse: bool) -> str:
    digest = hashlib.sha256(STAMP_VERSION + (b"sparse" if sparse else b"cut"))
    digest.update(Path(__file__).read_bytes())
    digest.update(case.spec_path.read_bytes())
    for spec in case.files.values():
        if "copy" in spec:
            digest.update((case.folder / spec["copy"]).read_bytes())
    return digest.hexdigest()


def materialize(case: Case, dest: Path, *, sparse: bool = True) -> Path:
    """Write the case's repo files into `dest` and return it; reuse `dest` when already up to date.

    The stamp lives beside `dest` (not in it), so the directory holds exactly the repo's files.
    """
    dest = Path(dest)
    stamp_file = dest.parent / f".{dest.name}.casekit-stamp"
    stamp = _stamp(case, sparse)
    if dest.is_dir() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name, spec in case.files.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if "copy" in spec:
            shutil.copyfile(case.folder / spec["copy"], target)
        elif "safetensors" in spec:
            _write_safetensors(target, spec["safetensors"], sparse)
        elif "index" in spec:
            target.write_bytes(_index(case, spec["index"]))
        else:
            _write_gguf(target, spec["gguf"], sparse)
    stamp_file.write_text(stamp)
    return dest


def serve_cases(stub: HubStub, cases: Sequence[Case], workdir: Path) -> dict[str, str]:
    """Materialise each case under `workdir/<case id>` and serve it on `stub`; case id -> repo id."""
    served = {}
    for case in cases:
        folder = materialize(case, Path(workdir) / case.id)
        stub.add_repo(case.repo_id, {name: folder / name for name in case.files})
        served[case.id] = case.repo_id
    return served


def main(argv: Sequence[str]) -> int:
    """`casekit.py OUTDIR` writes every case as a snapshot folder; `casekit.py --serve OUTDIR` also
    serves them as Hub repos on 127.0.0.1 until Ctrl-C (point HF_ENDPOINT at the printed URL)."""
    serve = "--serve" in argv
    args = [a for a in argv if a != "--serve"]
    if len(args) != 1:
        print("usage: python tests/casekit.py [--serve] OUTDIR", file=sys.stderr)
        return 2
    out = Path(args[0])
    cases = load_cases()
    if not serve:
        for case in cases:
            folder = materialize(case, out / case.id)
            print(f"{case.id:40} {case.repo_id:55} {folder}")
        return 0
    with HubStub() as stub:
        repos = serve_cases(stub, cases, out)
        for case in cases:
            print(f"{case.id:40} {repos[case.id]}")
        print(f"\nserving {len(cases)} case repos: export HF_ENDPOINT={stub.url}  (Ctrl-C to stop)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
