"""The pinned builds in the cache: where each backend's binaries lie, and whether a cached one is complete,
made by this recipe and helper source, and fit for this CPU.

Apart from build.py, which makes them: `check` names the cached llama-server in the commands it prints
(command_server.server_for_commands) and looks for the verify helper, and neither needs the build machinery's
modules (subprocess pipes, locks, the toolchain probe).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from pathlib import Path

from mtpinspect.cache_dir import cache_dir
from mtpinspect.errors import ServerError
from mtpinspect.files import read_cached
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP, PINNED_VERSION

BACKENDS = ("cpu", "cuda")
# What --backend defaults to: the CUDA build on a machine with an NVIDIA GPU and the CUDA toolkit, else the CPU one.
AUTO = "auto"
BACKEND_CHOICES = (AUTO, *BACKENDS)
_EXE = ".exe" if os.name == "nt" else ""
BINARY_NAME = f"llama-server{_EXE}"
HELPER_NAME = f"mtpinspect-verify{_EXE}"
QUANTIZE_NAME = f"llama-quantize{_EXE}"
# CMake target -> the executable it makes. llama-quantize makes the trained model's low-bit heads
# (training/quantize.py); it shares ggml with the others, so it costs a few files more to build.
TARGETS = {"llama-server": BINARY_NAME, "mtpinspect-verify": HELPER_NAME, "llama-quantize": QUANTIZE_NAME}
HELPER_SOURCE = Path(__file__).with_name("helper")
METADATA_NAME = "build.json"
_MAX_METADATA_BYTES = 64 * 1024

# What the cached binaries were built by. 2: without ggml's AMX kernels, which crash the pinned llama-server
# (SIGSEGV at the first Q8_0 or Q4_0 matrix product) on the AMX machines this project runs on; a cache of an
# earlier recipe is rebuilt.
BUILD_RECIPE = 2
_ISA_FLAG_RE = re.compile(r"^(sse|ssse|avx|amx|fma|f16c|bmi|vnni|vbmi)")
_CPUINFO_MAX_BYTES = 1 << 20  # a few KB per core; a bound, not a filter


def cache_root() -> Path:
    """Where built servers live: llama-server/ in mtpinspect's cache folder ($MTPINSPECT_CACHE_DIR)."""
    return cache_dir() / "llama-server"


def install_dir(backend: str) -> Path:
    """The folder holding one backend's binary and its build.json."""
    return cache_root() / f"{PINNED_VERSION}-{PINNED_LLAMA_CPP}-{check_backend(backend)}"


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ServerError(f"backend {backend!r}: unknown (choose from {', '.join(BACKENDS)})")
    return backend


def cached(backend: str, target: str) -> Path | None:
    folder = install_dir(backend)
    binary = folder / TARGETS[target]
    if not (binary.is_file() and os.access(binary, os.X_OK) and (folder / METADATA_NAME).is_file()):
        return None
    meta = read_metadata(backend) or {}
    if meta.get("recipe") != BUILD_RECIPE:
        return None  # made by an earlier recipe (with ggml's AMX kernels, say): rebuilt, not trusted
    if not set(meta.get("cpu_features") or ()) <= host_cpu_features():
        return None  # a native build for another CPU (a home folder or image moved): it may not even start here
    if target == "mtpinspect-verify" and meta.get("helper_sha256") != helper_digest():
        return None  # built from another version of helper/: rebuild rather than trust its output format
    return binary


@functools.cache  # a machine fact: read once per process, however many cache entries are checked
def host_cpu_features() -> frozenset[str]:
    """The instruction-set extensions of this machine's CPU that a native build may use (Linux's
    /proc/cpuinfo flags: the SSE, AVX, AMX, FMA, F16C, BMI families); empty where that is not readable."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            text = fh.read(_CPUINFO_MAX_BYTES)
    except OSError:
        return frozenset()
    flags = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    return frozenset(f for f in (flags.group(1).split() if flags else ()) if _ISA_FLAG_RE.match(f))


def cached_server(backend: str = "cpu") -> Path | None:
    """The cached llama-server for a backend, if a complete build is installed."""
    return cached(backend, "llama-server")


def cached_helper(backend: str = "cpu") -> Path | None:
    """The cached mtpinspect-verify for a backend, if it was built from this package's helper source."""
    return cached(backend, "mtpinspect-verify")


def cached_tool(target: str, backend: str = "cpu") -> Path | None:
    """Another cached executable of the pinned build (llama-quantize), if it was built."""
    return cached(backend, target)


def find_helper() -> Path | None:
    """The verify helper of the first backend whose cache has a current one."""
    return next((h for h in map(cached_helper, BACKENDS) if h is not None), None)


def missing_targets(backend: str = "cpu") -> list[str]:
    """The CMake targets a build of this backend still has to make."""
    return [t for t in TARGETS if cached(backend, t) is None]


def helper_digest() -> str:
    """sha256 over the helper's source files: a cached helper is current when build.json has the same."""
    digest = hashlib.sha256()
    for path in sorted(HELPER_SOURCE.iterdir()):
        if path.is_file() and path.suffix in (".cpp", ".cmake"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def read_metadata(backend: str = "cpu") -> dict | None:
    """build.json of the cached build, or None."""
    raw = read_cached(install_dir(backend) / METADATA_NAME, _MAX_METADATA_BYTES)
    if raw is None or len(raw) > _MAX_METADATA_BYTES:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None
