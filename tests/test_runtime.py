"""Finding, describing and building llama-server; parsing its logs and /metrics pages.

The binary tests run the real pinned llama-server (built once into the user cache, or taken from
$LLAMA_SERVER / PATH). The build pipeline test runs build_server end to end with a stand-in `cmake`
on PATH, so it checks download reuse, unpacking, progress, atomic install and metadata in seconds;
the real compile is what the `server_binary` fixture does on a fresh machine.
"""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
from cliproc import error_line, run_cli

from mtpinspect.errors import FormatError, ServerError
from mtpinspect.runtime import build as build_mod
from mtpinspect.runtime import build_cache
from mtpinspect.runtime.build import build_server, choose_backend, cmake_args
from mtpinspect.runtime.build_cache import AUTO, cache_root, cached_server
from mtpinspect.runtime.find import ServerBinary, describe, find_server
from mtpinspect.runtime.logs import failure_reason, parse_draft_lines, unused_nextn_tensors
from mtpinspect.runtime.metrics import parse_metrics
from mtpinspect.runtime.pin import FIRST_MTP_RELEASE, PINNED_LLAMA_CPP, PINNED_SDIST_NAME


@pytest.fixture(scope="module")
def server_binary() -> ServerBinary:
    return find_server(build=True, progress=print)


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No $LLAMA_SERVER, a PATH with nothing but an empty folder, an empty cache."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.delenv("LLAMA_SERVER", raising=False)
    monkeypatch.delenv("CUDACXX", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("MTPINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    return empty


# -- the real binary ----------------------------------------------------------------------------


@pytest.mark.server
def test_version_of_the_real_server(server_binary: ServerBinary) -> None:
    printed = subprocess.run([str(server_binary.path), "--version"], capture_output=True, text=True)
    assert f"version: {server_binary.version}" in printed.stdout + printed.stderr
    assert server_binary.commit is not None and server_binary.commit in server_binary.version
    assert server_binary.backend in ("cpu", "cuda", "metal", "vulkan", "rocm", "sycl", "opencl")
    if server_binary.origin in ("cache", "built"):
        assert server_binary.commit == PINNED_LLAMA_CPP


@pytest.mark.server
def test_explicit_path_wins_and_is_described(server_binary: ServerBinary, clean_env: Path) -> None:
    found = find_server(server_binary.path, build=False)
    assert (found.path, found.origin, found.version) == (server_binary.path, "--server", server_binary.version)


@pytest.mark.server
def test_env_then_cache_and_never_path(server_binary: ServerBinary, clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ServerError) as exc:
        find_server(build=False)
    assert "runtime build" in _one_line(exc)

    args = ["-DCMAKE_BUILD_TYPE=Release"]
    installed = build_mod.install_binaries({"llama-server": server_binary.path}, "cpu", args) / build_cache.BINARY_NAME
    assert installed == cached_server("cpu") and installed.parent.parent == cache_root()
    meta = json.loads((installed.parent / "build.json").read_text())
    assert meta["cmake_args"] == args and meta["backend"] == "cpu" and server_binary.version in meta["version_output"]
    cached = find_server(build=False)
    assert (cached.origin, cached.backend, cached.path) == ("cache", "cpu", installed.resolve())
    # A second install replaces the first one in place.
    assert build_mod.install_binaries({"llama-server": server_binary.path}, "cpu", args) / build_cache.BINARY_NAME == installed

    # A llama-server on PATH (any build, however old) is not taken in place of the pinned one.
    (clean_env / "llama-server").symlink_to(server_binary.path)
    assert find_server(build=False).origin == "cache"

    monkeypatch.setenv("LLAMA_SERVER", str(server_binary.path))
    assert find_server(build=False).origin == "$LLAMA_SERVER"


def test_server_path_that_is_missing(clean_env: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "llama-server"
    with pytest.raises(ServerError) as exc:
        find_server(missing, build=False)
    assert _one_line(exc) == f"{missing}: no such file"


def test_server_path_not_executable(clean_env: Path, tmp_path: Path) -> None:
    plain = tmp_path / "llama-server"
    plain.write_bytes(b"\x7fELF not really")
    plain.chmod(0o644)
    with pytest.raises(ServerError) as exc:
        find_server(plain, build=False)
    assert "not executable" in _one_line(exc)


def test_server_path_is_a_directory(clean_env: Path, tmp_path: Path) -> None:
    with pytest.raises(ServerError) as exc:
        find_server(tmp_path, build=False)
    assert "is a directory" in _one_line(exc)


def test_server_path_that_is_not_llama_server(clean_env: Path, tmp_path: Path) -> None:
    script = _script(tmp_path / "other-tool", "echo 'usage: other-tool [--help]'; exit 0")
    with pytest.raises(ServerError) as exc:
        find_server(script, build=False)
    assert _one_line(exc).startswith(f"{script}: not a llama-server")


def test_env_var_pointing_nowhere(clean_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LLAMA_SERVER", str(tmp_path / "gone"))
    with pytest.raises(ServerError) as exc:
        find_server(build=False)
    assert _one_line(exc).startswith("$LLAMA_SERVER=")


def test_older_version_format_and_cuda_backend(clean_env: Path, tmp_path: Path) -> None:
    # What a CUDA build of an older llama.cpp prints: device probe first, then the version lines.
    script = _script(
        tmp_path / "llama-server",
        "echo 'ggml_cuda_init: found 1 CUDA devices:' >&2; echo 'version: 5600 (abc1234)' >&2; "
        "echo 'built with cc (GCC) 13.2 for x86_64-linux-gnu' >&2",
    )
    found = describe(script, "--server")
    assert (found.version, found.commit, found.build_number, found.backend) == ("5600 (abc1234)", "abc1234", 5600, "cuda")
    assert found.built_with == "cc (GCC) 13.2 for x86_64-linux-gnu"


# -- building -----------------------------------------------------------------------------------


def test_cmake_args() -> None:
    cpu = cmake_args("cpu")
    assert "-DCMAKE_BUILD_TYPE=Release" in cpu and not any("GGML_CUDA" in a for a in cpu)
    with pytest.raises(ServerError) as exc:
        cmake_args("tpu")
    assert "tpu" in _one_line(exc)


def test_cmake_args_cuda_needs_nvcc(clean_env: Path) -> None:
    with pytest.raises(ServerError) as exc:
        cmake_args("cuda")
    assert "nvcc" in _one_line(exc)
    nvcc = _script(clean_env / "nvcc", "exit 0")
    cuda = cmake_args("cuda")
    assert "-DGGML_CUDA=ON" in cuda and f"-DCMAKE_CUDA_COMPILER={nvcc}" in cuda


def test_cmake_args_leave_out_amx_on_an_amx_cpu() -> None:
    """ggml's AMX kernels crash the pinned llama-server on AMX machines: a native build there turns them off."""
    amx = cmake_args("cpu", frozenset({"avx512f", "amx_tile", "amx_int8"}))
    assert "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" in amx
    assert "-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" in amx
    assert not any("amx" in a for a in cmake_args("cpu", frozenset({"avx2", "avx512f"})))


def test_backend_choice() -> None:
    """auto is CUDA where an NVIDIA GPU can use it (nvcc to build, or a cached CUDA build), said in words."""
    cuda = choose_backend(AUTO, gpu=True, nvcc="/usr/local/cuda/bin/nvcc", cuda_cached=False)
    assert cuda.backend == "cuda" and "--backend cpu" in (cuda.reason or "") and "nvcc" in (cuda.reason or "")
    assert choose_backend(AUTO, gpu=True, nvcc=None, cuda_cached=True).backend == "cuda"
    no_toolkit = choose_backend(AUTO, gpu=True, nvcc=None, cuda_cached=False)
    assert no_toolkit.backend == "cpu" and "CUDA toolkit" in (no_toolkit.reason or "")
    # nvcc alone (this project's machines have one and no GPU) is no reason for a CUDA build.
    assert choose_backend(AUTO, gpu=False, nvcc="/usr/local/bin/nvcc", cuda_cached=False) == build_mod.BackendChoice("cpu", None)
    assert choose_backend("cuda", gpu=False, nvcc=None, cuda_cached=False).backend == "cuda"  # asked for: as asked
    with pytest.raises(ServerError):
        choose_backend("rocm", gpu=False, nvcc=None, cuda_cached=False)


def test_this_machine_without_a_gpu_resolves_to_cpu(clean_env: Path) -> None:
    _script(clean_env / "nvcc", "exit 0")  # a CUDA toolkit and no GPU: the CPU build, nothing said
    if build_mod.nvidia_gpu_present():
        pytest.skip("this machine has an NVIDIA GPU")
    assert build_mod.resolve_backend(AUTO) == build_mod.BackendChoice("cpu", None)


def test_preflight_names_what_is_missing_before_any_download(clean_env: Path) -> None:
    with pytest.raises(ServerError) as exc:
        build_server("cpu")
    message = _one_line(exc)
    assert "cmake" in message and "C++ compiler" in message and "--server" in message
    assert not (cache_root() / PINNED_SDIST_NAME).exists() and not (cache_root() / "build-cpu.log").exists()
    _script(clean_env / "cmake", "exit 0")
    with pytest.raises(ServerError) as exc:
        build_server("cpu")
    assert "cmake" not in _one_line(exc).split("cannot build llama-server (cpu): ")[1].split(" not found")[0]


@pytest.mark.server
def test_a_cache_of_an_earlier_recipe_or_another_cpu_is_not_used(server_binary: ServerBinary, clean_env: Path) -> None:
    folder = build_mod.install_binaries({"llama-server": server_binary.path}, "cpu", cmake_args("cpu"))
    assert cached_server("cpu") == folder / build_cache.BINARY_NAME
    meta_path = folder / build_cache.METADATA_NAME
    meta = json.loads(meta_path.read_text())
    assert meta["recipe"] == build_cache.BUILD_RECIPE and set(meta["cpu_features"]) == build_cache.host_cpu_features()
    # Built on a CPU with an extension this one lacks: a native binary that may not start here.
    meta_path.write_text(json.dumps({**meta, "cpu_features": [*meta["cpu_features"], "avx10_2"]}))
    assert cached_server("cpu") is None and "llama-server" in build_cache.missing_targets("cpu")
    # Built by the recipe before this one (with ggml's AMX kernels): rebuilt.
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k != "recipe"}))
    assert cached_server("cpu") is None


def test_a_llama_server_from_before_mtp_is_refused_in_one_line(clean_env: Path, tmp_path: Path) -> None:
    """A build older than draft-mtp, named with --server, is said to be one before anything runs."""
    old = _script(tmp_path / "llama-server", "echo 'version: 5600 (abc1234)' >&2")
    found = describe(old, "--server")
    assert found.mtp is False
    with pytest.raises(ServerError) as exc:
        found.require_mtp()
    assert FIRST_MTP_RELEASE in _one_line(exc) and str(old) in _one_line(exc)
    # A fork's own numbering says nothing: its --help listing does.
    fork = _script(tmp_path / "fork-server", 'if [ "$1" = "--help" ]; then echo "--spec-type [none|draft-simple|draft-mtp]"; '
                                            'else echo "version: 0.4.0-dev (build 1, commit fedcba9)" >&2; fi')
    assert describe(fork, "--server").mtp is True
    bare = _script(tmp_path / "bare-server", 'if [ "$1" = "--help" ]; then echo "--spec-type [none|draft-simple]"; '
                                             'else echo "version: 0.4.0-dev (build 1, commit fedcba9)" >&2; fi')
    assert describe(bare, "--server").mtp is False
    assert describe(_script(tmp_path / "new", "echo 'version: 9200 (abc1234)' >&2"), "--server").mtp is True


def test_sweep_with_a_llama_server_from_before_mtp(clean_env: Path, tmp_path: Path) -> None:
    old = _script(tmp_path / "llama-server", "echo 'version: 5600 (abc1234)' >&2")
    proc = run_cli("sweep", "--server", str(old), "--out", str(tmp_path / "out"), "--no-plot", timeout=60)
    error_line(proc, "has no --spec-type draft-mtp", FIRST_MTP_RELEASE, "pinned build")


@pytest.fixture(scope="module")
def pinned_sdist(server_binary: ServerBinary) -> Path:
    """The pinned sdist in the real cache, where a pinned build (this session's or CI's) left it."""
    sdist = cache_root() / PINNED_SDIST_NAME
    if not sdist.is_file():
        pytest.skip("the pinned sdist is not cached: the server binary did not come from a pinned build")
    return sdist


@pytest.fixture(scope="module")
def helper_binary(server_binary: ServerBinary) -> Path:
    """The real verify helper (built on first use, with llama-server's cmake build)."""
    found = build_cache.cached_helper("cpu")
    if found is None:
        build_server("cpu", progress=print)
        found = build_cache.cached_helper("cpu")
    assert found is not None
    return found


def _stand_in_cmake(folder: Path, server: Path, helper: Path) -> Path:
    """A cmake that prints what CMake prints, "compiles" each --target by copying the real binary into
    bin/, and records its --build command lines in builds.log."""
    log = folder / "builds.log"
    _script(folder / "c++", "exit 0")  # the preflight looks for a compiler; the stand-in cmake never calls it
    _script(
        folder / "cmake",
        f'if [ "$1" = "--build" ]; then echo "$@" >> "{log}"; echo "[ 38%] Building CXX object common/arg.cpp.o"; '
        '/bin/mkdir -p "$2/bin"; for t in "$@"; do case "$t" in '
        f'llama-server) /bin/cp "{server}" "$2/bin/llama-server";; '
        f'mtpinspect-verify) /bin/cp "{helper}" "$2/bin/mtpinspect-verify";; '
        # The pipeline only copies what the build made: any executable stands in for llama-quantize.
        f'llama-quantize) /bin/cp "{helper}" "$2/bin/llama-quantize";; esac; done; '
        'echo "[100%] Built target llama-server"; '
        'else test -f "$2/CMakeLists.txt" && echo "-- Configuring done"; fi',
    )
    return log


@pytest.mark.server
def test_build_pipeline_with_stand_in_cmake(
    server_binary: ServerBinary, helper_binary: Path, pinned_sdist: Path, clean_env: Path
) -> None:
    sdist = pinned_sdist
    cache = cache_root()
    cache.mkdir(parents=True)
    (cache / sdist.name).symlink_to(sdist)
    builds = _stand_in_cmake(clean_env, server_binary.path, helper_binary)
    lines: list[str] = []
    built = build_server("cpu", jobs=1, progress=lines.append)
    assert built == cached_server("cpu") and build_cache.cached_helper("cpu") == built.parent / build_cache.HELPER_NAME
    assert "--target llama-server mtpinspect-verify llama-quantize" in builds.read_text()
    meta = build_cache.read_metadata("cpu") or {}
    assert meta["targets"] == ["llama-server", "mtpinspect-verify", "llama-quantize"]
    assert meta["helper_sha256"] == build_cache.helper_digest()
    assert any(a.startswith("-DCMAKE_PROJECT_llama.cpp_INCLUDE=") and a.endswith("mtpinspect-verify.cmake") for a in meta["cmake_args"])
    assert "[ 38%] Building CXX object common/arg.cpp.o" in lines and "[100%] Built target llama-server" in lines
    assert not any(line.startswith("-- ") for line in lines)
    # It says what it builds and where its log is first, and closes with the time it took and where it is cached.
    assert lines[0].startswith("building llama-server and mtpinspect-verify and llama-quantize") and "full log: " in lines[0]
    assert lines[-1].startswith("built llama-server and mtpinspect-verify and llama-quantize (cpu) in ")
    assert lines[-1].endswith(f"; cached in {built.parent}")
    assert describe(built, "built").version == server_binary.version
    assert [p.name for p in cache.iterdir() if p.name.startswith(".build-") and p.is_dir()] == []
    # Cached now: no second build unless forced.
    assert build_server("cpu", progress=lines.append) == built and len(builds.read_text().splitlines()) == 1


@pytest.mark.server
def test_cache_from_before_the_helper_builds_only_the_missing_targets(
    server_binary: ServerBinary, helper_binary: Path, pinned_sdist: Path, clean_env: Path
) -> None:
    cache_root().mkdir(parents=True)
    (cache_root() / pinned_sdist.name).symlink_to(pinned_sdist)
    # A cache as earlier versions left it: llama-server and a build.json that names no helper.
    folder = build_mod.install_binaries({"llama-server": server_binary.path}, "cpu", ["-DCMAKE_BUILD_TYPE=Release"])
    assert build_cache.missing_targets("cpu") == ["mtpinspect-verify", "llama-quantize"] and build_cache.find_helper() is None
    server_mtime = (folder / build_cache.BINARY_NAME).stat().st_mtime_ns
    builds = _stand_in_cmake(clean_env, server_binary.path, helper_binary)
    build_server("cpu")
    assert "--target mtpinspect-verify llama-quantize -j" in builds.read_text()
    assert "llama-server" not in builds.read_text().split("--target")[1]
    assert build_cache.find_helper() == folder / build_cache.HELPER_NAME
    assert (folder / build_cache.BINARY_NAME).stat().st_mtime_ns == server_mtime  # kept as it was (copy2 keeps mtime)
    assert build_cache.read_metadata("cpu")["targets"] == ["llama-server", "mtpinspect-verify", "llama-quantize"]
    # A helper built from another version of helper/ is stale: the next build replaces it.
    meta_path = folder / build_cache.METADATA_NAME
    meta_path.write_text(meta_path.read_text().replace(build_cache.helper_digest(), "0" * 64))
    assert build_cache.cached_helper("cpu") is None and build_cache.missing_targets("cpu") == ["mtpinspect-verify"]


@pytest.mark.server
def test_build_failure_names_the_step(pinned_sdist: Path, clean_env: Path) -> None:
    cache_root().mkdir(parents=True)
    (cache_root() / pinned_sdist.name).symlink_to(pinned_sdist)
    _script(clean_env / "c++", "exit 0")
    _script(clean_env / "cmake", 'echo "CMake Error at CMakeLists.txt:2: no compiler"; exit 1')
    with pytest.raises(ServerError) as exc:
        build_server("cpu")
    message = _one_line(exc)
    assert "cmake configure" in message and "no compiler" in message
    assert cached_server("cpu") is None


# -- logs ---------------------------------------------------------------------------------------


def test_parse_draft_lines_all_formats() -> None:
    text = "\n".join(
        [
            "slot print_timing: id  0 | task 12 | draft acceptance = 0.75000 (   30 accepted /    40 generated), mean len =  2.50",
            "slot print_timing: id  0 | task 12 |      acc per pos = (0.900, 0.600)",
            "draft acceptance rate = 0.57576 (171 accepted / 297 generated)",
            "draft acceptance = 0.64479 ( 167 accepted / 259 generated), mean acceptance length = 2.92, "
            "acceptance rate per position = (0.805, 0.632, 0.483)",
            "eval time = 10 ms",
        ]
    )
    first, older, newer = parse_draft_lines(text)
    assert (first.acceptance, first.accepted, first.generated, first.mean_length) == (0.75, 30, 40, 2.5)
    assert first.per_position == (0.9, 0.6) and first.raw_line.startswith("slot print_timing")
    assert (older.accepted, older.generated, older.mean_length, older.per_position) == (171, 297, None, None)
    assert newer.mean_length == 2.92 and newer.per_position == (0.805, 0.632, 0.483)
    assert parse_draft_lines("no drafts here") == []


def test_failure_reasons_from_reference_texts() -> None:
    arg_error = (
        'error while handling argument "--spec-type": unknown speculative type: mtp\n\nusage:\n'
        "--spec-type none,draft-simple   comma-separated list\n"
    )
    assert failure_reason(arg_error) == 'error while handling argument "--spec-type": unknown speculative type: mtp'
    no_mtp = (
        "common_params_fit_impl: failed to measure the memory of the extra model, fitting without it: x\n"
        "llama_init_from_model: context type MTP requested but model doesn't contain MTP layers\n"
        "common_speculative_init_result: failed to create MTP context\n"
        "srv    load_model: failed to create MTP context\n"
        "srv          main: exiting due to model loading error\n"
    )
    assert failure_reason(no_mtp) == "context type MTP requested but model doesn't contain MTP layers"
    missing = (
        "llama_model_load: error loading model: missing tensor 'blk.2.nextn.eh_proj.weight'\n"
        "srv    load_model: failed to load model, 'm.gguf'\n"
    )
    assert failure_reason(missing) == "error loading model: missing tensor 'blk.2.nextn.eh_proj.weight'"
    crash = "terminate called after throwing an instance of 'std::runtime_error'\n  what():  boom\n"
    assert failure_reason(crash) == "uncaught exception: boom"
    assert failure_reason("main: model loaded\nmain: listening on http://127.0.0.1:8080\n") is None


def test_unused_nextn_tensors() -> None:
    text = (
        "model has unused tensor blk.24.nextn.eh_proj.weight (size = 1024 bytes) -- ignoring\n"
        "model has unused tensor blk.24.attn_q.weight (size = 64 bytes) -- ignoring\n"
        "0.00.1 W model has unused tensor blk.24.nextn.enorm.weight (size = 8 bytes) -- ignoring\n"
    )
    assert unused_nextn_tensors(text) == ["blk.24.nextn.eh_proj.weight", "blk.24.nextn.enorm.weight"]


# -- /metrics pages -----------------------------------------------------------------------------

_LLAMACPP = """\
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 128
llamacpp:spec_decode_num_draft_tokens_total 94
llamacpp:spec_decode_num_accepted_tokens_total 80
llamacpp:spec_decode_num_drafts_total 32
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 30
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 28
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 22
llamacpp:predicted_tokens_seconds 55.5
"""


def test_parse_llamacpp_metrics_with_and_without_total_suffix() -> None:
    with_total = parse_metrics(_LLAMACPP)
    without = parse_metrics(_LLAMACPP.replace("_total", ""))
    for m in (with_total, without):
        assert (m.source, m.draft_tokens, m.accepted_tokens, m.drafts, m.tokens_predicted) == ("llamacpp", 94, 80, 32, 128)
        assert m.accepted_per_pos == {0: 30, 1: 28, 2: 22}
        assert m.mean_length == pytest.approx(1 + 80 / 32)
        assert m.per_position_rates() == pytest.approx((30 / 32, 28 / 32, 22 / 32))
    before = parse_metrics(_LLAMACPP.replace(" 94", " 90").replace(" 80", " 78").replace(" 32", " 31"))
    delta = with_total.delta(before)
    assert (delta.draft_tokens, delta.accepted_tokens, delta.drafts, delta.mean_length) == (4, 2, 1, 3.0)


def test_parse_vllm_and_sglang_metrics() -> None:
    vllm = parse_metrics(
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0\n'
        'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 10.0\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 60.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 30.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 15.0\n'
        'vllm:generation_tokens_total{model_name="m"} 1.2e+02\n'
    )
    assert (vllm.source, vllm.drafts, vllm.draft_tokens, vllm.acceptance, vllm.tokens_predicted) == ("vllm", 20, 60, 0.5, 120)
    assert vllm.accepted_per_pos == {0: 15}
    sglang = parse_metrics(
        'sglang:spec_accept_length{model_name="m",tp_rank="0"} 2.5\n'
        'sglang:spec_accept_length{model_name="m",tp_rank="1"} 3.5\n'
        'sglang:spec_accept_rate{model_name="m"} 0.6\n'
    )
    assert (sglang.source, sglang.has_spec_counters, sglang.mean_length, sglang.acceptance) == ("sglang", False, 3.0, 0.6)


def test_metrics_page_that_is_not_prometheus() -> None:
    with pytest.raises(FormatError) as exc:
        parse_metrics("<html>not metrics</html>\n")
    assert "line 1" in _one_line(exc)


# -- CLI ----------------------------------------------------------------------------------------


@pytest.mark.server
def test_cli_show_and_errors(server_binary: ServerBinary, clean_env: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mtpinspect.cli.runtime import command

    runner = CliRunner()
    shown = runner.invoke(command, ["--server", str(server_binary.path), "--format", "json"], standalone_mode=False)
    assert shown.exception is None, shown.output
    data = json.loads(shown.output)
    assert (data["path"], data["version"], data["origin"]) == (str(server_binary.path), server_binary.version, "--server")
    table = runner.invoke(command, ["show", "--server", str(server_binary.path)], standalone_mode=False)
    assert table.exception is None and server_binary.version in table.output and "backend" in table.output
    missing = runner.invoke(command, ["show", "--server", str(tmp_path / "gone")], standalone_mode=False)
    assert isinstance(missing.exception, ServerError)
    # Nothing found and nothing cached: show says what `runtime build` builds instead of building for minutes.
    nothing = runner.invoke(command, [], standalone_mode=False)
    assert nothing.exception is None and "not built yet" in nothing.output and "runtime build" in nothing.output
