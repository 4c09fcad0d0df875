"""`mtpinspect runtime`: show which llama-server sweep would use and the verify helper check uses, or
build the pinned ones."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from mtpinspect.cache_dir import make_folder
from mtpinspect.cli._args import format_option
from mtpinspect.cli._output import Output
from mtpinspect.runtime.build import BACKENDS, TARGETS, build_server, cache_root, cached_helper, find_helper, missing_targets
from mtpinspect.runtime.find import ServerBinary, describe, find_server
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP, PINNED_PACKAGE, PINNED_VERSION

_FIELDS = ("path", "version", "commit", "backend", "origin", "built_with")


def _options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = format_option(csv="the fields")(func)
    func = click.option(
        "--backend", type=click.Choice(BACKENDS), default="cpu", show_default=True,
        help="Which cached pinned build to look for.",
    )(func)
    return click.option(
        "--server", "server", metavar="PATH", default=None,
        help="Use this llama-server instead of $LLAMA_SERVER or the cached pinned build.",
    )(func)


def _render(binary: ServerBinary, out: Output, helper: Path | None) -> None:
    rows = [{"field": name, "value": getattr(binary, name)} for name in _FIELDS]
    rows.append({"field": "verify helper", "value": helper or "not built (`mtpinspect runtime build` builds it)"})
    out.table(rows, ["field", "value"], title="llama-server", primary=True)
    out.text(f"\npinned build: {PINNED_PACKAGE}=={PINNED_VERSION} (llama.cpp {PINNED_LLAMA_CPP}), cache: {cache_root()}")
    out.document({**{name: getattr(binary, name) for name in _FIELDS}, "build_number": binary.build_number,
                  "verify_helper": helper, "cache_dir": cache_root()})


def _show(server: str | None, backend: str, fmt: str) -> int:
    # Showing never starts a many-minute build; `runtime build` does that on request.
    _render(find_server(server, build=False, backend=backend), Output(fmt), find_helper())
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
@click.option("--backend", type=click.Choice(BACKENDS), default="cpu", show_default=True,
              help="cuda needs the CUDA toolkit (nvcc on PATH or $CUDACXX).")
@click.option("--force", is_flag=True, help="Rebuild even if the cache already holds this build.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Parallel compile jobs (default: all cores).")
@format_option(csv="the fields")
def build(backend: str, force: bool, jobs: int | None, fmt: str) -> int:
    """Build the pinned llama-server and check's verify helper from the llama-cpp-python sdist (minutes;
    cached afterwards). Only what the cache lacks is built."""
    out = Output(fmt)
    missing = missing_targets(backend)
    if not missing and not force:
        out.hint("llama-server and the verify helper are already built (use --force to rebuild)")
    else:
        targets = " and ".join(list(TARGETS) if force else missing)
        out.hint(f"building {targets} from {PINNED_PACKAGE}=={PINNED_VERSION} (llama.cpp {PINNED_LLAMA_CPP}, "
                 f"{backend}) into {make_folder(cache_root())}; this takes several minutes")
    path = build_server(backend, force=force, jobs=jobs, progress=out.hint)
    _render(describe(path, "built"), out, cached_helper(backend))
    return 0
