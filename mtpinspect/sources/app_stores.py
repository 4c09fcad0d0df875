"""SOURCEs that name a model the way a desktop app does: ``ollama:NAME`` (the local Ollama store) and
``lmstudio:PUBLISHER/REPO[:QUANT]`` (LM Studio's models folder).

An Ollama model resolves to its GGUF blob and its DRAFT blob (as the sidecar) with the Modelfile
parameters; an LM Studio repo resolves to its folder, which is then read like any folder of GGUFs (the
same main-file and sidecar choice). Either way the Target carries an :class:`AppModel`: the model in
the app's own terms, for the app's verdict, the sweep's setting and diagnose's run settings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpinspect.errors import MtpinspectError, SourceError, UsageError
from mtpinspect.jsonable import json_field
from mtpinspect.sources import lmstudio
from mtpinspect.sources.local import LocalTree
from mtpinspect.sources.ollama import NotGguf, OllamaModel, OllamaName, OllamaStore
from mtpinspect.vocabulary import App, SourceKind

if TYPE_CHECKING:
    from mtpinspect.sources.resolve import Target

OLLAMA_PREFIX = "ollama:"
LM_STUDIO_PREFIX = "lmstudio:"


@dataclass(frozen=True)
class AppModel:
    """A model as a desktop app keeps it: its name there, where it lies, what the app stored with it."""

    app: App
    name: str  # as the app shows it: qwen3.6:27b-mtp, or PUBLISHER/REPO
    location: str  # the Ollama manifest, or the LM Studio repo folder
    model_file: str  # the GGUF the app loads
    draft_file: str | None = None  # Ollama: the DRAFT layer's GGUF blob
    parameters: dict[str, Any] = field(default_factory=dict)  # Ollama: the Modelfile's PARAMETERs (params layer)
    draft_num_predict: int | None = None  # Ollama: the Modelfile's draft_num_predict; None when not set
    digests: str | None = None  # Ollama: what was checked against the manifest
    notes: tuple[str, ...] = json_field(omit=True, default=())  # the report's notes carry them

    @property
    def tag(self) -> str | None:
        return self.name.rsplit(":", 1)[1] if self.app is App.ollama and ":" in self.name else None


def is_app_source(source: str) -> bool:
    return source.startswith((OLLAMA_PREFIX, LM_STUDIO_PREFIX))


@dataclass(frozen=True)
class AppLocation:
    """Where an app SOURCE points: a resolved Ollama target, or an LM Studio folder still to be read."""

    target: Target | None = None
    folder: Path | None = None
    quant: str | None = None
    repo: str | None = None

    def relabel(self, target: Target) -> Target:
        """An LM Studio folder's target, named as LM Studio names it."""
        assert self.repo is not None and self.folder is not None
        model = AppModel(App.lm_studio, self.repo, str(self.folder), target.file_ref(target.gguf_files[0])) \
            if target.gguf_files else None
        return dataclasses.replace(target, kind=SourceKind.lm_studio, display=f"{LM_STUDIO_PREFIX}{self.repo}",
                                   repo_id=self.repo, app=model)


def locate(
    source: str, *, revision: str | None, file: str | None, mtp_file: str | None, verify_digest: bool
) -> AppLocation | None:
    """None when ``source`` names no app's model."""
    if not is_app_source(source):
        return None
    if revision:
        raise UsageError(f"{source}: --revision applies to Hub repos and Hugging Face cache folders")
    if mtp_file:
        raise UsageError(f"{source}: --mtp-file applies to GGUF files and folders (an Ollama model's drafter is its "
                         "DRAFT layer; LM Studio's folder is searched for an mtp- file)")
    if source.startswith(OLLAMA_PREFIX):
        if file:
            raise UsageError(f"{source}: --file picks a GGUF in a folder; an Ollama model has one model layer")
        name = OllamaName.parse(_required(source, OLLAMA_PREFIX))
        return AppLocation(target=ollama_target(OllamaStore().model(name, verify_digest=verify_digest)))
    repo, quant = lmstudio.parse(_required(source, LM_STUDIO_PREFIX))
    return AppLocation(folder=lmstudio.repo_folder(repo), quant=quant, repo=repo)


def _required(source: str, prefix: str) -> str:
    rest = source[len(prefix):]
    if not rest:
        what = "MODEL[:TAG]" if prefix == OLLAMA_PREFIX else "PUBLISHER/REPO[:QUANT]"
        raise UsageError(f"{source}: name the model ({prefix}{what}); --all checks every model there")
    return rest


def ollama_target(model: OllamaModel) -> Target:
    from mtpinspect.sources.resolve import Target

    app = AppModel(App.ollama, model.name.shown, str(model.manifest), str(model.model),
                   str(model.draft) if model.draft else None, dict(model.parameters), model.draft_num_predict,
                   model.digests)
    # The tree is the blobs the model names: the GGUF and its drafter, which no file name pairs.
    tree = LocalTree(root=model.model.parent, name=str(model.manifest), files={})
    gguf = tree.add(model.model)
    sidecar = [tree.add(model.draft)] if model.draft else []
    return Target(tree, SourceKind.ollama, f"{OLLAMA_PREFIX}{model.name.shown}", None, gguf_files=[gguf],
                  sidecar_files=sidecar, app=app)


def each_app_target(source: str, *, revision: str | None, verify_digest: bool) -> list[Target]:
    """--all: every Ollama model (``ollama:`` or the tags of ``ollama:MODEL``), every GGUF of an LM Studio repo
    (``lmstudio:PUBLISHER/REPO``) or of every repo (``lmstudio:``)."""
    from mtpinspect.sources.resolve import Target, resolve_each_gguf

    if revision:
        raise UsageError(f"{source}: --revision applies to Hub repos and Hugging Face cache folders")
    if source.startswith(OLLAMA_PREFIX):
        rest = source[len(OLLAMA_PREFIX):]
        if ":" in rest.rsplit("/", 1)[-1]:
            raise UsageError(f"{source}: --all checks every tag; give ollama:MODEL or ollama: (the whole store)")
        store = OllamaStore()
        names = store.names(OllamaName.parse(rest) if rest else None)
        if not names:
            raise SourceError(f"{source}: no model {rest} in the Ollama store {store.root}" if rest else
                              f"{source}: the Ollama store {store.root} has no models")
        targets, skipped = [], []
        for name in names:
            try:
                targets.append(ollama_target(store.model(name, verify_digest=verify_digest)))
            except NotGguf as exc:
                skipped.append(str(exc))
            except MtpinspectError as exc:  # a damaged model is its row, as a damaged file is in a folder
                manifest = store.manifests.joinpath(*name.parts)
                targets.append(Target(LocalTree(root=store.root, name=str(manifest), files={}), SourceKind.ollama,
                                      f"{OLLAMA_PREFIX}{name.shown}", None, gguf_files=[str(manifest)],
                                      unreadable=str(exc)))
        if not targets:
            raise SourceError(f"{source}: no GGUF model in the Ollama store {store.root} ({skipped[0]})")
        readable = [i for i, t in enumerate(targets) if t.app is not None]
        if skipped and readable:
            first = targets[readable[0]]
            assert first.app is not None
            targets[readable[0]] = dataclasses.replace(first, app=dataclasses.replace(
                first.app, notes=(*first.app.notes, *(f"not checked: {s}" for s in skipped))))
        return targets
    rest = source[len(LM_STUDIO_PREFIX):]
    if rest:
        repo, quant = lmstudio.parse(rest)
        if quant:
            raise UsageError(f"{source}: --all checks every quantization; give lmstudio:PUBLISHER/REPO")
        folders = [(repo, lmstudio.repo_folder(repo))]
    else:
        folders = lmstudio.all_folders(source)
        if not folders:
            raise SourceError(f"{source}: no GGUF in LM Studio's models folders ({', '.join(map(str, lmstudio.roots()))})")
    return [AppLocation(folder=folder, repo=repo).relabel(t) for repo, folder in folders
            for t in resolve_each_gguf(str(folder))]


@dataclass(frozen=True)
class AppFiles:
    """The files an app runs for a model: what `sweep` and `diagnose` hand to llama-server."""

    model: Path
    sidecar: Path | None  # Ollama's DRAFT blob, or the mtp- file beside an LM Studio GGUF
    app: AppModel


def app_files(source: str) -> AppFiles:
    """The GGUF (and drafter) of an ``ollama:`` or ``lmstudio:`` SOURCE."""
    from mtpinspect.sources.resolve import resolve

    target = resolve(source)
    if not target.gguf_files or target.app is None:
        raise SourceError(f"{source}: no GGUF model there to run")
    sidecar = Path(target.file_ref(target.sidecar_files[0])) if target.sidecar_files else None
    return AppFiles(Path(target.file_ref(target.gguf_files[0])), sidecar, target.app)
