"""Find the llama-server to use and say what it is (version, commit, backend, where it came from).

Search order: an explicit path (`--server`), `$LLAMA_SERVER`, the cache of pinned builds, else build the
pinned one; a `llama-server` on PATH only when named. Whatever is found is checked by running `--version`, so a
wrong path fails here in one line rather than later in a sweep.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mtpinspect.errors import ServerError, ServerNotBuilt
from mtpinspect.runtime.build_cache import AUTO, BACKENDS, cached_server, read_metadata
from mtpinspect.runtime.command_server import ENV_VAR
from mtpinspect.runtime.flags import MTP_SPEC_TYPE
from mtpinspect.runtime.pin import FIRST_MTP_BUILD, FIRST_MTP_RELEASE, PINNED_LLAMA_CPP

if TYPE_CHECKING:
    from mtpinspect.runtime.build import Progress

# `--version` loads the GPU backends, which can take a while on a machine with many GPUs.
VERSION_TIMEOUT_S = 60.0

# `--help` prints at once; a binary that does not is not worth waiting long for.
_HELP_TIMEOUT_S = 10.0
# The pinned llama-server's `--help` is 58,884 bytes; one that prints four times as much and more is no llama-server.
_HELP_MAX_BYTES = 256 * 1024
_LDD_TIMEOUT_S = 30.0

# "version: 0.5.0-dev (build 1, commit 0c1e570)" (this pin) or "version: 5600 (abc1234)" (older builds).
_VERSION_RE = re.compile(r"^version:\s*(.+?)\s*$", re.MULTILINE)
_NEW_STYLE_RE = re.compile(r"\(build (\d+), commit ([0-9a-fA-F]+|unknown)\)")
_OLD_STYLE_RE = re.compile(r"^(\d+) \(([0-9a-fA-F]+|unknown)\)$")
_BUILT_WITH_RE = re.compile(r"^built with (.+?)\s*$", re.MULTILINE)

# Markers in `--version` output (device probes print first) or in linked library names.
_BACKEND_MARKERS = (
    ("cuda", re.compile(r"ggml_cuda|CUDA|libcudart|libggml-cuda|libcublas", re.IGNORECASE)),
    ("rocm", re.compile(r"ROCm|hipblas|libamdhip|libggml-hip", re.IGNORECASE)),
    ("metal", re.compile(r"ggml_metal|\bMetal\b|libggml-metal", re.IGNORECASE)),
    ("vulkan", re.compile(r"ggml_vulkan|Vulkan|libvulkan|libggml-vulkan", re.IGNORECASE)),
    ("sycl", re.compile(r"ggml_sycl|SYCL|libggml-sycl", re.IGNORECASE)),
    ("opencl", re.compile(r"ggml_opencl|libOpenCL|libggml-opencl", re.IGNORECASE)),
)


@dataclass(frozen=True)
class ServerBinary:
    """A llama-server executable that answered `--version`."""

    path: Path
    version: str
    commit: str | None
    backend: str
    origin: str  # "--server", "$LLAMA_SERVER", "cache", "built"
    build_number: int | None = None
    built_with: str | None = None
    # Whether it has --spec-type draft-mtp: True for the pinned build; None when nothing settled it.
    mtp: bool | None = None

    def require_mtp(self) -> None:
        """Refuse, in one line, a llama-server that cannot run an MTP head (a build from before MTP)."""
        if self.mtp is False:
            raise ServerError(
                f"{self.path} (llama-server {self.version}, from {self.origin}) has no --spec-type {MTP_SPEC_TYPE}: "
                f"a build from before MTP support (llama.cpp {FIRST_MTP_RELEASE}); update it, or unset "
                f"${ENV_VAR} / drop --server to use the pinned build"
            )


def _version_output(path: Path, shown: str, timeout: float) -> str:
    # Only where a binary runs: `check` names one, never runs it.
    from mtpinspect.runtime.process import ProbeOverflow, run_bounded

    try:
        stdout, stderr = run_bounded([str(path), "--version"], timeout)
    except subprocess.TimeoutExpired:
        raise ServerError(f"{shown}: not a llama-server (`--version` did not return within {timeout:g} s)") from None
    except ProbeOverflow as exc:
        raise ServerError(f"{shown}: not a llama-server (`--version` printed more than {exc.max_bytes // 1024} KiB "
                          "without ending; stopped)") from None
    except OSError as exc:
        raise ServerError(f"{shown}: cannot run it: {exc.strerror or exc}") from None
    return stdout + "\n" + stderr


def _linked_libraries(path: Path) -> str:
    """Names of the shared libraries the binary links and the backend libraries next to it."""
    names = [p.name for p in path.parent.glob("*ggml*")]
    tool = ["otool", "-L"] if shutil.which("otool") and not shutil.which("ldd") else ["ldd"]
    if shutil.which(tool[0]):
        from mtpinspect.runtime.process import ProbeOverflow, run_bounded

        try:
            names.append(run_bounded([*tool, str(path)], _LDD_TIMEOUT_S)[0])
        except (OSError, subprocess.TimeoutExpired, ProbeOverflow):
            pass  # the backend then comes from --version alone
    return "\n".join(names)


def detect_backend(version_output: str, path: Path | None = None) -> str:
    """The GPU backend a binary was built with, from its `--version` output and linked libraries; else "cpu"."""
    evidence = version_output + ("\n" + _linked_libraries(path) if path is not None else "")
    for backend, pattern in _BACKEND_MARKERS:
        if pattern.search(evidence):
            return backend
    return "cpu"


def describe(path: Path, origin: str, shown: str | None = None, *, timeout: float = VERSION_TIMEOUT_S) -> ServerBinary:
    """Check that `path` is a runnable llama-server and read its version, commit and backend."""
    shown = shown or str(path)
    if not path.exists():
        raise ServerError(f"{shown}: no such file")
    if path.is_dir():
        raise ServerError(f"{shown}: is a directory, not the llama-server executable")
    if not os.access(path, os.X_OK):
        raise ServerError(f"{shown}: not executable (chmod +x, or point to the llama-server binary)")
    output = _version_output(path, shown, timeout)
    match = _VERSION_RE.search(output)
    if match is None:
        raise ServerError(f"{shown}: not a llama-server (`--version` printed no 'version:' line)")
    version = match.group(1)
    build_number: int | None = None
    commit: str | None = None
    new_style = _NEW_STYLE_RE.search(version)
    old_style = _OLD_STYLE_RE.match(version)
    if new_style is not None:
        build_number, commit = int(new_style.group(1)), new_style.group(2)
    elif old_style is not None:
        build_number, commit = int(old_style.group(1)), old_style.group(2)
    built_with = _BUILT_WITH_RE.search(output)
    backend = None
    pinned = origin in ("cache", "built")
    if pinned:
        backend = (read_metadata_for(path) or {}).get("backend")
    return ServerBinary(
        path=path.resolve(),
        version=version,
        commit=None if commit in (None, "unknown") else commit,
        backend=backend or detect_backend(output, path),
        origin=origin,
        build_number=build_number,
        built_with=built_with.group(1) if built_with else None,
        mtp=True if pinned else _has_mtp(path, shown, commit, build_number if old_style is not None else None, timeout),
    )


def _has_mtp(path: Path, shown: str, commit: str | None, upstream_build: int | None, timeout: float) -> bool | None:
    """Whether a llama-server that is not the pinned build has draft-mtp: the pinned commit has it, an
    upstream build number says it; otherwise its `--help` listing of --spec-type does (a build from before
    MTP has no draft-mtp there). None when `--help` does not answer within the bound; a `--help` that
    prints without end is no llama-server's."""
    if commit is not None and commit.lower().startswith(PINNED_LLAMA_CPP):
        return True
    if upstream_build is not None:
        return upstream_build >= FIRST_MTP_BUILD
    from mtpinspect.runtime.process import ProbeOverflow, run_bounded

    try:
        stdout, stderr = run_bounded([str(path), "--help"], min(timeout, _HELP_TIMEOUT_S), _HELP_MAX_BYTES)
    except (OSError, subprocess.TimeoutExpired):
        return None
    except ProbeOverflow as exc:
        raise ServerError(f"{shown}: not a llama-server (`--help` printed more than {exc.max_bytes // 1024} KiB "
                          "without ending; stopped)") from None
    return MTP_SPEC_TYPE in stdout + stderr


def read_metadata_for(path: Path) -> dict | None:
    """build.json of a cached binary (the folder name ends in its backend)."""
    backend = path.parent.name.rsplit("-", 1)[-1]
    if backend not in BACKENDS or cached_server(backend) != path:
        return None
    return read_metadata(backend)


def _explicit_path(value: str | Path) -> Path:
    text = str(value)
    # A bare name ("llama-server-cuda") means a program on PATH, as a shell would read it.
    if os.sep not in text and (os.altsep is None or os.altsep not in text) and not Path(text).exists():
        found = shutil.which(text)
        if found is not None:
            return Path(found)
    # Absolute: subprocess looks a name without a slash ("./llama-server" becomes "llama-server") up on PATH.
    return Path(text).expanduser().absolute()


def find_server(
    explicit: str | Path | None = None,
    *,
    build: bool = True,
    backend: str = AUTO,
    progress: Progress | None = None,
    version_timeout: float = VERSION_TIMEOUT_S,
) -> ServerBinary:
    """The llama-server to use: explicit, $LLAMA_SERVER, the cached pinned build, else a fresh pinned build.

    A llama-server on PATH is never taken on its own: it may be any build, however old or without MTP, and
    measuring with it unasked would put its behaviour under the pinned build's name."""
    if explicit is not None and str(explicit) != "":
        return describe(_explicit_path(explicit), "--server", str(explicit), timeout=version_timeout)
    env = os.environ.get(ENV_VAR)
    if env:
        return describe(_explicit_path(env), "$LLAMA_SERVER", f"${ENV_VAR}={env}", timeout=version_timeout)
    from mtpinspect.runtime.build import build_server, resolve_backend  # the build machinery only where it may build

    choice = resolve_backend(backend)
    if choice.reason is not None and progress is not None:
        progress(choice.reason)
    backend = choice.backend
    cached = cached_server(backend)
    if cached is not None:
        return describe(cached, "cache", timeout=version_timeout)
    if not build:
        raise ServerNotBuilt(
            f"no llama-server found (--server, ${ENV_VAR}, the cache for {backend}): "
            "run `mtpinspect runtime build`"
        )
    return describe(build_server(backend, progress=progress), "built", timeout=version_timeout)
