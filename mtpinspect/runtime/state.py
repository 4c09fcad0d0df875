"""What `mtpinspect runtime` shows: the llama-server that sweep would use, or, on a machine where none is
built yet, what `runtime build` (or the first sweep) will build, where it will be cached, and whether this
machine has the tools to build it. Not built yet is a state to show, not an error; a llama-server named
with --server or $LLAMA_SERVER that is wrong stays an error (find.py says which, in one line)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mtpinspect.errors import ServerNotBuilt
from mtpinspect.runtime.build import resolve_backend
from mtpinspect.runtime.build_cache import BINARY_NAME, cache_root, cached_tool, find_helper, install_dir
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP, PINNED_PACKAGE, PINNED_VERSION
from mtpinspect.runtime.toolchain import Toolchain, find_toolchain


@dataclass(frozen=True)
class PinnedBuild:
    """The pinned llama-server of one backend: what it is built from and where it is (or will be) cached."""

    package: str  # the source distribution that vendors llama.cpp (llama-cpp-python)
    package_version: str
    llama_cpp_commit: str
    backend: str
    path: Path  # its llama-server in the cache, built or not

    @property
    def said(self) -> str:
        return f"{self.package}=={self.package_version} (llama.cpp {self.llama_cpp_commit}), {self.backend}"


@dataclass(frozen=True)
class ServerState:
    """The llama-server in use, or that none is built yet, with what a build needs."""

    server: ServerBinary | None  # None: nothing names one and the pinned build is not in the cache yet
    pinned: PinnedBuild
    toolchain: Toolchain
    helper: Path | None  # check's verify helper, when built
    cache_dir: Path
    quantize: Path | None = None  # the pinned llama-quantize (the trained model's quantized heads), when built

    @property
    def built(self) -> bool:
        return self.server is not None

    @property
    def missing(self) -> list[str]:
        """What building the pinned llama-server needs and this machine lacks (empty: it can build)."""
        return self.toolchain.missing(self.pinned.backend)


def pinned_build(backend: str) -> PinnedBuild:
    return PinnedBuild(PINNED_PACKAGE, PINNED_VERSION, PINNED_LLAMA_CPP, backend, install_dir(backend) / BINARY_NAME)


def state_of(server: ServerBinary | None, backend: str, helper: Path | None) -> ServerState:
    return ServerState(server, pinned_build(backend), find_toolchain(), helper, cache_root(),
                       cached_tool("llama-quantize", backend))


def server_state(explicit: str | Path | None = None, backend: str = "cpu") -> ServerState:
    """The llama-server find_server would give (never building one), or not built yet; a wrong --server or
    $LLAMA_SERVER raises ServerError as find_server does. ``backend`` may be "auto" (resolve_backend)."""
    backend = resolve_backend(backend).backend
    try:
        server: ServerBinary | None = find_server(explicit, build=False, backend=backend)
    except ServerNotBuilt:
        server = None
    return state_of(server, backend, find_helper())
