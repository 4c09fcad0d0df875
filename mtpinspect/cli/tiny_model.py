"""`mtpinspect tiny-model`: write a tiny GGUF whose MTP draft acceptance is chosen in advance."""

from __future__ import annotations

from pathlib import Path

import click

from mtpinspect.cli._args import format_option
from mtpinspect.cli._output import Output
from mtpinspect.errors import UsageError
from mtpinspect.tiny_model import (
    HEAD_TYPES,
    LAYOUTS,
    MISMATCHES,
    SIZES,
    TinyModelSpec,
    expected_acceptance,
    head_drafts,
    mismatched_sidecar,
    parse_acceptance,
    size_fields,
    spec_for_head_type,
    write_tiny_model,
)

_N_MAX = (1, 2, 3, 4)
_N_PREDICT = 64


def _acceptance(ctx: click.Context, param: click.Parameter, value: str) -> str | float:
    try:
        return parse_acceptance(value)
    except UsageError:
        raise click.BadParameter(
            f"{value!r} is not perfect, none or a fraction strictly between 0 and 1", ctx=ctx, param=param
        ) from None


def _expected(spec: TinyModelSpec) -> list[dict[str, float | int | None]]:
    rows = []
    for n_max in _N_MAX:
        run = expected_acceptance(spec, n_max, _N_PREDICT)
        rows.append({"n_max": n_max, "acceptance": run.acceptance, "mean_length": run.mean_length})
    return rows


def _note(spec: TinyModelSpec, mismatch: str | None) -> str:
    if not spec.nextn:
        return "no MTP head: llama-server --spec-type draft-mtp refuses it (model doesn't contain MTP layers)"
    if mismatch == "embd":
        return "the sidecar's n_embd differs: llama-server aborts at startup (MTP input row width must match)"
    if mismatch == "vocab":
        return "the sidecar's vocabulary is smaller: llama-server loads it, then aborts on the first draft"
    if mismatch == "layers":
        return "the sidecar's block_count differs: llama-server loads it without complaint"
    if head_drafts(spec).tied:
        return "the head's logits tie: llama-server drafts one fixed token, about 1 accepted per 64"
    return "exact for one prompt with expected_run(); these figures average over every first token"


@click.command("tiny-model")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--acceptance", default="perfect", show_default=True, callback=_acceptance,
    help="perfect, none, or FRACTION in (0,1): the chance a drafted token is accepted (n-max 1); "
    "deeper positions compound as FRACTION^k.",
)
@click.option("--layout", type=click.Choice(LAYOUTS), default="bundled", show_default=True,
              help="sidecar: a trunk-only OUT plus mtp-OUT beside it (pass it with -md).")
@click.option("--no-nextn", is_flag=True, help="Write no MTP head at all, as `convert_hf_to_gguf.py --no-mtp`.")
@click.option("--head-type", type=click.Choice(HEAD_TYPES, case_sensitive=False), default="F32", show_default=True,
              help="ggml type of the MTP block's matrices; TQ1_0/TQ2_0 (low-bit) erase the head's signal.")
@click.option("--zero-head", is_flag=True, help="Zero eh_proj and the head: a damaged MTP head.")
@click.option("--mismatch", type=click.Choice(MISMATCHES), default=None,
              help="Write the sidecar from another model (implies --layout sidecar).")
@click.option("--size", type=click.Choice(SIZES), default="tiny", show_default=True,
              help="heavy: a ~107 MB model whose trunk dominates decoding on a CPU, so a good head speeds it up.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for the random weights.")
@click.option("--force", is_flag=True,
              help="When OUT (or mtp-OUT) is a symbolic link, write the file it points to (else refused). A device, "
                   "FIFO or folder is never replaced.")
@format_option(csv="the files written")
def command(
    out: Path, acceptance: str | float, layout: str, no_nextn: bool, head_type: str, zero_head: bool,
    mismatch: str | None, size: str, seed: int, force: bool, fmt: str,
) -> int:
    """Write OUT, a tiny GGUF (glm4moe, 64-token test vocabulary) with an MTP head whose greedy draft
    acceptance you choose; it loads in llama-server in well under a second."""
    spec = spec_for_head_type(
        head_type.upper(),
        **size_fields(size),
        acceptance=acceptance,
        nextn=not no_nextn,
        head="zeroed" if zero_head else "normal",
        layout="sidecar" if mismatch else layout,
        sidecar_from=mismatched_sidecar(mismatch, size) if mismatch else None,
        seed=seed,
    )
    files = write_tiny_model(out, spec, force=force)
    roles = ["model"] if len(files) == 1 else ["main (trunk only)", "MTP sidecar"]
    file_rows = [{"file": str(path), "role": role, "bytes": path.stat().st_size} for path, role in zip(files, roles)]
    expected = _expected(spec) if spec.nextn else []
    note = _note(spec, mismatch)

    sink = Output(fmt)
    sink.table(file_rows, ["file", "role", "bytes"], title="Files written", primary=True)
    if expected:
        sink.table(expected, ["n_max", "acceptance", "mean_length"],
                   title=f"Expected with --spec-type draft-mtp (greedy, n_predict {_N_PREDICT})")
    sink.text(f"\n{note}")
    draft = f" -md {files[1]}" if len(files) > 1 else ""
    mtp = " --spec-type draft-mtp --spec-draft-n-max 3" if spec.nextn else ""
    sink.text(f"try: llama-server -m {files[0]}{draft}{mtp}")
    sink.document({
        "files": file_rows,
        "spec": {
            "acceptance": spec.acceptance, "layout": spec.layout, "nextn": spec.nextn, "head_type": spec.head_type,
            "head": spec.head, "mismatch": mismatch, "size": size, "vocab": spec.vocab, "embd": spec.embd,
            "trunk_layers": spec.trunk_layers, "ff": spec.ff, "seed": spec.seed,
        },
        "expected": expected or None,
        "note": note,
    })
    return 0
