"""`mtpinspect runtime`: show which llama-server sweep would use and the verify helper check uses, or
build the pinned ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from mtpinspect.cli._args import backend_option, format_option
from mtpinspect.cli._output import Output
from mtpinspect.cli._progress import BuildLines
from mtpinspect.runtime.build import MEASURED_BUILD_TIME, build_server, resolve_backend
from mtpinspect.runtime.build_cache import cache_root, cached_helper, missing_targets
from mtpinspect.runtime.find import describe
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP, PINNED_PACKAGE, PINNED_VERSION
from mtpinspect.runtime.state import ServerState, server_state, state_of

_FIELDS = ("path", "version", "commit", "backend", "origin", "built_with", "mtp")


def _options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = format_option(csv="the fields")(func)
    func = backend_option("Which pinned build to show.")(func)
    return click.option(
        "--server", "server", metavar="PATH", default=None,
        help="Use this llama-server instead of $LLAMA_SERVER or the cached pinned build.",
    )(func)


def _tool(path: str | None, absent: str = "not found") -> str:
    return path or absent


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _document(state: ServerState) -> dict[str, Any]:
    """The JSON: the llama-server's fields (null when not built yet), what the pinned build is, the tools."""
    binary = state.server
    tools = state.toolchain
    return {
        "built": state.built,
        **{name: getattr(binary, name) if binary else None for name in _FIELDS},
        "build_number": binary.build_number if binary else None,
        "verify_helper": state.helper,
        "llama_quantize": state.quantize,
        "cache_dir": state.cache_dir,
        "pinned": state.pinned,
        "toolchain": {"cmake": tools.cmake, "cxx": tools.cxx, "nvcc": tools.nvcc, "missing": state.missing},
    }


def _render(state: ServerState, out: Output) -> None:
    binary = state.server
    helper = state.helper or "not built (`mtpinspect runtime build` builds it)"
    quantize = state.quantize or "not built (`mtpinspect runtime build` builds it)"
    if binary is not None:
        rows = [{"field": name, "value": getattr(binary, name)} for name in _FIELDS]
        rows.append({"field": "verify helper", "value": helper})
        rows.append({"field": "llama-quantize", "value": quantize})
        out.table(rows, ["field", "value"], title="llama-server", primary=True)
        out.text(f"\npinned build: {PINNED_PACKAGE}=={PINNED_VERSION} (llama.cpp {PINNED_LLAMA_CPP}), cache: {cache_root()}")
    else:
        tools = state.toolchain
        rows = [
            {"field": "status", "value": "not built yet"},
            {"field": "pinned build", "value": state.pinned.said},
            {"field": "cached in", "value": state.pinned.path},
            {"field": "cmake", "value": _tool(tools.cmake)},
            {"field": "C++ compiler", "value": _tool(tools.cxx)},
            {"field": "nvcc", "value": _tool(tools.nvcc, "not found" if state.pinned.backend == "cuda"
                                             else "not found (only --backend cuda needs it)")},
            {"field": "verify helper", "value": helper},
            {"field": "llama-quantize", "value": quantize},
        ]
        out.table(rows, ["field", "value"], title="llama-server", primary=True)
        if state.missing:
            out.text(f"\ncannot build it here yet: {_listed(state.missing)} not found; install them, or name a "
                     "llama-server you have with --server or $LLAMA_SERVER")
        else:
            out.text(f"\n`mtpinspect runtime build` builds it ({MEASURED_BUILD_TIME}, once), or the first "
                     "`mtpinspect sweep` does; --server or $LLAMA_SERVER name another")
    out.document(_document(state))


def _show(server: str | None, backend: str, fmt: str) -> int:
    # Showing never starts a many-minute build; `runtime build` does that on request.
    _render(server_state(server, backend), Output(fmt))
    return 0


@click.group("runtime", invoke_without_command=True)
@_options
@click.pass_context
def command(ctx: click.Context, server: str | None, backend: str, fmt: str) -> int:
    """Show the llama-server in use (path, version, backend) and check's verify helper, or build them."""
    if ctx.invoked_subcommand is None:
        return _show(server, backend, fmt)
    return 0


@command.command("show")
@_options
def show(server: str | None, backend: str, fmt: str) -> int:
    """Show the llama-server that sweep would use and where it was found, and the verify helper."""
    return _show(server, backend, fmt)


@command.command("build")
@backend_option("cuda needs the CUDA toolkit (nvcc on PATH or $CUDACXX).")
@click.option("--force", is_flag=True, help="Rebuild even if the cache already holds this build.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Parallel compile jobs (default: all cores).")
@format_option(csv="the fields")
def build(backend: str, force: bool, jobs: int | None, fmt: str) -> int:
    """Build the pinned llama-server, check's verify helper and llama-quantize (the trained model's
    quantized heads) from the llama-cpp-python sdist: 17-20 minutes on 2 busy cores (bench/README.md),
    cached afterwards. Only what the cache lacks is built."""
    out = Output(fmt)
    choice = resolve_backend(backend)
    if choice.reason is not None:
        out.hint(choice.reason)
    backend = choice.backend
    if not missing_targets(backend) and not force:
        out.hint("llama-server, the verify helper and llama-quantize are already built (use --force to rebuild)")
    # The build says what it builds, its progress (redrawn in place on a terminal), and where it put the result.
    lines = BuildLines(out.errors, prefix="")
    try:
        path = build_server(backend, force=force, jobs=jobs, progress=lines)
    finally:
        lines.close()
    _render(state_of(describe(path, "built"), backend, cached_helper(backend)), out)
    return 0
