"""`mtpinspect tiny-model`: write a tiny GGUF whose MTP draft acceptance is chosen in advance, or
(``--trained``) the built-in trained model, its quantized-head and sidecar variants and its checkpoint."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from mtpinspect import trained_model
from mtpinspect.cli._args import format_option
from mtpinspect.cli._output import Output
from mtpinspect.errors import UsageError
from mtpinspect.inspection.support import llama_server_command
from mtpinspect.runtime.command_server import server_for_commands
from mtpinspect.runtime.flags import MODEL
from mtpinspect.runtime.n_max import NMaxAdvice, expected_from_design, rule_of_thumb
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
@click.argument("out", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--trained", is_flag=True,
              help="Write the built-in trained model (the default model of sweep) instead of a constructed one; "
              "with --head-type, --layout sidecar or --checkpoint DIR.")
@click.option("--checkpoint", "checkpoint", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="With --trained: write its Hugging Face folder (config.json, safetensors, tokenizer) to DIR "
              "instead of OUT; the pinned convert_hf_to_gguf.py gives the shipped GGUF back from it, bit for bit.")
@click.option(
    "--acceptance", default="perfect", show_default=True, callback=_acceptance,
    help="perfect, none, or FRACTION in (0,1): the chance a drafted token is accepted (n-max 1); "
    "deeper positions compound as FRACTION^k.",
)
@click.option("--layout", type=click.Choice(LAYOUTS), default="bundled", show_default=True,
              help="sidecar: a trunk-only OUT plus mtp-OUT beside it (pass it with -md); with --trained, made by "
              "the pinned converter's --no-mtp and --mtp (needs the train extra).")
@click.option("--no-nextn", is_flag=True, help="Write no MTP head at all, as `convert_hf_to_gguf.py --no-mtp`.")
@click.option("--head-type", default=None, metavar="TYPE",
              help=f"ggml type of the MTP block's matrices (default F32). Constructed: {', '.join(HEAD_TYPES)}; "
              f"TQ1_0/TQ2_0 erase the head's signal. --trained: {', '.join(trained_model.HEAD_TYPES)}, made by the "
              "pinned llama-quantize from the shipped Q8_0 head.")
@click.option("--zero-head", is_flag=True, help="Zero eh_proj and the head: a damaged MTP head.")
@click.option("--mismatch", type=click.Choice(MISMATCHES), default=None,
              help="Write the sidecar from another model (implies --layout sidecar).")
@click.option("--size", type=click.Choice(SIZES), default="tiny", show_default=True,
              help="heavy: a ~107 MB model whose trunk dominates decoding on a CPU, so a good head speeds it up.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for the random weights.")
@click.option("--force", is_flag=True,
              help="When OUT (or mtp-OUT) is a symbolic link, write the file it points to (else refused); with "
                   "--checkpoint, replace what a non-empty DIR holds. A device, FIFO or folder is never replaced.")
@format_option(csv="the files written")
@click.pass_context
def command(
    ctx: click.Context, out: Path | None, trained: bool, checkpoint: Path | None, force: bool, acceptance: str | float,
    layout: str, no_nextn: bool, head_type: str | None, zero_head: bool, mismatch: str | None, size: str, seed: int,
    fmt: str,
) -> int:
    """Write OUT, a tiny GGUF (glm4moe, 64-token test vocabulary) with an MTP head whose greedy draft
    acceptance you choose; it loads in llama-server in well under a second. With --trained, write the
    built-in trained model (StarCoder vocabulary, a head trained on code, English and Japanese) instead."""
    if trained:
        return _trained(ctx, out, checkpoint, force, layout, head_type, fmt)
    if checkpoint is not None:
        raise UsageError("--checkpoint: only with --trained (the constructed models have no checkpoint)")
    if out is None:
        raise UsageError("tiny-model: OUT is required (a .gguf path to write)")
    if head_type is not None and head_type.upper() not in HEAD_TYPES:
        raise UsageError(f"--head-type {head_type}: not one of {', '.join(HEAD_TYPES)} for a constructed model")
    spec = spec_for_head_type(
        (head_type or "F32").upper(),
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
    # The design gives the accepted length per n-max, so the figure is the design's; without a head, none.
    advice = expected_from_design({row["n_max"]: row["mean_length"] for row in expected}, str(files[0])) \
        if expected else None
    command = _try_command(files, advice, mtp=spec.nextn)
    sink.text(f"try: {command}" + (f"\n{advice.said}" if advice else ""))
    _say_server(sink, command)
    sink.document({
        "files": file_rows,
        "spec": {
            "acceptance": spec.acceptance, "layout": spec.layout, "nextn": spec.nextn, "head_type": spec.head_type,
            "head": spec.head, "mismatch": mismatch, "size": size, "vocab": spec.vocab, "embd": spec.embd,
            "trunk_layers": spec.trunk_layers, "ff": spec.ff, "seed": spec.seed,
        },
        "expected": expected or None,
        "note": note,
        "n_max": advice,
        "command": command,
    })
    return 0


# Options of the constructed models that say nothing about the trained one.
_CONSTRUCTED_ONLY = ("acceptance", "no_nextn", "zero_head", "mismatch", "size", "seed")


def _trained(ctx: click.Context, out: Path | None, checkpoint: Path | None, force: bool, layout: str,
             head_type: str | None, fmt: str) -> int:
    given = [name for name in _CONSTRUCTED_ONLY
             if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
    if given:
        raise UsageError(f"--{given[0].replace('_', '-')}: not with --trained (its head learned what it drafts)")
    if checkpoint is not None:
        if out is not None or head_type is not None or layout != "bundled":
            raise UsageError("--checkpoint DIR: writes the Hugging Face folder alone (no OUT, --head-type or --layout)")
        written = trained_model.write_checkpoint(checkpoint, force=force)
    elif out is None:
        raise UsageError("tiny-model --trained: OUT is required (a .gguf path), or --checkpoint DIR")
    elif layout == "sidecar":
        if head_type is not None:
            raise UsageError("--head-type: not with --layout sidecar (quantize the sidecar's blocks with llama-quantize)")
        written = trained_model.write_sidecar(out, force=force)
    else:
        written = trained_model.write_gguf(out, head_type=head_type, force=force)
    rows = [{"file": str(w.path), "role": w.role, "bytes": _size(w.path)} for w in written]
    sink = Output(fmt)
    sink.table(rows, ["file", "role", "bytes"], title="Files written", primary=True)
    if checkpoint is not None:
        sink.text(f"\nconvert: python convert_hf_to_gguf.py {checkpoint} --outtype {trained_model.OUTTYPE} "
                  "(the pinned llama.cpp's; `mtpinspect check` reads the folder as it is)")
        advice = command = None
    else:
        # Its head learned what it drafts: nothing gives its lengths in advance, so the figure is the rule of thumb.
        advice = rule_of_thumb(str(written[0].path))
        command = _try_command([w.path for w in written], advice)
        sink.text(f"\ntry: {command}\n{advice.said}")
        _say_server(sink, command)
    sink.document({"files": rows, "trained": True, "layout": layout, "head_type": (head_type or "Q8_0").upper(),
                   "checkpoint": str(checkpoint) if checkpoint else None, "n_max": advice, "command": command})
    return 0


def _try_command(files: list[Path], advice: NMaxAdvice | None, *, mtp: bool = True) -> str:
    """The llama-server line that runs the written model with its head (a head the design expects nothing from
    still drafts at n-max 1, to be seen failing); the llama-server named is the one mtpinspect would run."""
    program = server_for_commands().program
    sidecar = str(files[1]) if len(files) > 1 else None
    if not mtp:
        return shlex.join([program, *MODEL.spelled(str(files[0]))])
    n_max = advice.n_max if advice is not None and advice.n_max is not None else 1
    return llama_server_command(str(files[0]), program=program, sidecar=sidecar, n_max=n_max)


def _say_server(sink: Output, command: str) -> None:
    server = server_for_commands()
    if server.note and server.names(command):
        sink.text(f"note: {server.note}")


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
