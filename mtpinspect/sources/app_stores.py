"""SOURCEs that name a model the way a desktop app does: ``ollama:NAME`` (the local Ollama store) and
``lmstudio:PUBLISHER/REPO[:QUANT]`` (LM Studio's models folder).

An Ollama model resolves to its GGUF blob and its DRAFT blob (as the sidecar) with the Modelfile
parameters; an LM Studio repo resolves to its folder, which is then read like any folder of GGUFs (the
same main-file and sidecar choice). Either way the Target carries an :class:`AppModel`: the model in
the app's own terms, for the app's verdict, the sweep's setting and diagnose's run settings.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mtpinspect.app_facts import MLX_DRAFT_CONFIG, OLLAMA_MLX_DRAFT_PREFIX
from mtpinspect.errors import MtpinspectError, SourceError, UsageError
from mtpinspect.sources.filenames import LM_STUDIO_PREFIX, OLLAMA_PREFIX, is_app_source
from mtpinspect.sources.local import LocalTree
from mtpinspect.sources.reader import ByteMeter, LocalFileReader, RepoFile
from mtpinspect.sources.target import AppModel, Target
from mtpinspect.vocabulary import App, AppEngine, SourceKind

if TYPE_CHECKING:
    from mtpinspect.sources.ollama import OllamaModel

__all__ = ["AppLocation", "AppModel", "each_app_target", "is_app_source", "locate", "ollama_target"]



@dataclass(frozen=True)
class AppLocation:
    """Where an app SOURCE points: a resolved Ollama target, or an LM Studio folder still to be read."""

    target: Target | None = None
    folder: Path | None = None
    quant: str | None = None
    repo: str | None = None

    def relabel(self, target: Target) -> Target:
        """An LM Studio folder's target, named as LM Studio names it."""
        from mtpinspect.sources import lmstudio

        assert self.repo is not None and self.folder is not None
        engines = lmstudio.engine_versions(lmstudio.place().home)
        model = AppModel(App.lm_studio, self.repo, str(self.folder), target.file_ref(target.gguf_files[0]),
                         version=engines[-1] if engines else None) if target.gguf_files else None
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
        # The Ollama store's reader loads for ollama: sources only (every check passes here).
        from mtpinspect.sources.ollama import OllamaName, OllamaStore, server_version

        name = OllamaName.parse(_required(source, OLLAMA_PREFIX))
        model = OllamaStore().model(name, verify_digest=verify_digest)
        return AppLocation(target=ollama_target(model, server_version()))
    # LM Studio's reader, like the Ollama store's, loads for its own sources only.
    from mtpinspect.sources import lmstudio

    repo, quant = lmstudio.parse(_required(source, LM_STUDIO_PREFIX))
    return AppLocation(folder=lmstudio.repo_folder(repo), quant=quant, repo=repo)


def _required(source: str, prefix: str) -> str:
    rest = source[len(prefix):]
    if not rest:
        what = "MODEL[:TAG]" if prefix == OLLAMA_PREFIX else "PUBLISHER/REPO[:QUANT]"
        raise UsageError(f"{source}: name the model ({prefix}{what}); --all checks every model there")
    return rest


def ollama_target(model: OllamaModel, version: str | None = None) -> Target:
    """The target of an Ollama model: its GGUF blob and DRAFT blob, or an MLX model's safetensors blobs."""
    engine = AppEngine.mlx if model.model is None else AppEngine.llama_server
    json_files = model.json_files or {}
    main = model.model if model.model is not None else json_files.get("config.json", model.manifest)
    # An MLX model's drafter is stored in its manifest: draft/config.json and draft.* tensors.
    draft = model.draft if model.model is not None else json_files.get(MLX_DRAFT_CONFIG)
    app = AppModel(App.ollama, model.name.shown, str(model.manifest), str(main), str(draft) if draft else None, dict(model.parameters), model.draft_num_predict,
                   model.digests, engine, version, model.notes)
    display = f"{OLLAMA_PREFIX}{model.name.shown}"
    if model.model is None:
        return Target(_mlx_tree(model), SourceKind.ollama, display, None, app=app)
    # The tree is the blobs the model names: the GGUF and its drafter, which no file name pairs.
    tree = LocalTree(root=model.model.parent, name=str(model.manifest), files={})
    gguf = tree.add(model.model)
    sidecar = [tree.add(model.draft)] if model.draft else []
    return Target(tree, SourceKind.ollama, display, None, gguf_files=[gguf], sidecar_files=sidecar, app=app)


@dataclass
class _BlobTree(LocalTree):
    """An Ollama MLX model seen as the checkpoint folder it was made from: config.json and the other JSON
    files under their names, each tensor blob as a safetensors shard, and the shard index made from the
    manifest's tensor names (held in memory: Ollama keeps no index file)."""

    blobs: dict[str, Path] = field(default_factory=dict)
    index: bytes = b""

    def path(self, rel: str) -> Path:
        return self.blobs.get(rel) or super().path(rel)

    def open(self, rel: str) -> LocalFileReader | _BytesReader:  # type: ignore[override]
        if rel == INDEX_NAME:
            return _BytesReader(f"{self.name} (its tensor layers)", self.index, self.meter)
        return super().open(rel)


class _BytesReader:
    """A RangeReader on bytes held in memory."""

    def __init__(self, name: str, data: bytes, meter: ByteMeter) -> None:
        self.name, self.data, self.meter = name, data, meter

    @property
    def size(self) -> int:
        return len(self.data)

    def read_at(self, offset: int, length: int) -> bytes:
        return self.data[offset:offset + length]


INDEX_NAME = "model.safetensors.index.json"


def _mlx_tree(model: OllamaModel) -> _BlobTree:
    """The checkpoint of an MLX model; a drafter stored beside it (draft.* tensors) is left out of the
    trunk's index: it is the drafter, said so in the app's verdict."""
    tensors = model.tensors or {}
    weight_map = {name: f"{path.name}.safetensors" for name, path in tensors.items()
                  if not name.startswith(OLLAMA_MLX_DRAFT_PREFIX)}
    blobs = {f"{path.name}.safetensors": path for path in tensors.values()}
    blobs.update((name, path) for name, path in (model.json_files or {}).items() if "/" not in name)
    index = json.dumps({"metadata": {}, "weight_map": weight_map}).encode()
    files = {rel: RepoFile(rel, path.stat().st_size) for rel, path in blobs.items()}
    files[INDEX_NAME] = RepoFile(INDEX_NAME, len(index))
    return _BlobTree(root=model.manifest.parent, name=str(model.manifest), files=files, blobs=blobs, index=index)


def each_app_target(source: str, *, revision: str | None, verify_digest: bool) -> list[Target | AppLocation]:
    """--all: every Ollama model (``ollama:`` or the tags of ``ollama:MODEL``) as its target; the folder of an
    LM Studio repo (``lmstudio:PUBLISHER/REPO``) or of every repo (``lmstudio:``), whose GGUFs resolve.py lists."""
    if revision:
        raise UsageError(f"{source}: --revision applies to Hub repos and Hugging Face cache folders")
    if source.startswith(OLLAMA_PREFIX):
        from mtpinspect.sources.ollama import NotGguf, OllamaName, OllamaStore, server_version

        rest = source[len(OLLAMA_PREFIX):]
        if ":" in rest.rsplit("/", 1)[-1]:
            raise UsageError(f"{source}: --all checks every tag; give ollama:MODEL or ollama: (the whole store)")
        store = OllamaStore()
        names = store.names(OllamaName.parse(rest) if rest else None)
        if not names:
            raise SourceError(f"{source}: no model {rest} in the Ollama store {store.root}" if rest else
                              f"{source}: the Ollama store {store.root} has no models")
        targets: list[Target] = []
        skipped: list[str] = []
        version = server_version()
        for name in names:
            try:
                targets.append(ollama_target(store.model(name, verify_digest=verify_digest), version))
            except NotGguf as exc:
                skipped.append(str(exc))
            except MtpinspectError as exc:  # a damaged model is its row, as a damaged file is in a folder
                manifest = store.manifests.joinpath(*name.parts)
                targets.append(Target(LocalTree(root=store.root, name=str(manifest), files={}), SourceKind.ollama,
                                      f"{OLLAMA_PREFIX}{name.shown}", None, gguf_files=[str(manifest)],
                                      unreadable=str(exc)))
        if not targets:
            raise SourceError(f"{source}: no model with local weights in the Ollama store {store.root} ({skipped[0]})")
        readable = [i for i, t in enumerate(targets) if t.app is not None]
        if skipped and readable:
            first = targets[readable[0]]
            assert first.app is not None
            targets[readable[0]] = dataclasses.replace(first, app=dataclasses.replace(
                first.app, notes=(*first.app.notes, *(f"not checked: {s}" for s in skipped))))
        return list(targets)
    from mtpinspect.sources import lmstudio

    rest = source[len(LM_STUDIO_PREFIX):]
    if rest:
        repo, quant = lmstudio.parse(rest)
        if quant:
            raise UsageError(f"{source}: --all checks every quantization; give lmstudio:PUBLISHER/REPO")
        folders = [(repo, lmstudio.repo_folder(repo))]
    else:
        folders = lmstudio.all_folders(source)
        if not folders:
            raise SourceError(f"{source}: no GGUF in LM Studio's models folder ({lmstudio.place().describe()})")
    return [AppLocation(folder=folder, repo=repo) for repo, folder in folders]
