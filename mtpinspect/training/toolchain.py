"""The pinned llama.cpp's Python side: `convert_hf_to_gguf.py`, its `conversion/` package, gguf-py and the
vocab-only GGUFs of `models/`, unpacked once from the same sdist that llama-server is built from
(runtime/build.py), and `llama-quantize` from that build. Nothing here re-implements the converter:
GGUFs of the trained model are always its output."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.cache_dir import cache_dir
from mtpinspect.errors import ServerError
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP, PINNED_VERSION

_MEMBERS = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/", "models/ggml-vocab-")
# The converter on the tiny model takes seconds; a stuck one is stopped rather than waited for.
CONVERT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Toolchain:
    root: Path  # vendor/llama.cpp, as unpacked

    @property
    def converter(self) -> Path:
        return self.root / "convert_hf_to_gguf.py"

    @property
    def gguf_py(self) -> Path:
        return self.root / "gguf-py"

    def vocab(self, name: str) -> Path:
        return self.root / "models" / f"ggml-vocab-{name}.gguf"


def toolchain() -> Toolchain:
    """The unpacked converter tree of the pinned sdist (unpacked on first use)."""
    from mtpinspect.runtime.build import pinned_sdist

    root = cache_dir() / "converter" / f"{PINNED_VERSION}-{PINNED_LLAMA_CPP}"
    tree = root / "llama.cpp"
    if (tree / "convert_hf_to_gguf.py").is_file():
        return Toolchain(tree)
    sdist = pinned_sdist()
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=root))
    try:
        top = sdist.name[: -len(".tar.gz")] + "/vendor/llama.cpp/"
        with tarfile.open(sdist) as tar:
            members = []
            for member in tar.getmembers():
                if member.name.startswith(top) and member.name[len(top):].startswith(_MEMBERS):
                    member.name = member.name[len(top):]
                    members.append(member)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(staging, members=members, filter="data")
            else:  # Python < 3.10.12 / 3.11.4: the archive's hash was checked by pinned_sdist.
                tar.extractall(staging, members=members)  # noqa: S202
        if not (staging / "convert_hf_to_gguf.py").is_file():
            raise ServerError(f"{sdist.name}: no vendor/llama.cpp/convert_hf_to_gguf.py inside")
        os.replace(staging, tree)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Toolchain(tree)


def convert(folder: Path, outfile: Path, outtype: str, *, mtp: str = "bundled") -> Path:
    """Run the pinned converter on a Hugging Face folder. ``mtp``: "bundled" (trunk and head in one
    file), "trunk" (``--no-mtp``) or "sidecar" (``--mtp``: the head and the tensors it shares)."""
    tools = toolchain()
    flags = {"bundled": [], "trunk": ["--no-mtp"], "sidecar": ["--mtp"]}[mtp]
    command = [sys.executable, str(tools.converter), str(folder), "--outfile", str(outfile), "--outtype", outtype, *flags]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tools.gguf_py), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "NO_LOCAL_GGUF": ""}
    _run(command, env, f"convert_hf_to_gguf.py {folder.name}")
    if not outfile.is_file():
        raise ServerError(f"convert_hf_to_gguf.py {folder.name}: finished without writing {outfile}")
    return outfile


def quantize(source: Path, dest: Path, base_type: str, tensor_types: dict[str, str]) -> Path:
    """The pinned llama-quantize: ``base_type`` for every tensor, ``tensor_types`` (a pattern on the tensor
    name -> a ggml type) for some. Built with llama-server when missing (runtime/build.py)."""
    from mtpinspect.runtime.build import build_server
    from mtpinspect.runtime.build_cache import cached_tool

    binary = cached_tool("llama-quantize")
    if binary is None:
        build_server()
        binary = cached_tool("llama-quantize")
    assert binary is not None
    overrides = [arg for pattern, kind in tensor_types.items() for arg in ("--tensor-type", f"{pattern}={kind}")]
    _run([str(binary), "--allow-requantize", *overrides, str(source), str(dest), base_type], dict(os.environ),
         f"llama-quantize {source.name}")
    return dest


def _run(command: list[str], env: dict[str, str], what: str) -> None:
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, errors="replace",
                              timeout=CONVERT_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ServerError(f"{what}: no result within {CONVERT_TIMEOUT:.0f} s") from None
    except OSError as exc:
        raise ServerError(f"{what}: cannot run {command[0]}: {exc.strerror}") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise ServerError(f"{what} failed (exit {done.returncode}): {(lines or ['no output'])[-1][:300]}")
