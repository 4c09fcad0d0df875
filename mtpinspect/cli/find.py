"""`mtpinspect find BASE`: which of a base model's derivatives on the Hub keep a working MTP head."""

from __future__ import annotations

import time
from typing import TextIO

import click

from mtpinspect.cli._args import format_option, hub_options
from mtpinspect.cli._output import Output, sanitize
from mtpinspect.cli.check import _size
from mtpinspect.errors import INTERRUPTED
from mtpinspect.inspection.census import ALL, DEFAULT_LIMIT, RUNTIMES, Census, Derivative, Progress
from mtpinspect.sources.policy import FetchPolicy
from mtpinspect.vocabulary import Relation


class ProgressLine:
    """'find [12/20] org/name, ETA 4 s' on one line of a terminal, rewritten in place; nothing when stderr is
    not a terminal (a pipe, a log file, CI)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.on = stream.isatty()
        self._width = 0
        self._last = 0.0

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if not self.on or (p.current is None and p.done < p.total and now - self._last < 0.1):
            return
        self._last = now
        eta = f", ETA {p.eta:.0f} s" if p.eta is not None else ""
        text = sanitize(f"find [{p.done}/{p.total}] {p.current or ''}{eta}")[:100]
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def clear(self) -> None:
        if self.on and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


def _format_text(d: Derivative) -> str | None:
    """The row's format, and how many models of the repo it was chosen from."""
    judged = sum(1 for f in d.files if f.error is None)
    return f"{d.format} (best of {judged})" if d.format and judged > 1 else d.format


def _row(d: Derivative, engines: list[str]) -> dict[str, object]:
    return {
        "repo": d.repo, "relation": d.relation, "format": _format_text(d), "mtp_layers": d.mtp_layers,
        "layout": d.layout, "head": d.head, **{e: d.runtimes.get(e) for e in engines},
        "size": _size(d.size) if d.size is not None else None, "downloads": d.downloads, "error": _error_text(d),
    }


def _error_text(d: Derivative) -> str | None:
    # The message starts with the repo, which the row already names.
    if d.error is None:
        return None
    return d.error.removeprefix(f"{d.repo}: ")


def render(census: Census, out: Output) -> None:
    relation = "" if census.relation == ALL else f"{census.relation} "
    working = sum(1 for d in census.derivatives if d.usable)
    if not census.found:
        out.lead(f"{census.base}: no {relation}derivatives on the Hub")
    else:
        on = f" on {census.engine}" if census.engine else ""
        out.lead(f"{census.base}: {census.found} {relation}derivative(s) on the Hub; {len(census.derivatives)} "
                 f"listed{on}, {working} with a working MTP head")
    engines = [census.engine] if census.engine else list(RUNTIMES)
    columns = ["repo", *(["relation"] if census.relation == ALL else []), "format", "mtp_layers", "layout", "head",
               *engines, "size", "downloads", *(["error"] if any(d.error for d in census.derivatives) else [])]
    out.table([_row(d, engines) for d in census.derivatives], columns, title="Derivatives", primary=True)
    for line in _footer(census):
        out.text(line)
    out.document(census)


def _footer(census: Census) -> list[str]:
    lines = []
    if census.left_out:
        lines.append(f"{census.left_out} more derivative(s) not judged: the {census.found - census.left_out} most "
                     "downloaded were (--limit; --limit 0 judges all)")
    if census.not_on_engine:
        lines.append(f"{census.not_on_engine} judged derivative(s) not listed: they do not run on {census.engine}, "
                     "or could not be judged")
    if census.past_deadline:
        lines.append(f"{census.past_deadline} more derivative(s) not judged: the --deadline passed before their turn "
                     "(raise --deadline or MTPINSPECT_DEADLINE)")
    if census.interrupted:
        lines.append("interrupted: the rows above are the derivatives judged before Ctrl-C")
    cached = f", {_size(census.bytes_cached)} from the header cache" if census.bytes_cached else ""
    lines.append(f"{census.requests} Hub request(s), {_size(census.bytes_read)} read{cached}, in {census.seconds:.1f} s")
    return lines


@click.command("find")
@click.argument("base")
@click.option("--relation", type=click.Choice([*(r.value for r in Relation), ALL]), default=Relation.quantized.value,
              show_default=True, help="Which derivatives: the Hub's model-tree relation to BASE, or all four.")
@click.option("--engine", type=click.Choice(list(RUNTIMES)),
              help="List only the derivatives whose MTP head runs on this engine (the best model of each for it).")
@click.option("--limit", type=click.IntRange(min=0), default=DEFAULT_LIMIT, show_default=True,
              help="Judge the N most downloaded derivatives (0: all); the footer says how many were left out.")
@click.option("--token", help="Hugging Face token (default: HF_TOKEN or the saved `hf auth login`); gated "
                              "derivatives without access are rows with their error.")
@click.option("--verify/--no-verify", default=None,
              help="As check: ask the pinned llama.cpp about each GGUF (default: when its helper is built).")
@hub_options
@format_option(csv="one row per derivative", schema="find")
def command(base: str, relation: str, engine: str | None, limit: int, token: str | None, verify: bool | None, fmt: str,
            policy: FetchPolicy) -> int:
    """List BASE's derivatives on the Hub (ORG/NAME) and tell which keep a working MTP head.

    The Hub's model search lists the repos tagged base_model:RELATION:BASE (all pages); the --limit most
    downloaded are judged exactly as `check` judges a repo, reading headers only, 16 repos at a time:
    one row per derivative with its format, MTP layers, layout, the head's state (kept, excluded from
    quantization, quantized, low-bit, dropped, missing), each engine's status, size and downloads. A GGUF
    repo gets a verdict per model file (json: files) and its best model in the row. Working downloads
    come first. A derivative that cannot be judged (gated, gone, cut short, timed out) is a row with its
    error. --deadline bounds the whole census, and a 429's Retry-After holds back all of its requests; a
    repeated census reads its file headers from the header cache. Ctrl-C prints what was judged.

    Exit status: 0 when the census ran (also with no derivatives), 2 on error (an unknown BASE, a search
    answer that is not one), 130 when interrupted.
    """
    from mtpinspect.inspection.census import find

    out = Output(fmt)
    bar = ProgressLine(out.errors)
    try:
        census = find(base, relation=relation if relation == ALL else Relation(relation), engine=engine,
                      limit=limit or None, token=token, verify=verify, policy=policy, progress=bar)
    finally:
        bar.clear()
    render(census, out)
    return INTERRUPTED if census.interrupted else 0
