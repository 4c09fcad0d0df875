"""Build the pinned llama-server once from the llama.cpp tree vendored in a llama-cpp-python sdist.

The package registry is the only source: pip downloads the pinned source distribution (its hash is
checked), the vendored llama.cpp is configured with CMake and two targets are built: `llama-server`
and `mtpinspect-verify`, the small program of this package (helper/) that asks the same llama.cpp
whether it would load a GGUF with its MTP head, without reading the weights (runtime/verify.py).
The helper joins the configure through CMake's project-include hook, so the vendored tree is built
unpatched. The result goes into the user cache directory, one folder per backend, with a
`build.json` that records what was built and how. Builds happen in a temporary folder next to the
cache and are renamed into place at the end, under a lock, so an interrupted or concurrent build
never leaves a half-written binary behind. A cache made before the helper existed (or with an older
helper source) keeps its llama-server; the next build compiles only the helper.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from mtpinspect.cache_dir import make_folder
from mtpinspect.errors import OutputError, ServerError, UsageError, shown
from mtpinspect.files import lock_file, read_cached, try_lock, write_file
from mtpinspect.runtime.build_cache import (
    AUTO,
    BINARY_NAME,
    BUILD_RECIPE,
    HELPER_SOURCE,
    METADATA_NAME,
    TARGETS,
    cache_root,
    cached,
    cached_server,
    check_backend,
    helper_digest,
    host_cpu_features,
    install_dir,
    missing_targets,
)
from mtpinspect.runtime.pin import (
    PINNED_LLAMA_CPP,
    PINNED_PACKAGE,
    PINNED_SDIST_NAME,
    PINNED_SDIST_SHA256,
    PINNED_VERSION,
)
from mtpinspect.runtime.process import ProbeOverflow, run_bounded
from mtpinspect.runtime.timeouts import BUILD_HEARTBEAT_S
from mtpinspect.runtime.toolchain import NVCC_NEEDED, find_toolchain
from mtpinspect.sources.policy import MAX_SECONDS
from mtpinspect.units import duration

HELPER_CMAKE = HELPER_SOURCE / "mtpinspect-verify.cmake"

# `nvidia-smi -L` answers in well under a second; a hung driver must not hold a command up.
_GPU_PROBE_TIMEOUT_S = 10.0

# GCC's and Clang's names for the AMX extensions; -mno-X wins over -march=native whatever their order.
_AMX_FLAGS = ("amx-tile", "amx-int8", "amx-bf16")

# How long the first CPU build took, measured (bench/README.md, "The first run"): a range with its machine,
# not a best case; a machine with more cores takes less.
MEASURED_BUILD_TIME = "17-20 minutes on 2 busy cores"
# Room a CPU build takes in the cache while it runs (the sources unpacked, the objects; measured in bench/).
_BUILD_ROOM = "200 MB"
_PROGRESS_RE = re.compile(r"^\[\s*\d+%\]")

Progress = Callable[[str], None]


def nvidia_gpu_present() -> bool:
    """Whether this machine has an NVIDIA GPU the driver sees (its /proc entries, else `nvidia-smi -L`)."""
    gpus = Path("/proc/driver/nvidia/gpus")
    with contextlib.suppress(OSError):
        if gpus.is_dir() and any(gpus.iterdir()):
            return True
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        listing, _ = run_bounded([smi, "-L"], _GPU_PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired, ProbeOverflow):
        return False
    return re.search(r"^GPU \d+:", listing, re.MULTILINE) is not None


@dataclass(frozen=True)
class BackendChoice:
    """The pinned build's backend to use, and why (said to the user when it is not the plain CPU case)."""

    backend: str
    reason: str | None  # None: nothing worth saying (asked for, or a machine without an NVIDIA GPU)


def choose_backend(requested: str, *, gpu: bool, nvcc: str | None, cuda_cached: bool) -> BackendChoice:
    """--backend resolved: an explicit backend as asked; auto picks CUDA where an NVIDIA GPU can use it."""
    if requested != AUTO:
        return BackendChoice(check_backend(requested), None)
    if gpu and (nvcc is not None or cuda_cached):
        how = "its cached CUDA build" if cuda_cached else f"the CUDA build (nvcc: {nvcc})"
        return BackendChoice("cuda", f"an NVIDIA GPU is here: using {how}, with llama.cpp's default offload "
                                     "(-ngl auto: every layer that fits); --backend cpu measures on the CPU")
    if gpu:
        return BackendChoice("cpu", "an NVIDIA GPU is here but not the CUDA toolkit (nvcc on PATH or $CUDACXX): "
                                    "using the CPU build; install the toolkit for `--backend cuda`")
    return BackendChoice("cpu", None)


def resolve_backend(requested: str) -> BackendChoice:
    """choose_backend on this machine (a GPU is looked for only when the choice is auto)."""
    if requested != AUTO:
        return choose_backend(requested, gpu=False, nvcc=None, cuda_cached=False)
    return choose_backend(AUTO, gpu=nvidia_gpu_present(), nvcc=find_toolchain().nvcc, cuda_cached=cached_server("cuda") is not None)


def cmake_args(backend: str, cpu_features: frozenset[str] | None = None) -> list[str]:
    """CMake configure arguments for a backend on a CPU with ``cpu_features`` (default: this machine's);
    "cuda" needs nvcc (on PATH or $CUDACXX)."""
    check_backend(backend)
    args = [
        "-DCMAKE_BUILD_TYPE=Release",
        # One self-contained binary: nothing to copy besides it, no rpath to get wrong.
        "-DBUILD_SHARED_LIBS=OFF",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        # The web UI needs node or a download; the HTTP API is all mtpinspect uses.
        "-DLLAMA_BUILD_UI=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DLLAMA_OPENSSL=OFF",
        "-DLLAMA_BUILD_APP=OFF",
        # The sdist's git metadata gives the same commit; stating it keeps an enclosing git repo
        # (a cache folder inside a checkout) from leaking its own hash into `--version`.
        f"-DLLAMA_BUILD_COMMIT={PINNED_LLAMA_CPP}",
        # Adds the mtpinspect-verify target at the end of llama.cpp's project() (see helper/).
        f"-DCMAKE_PROJECT_llama.cpp_INCLUDE={HELPER_CMAKE.as_posix()}",
    ]
    if "amx_int8" in (host_cpu_features() if cpu_features is None else cpu_features):
        # GGML_NATIVE compiles for this CPU; on an AMX one that would bring in the AMX kernels (see BUILD_RECIPE).
        no_amx = " ".join(f"-mno-{flag}" for flag in _AMX_FLAGS)
        args += [f"-DCMAKE_C_FLAGS={no_amx}", f"-DCMAKE_CXX_FLAGS={no_amx}"]
    if backend == "cuda":
        nvcc = find_toolchain().nvcc
        if nvcc is None:
            raise _cannot_build(backend, [NVCC_NEEDED])
        args += ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_COMPILER={nvcc}"]
    return args


def preflight(backend: str) -> None:
    """Refuse a build that cannot succeed before anything is downloaded or written: cmake, a C++ compiler,
    and for cuda nvcc and the toolkit's cuBLAS."""
    missing = find_toolchain().missing(backend)
    if missing:
        raise _cannot_build(backend, missing)


def _cannot_build(backend: str, missing: list[str]) -> ServerError:
    """The one line for a build this machine lacks the tools for (toolchain.py names each with where to get it)."""
    other = "; or --backend cpu" if backend == "cuda" else ""
    return ServerError(f"cannot build llama-server ({backend}): {' and '.join(missing)} not found; install them, "
                       f"or name a llama-server you have with --server or $LLAMA_SERVER{other}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# Waiting for another process's build of the same backend (or its sdist download): said once with whose
# build it is, then every _WAIT_PROGRESS_S, and given up after $MTPINSPECT_BUILD_WAIT seconds (default an
# hour: a CUDA build on a few cores takes most of one). A builder that dies drops its flock, kill -9
# included, and the waiter takes over at its next poll; the lock's descriptor is close-on-exec, so no
# cmake or compiler it started can keep it.
BUILD_WAIT_ENV = "MTPINSPECT_BUILD_WAIT"
_BUILD_WAIT_S = 3600.0
_WAIT_POLL_S = 0.5
_WAIT_PROGRESS_S = 30.0
_HOLDER_MAX_BYTES = 4096


@dataclass(frozen=True)
class _Holder:
    """Who holds a build lock, from the companion file it writes (``unknown`` from an older mtpinspect)."""

    pid: str
    started: str
    log: str


def build_lock(backend: str, progress: Progress | None = None) -> contextlib.AbstractContextManager[None]:
    """The lock one backend's build holds (another process building the same waits, bounded)."""
    root = cache_root()
    return _lock(root / f".build-{backend}.lock", root / f"build-{backend}.log", progress)


def _build_wait() -> float:
    raw = os.environ.get(BUILD_WAIT_ENV)
    if raw is None or not raw.strip():  # set but empty, as unset
        return _BUILD_WAIT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= MAX_SECONDS:  # also false for nan; a week, as every other time setting
        raise UsageError(f"{BUILD_WAIT_ENV}={shown(raw)}: not a number of seconds from 0 to {MAX_SECONDS:g} (a week)")
    return seconds


@contextlib.contextmanager
def _lock(path: Path, log: Path, progress: Progress | None = None) -> Iterator[None]:
    """An exclusive lock on a file, held until the block ends; while another process holds it, wait (saying
    so through ``progress``) at most $MTPINSPECT_BUILD_WAIT seconds. The lock file is opened by the write
    rule for lock files (never through a planted link); who holds it goes to a companion file."""
    bound = _build_wait()
    make_folder(path.parent)
    with lock_file(path) as stream:
        if not try_lock(stream):
            _wait(stream, path, bound, progress)
        companion = path.with_name(path.name + ".holder")
        holder = {"pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "log": str(log)}
        with contextlib.suppress(OutputError):  # only the waiter's message needs it
            write_file(companion, lambda tmp: tmp.write_text(json.dumps(holder) + "\n", encoding="utf-8"))
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # removed while still locked: no other holder wrote it
                companion.unlink()


def _holder(path: Path) -> _Holder:
    data = read_cached(path.with_name(path.name + ".holder"), _HOLDER_MAX_BYTES)
    try:
        fields = json.loads(data or b"")
        pid = fields["pid"]
    except (ValueError, TypeError, KeyError, RecursionError):
        return _Holder("unknown", "unknown", "unknown")
    # A pid is a positive integer: 1e999 (inf), 1.5, true or "12" in a file another process wrote is no pid.
    if type(pid) is not int or not 0 < pid < 1 << 32:
        pid = "unknown"
    return _Holder(str(pid), _said(fields.get("started")), _said(fields.get("log")))


def _said(value: object) -> str:
    """A text of the companion file as a message quotes it: one short line whatever another process wrote."""
    return " ".join(value.split())[:300] if isinstance(value, str) and value.strip() else "unknown"


def _wait(stream: IO[str], path: Path, bound: float, progress: Progress | None) -> None:
    say = progress or (lambda _: None)
    holder = _holder(path)
    say(f"waiting for another mtpinspect's build of llama-server (pid {holder.pid}, started {holder.started}; "
        f"its log: {holder.log}); at most {duration(bound)} (${BUILD_WAIT_ENV})")
    started = last = time.monotonic()
    while not try_lock(stream):
        now = time.monotonic()
        if now - started >= bound:
            raise ServerError(f"{path}: another mtpinspect's build of llama-server (pid {_holder(path).pid}) still "
                              f"holds it after {duration(bound)}; wait for it to finish, stop it, or set "
                              f"${BUILD_WAIT_ENV} (seconds) higher")
        if now - last >= _WAIT_PROGRESS_S:
            say(f"still waiting for the build of pid {holder.pid} ({duration(now - started)} so far)")
            last = now
        time.sleep(min(_WAIT_POLL_S, max(0.0, bound - (now - started))))


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    if os.name == "nt":
        proc.kill()
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# Every BUILD_HEARTBEAT_S a step says its current target, its percentage and the time so far ("... so far)"),
# whatever it prints meanwhile: a log that shows cmake's lines a tenth at a time still gets one that often.
# pip's own lines worth passing on while it fetches the sdist (the rest is noise on a terminal).
_PIP_PROGRESS_RE = re.compile(r"^(Collecting|Downloading|Saved|Looking in)\b")


def _lines(stream: IO[str]) -> queue.Queue[str | None]:
    """The stream's lines on a queue, None at its end: read by a thread, so the caller can wait with a
    timeout and say that a silent step is still running."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


# The first error a step prints is its cause: CMake's "CMake Error at ...:" with the indented lines under it
# (the last line, "CMake Generate step failed", says only that it failed), a compiler's "file:1:2: error: ...".
_ERROR_RE = re.compile(r"^(CMake Error\b|\S+:\d+:(\d+:)? (fatal )?error:|ERROR:|error:)")
_ERROR_LINES = 6


class _FirstError:
    """The first error of a step's output, as its lines come (the blank ones are never fed)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._open = False  # a CMake error block goes on while its lines are indented

    def said(self) -> str:
        """Its lines in one, to the end of its first sentence (CMake's "Possible reasons include:" list is
        no cause)."""
        text = " ".join(self.lines)
        end = text.find(".  ")
        return text if end < 0 else text[: end + 1]

    def feed(self, line: str) -> None:
        if not self.lines:
            if _ERROR_RE.match(line):
                self.lines, self._open = [line.strip()], line.startswith("CMake Error")
        elif self._open:
            self._open = line[:1].isspace() and len(self.lines) < _ERROR_LINES
            if self._open:
                self.lines.append(line.strip())


def _run(step: str, command: Sequence[str], log: Path, progress: Progress | None, cwd: Path | None = None) -> None:
    """Run one build step, appending its output to the log and passing progress lines to the callback
    (and, when the step is silent for a while, a line that it is still running)."""
    # Line-buffered so `tail -f` on the log follows a long build.
    with log.open("a", encoding="utf-8", errors="replace", buffering=1) as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            proc = subprocess.Popen(
                list(command),
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                errors="replace",
                # Its own process group, so an interrupt can stop make and the compilers under cmake.
                start_new_session=os.name != "nt",
            )
        except OSError as exc:
            raise ServerError(f"llama-server build failed at {step}: cannot run {command[0]}: {exc.strerror}") from None
        last = ""
        current = ""  # the last progress line: "[ 44%] Building CXX object ..."
        error = _FirstError()
        assert proc.stdout is not None
        started = said = time.monotonic()
        try:
            lines = _lines(proc.stdout)
            while True:
                try:
                    line = lines.get(timeout=max(0.0, said + BUILD_HEARTBEAT_S - time.monotonic()))
                except queue.Empty:
                    line = ""
                if line is None:
                    break
                out.write(line)
                stripped = line.strip()
                if stripped:
                    last = stripped
                    error.feed(line)
                    if _PROGRESS_RE.match(stripped) or _PIP_PROGRESS_RE.match(stripped):
                        current = stripped
                        if progress is not None:
                            progress(stripped)
                if progress is not None and time.monotonic() - said >= BUILD_HEARTBEAT_S:
                    so_far = f"{duration(time.monotonic() - started)} so far"
                    progress(f"{current} ({step}: {so_far})" if _PROGRESS_RE.match(current) else f"{step}: still running ({so_far})")
                    said = time.monotonic()
        except BaseException:
            _kill_tree(proc)
            raise
        code = proc.wait()
    if code != 0:
        said = error.said() or last
        raise ServerError(f"llama-server build failed at {step} (exit {code}): {said[:300]} (log: {log})")


def _download_sdist(dest: Path, log: Path, progress: Progress | None) -> Path:
    """The pinned sdist in the cache, fetched when absent: the file alone from pip's configured index
    (sdist.py: nothing built), else with `pip download`; its hash must match the pin."""
    sdist = dest / PINNED_SDIST_NAME
    if not sdist.is_file() or _sha256(sdist) != PINNED_SDIST_SHA256:
        if progress is not None:
            progress(f"downloading {PINNED_PACKAGE}=={PINNED_VERSION} (source distribution) from pip's index")
        from mtpinspect.runtime.sdist import fetch_from_index  # urllib and ssl: only where it downloads

        started = time.monotonic()
        fetched = fetch_from_index(dest)
        with log.open("a", encoding="utf-8") as out:
            out.write(f"fetched {fetched[1]} in {duration(time.monotonic() - started)}\n" if fetched else
                      "no index pip is configured with offered the file as a plain download: pip download\n")
        if fetched is None:
            _pip_download(dest, sdist, log, progress)
    actual = _sha256(sdist)
    if actual != PINNED_SDIST_SHA256:
        sdist.unlink()
        raise ServerError(f"{PINNED_SDIST_NAME}: sha256 {actual} does not match the pinned {PINNED_SDIST_SHA256}")
    return sdist


def _pip_download(dest: Path, sdist: Path, log: Path, progress: Progress | None) -> None:
    """pip download of the sdist, where no index gave the file itself (it prepares the sdist's metadata:
    installs the build backend first)."""
    if progress is not None:
        progress("no index gave the file directly: `pip download` (it installs the build backend first: minutes)")
    download = Path(tempfile.mkdtemp(prefix="sdist-", dir=dest))
    try:
        _run(
            "pip download",
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "--disable-pip-version-check", "-d", str(download), f"{PINNED_PACKAGE}=={PINNED_VERSION}"],
            log,
            progress,
        )
        got = download / PINNED_SDIST_NAME
        if not got.is_file():
            raise ServerError(f"llama-server build failed at pip download: {PINNED_SDIST_NAME} not in pip's output")
        os.replace(got, sdist)
    finally:
        shutil.rmtree(download, ignore_errors=True)


def pinned_sdist(progress: Progress | None = None) -> Path:
    """The pinned llama-cpp-python sdist in the cache (downloaded and hash-checked when absent): the
    source of llama-server and of the converter and vocabularies that training/ uses."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root / ".sdist.lock", root / "sdist.log", progress):
        return _download_sdist(root, root / "sdist.log", progress)


def _wanted(name: str, top: str) -> bool:
    """Members needed to build: vendor/llama.cpp without its docs and test vocabularies, and the git
    metadata that names the commit (build-info reads it)."""
    tree = f"{top}/vendor/llama.cpp/"
    if name.startswith((tree + "models/", tree + "docs/")):
        return False
    return name.startswith((tree, f"{top}/.git/")) or name in (tree[:-1], f"{top}/.git")


def _unpack(sdist: Path, dest: Path) -> Path:
    """Unpack what the build needs from the sdist and return its vendor/llama.cpp folder."""
    import tarfile  # only a build unpacks: `check` imports this module for the cached build's path

    top = sdist.name[: -len(".tar.gz")]
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if _wanted(m.name, top)]
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, members=members, filter="data")
        else:  # Python < 3.10.12 / 3.11.4: the archive's hash was checked above.
            tar.extractall(dest, members=members)  # noqa: S202
    source = dest / top / "vendor" / "llama.cpp"
    if not (source / "CMakeLists.txt").is_file():
        raise ServerError(f"{sdist.name}: no vendor/llama.cpp/CMakeLists.txt inside")
    return source


def _version_text(binary: Path) -> str:
    try:
        stdout, stderr = run_bounded([str(binary), "--version"], 60)
    except (OSError, subprocess.TimeoutExpired, ProbeOverflow) as exc:
        raise ServerError(f"llama-server build failed at check: {binary} --version: {exc}") from None
    return (stdout + stderr).strip()


def write_metadata(folder: Path, backend: str, args: Sequence[str], version_text: str, helper_sha256: str) -> None:
    """Record what the binaries in `folder` are and how they were built (``helper_sha256``: the digest
    of the helper source the helper was compiled from)."""
    targets = [t for t, name in TARGETS.items() if (folder / name).is_file()]
    meta = {
        "package": PINNED_PACKAGE,
        "package_version": PINNED_VERSION,
        "llama_cpp_commit": PINNED_LLAMA_CPP,
        "sdist_sha256": PINNED_SDIST_SHA256,
        "recipe": BUILD_RECIPE,
        "backend": backend,
        "cmake_args": list(args),
        # A native build: what it may use of the CPU it was built on (a CPU without one of them cannot run it).
        "cpu_features": sorted(host_cpu_features()),
        "targets": targets,
        "helper_sha256": helper_sha256 if "mtpinspect-verify" in targets else None,
        "machine": platform.machine(),
        "system": platform.system(),
        "version_output": version_text,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / METADATA_NAME).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def install_binaries(
    binaries: Mapping[str, Path], backend: str, args: Sequence[str], helper_sha256: str | None = None
) -> Path:
    """Put already built executables (target -> path) into the cache atomically, keeping the cached
    ones that were not rebuilt, as build_server does at its end; returns the install folder.
    ``helper_sha256`` defaults to the digest of the helper source as it is now."""
    root = make_folder(cache_root())
    staging = Path(tempfile.mkdtemp(prefix=f".install-{backend}-", dir=root))
    staging.chmod(0o755)  # mkdtemp makes it private; the cache is readable like any program folder
    try:
        kept = {t: cached(backend, t) for t in TARGETS if t not in binaries}
        for target, source in {**kept, **binaries}.items():
            if source is not None:
                shutil.copy2(source, staging / TARGETS[target])
        server = staging / BINARY_NAME
        if not server.is_file():
            raise ServerError(f"llama-server build failed at install: no {BINARY_NAME} to install")
        write_metadata(staging, backend, args, _version_text(server), helper_sha256 or helper_digest())
        final = install_dir(backend)
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".old-{backend}-", dir=root))
            os.replace(final, old / "x")
            shutil.rmtree(old, ignore_errors=True)
        os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def _built(build: Path, name: str, log: Path) -> Path:
    found = next((p for p in (build / "bin" / name, build / "bin" / "Release" / name) if p.is_file()), None)
    if found is None:
        raise ServerError(f"llama-server build failed at install: no {name} under {build / 'bin'} (log: {log})")
    return found


def build_server(
    backend: str = "cpu",
    *,
    force: bool = False,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> Path:
    """Build (or reuse) the pinned llama-server and the verify helper for a backend; return the cached
    llama-server's path. Only the targets missing from the cache are built, unless ``force``."""
    args = cmake_args(backend)
    root = cache_root()
    if force or missing_targets(backend):
        # Before the lock and the download: a build this machine cannot finish writes nothing in the cache.
        preflight(backend)
    with build_lock(backend, progress):
        # Another process may have finished the same build while this one waited for the lock.
        targets = list(TARGETS) if force else missing_targets(backend)
        if not targets:
            return install_dir(backend) / BINARY_NAME
        digest = helper_digest()  # of the source about to be compiled
        started = time.monotonic()
        log = root / f"build-{backend}.log"
        step = "start"
        work: Path | None = None
        try:
            work = Path(tempfile.mkdtemp(prefix=f".build-{backend}-", dir=root))
            log.write_text("", encoding="utf-8")
            if progress is not None:
                progress(f"building {' and '.join(targets)} from {PINNED_PACKAGE}=={PINNED_VERSION} (llama.cpp "
                         f"{PINNED_LLAMA_CPP}, {backend}): {MEASURED_BUILD_TIME}, once; full log: {log}")
            step = "download"
            sdist = _download_sdist(root, log, progress)
            step = "unpacking"
            if progress is not None:
                progress(f"unpacking {sdist.name}")
            source = _unpack(sdist, work / "src")
            build = work / "build"
            step = "cmake configure"
            if progress is not None:
                progress(f"configuring llama.cpp {PINNED_LLAMA_CPP} ({backend}) with cmake")
            _run("cmake configure", ["cmake", "-S", str(source), "-B", str(build), *args], log, progress)
            jobs = jobs or os.cpu_count() or 1
            step = "cmake build"
            _run(
                "cmake build",
                ["cmake", "--build", str(build), "--config", "Release", "--target", *targets, "-j", str(jobs)],
                log,
                progress,
            )
            step = "install"
            built = {target: _built(build, TARGETS[target], log) for target in targets}
            folder = install_binaries(built, backend, args, digest)
            if progress is not None:
                progress(f"built {' and '.join(targets)} ({backend}) in {duration(time.monotonic() - started)}; "
                         f"cached in {folder}")
            return folder / BINARY_NAME
        except OSError as exc:
            # A full or read-only cache folder: one line that says where, not a traceback.
            where = f"{exc.filename}: " if exc.filename else ""
            room = "; free some room or set $MTPINSPECT_CACHE_DIR to a folder with more" if exc.errno == errno.ENOSPC else ""
            raise ServerError(f"llama-server build failed at {step}: {where}{exc.strerror or exc}{room} "
                              f"(the build needs about {_BUILD_ROOM}; cache: {root})") from None
        finally:
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)
