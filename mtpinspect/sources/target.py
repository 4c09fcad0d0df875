"""The target of a check: a file tree and the files of it to read, as sources/resolve.py decides them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mtpinspect.jsonable import json_field
from mtpinspect.sources.filenames import NameIndex
from mtpinspect.sources.reader import Tree
from mtpinspect.vocabulary import App, AppEngine, SourceKind


@dataclass(frozen=True)
class AppModel:
    """A model as a desktop app keeps it: its name there, where it lies, what the app stored with it."""

    app: App
    name: str  # as the app shows it: qwen3.6:27b-mtp, or PUBLISHER/REPO
    location: str  # the Ollama manifest, or the LM Studio repo folder
    model_file: str  # the GGUF the app loads; an Ollama MLX model: its config.json blob
    draft_file: str | None = None  # Ollama: the DRAFT layer's GGUF blob
    parameters: dict[str, Any] = field(default_factory=dict)  # Ollama: the Modelfile's PARAMETERs (params layer)
    draft_num_predict: int | None = None  # Ollama: the Modelfile's draft_num_predict; None when not set
    digests: str | None = None  # Ollama: what was checked against the manifest
    engine: AppEngine | None = None  # Ollama: what it runs the model on (a GGUF: llama-server)
    # The version the tool learned: Ollama's running server (/api/version), LM Studio's newest llama.cpp
    # engine (its extensions/backends folder); None when it could not learn it.
    version: str | None = None
    notes: tuple[str, ...] = json_field(omit=True, default=())  # the report's notes carry them

    @property
    def tag(self) -> str | None:
        return self.name.rsplit(":", 1)[1] if self.app is App.ollama and ":" in self.name else None


@dataclass
class Target:
    """What `check` reads: a tree (repo or local folder) and, for GGUF, the main file set and sidecar set."""

    tree: Tree
    kind: SourceKind
    display: str
    repo_id: str | None  # known for Hub repos and HF cache folders: used in the commands we print
    gguf_files: list[str] = field(default_factory=list)
    # The sidecar set when the user named it (--mtp-file) or none is wanted ([]: the main file is itself a
    # head); None: paired with the main file once its header is read (inspection/pairing.py).
    sidecar_files: list[str] | None = None
    quant: str | None = None
    # check --all: why this model cannot be checked (an incomplete split set), reported as its row.
    unreadable: str | None = None
    app: AppModel | None = None  # the model as Ollama or LM Studio keeps it (ollama:, lmstudio: sources)
    # What the tree's names say, shared by every target of one listing (check --all, find): see names().
    name_index: NameIndex | None = json_field(omit=True, default=None, repr=False, compare=False)

    def names(self) -> NameIndex:
        """The tree's NameIndex, worked out on first use (resolve hands one to all targets of a listing)."""
        if self.name_index is None:
            self.name_index = NameIndex.of(self.tree.files)
        return self.name_index

    @property
    def revision(self) -> str | None:
        return self.tree.sha if self.kind is SourceKind.hub else None

    def file_ref(self, rel: str) -> str:
        """How a command names one of the files: its path locally, its name in the repo on the Hub."""
        return self.tree.ref(rel)
