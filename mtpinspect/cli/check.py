"""`mtpinspect check SOURCE`: will this model's MTP head work? Reads headers only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mtpinspect.apps import APP_NAMES
from mtpinspect.cli._args import codes_option, format_option, hub_options
from mtpinspect.cli._output import Output, OutputFormat
from mtpinspect.errors import SourceError
from mtpinspect.inspection.engine import DEFAULT_CONTEXT
from mtpinspect.inspection.report import FINDINGS, CheckFailure, CheckReport, Verified
from mtpinspect.runtime.n_max import RULE_OF_THUMB_N_MAX
from mtpinspect.sources.policy import FetchPolicy
from mtpinspect.vocabulary import PARTIAL, UNDECLARED, App, AppEngine, OriginKind, RuntimeStatus

APP_RUNTIMES = tuple(app.value for app in App)

if TYPE_CHECKING:
    from mtpinspect.inspection.origin import Origin
    from mtpinspect.runtime.verify import Allocation, MemoryEstimate


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _requests_text(report: CheckReport) -> str:
    """'4 request(s) in 3 wave(s)': the round trips a Hub check waited for, and what the header cache gave."""
    text = f"{report.requests} request(s)" + (f" in {report.waves} wave(s)" if report.waves else "")
    return text + (f"; {_size(report.bytes_cached)} from the header cache" if report.bytes_cached else "")


def _quant_text(report: CheckReport) -> str:
    q = report.quantization
    if not q.method:
        if q.gguf_file_type:
            head = ", ".join(f"{t} x{n}" for t, n in report.mtp_types.items())
            return f"GGUF {q.gguf_file_type} (general.file_type)" + (f"; MTP tensors {head}" if head else "")
        return "none"
    excluded = {True: "head excluded", False: "head quantized", PARTIAL: "head partly excluded",
                UNDECLARED: "head BF16, not excluded", None: "n/a"}[q.mtp_excluded]
    algo = f"/{q.algo}" if q.algo else ""
    return f"{q.method}{algo}, {q.excluded_count} exclusions ({q.exclusion_key or '-'}), {excluded}"


def _origin_text(origin: Origin) -> str:
    if origin.kind is OriginKind.unknown:
        return "unknown: " + "; ".join(origin.missing)
    return f"{origin.kind}" + (f": {origin.who}" if origin.who else "") + f" (decided by the {origin.decided_by})"


def _verified_text(report: CheckReport) -> str:
    v = report.runtimes["llama.cpp"].verified
    if v is None:
        return "not asked: the rules alone decide" + (" (see the note below)" if report.notes else "")
    return f"{v.by}: starts it with draft-mtp" if v.ok else f"{v.by}: refuses it (LLAMA_CPP_REFUSED below)"


def _verified_word(verified: Verified | None) -> str:
    return "-" if verified is None else ("yes" if verified.ok else "refused")


def _parts(a: Allocation) -> str:
    return f"weights {_size(a.weights)}, KV {_size(a.kv)}, compute {_size(a.compute)}"


def _memory_rows(memory: MemoryEstimate | None) -> list[dict[str, str]]:
    """'memory at -c N' and 'MTP adds X at -c N', from llama.cpp's own allocations."""
    if memory is None:
        return []
    at = f"-c {memory.context}"
    without = (f"{_size(memory.without_mtp_bytes)} without MTP ({_parts(memory.without_mtp)}, "
               f"process {_size(memory.process)})")
    if memory.mtp is None:
        return [{"item": f"memory at {at}", "value": f"{without}; llama.cpp refused the MTP draft context"}]
    return [
        {"item": f"memory at {at}", "value": f"{_size(memory.total_bytes)} with MTP; {without}"},
        {"item": "MTP adds", "value": f"{_size(memory.mtp_bytes)} at {at} ({_parts(memory.mtp)}, "
                                      f"process {_size(memory.mtp_host)})"},
    ]


def _app_rows(report: CheckReport) -> list[dict[str, object]]:
    """Where an Ollama or LM Studio model lies and what the app stored with it."""
    app = report.app
    if app is None:
        return []
    if app.app is App.lm_studio:
        return [{"item": "name", "value": app.name}, {"item": "folder", "value": app.location},
                {"item": "model file", "value": app.model_file}]
    params = ", ".join(f"{k} {json.dumps(v)}" for k, v in sorted(app.parameters.items())) or "none (no params layer)"
    return [
        {"item": "name", "value": app.name},
        {"item": "manifest", "value": app.location},
        {"item": "model blob", "value": app.model_file},
        {"item": "draft blob", "value": app.draft_file},
        {"item": "parameters", "value": params},
        {"item": "blobs", "value": app.digests},
    ]


def _render_apps(report: CheckReport, out: Output) -> None:
    """The settings that run MTP in Ollama and LM Studio, and where their n-max comes from."""
    rows = [{"app": name, "setting": rv.setting} for name, rv in report.runtimes.items()
            if rv.setting and name in APP_RUNTIMES]
    if not rows:
        return
    out.table(rows, ["app", "setting"], title="In Ollama and LM Studio")
    advice = report.app_n_max
    if advice is not None:
        out.text(advice.said)


def render(report: CheckReport, out: Output) -> None:
    out.lead(report.verdict)
    rev = f" @ {report.revision}" if report.revision else ""
    out.text(f"source: {report.source}{rev} ({report.source_kind}); read {_size(report.bytes_read)} of "
             f"{_size(report.bytes_total)} in {_requests_text(report)}")
    size = report.mtp_size
    share = f" ({size.share_of_download:.2%} of the download)" if size.share_of_download is not None else ""
    declared = f"{report.mtp_layers_declared} by {report.declared_by}" if report.declared_by else "no key"
    out.table(
        [
            {"item": "MTP layers with weights", "value": report.mtp_layers},
            {"item": "declared", "value": declared},
            {"item": "layout", "value": report.layout},
            {"item": "architecture", "value": report.architecture.get("gguf_architecture") or report.architecture.get("model_type")},
            {"item": "quantization", "value": _quant_text(report)},
            *([{"item": "made by", "value": _origin_text(report.origin)}] if report.origin else []),
            {"item": "MTP size", "value": f"{_size(size.bytes)}, {size.parameters or 0:,} parameters{share}"},
            *([{"item": "llama.cpp itself", "value": _verified_text(report)}] if report.files.get("gguf") else []),
            *_memory_rows(report.memory),
        ],
        ["item", "value"],
        title="Summary",
    )
    if report.app is not None:
        out.table(_app_rows(report), ["item", "value"], title=f"{APP_NAMES[report.app.app]} model")
    if out.format is OutputFormat.csv:
        out.table(
            [{"severity": f.severity, "code": f.code, "message": f.message, "evidence": "\n".join(f.evidence)} for f in report.findings],
            ["severity", "code", "message", "evidence"],
            primary=True,
        )
    else:
        out.records([(f"{f.severity} {f.code}", f.message, f.evidence) for f in report.findings], title="Findings",
                    headers=("finding", "message", "evidence"))
    # Only llama.cpp verifies, and only GGUFs: a checkpoint's table has no column of dashes.
    columns = ["runtime", "status", *(["verified"] if report.files.get("gguf") else []), "reason"]
    out.table(
        [{"runtime": name, "status": rv.status, "verified": _verified_word(rv.verified), "reason": rv.reason}
         for name, rv in report.runtimes.items()],
        columns,
        title="Runtimes",
    )
    _render_apps(report, out)
    commands = [(name, rv.command) for name, rv in report.runtimes.items() if rv.command and rv.status.usable]
    if commands:
        out.heading("Commands")
        for name, cmd in commands:
            out.text(f"# {name}\n{cmd}")
    for note in report.notes:
        out.text(f"note: {note}")
    out.document(report)


def render_all(results: list[CheckReport | CheckFailure], out: Output) -> None:
    """One row per GGUF model of a repo, a folder or an app's store: which keep a usable head (and which
    cannot be read)."""
    first = results[0]
    app = next((r.app.app for r in results if isinstance(r, CheckReport) and r.app is not None), None)
    if app is not None:
        out.text(f"{APP_NAMES[app]}: {len(results)} model(s)")
    else:
        out.text(f"{first.source}: {len(results)} GGUF model(s)" + (f" @ {first.revision}" if first.revision else ""))
    rows = [_failure_row(r) if isinstance(r, CheckFailure) else {
            "model": r.app.name + (f" ({r.app.engine})" if r.app.engine is AppEngine.mlx else "") if r.app is not None else None,
            "file": _files_text(r.files),
            "layout": r.layout,
            "mtp_layers": r.mtp_layers,
            "mtp_types": ", ".join(f"{t} x{n}" for t, n in r.mtp_types.items()) or "-",
            "llama.cpp": r.runtimes["llama.cpp"].status if "llama.cpp" in r.runtimes else None,
            "verified": _verified_word(r.runtimes["llama.cpp"].verified) if "llama.cpp" in r.runtimes else None,
            "MTP adds": _size(r.memory.mtp_bytes) if r.memory else "-",
            "ollama": r.runtimes["ollama"].status if "ollama" in r.runtimes else None,
            "draft_num_predict": r.app.draft_num_predict if r.app is not None else None,
            "lm-studio": r.runtimes["lm-studio"].status if "lm-studio" in r.runtimes else None,
            "findings": ", ".join(c for c in r.codes() if c != "MTP_PRESENT") or "-",
        }
        for r in results
    ]
    columns = {
        None: ["file", "layout", "mtp_layers", "mtp_types", "llama.cpp", "verified", "MTP adds", "findings"],
        # The app's own columns take the place of the GGUF details (check ollama:NAME shows them).
        App.ollama: ["model", "layout", "mtp_layers", "llama.cpp", "verified", "ollama", "draft_num_predict", "findings"],
        App.lm_studio: ["model", "file", "layout", "mtp_layers", "llama.cpp", "verified", "lm-studio", "findings"],
    }[app]
    out.table(rows, columns, title="GGUF models", primary=True)
    best = [r for r in results if isinstance(r, CheckReport) and "llama.cpp" in r.runtimes
            and r.runtimes["llama.cpp"].status is RuntimeStatus.supported]
    if best and app is None:
        out.heading("Command")
        out.text(best[0].runtimes["llama.cpp"].command or "")
    for note in dict.fromkeys(n for r in results if isinstance(r, CheckReport) and r.app is not None for n in r.notes):
        out.text(f"note: {note}")
    out.document(results)


def _files_text(files: dict[str, list[str]]) -> str:
    """'m-00001-of-00002.gguf (+1 shards) + mtp-m.gguf': the model's files and the sidecar paired with it."""
    gguf, sidecar = files.get("gguf") or files.get("config") or ["-"], files.get("sidecar") or []
    text = gguf[0] + (f" (+{len(gguf) - 1} shards)" if len(gguf) > 1 else "")
    return text + (f" + {sidecar[0]}" if sidecar else "")


def _failure_row(failure: CheckFailure) -> dict[str, object]:
    # The message starts with the file's path, which the row already names.
    name = failure.files["gguf"][0]
    head, sep, rest = failure.error.partition(": ")
    error = rest if sep and head.endswith(name) else failure.error
    return {"model": failure.source, "file": _files_text(failure.files), "layout": "-", "mtp_layers": "-",
            "mtp_types": "-", "llama.cpp": "-", "findings": f"error: {error}"}


def _finding_codes() -> list[dict[str, str]]:
    return [{"code": code, "severity": sev, "meaning": meaning} for code, (meaning, sev) in FINDINGS.items()]


@click.command("check")
@click.argument("source")
@click.option("--revision", help="Branch, tag or commit of a Hub repo (default: main). The resolved commit is always reported.")
@click.option("--file", "file", metavar="NAME.gguf", help="Pick this GGUF in a repo or folder (split GGUFs: the first shard).")
@click.option("--mtp-file", metavar="F", help="The mtp- sidecar GGUF to pair with the main GGUF (default: found beside it).")
@click.option("--token", help="Hugging Face token (default: HF_TOKEN or the saved `hf auth login`).")
@click.option("--all", "all_ggufs", is_flag=True,
              help="Check every GGUF model in the repo, the folder or the app's store (one row each, a model that "
                   "cannot be read with its error; json: a list of reports). Exit 2 only when none can be read.")
@click.option("--verify/--no-verify", default=None,
              help="Ask the pinned llama.cpp itself whether it starts a GGUF with its MTP head (a metadata-only "
                   "load, no weights read; also gives the memory estimate). Default: when its helper is built; "
                   "--verify builds it first (minutes, once).")
@click.option("-c", "--context", type=click.IntRange(min=0), default=DEFAULT_CONTEXT, show_default=True,
              help="Context size (llama-server -c) of the memory estimate; 0: the model's training context.")
@click.option("--sweep-report", type=click.Path(dir_okay=False, path_type=Path), metavar="report.json",
              help="The report of `mtpinspect sweep` on the same GGUF: its recommended n-max goes into the Ollama and "
                   f"LM Studio settings (default: the rule of thumb, n-max {RULE_OF_THUMB_N_MAX}).")
@click.option("--verify-digest", is_flag=True,
              help="ollama: hash every blob against its manifest digest (default: blobs up to 64 MiB; larger ones "
                   "have their size checked, Ollama hashed them when it pulled them).")
@hub_options
@format_option(csv="findings", schema="check")
@codes_option("finding", _finding_codes)
def command(
    source: str, revision: str | None, file: str | None, mtp_file: str | None, token: str | None, all_ggufs: bool,
    verify: bool | None, context: int, sweep_report: Path | None, verify_digest: bool, fmt: str, policy: FetchPolicy,
) -> int:
    """Tell whether SOURCE's MTP head will work, reading only headers (no weight download).

    \b
    SOURCE is one of:
      ORG/NAME              a Hugging Face repo (safetensors checkpoint or GGUF repo)
      ORG/NAME:QUANT        a GGUF in a repo, as llama.cpp's -hf takes it (e.g. :Q4_K_M);
                            --all checks every GGUF of the repo, one row each
      PATH.gguf             a local GGUF (its split shards, and its own mtp- sidecar beside it
                            or in MTP/, are found)
      DIR                   a local snapshot folder, or a Hugging Face cache folder models--ORG--NAME
      ollama:MODEL[:TAG]    a model of the local Ollama store (OLLAMA_MODELS, else ~/.ollama/models,
                            else the Linux service's /usr/share/ollama/.ollama/models; GGUF or MLX),
                            also ollama:NAMESPACE/MODEL:TAG and ollama:hf.co/ORG/REPO:QUANT;
                            ollama: --all checks every model there, ollama:MODEL --all its tags
      lmstudio:PUB/REPO     a GGUF in LM Studio's models folder (its home from ~/.lmstudio-home-pointer,
                            its folder from settings.json downloadsFolder, else <home>/models), :QUANT
                            to pick one; lmstudio: --all: all

    For a GGUF, the pinned llama.cpp (built by `mtpinspect runtime build`) also loads the model's
    metadata as llama-server would with --spec-type draft-mtp: its own verdict decides the llama.cpp
    status, and its allocations give the memory with and without MTP at -c CONTEXT. Runtimes also
    say what Ollama and LM Studio do with the head and the setting that runs it there (a Modelfile's
    PARAMETER draft_num_predict N; "Max Draft Tokens" N).

    Exit status: 0 when MTP is usable in at least one runtime, 1 when not, 2 on error.
    HF_ENDPOINT and HF_TOKEN are honoured, as in huggingface_hub. Every Hub request is bounded by
    --timeout, retried per --retries, and all of them end by --deadline; the reads go out together, in
    three waves (the listing, the files it names, what those need next), and what was read is kept in
    the header cache for the next check of the same revision (--no-cache: not used).
    """
    from mtpinspect.inspection.pipeline import check, check_all

    out = Output(fmt)
    if all_ggufs and (file or mtp_file or sweep_report):
        raise click.UsageError("--all checks every GGUF; it does not combine with --file, --mtp-file or --sweep-report")
    if verify:
        from mtpinspect.runtime.build import build_server  # the build module only when --verify may build
        from mtpinspect.runtime.build_cache import find_helper

        if find_helper() is None:
            from mtpinspect.cli._progress import BuildLines

            out.hint("building the pinned llama.cpp's verify helper (minutes, once)")
            lines = BuildLines(out.errors, prefix="")
            try:
                build_server("cpu", progress=lines)
            finally:
                lines.close()
    if all_ggufs:
        results = check_all(source, revision=revision, token=token, verify=verify, context=context,
                            verify_digest=verify_digest, policy=policy)
        render_all(results, out)
        if getattr(results, "not_judged", 0):
            # JSON and CSV hold the judged models only: their readers get the count on stderr.
            say = out.warning if out.is_machine else out.text
            say(f"{results.not_judged} more GGUF model(s) not judged: the {results.deadline:g} s deadline "
                "passed (raise --deadline or MTPINSPECT_DEADLINE)")
        if all(isinstance(r, CheckFailure) for r in results):
            raise SourceError(f"{source}: none of the {len(results)} GGUF models could be read (each row above says why)")
        return 0 if any(r.usable for r in results) else 1
    report = check(source, revision=revision, token=token, file=file, mtp_file=mtp_file, verify=verify, context=context,
                   sweep_report=sweep_report, verify_digest=verify_digest, policy=policy)
    render(report, out)
    return report.exit_code
