"""Which build tools this machine has for the pinned llama-server: cmake, a C++ compiler, nvcc.

Found the way CMake finds them (the compiler: $CXX, else the usual names on PATH; nvcc: $CUDACXX, else PATH),
without running any of them, so saying what a build would need costs a few PATH look-ups, not a configure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# What each missing tool is called in a message, with where to get it.
CMAKE_NEEDED = "cmake (3.14 or newer: your package manager's cmake, or `pip install cmake`)"
CXX_NEEDED = "a C++ compiler (g++ or clang++ on PATH, or $CXX)"
NVCC_NEEDED = "nvcc (the CUDA toolkit: nvcc on PATH, or $CUDACXX)"
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
        return [said for found, said in needed if found is None]


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
