"""Which build tools this machine has for the pinned llama-server: cmake, a C++ compiler, and for CUDA
nvcc with the toolkit's cuBLAS.

Found the way CMake finds them (the compiler: $CXX, else the usual names on PATH; nvcc: $CUDACXX, else PATH),
without running any of them, so saying what a build would need costs a few PATH look-ups, not a configure.
Only a CUDA build asks nvcc where its toolkit is (`nvcc --dryrun`, as CMake's FindCUDAToolkit does), to find
the cuBLAS that ggml-cuda links (CUDA::cublas): a toolkit without it failed only at the end of the configure,
after the download.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# What each missing tool is called in a message, with where to get it.
CMAKE_NEEDED = "cmake (3.14 or newer: your package manager's cmake, or `pip install cmake`)"
CXX_NEEDED = "a C++ compiler (g++ or clang++ on PATH, or $CXX)"
NVCC_NEEDED = "nvcc (the CUDA toolkit: nvcc on PATH, or $CUDACXX)"
CUBLAS_NEEDED = "cuBLAS (libcublas and cublas_v2.h; the CUDA toolkit's libcublas-dev, or NVIDIA's cuda-libraries-dev)"
# The names CMake tries for a C++ compiler when $CXX is not set, in its order.
_CXX_NAMES = ("c++", "g++", "clang++", "cl")


@dataclass(frozen=True)
class Toolchain:
    """The build tools found: each one's path, None when absent."""

    cmake: str | None
    cxx: str | None  # the C++ compiler CMake would pick
    nvcc: str | None  # only a --backend cuda build needs it

    def missing(self, backend: str) -> list[str]:
        """What a build of ``backend`` ("cpu" or "cuda") needs and this machine lacks, each named with
        where to get it; empty when the build can start."""
        needed = [(self.cmake, CMAKE_NEEDED), (self.cxx, CXX_NEEDED)]
        if backend == "cuda":
            needed.append((self.nvcc, NVCC_NEEDED))
            if self.nvcc is not None:
                root = toolkit_root(self.nvcc)
                found = find_cublas(root)
                needed.append((found, f"{CUBLAS_NEEDED[:-1]}; looked in {root} and the system's folders)"))
        return [said for found, said in needed if found is None]


# `nvcc --dryrun` prints its settings at once; a hung one must not hold a command up.
_NVCC_PROBE_TIMEOUT_S = 30.0
_TOP_RE = re.compile(r"^#\$ TOP=(.+?)\s*$", re.MULTILINE)
# Where a Linux distribution puts the toolkit's libraries and headers (Debian's nvidia-cuda-toolkit, say).
_SYSTEM_LIBS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")
_SYSTEM_INCLUDES = ("/usr/include", "/usr/local/include")


def toolkit_root(nvcc: str) -> Path:
    """The CUDA toolkit an nvcc belongs to: what `nvcc --dryrun` calls TOP (a wrapper script on PATH
    names another folder than its own), else the folder above nvcc's own."""
    from mtpinspect.runtime.process import ProbeOverflow, run_bounded  # only a CUDA build runs it

    with contextlib.suppress(OSError, subprocess.TimeoutExpired, ProbeOverflow):
        stdout, stderr = run_bounded([nvcc, "--dryrun", "-v", "-c", "mtpinspect-probe.cu"], _NVCC_PROBE_TIMEOUT_S)
        top = _TOP_RE.search(stderr + "\n" + stdout)
        if top is not None:
            return Path(top.group(1)).resolve()
    return Path(nvcc).resolve().parent.parent


def find_cublas(root: Path) -> str | None:
    """cuBLAS's library where CMake's FindCUDAToolkit looks (the toolkit's lib64/, lib/, targets/*/lib/,
    then the system's), when its header is there too; None when either is missing."""
    libs = [root / "lib64", root / "lib", *sorted(root.glob("targets/*/lib")), *map(Path, _SYSTEM_LIBS)]
    includes = [root / "include", *sorted(root.glob("targets/*/include")), *map(Path, _SYSTEM_INCLUDES)]
    if not any((folder / "cublas_v2.h").is_file() for folder in includes):
        return None
    for folder in libs:
        for name in ("libcublas.so", "libcublas_static.a"):
            if (folder / name).exists():
                return str(folder / name)
    return None


def _program(named: str, path: str | None) -> str | None:
    """A program named by an environment variable: a name on PATH, or a file."""
    return shutil.which(named, path=path) or (named if Path(named).is_file() else None)


def find_toolchain(env: Mapping[str, str] | None = None) -> Toolchain:
    """The build tools on this machine (``env``: the environment to read, os.environ by default)."""
    env = os.environ if env is None else env
    path = env.get("PATH")
    cxx_named = env.get("CXX")
    if cxx_named:
        cxx = _program(cxx_named, path)
    else:
        cxx = next((found for name in _CXX_NAMES if (found := shutil.which(name, path=path))), None)
    cudacxx = env.get("CUDACXX")
    nvcc = cudacxx if cudacxx and Path(cudacxx).is_file() else shutil.which("nvcc", path=path)
    return Toolchain(cmake=shutil.which("cmake", path=path), cxx=cxx, nvcc=nvcc)
