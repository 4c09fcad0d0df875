"""Ollama's and LM Studio's verdicts on a model, in their own terms (the facts and their sources:
mtpinspect/app_facts.py; the sentences: mtpinspect/apps.py).

Both apps run GGUF models with llama.cpp's llama-server, so their verdict starts from llama.cpp's: a
head llama.cpp drafts with is one the app drafts with, once the app's own setting asks for it.

- Ollama: a GGUF with a head drafts when ``draft_num_predict`` is above 0, from the Modelfile, a request's
  ``options`` or ``/set parameter``; unset everywhere, it decodes without speculation (OLLAMA_MTP_OFF,
  status ``off``). A separate drafter (an mtp- file, a Gemma 4 assistant, a DFlash drafter) is the
  Modelfile's ``DRAFT`` layer, run as draft-mtp or draft-dflash; with one, draft_num_predict defaults to 4.
  A safetensors model of its MLX engine drafts by itself when the checkpoint ships a head (read from its
  safetensors). Before 0.30.0 no GGUF drafts. For any other GGUF the verdict gives the Modelfile that runs it.
- LM Studio: "Draft MTP" on, "Max Draft Tokens" N, for GGUFs that carry the head (0.4.14 with engine
  2.15.0 or later). A head kept in a separate mtp- file, or a Gemma 4 assistant drafter, is not usable in
  its released versions (bug-tracker threads in app_facts), with what works instead.

The n-max they are told is the one a sweep of this very GGUF recommends (``check --sweep-report``), else
the rule of thumb of the llama.cpp commands (runtime/n_max.py words both).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from mtpinspect.app_facts import (
    DRAFT_NUM_PREDICT,
    LM_STUDIO_ASSISTANT_THREADS,
    LM_STUDIO_SIDECAR_THREAD,
    LM_STUDIO_SWITCH,
    OLLAMA_BACKEND_SAMPLING_FLAG,
    OLLAMA_DRAFT_MEDIA,
    OLLAMA_DRAFT_MTP,
    OLLAMA_DRAFTER_DEFAULT_N_MAX,
    OLLAMA_LLAMA_SERVER_FROM,
    OLLAMA_MLX_DRAFT_PREFIX,
)
from mtpinspect.apps import (
    APP_NAMES,
    LM_STUDIO_FORMER,
    OLLAMA_REQUEST_WAYS,
    app_setting,
    lm_studio_engine_said,
    lm_studio_engine_too_old,
    ollama_create_command,
    ollama_draft_type,
    ollama_modelfile,
    ollama_n_max,
    ollama_parameter,
    ollama_runs_mtp,
    ollama_version_said,
)
from mtpinspect.errors import UsageError
from mtpinspect.inspection.builder import ReportBuilder, trunk_beside
from mtpinspect.inspection.evidence import Evidence
from mtpinspect.inspection.report import RuntimeVerdict
from mtpinspect.runtime.n_max import NMaxAdvice, measured, rule_of_thumb
from mtpinspect.sources.filenames import names_mtp, quant_tag
from mtpinspect.sources.target import AppModel
from mtpinspect.vocabulary import App, AppEngine, Layout, RuntimeStatus, Severity, SourceKind

if TYPE_CHECKING:
    from mtpinspect.sweep.report import SavedRecommendation


def advice(ev: Evidence) -> NMaxAdvice:
    """The measured n-max of a sweep of this GGUF (--sweep-report) wins over the rule of thumb."""
    saved = ev.sweep
    if saved is None:
        return rule_of_thumb(_sweepable(ev), then="give its report.json with --sweep-report")
    return measured(saved.n_max, f"the sweep in {saved.path}", saved.reason)


def _sweepable(ev: Evidence) -> str:
    """The model as `mtpinspect sweep` takes it: a local GGUF's path, an app's name, else a Hub GGUF to download."""
    t, g = ev.target, ev.gguf
    if t.kind is SourceKind.hub or g is None:
        return "MODEL.gguf"
    return t.display if t.app is not None else t.file_ref(g.files[0])


def sweep_of(ev: Evidence, path: str | Path) -> SavedRecommendation:
    """The recommendation of a sweep report, once it is shown to be a sweep of this GGUF (the same file, or a
    file of the same name); UsageError otherwise."""
    from mtpinspect.sweep.report import read_recommendation  # the sweep's modules only when a report is given

    saved = read_recommendation(path)
    if ev.gguf is None:
        raise UsageError(f"--sweep-report: {ev.target.display} is not a GGUF; a sweep measures a GGUF")
    model = ev.target.file_ref(ev.gguf.files[0])
    same = Path(saved.model).name == PurePosixPath(model).name
    if not same and ev.target.kind is not SourceKind.hub:
        same = Path(saved.model).resolve() == Path(model).resolve()
    if not same:
        raise UsageError(f"{path}: a sweep of {saved.model}, not of {model}")
    return saved


def apply_app_rules(ev: Evidence, b: ReportBuilder) -> None:
    """Add the ollama and lm-studio runtimes (and their findings) from the GGUF rules' llama.cpp verdict;
    for an Ollama MLX model, Ollama's verdict from its checkpoint."""
    app = ev.target.app
    if app is not None and app.engine is AppEngine.mlx:
        # The other engines' commands would name the store's blobs: they run the checkpoint it was made from.
        for name, verdict in b.runtimes.items():
            b.runtimes[name] = dataclasses.replace(verdict, command=None)
        b.runtimes["ollama"] = _ollama_mlx(b, app)
        b.notes.extend([*app.notes, "the other engines run the checkpoint this model was made from (its folder or "
                        "Hub repo), not the blobs of Ollama's store"])
        return
    if ev.gguf is None:
        return
    n = b.app_n_max = advice(ev)
    llama = b.runtimes.get("llama.cpp")
    if app is not None and app.app is App.ollama:
        b.runtimes["ollama"] = _ollama_model(ev, b, llama, app, n)
    else:
        b.runtimes["ollama"] = _ollama_for_gguf(ev, b, llama, n)
    b.runtimes["lm-studio"] = _lm_studio(ev, b, llama, n, app)
    if app is not None:
        b.notes.extend(app.notes)


def _ollama_mlx(b: ReportBuilder, app: AppModel) -> RuntimeVerdict:
    """Ollama's MLX engine drafts whenever the checkpoint ships a draft head: a separate drafter stored in the
    manifest, or MTP tensors of its own; its depth adapts, draft_num_predict is not read."""
    version = f"Ollama {app.version}" if app.version else "Ollama"
    if app.draft_file is not None:
        return RuntimeVerdict(RuntimeStatus.supported, f"{version} runs this safetensors model on its MLX engine, which "
                              f"drafts with the drafter stored in the manifest ({OLLAMA_MLX_DRAFT_PREFIX}* tensors) by "
                              f"itself, at an adaptive depth ({DRAFT_NUM_PREDICT} is not read)")
    if b.mtp_layers > 0:
        return RuntimeVerdict(RuntimeStatus.supported, f"{version} runs this safetensors model on its MLX engine, which "
                              f"drafts with the checkpoint's MTP head ({b.mtp_layers} layer(s)) by itself, at an "
                              f"adaptive depth ({DRAFT_NUM_PREDICT} is not read)")
    return RuntimeVerdict(RuntimeStatus.unsupported, f"{version} runs this safetensors model on its MLX engine; its "
                          "safetensors hold no MTP head and the manifest no drafter, so it decodes without speculation")


def _drafts(llama: RuntimeVerdict | None) -> bool:
    return llama is not None and llama.status.usable


def _through_llama(app: App, llama: RuntimeVerdict | None) -> RuntimeVerdict:
    why = llama.reason if llama is not None else "no MTP head"
    return RuntimeVerdict(RuntimeStatus.unsupported, f"{APP_NAMES[app]} runs llama.cpp's llama-server; for it: {why}")


def _drafter(ev: Evidence, b: ReportBuilder) -> str | None:
    """The separate drafter a Modelfile names in DRAFT: the mtp- sidecar or the Gemma 4 assistant."""
    if ev.sidecar is None or b.layout not in (Layout.sidecar, Layout.separate_checkpoint):
        return None
    return ev.target.file_ref(ev.sidecar.files[0])


def _from_line(ev: Evidence) -> tuple[str, str]:
    """What a Modelfile's FROM names for this GGUF, and a model name for `ollama create`."""
    g, t = ev.gguf, ev.target
    assert g is not None
    stem = PurePosixPath(g.files[0]).name.rsplit(".", 1)[0].lower()
    if t.kind is SourceKind.hub and t.repo_id:
        quant = t.quant or quant_tag(g.files[0])
        return f"hf.co/{t.repo_id}" + (f":{quant}" if quant else ""), f"{stem}-mtp"
    return t.file_ref(g.files[0]), f"{stem}-mtp"


def _ollama_for_gguf(ev: Evidence, b: ReportBuilder, llama: RuntimeVerdict | None, n: NMaxAdvice) -> RuntimeVerdict:
    """Any GGUF (a file, a Hub repo, LM Studio's folder): the Modelfile that runs its head in Ollama."""
    if not _drafts(llama):
        return _through_llama(App.ollama, llama)
    assert llama is not None
    draft = _drafter(ev, b)
    base = (f"Ollama {OLLAMA_LLAMA_SERVER_FROM} or later drafts with this head once {DRAFT_NUM_PREDICT} is set (in a "
            f"Modelfile, or in {OLLAMA_REQUEST_WAYS})" + (" and a Modelfile names the drafter in DRAFT" if draft else ""))
    if n.n_max is None:
        return RuntimeVerdict(llama.status, f"{base}; the sweep says to leave it off",
                              setting=app_setting(App.ollama, None))
    source, name = _from_line(ev)
    if b.layout is Layout.sidecar and ev.sidecar is None:
        # The source is the mtp- file itself: FROM takes its main GGUF (as the model, it would crash
        # llama-server at load), DRAFT this file; no recipe when the main GGUF is not known.
        trunk = trunk_beside(ev)
        if trunk is None:
            return RuntimeVerdict(llama.status, f"{base} (FROM the main GGUF, DRAFT this file)")
        source, draft = trunk, source
        name = f"{PurePosixPath(trunk).name.rsplit('.', 1)[0].lower()}-mtp"
    hub_draft = draft is not None and ev.target.kind is SourceKind.hub
    if hub_draft:
        assert draft is not None
        draft = f"./{PurePosixPath(draft).name}"
        base += f" (download {draft[2:]} beside the Modelfile first: DRAFT takes a local file)"
    setting = "; ".join(ollama_modelfile(source, n.n_max, draft=draft)[1:])
    return RuntimeVerdict(llama.status, base, ollama_create_command(source, name, n.n_max, draft=draft), setting=setting)


def _ollama_model(
    ev: Evidence, b: ReportBuilder, llama: RuntimeVerdict | None, app: AppModel, n: NMaxAdvice
) -> RuntimeVerdict:
    """A model of the local Ollama store: what Ollama does with it as it is, and the change to make."""
    g = ev.gguf
    assert g is not None
    dnp = app.draft_num_predict
    params = f"{app.location}: params {json.dumps(app.parameters, sort_keys=True)}" if app.parameters else \
        f"{app.location}: no params layer (the Modelfile sets no PARAMETER)"
    key_line = f"{app.model_file}: {g.arch}.nextn_predict_layers = {g.nextn_layers}"
    if not ollama_runs_mtp(app.version):
        return RuntimeVerdict(RuntimeStatus.unsupported, f"Ollama {app.version} (the server running here) runs GGUFs on "
                              f"its own runner, without speculative decoding; {OLLAMA_LLAMA_SERVER_FROM} and later run "
                              "them on llama.cpp's llama-server, which drafts with MTP heads: update Ollama")
    drafter = app.draft_file is not None and ev.sidecar is not None
    spec_type = ollama_draft_type(ev.sidecar.arch if drafter and ev.sidecar else None, app.version) if drafter \
        else OLLAMA_DRAFT_MTP
    if drafter:
        default = f"{DRAFT_NUM_PREDICT} {dnp}" if dnp is not None else \
            f"{DRAFT_NUM_PREDICT} unset: Ollama's default with a draft model, {OLLAMA_DRAFTER_DEFAULT_N_MAX}"
        b.add("OLLAMA_DRAFT_LAYER", f"the manifest has a DRAFT layer, {PurePosixPath(app.draft_file or '').name}: Ollama "
              f"passes it as --spec-draft-model with --spec-type {spec_type} ({default})",
              [f"{app.location}: layer {OLLAMA_DRAFT_MEDIA} -> {app.draft_file}",
               *([f"{app.draft_file}: general.architecture = {ev.sidecar.arch}"] if ev.sidecar else []), params])
    if not _drafts(llama):
        says = names_mtp(app.name)
        if not b.mtp_layers and not drafter and (says or (dnp or 0) > 0):
            what = f"the tag is named {app.name}" if says else f"its Modelfile sets {DRAFT_NUM_PREDICT} {dnp}"
            message = (f"{what}, but its GGUF has no MTP head and its manifest no DRAFT layer: Ollama decodes without "
                       "speculation")
            b.add("OLLAMA_TAG_WITHOUT_HEAD", message, [key_line, params])
            return RuntimeVerdict(RuntimeStatus.unsupported, message)
        return _through_llama(App.ollama, llama)
    assert llama is not None
    effective = ollama_n_max(app)
    if effective <= 0:
        return _ollama_off(b, app, dnp, n, [key_line, params])
    given = f"its Modelfile sets {DRAFT_NUM_PREDICT} {dnp}" if dnp is not None else \
        f"{DRAFT_NUM_PREDICT} is unset and a DRAFT layer makes Ollama's default {OLLAMA_DRAFTER_DEFAULT_N_MAX}"
    sampling = f" {OLLAMA_BACKEND_SAMPLING_FLAG}" if spec_type == OLLAMA_DRAFT_MTP else ""
    reason = (f"{given}: {ollama_version_said(app)} starts llama-server with --spec-type {spec_type} --spec-draft-n-max "
              f"{effective}{sampling}" + (" and the DRAFT layer as --spec-draft-model" if drafter else ""))
    if not n.measured or n.n_max == effective:
        return RuntimeVerdict(llama.status, reason, setting=ollama_parameter(effective))
    change = n.n_max if n.n_max is not None else 0
    return RuntimeVerdict(llama.status, f"{reason}; the sweep recommends {app_setting(App.ollama, n.n_max)}",
                          ollama_create_command(app.name, app.name, change), setting=ollama_parameter(change))


def _ollama_off(b: ReportBuilder, app: AppModel, dnp: int | None, n: NMaxAdvice, evidence: list[str]) -> RuntimeVerdict:
    if dnp == 0:
        message = (f"the model carries an MTP head but its Modelfile sets {DRAFT_NUM_PREDICT} 0: Ollama decodes without "
                   f"speculation unless {OLLAMA_REQUEST_WAYS} sets it above 0")
    else:
        message = (f"the model carries an MTP head but its Modelfile sets no {DRAFT_NUM_PREDICT}: Ollama decodes "
                   f"without speculation unless {OLLAMA_REQUEST_WAYS} sets it")
    if n.n_max is None:
        b.add("OLLAMA_MTP_OFF", f"{message}, as the sweep recommends", [*evidence, n.why], severity=Severity.info)
        return RuntimeVerdict(RuntimeStatus.off, f"{message}, as the sweep recommends",
                              setting=app_setting(App.ollama, None))
    fix = (f"a Modelfile `FROM {app.name}` + `{ollama_parameter(n.n_max)}`, then `ollama create {app.name}` (for one "
           f"session: `/set parameter {DRAFT_NUM_PREDICT} {n.n_max}` in `ollama run`)")
    b.add("OLLAMA_MTP_OFF", f"{message}; to switch it on for every request: {fix}", evidence)
    return RuntimeVerdict(RuntimeStatus.off, f"{message}; set {ollama_parameter(n.n_max)}",
                          ollama_create_command(app.name, app.name, n.n_max), setting=ollama_parameter(n.n_max))


def _lm_studio(ev: Evidence, b: ReportBuilder, llama: RuntimeVerdict | None, n: NMaxAdvice,
               app: AppModel | None) -> RuntimeVerdict:
    if not _drafts(llama):
        return _through_llama(App.lm_studio, llama)
    assert llama is not None
    versions = lm_studio_engine_said(app)
    if lm_studio_engine_too_old(app):
        return RuntimeVerdict(RuntimeStatus.unsupported, f"MTP needs {versions}")
    if b.layout is Layout.separate_checkpoint and ev.sidecar is not None:
        drafter = PurePosixPath(ev.sidecar.files[0]).name
        return RuntimeVerdict(RuntimeStatus.unsupported, f"a Gemma 4 assistant drafter ({drafter}) is not supported in "
                              f"released LM Studio versions: it is not offered as a draft model, or loads without "
                              f"draft-mtp and crashes (\"Gemma4Assistant requires ctx_other\"; {', '.join(LM_STUDIO_ASSISTANT_THREADS)}); "
                              f"what works instead: llama.cpp's llama-server with it as -md and --spec-type draft-mtp (the "
                              f"llama.cpp command), or Ollama with it as a Modelfile DRAFT layer (the ollama command)",
                              llama.command)
    if b.layout is Layout.sidecar:
        return RuntimeVerdict(RuntimeStatus.unsupported, f"the head is a separate mtp- file, which released LM Studio "
                              f"versions do not load as an MTP drafter ({LM_STUDIO_SIDECAR_THREAD}, 0.4.20+1; an "
                              f"\"MTP Sidecar\" setting is arriving in its SDK): use a GGUF that bundles the head, "
                              "llama-server with -md, or Ollama with the file as a DRAFT layer", llama.command)
    return RuntimeVerdict(llama.status, f"{versions} drafts with the head when \"{LM_STUDIO_SWITCH}\" is on (at load time, "
                          f"or in the sidebar's Advanced Configuration; {LM_STUDIO_FORMER})",
                          setting=app_setting(App.lm_studio, n.n_max))
