"""The local Ollama store, read as Ollama itself lays it out (github.com/ollama/ollama: manifest/paths.go,
manifest/manifest.go, manifest/layer.go, types/model/name.go, server/images.go).

``$OLLAMA_MODELS`` (default ``~/.ollama/models``) holds ``manifests/<host>/<namespace>/<model>/<tag>``,
one JSON manifest per model (``schemaVersion`` 2, a ``config`` layer and ``layers``, each with
``mediaType``, ``digest`` ``sha256:<hex>`` and ``size``), and ``blobs/sha256-<hex>``, each layer's bytes
under its digest. A name ``MODEL[:TAG]`` is ``registry.ollama.ai/library/MODEL:TAG`` (tag ``latest``);
``hf.co/ORG/REPO:QUANT`` (a model pulled from the Hub) is host ``hf.co``, namespace ``ORG``, model ``REPO``.

The layers read: the model (the GGUF itself), a draft model (Modelfile ``DRAFT``), the params (the
Modelfile's ``PARAMETER`` lines as one JSON object) and the config (model format, a cloud model's remote
host). Every blob read is checked against the manifest: its size always; its sha256 when it is small
(``DIGEST_LIMIT``) or when asked (``verify_digest``), streamed in chunks, since hashing a 50 GB model blob
on every check would take minutes. Ollama verifies each blob's digest when it pulls it, so a mismatch
here means the file changed on disk afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtpinspect.apps import DRAFT_NUM_PREDICT
from mtpinspect.errors import FormatError, SourceError, UsageError
from mtpinspect.files import read_bounded

DEFAULT_HOST = "registry.ollama.ai"
DEFAULT_NAMESPACE = "library"
DEFAULT_TAG = "latest"

MODEL_MEDIA = "application/vnd.ollama.image.model"
DRAFT_MEDIA = "application/vnd.ollama.image.draft"
PARAMS_MEDIA = "application/vnd.ollama.image.params"
PROJECTOR_MEDIA = "application/vnd.ollama.image.projector"
ADAPTER_MEDIA = "application/vnd.ollama.image.adapter"
# Models Ollama stores tensor by tensor (its MLX engine) instead of as one GGUF.
TENSOR_MEDIA = "application/vnd.ollama.image.tensor"

# Bounds on what a manifest may make us read.
MANIFEST_LIMIT = 16 * 1024 * 1024
JSON_BLOB_LIMIT = 1024 * 1024
# Blobs up to this size are hashed on every check (a fraction of a second); larger ones with verify_digest.
DIGEST_LIMIT = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
# How a layer is named in messages.
_KIND = {MODEL_MEDIA: "model", DRAFT_MEDIA: "draft", PARAMS_MEDIA: "params", PROJECTOR_MEDIA: "projector",
         ADAPTER_MEDIA: "adapter", "application/vnd.docker.container.image.v1+json": "config"}

_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,349}$")
_HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*(:\d+)?$")
_DIGEST = re.compile(r"^sha256[:-]([0-9a-fA-F]{64})$")


class NotGguf(SourceError):
    """A model of the store with no local GGUF: a cloud model, or one stored tensor by tensor."""


def store_root() -> tuple[Path, str]:
    """Where Ollama keeps models, and how that was decided (for messages)."""
    env = os.environ.get("OLLAMA_MODELS")
    if env:
        return Path(env).expanduser(), "OLLAMA_MODELS"
    return Path.home() / ".ollama" / "models", "the default; OLLAMA_MODELS is not set"


@dataclass(frozen=True)
class OllamaName:
    """host/namespace/model:tag, as Ollama parses a model name (types/model/name.go, ParseName)."""

    host: str
    namespace: str
    model: str
    tag: str

    @classmethod
    def parse(cls, text: str) -> OllamaName:
        rest, tag = text, ""
        if rest.rfind(":") > rest.rfind("/"):
            rest, tag = rest.rsplit(":", 1)
        parts = rest.split("/")
        model = parts.pop()
        namespace = parts.pop() if parts else ""
        host = "/".join(parts).split("://", 1)[-1]
        name = cls(host or DEFAULT_HOST, namespace or DEFAULT_NAMESPACE, model, tag or DEFAULT_TAG)
        bad = [p for p in (name.namespace, name.model, name.tag) if not _PART.match(p) or p.strip(".") == ""]
        if bad or not _HOST.match(name.host):
            raise UsageError(f"ollama:{text}: not an Ollama model name ([HOST/][NAMESPACE/]MODEL[:TAG])")
        return name

    @property
    def parts(self) -> tuple[str, str, str, str]:
        return (self.host, self.namespace, self.model, self.tag)

    @property
    def repository(self) -> str:
        """The name without its tag, as shown."""
        return self.shown.rsplit(":", 1)[0]

    @property
    def shown(self) -> str:
        """The shortest form Ollama shows (DisplayShortest): library models without host and namespace."""
        if self.host.lower() != DEFAULT_HOST:
            return f"{self.host}/{self.namespace}/{self.model}:{self.tag}"
        if self.namespace.lower() != DEFAULT_NAMESPACE:
            return f"{self.namespace}/{self.model}:{self.tag}"
        return f"{self.model}:{self.tag}"


@dataclass(frozen=True)
class Layer:
    media_type: str
    digest: str  # sha256:<hex>
    size: int

    @property
    def kind(self) -> str:
        return _KIND.get(self.media_type, self.media_type.rsplit(".", 1)[-1])

    @property
    def blob_name(self) -> str:
        return self.digest.replace(":", "-", 1)


@dataclass
class OllamaModel:
    """One model of the store: where its files are, its Modelfile parameters, what was verified."""

    name: OllamaName
    manifest: Path
    model: Path  # the GGUF blob
    draft: Path | None  # the DRAFT layer's GGUF blob
    parameters: dict[str, Any]
    draft_num_predict: int | None  # the Modelfile's draft_num_predict; None when it sets none
    digests: str  # what was verified, in one line


def whole_number(parameters: dict[str, Any], key: str, label: str) -> int | None:
    """A Modelfile parameter that must be a whole number (Ollama writes ints as JSON integers)."""
    value = parameters.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise FormatError(f"{label}: Modelfile parameter {key} is {value!r}, not a whole number")
    return int(value)


class OllamaStore:
    """The store under one root (``store_root()`` unless given)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root, self.why = (root, "given") if root is not None else store_root()

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    def _require(self, label: str) -> None:
        if not self.manifests.is_dir():
            raise SourceError(f"{label}: no Ollama store at {self.root} ({self.why}): it has no manifests folder")

    def names(self, repository: OllamaName | None = None) -> list[OllamaName]:
        """Every model in the store (manifests/*/*/*/*, as Ollama lists them), or the tags of one model."""
        self._require(f"ollama:{repository.repository if repository else ''}")
        found = []
        for path in sorted(self.manifests.glob("*/*/*/*")):
            if not path.is_file():
                continue
            name = OllamaName(*path.relative_to(self.manifests).parts)
            if repository is None or _same(name.parts[:3], repository.parts[:3]):
                found.append(name)
        return found

    def manifest_path(self, name: OllamaName) -> Path:
        """The manifest of ``name``; names match without regard to case, as in Ollama."""
        self._require(f"ollama:{name.shown}")
        exact = self.manifests.joinpath(*name.parts)
        if exact.is_file():
            return exact
        for candidate in self.names(name):
            if candidate.tag.lower() == name.tag.lower():
                return self.manifests.joinpath(*candidate.parts)
        tags = [n.tag for n in self.names(name)]
        looked = f"looked for {exact.relative_to(self.root)}"
        if tags:
            raise SourceError(f"ollama:{name.shown}: no tag '{name.tag}' of {name.repository} in the Ollama store "
                              f"{self.root} ({looked}; its tags: {', '.join(tags)})")
        models = sorted({n.repository for n in self.names()})
        listing = f"models there: {', '.join(models[:12])}{' ...' if len(models) > 12 else ''}" if models else "it has no models"
        raise SourceError(f"ollama:{name.shown}: no model {name.repository} in the Ollama store {self.root} ({looked}; {listing})")

    def model(self, name: OllamaName, *, verify_digest: bool = False) -> OllamaModel:
        """Read the manifest of ``name`` and check the blobs it names."""
        label = f"ollama:{name.shown}"
        path = self.manifest_path(name)
        layers, config = _read_manifest(path, label)
        checks = _BlobChecks(self.root / "blobs", label, verify_digest)
        if config is not None:
            settings = _json_object(checks.read_small(config), f"{label}: config {config.blob_name}")
            if settings.get("remote_host"):
                raise NotGguf(f"{label}: a cloud model (served by {settings['remote_host']}): no local GGUF to check")
        by_type: dict[str, list[Layer]] = {}
        for layer in layers:
            by_type.setdefault(layer.media_type, []).append(layer)
        if MODEL_MEDIA not in by_type:
            stored = "tensor by tensor for Ollama's MLX engine" if TENSOR_MEDIA in by_type else "without a model layer"
            raise NotGguf(f"{label}: stored {stored}, not as a GGUF: check reads GGUF models ({path})")
        parameters: dict[str, Any] = {}
        if PARAMS_MEDIA in by_type:
            parameters = _json_object(checks.read_small(by_type[PARAMS_MEDIA][-1]), f"{label}: params")
        model = checks.blob(by_type[MODEL_MEDIA][0])
        draft = checks.blob(by_type[DRAFT_MEDIA][0]) if DRAFT_MEDIA in by_type else None
        n_max = whole_number(parameters, DRAFT_NUM_PREDICT, label)
        return OllamaModel(name, path, model, draft, parameters, n_max, checks.summary())


def _same(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return [x.lower() for x in a] == [y.lower() for y in b]


def _read_manifest(path: Path, label: str) -> tuple[list[Layer], Layer | None]:
    data = read_bounded(path, MANIFEST_LIMIT, f"Ollama manifest of {label}")
    doc = _json_object(data, f"{label}: manifest {path}")
    raw_layers = doc.get("layers")
    if not isinstance(raw_layers, list):
        raise FormatError(f"{label}: manifest {path} has no layers list")
    layers = [_layer(item, f"{label}: manifest {path}") for item in raw_layers]
    config = _layer(doc["config"], f"{label}: manifest {path}") if isinstance(doc.get("config"), dict) and doc["config"].get("digest") else None
    return layers, config


def _layer(item: Any, where: str) -> Layer:
    if not isinstance(item, dict):
        raise FormatError(f"{where}: a layer is {type(item).__name__}, not an object")
    media, digest, size = item.get("mediaType"), item.get("digest"), item.get("size")
    if not isinstance(media, str) or not isinstance(digest, str) or not _DIGEST.match(digest):
        raise FormatError(f"{where}: layer {str(digest)[:80]!r} has no sha256 digest or media type")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise FormatError(f"{where}: layer {digest} has size {size!r}, not a byte count")
    return Layer(media, "sha256:" + _DIGEST.match(digest).group(1).lower(), size)  # type: ignore[union-attr]


def _json_object(data: bytes, where: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise FormatError(f"{where}: a JSON {type(value).__name__}, not an object")
    return value


class _BlobChecks:
    """Finds each layer's blob and checks it against the manifest, keeping a record of what was hashed."""

    def __init__(self, blobs: Path, label: str, verify_digest: bool) -> None:
        self.blobs, self.label, self.verify_digest = blobs, label, verify_digest
        self.hashed: list[str] = []
        self.sized: list[str] = []

    def _path(self, layer: Layer) -> Path:
        path = self.blobs / layer.blob_name
        if not path.is_file():
            raise SourceError(f"{self.label}: the manifest names blob {layer.blob_name} ({layer.kind} layer), "
                              f"which is not in {self.blobs}")
        size = path.stat().st_size
        if size != layer.size:
            raise SourceError(f"{self.label}: blob {path} holds {size:,} bytes, the manifest says {layer.size:,} "
                              f"(the file was cut short or replaced; `ollama pull` or `ollama create` it again)")
        return path

    def _mismatch(self, path: Path, layer: Layer, actual: str) -> SourceError:
        return SourceError(f"{self.label}: blob {path} does not match its digest (its content hashes to sha256:{actual}): "
                           "the file changed after Ollama stored it; `ollama pull` or `ollama create` the model again")

    def blob(self, layer: Layer) -> Path:
        path = self._path(layer)
        if layer.size <= DIGEST_LIMIT or self.verify_digest:
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(_CHUNK):
                    digest.update(chunk)
            if "sha256:" + digest.hexdigest() != layer.digest:
                raise self._mismatch(path, layer, digest.hexdigest())
            self.hashed.append(layer.kind)
        else:
            size = f"{layer.size / 2**30:.1f} GiB" if layer.size >= 2**30 else f"{layer.size / 2**20:.0f} MiB"
            self.sized.append(f"{layer.kind} ({size})")
        return path

    def read_small(self, layer: Layer) -> bytes:
        path = self._path(layer)
        if layer.size > JSON_BLOB_LIMIT:
            raise FormatError(f"{self.label}: {layer.kind} blob {path} is {layer.size:,} bytes, more than a "
                              f"settings file holds")
        data = path.read_bytes()
        actual = hashlib.sha256(data).hexdigest()
        if "sha256:" + actual != layer.digest:
            raise self._mismatch(path, layer, actual)
        self.hashed.append(layer.kind)
        return data

    def summary(self) -> str:
        line = f"sha256 verified: {', '.join(self.hashed)}" if self.hashed else "no blob hashed"
        if self.sized:
            line += (f"; size only: {', '.join(self.sized)} (--verify-digest hashes it; Ollama verified it when it "
                     "pulled it)")
        return line
