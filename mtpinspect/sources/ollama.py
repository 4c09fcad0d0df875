"""The local Ollama store, read as Ollama itself lays it out (github.com/ollama/ollama: manifest/paths.go,
manifest/manifest.go, manifest/layer.go, types/model/name.go, server/images.go; the facts with their
lines: mtpinspect/app_facts.py).

``$OLLAMA_MODELS`` (else ``~/.ollama/models``, else the Linux service's ``/usr/share/ollama/.ollama/models``)
holds ``manifests/<host>/<namespace>/<model>/<tag>``, one JSON manifest per model (``schemaVersion`` 2, a
``config`` layer and ``layers``, each with ``mediaType``, ``digest`` ``sha256:<hex>`` and ``size``), and
``blobs/sha256-<hex>``, each layer's bytes under its digest. A name ``MODEL[:TAG]`` is
``registry.ollama.ai/library/MODEL:TAG`` (tag ``latest``); ``hf.co/ORG/REPO:QUANT`` (a model pulled from
the Hub) is host ``hf.co``, namespace ``ORG``, model ``REPO``.

The layers read: the model (the GGUF itself), a draft model (Modelfile ``DRAFT``), the params (the
Modelfile's ``PARAMETER`` lines as one JSON object) and the config (model format, a cloud model's remote
host); with several model or draft layers the last one counts, as in Ollama. A model of Ollama's MLX
engine has no GGUF: its tensors are safetensors blobs, one layer each named by the tensor, and its
config.json a JSON layer; those are handed on to be read as a checkpoint. Every blob read is checked
against the manifest: its size always; its sha256 when it is small (``DIGEST_LIMIT``) or when asked
(``verify_digest``), streamed in chunks, since hashing a 50 GB model blob on every check would take
minutes. Ollama verifies each blob's digest when it pulls it, so a mismatch here means the file changed on
disk afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtpinspect import app_facts
from mtpinspect.app_facts import (
    DRAFT_NUM_PREDICT,
    OLLAMA_ADAPTER_MEDIA,
    OLLAMA_DEFAULT_HOST,
    OLLAMA_DEFAULT_PORT,
    OLLAMA_DRAFT_MEDIA,
    OLLAMA_HOST_ENV,
    OLLAMA_JSON_MEDIA,
    OLLAMA_MODEL_MEDIA,
    OLLAMA_MODELS_ENV,
    OLLAMA_PARAMS_MEDIA,
    OLLAMA_PROJECTOR_MEDIA,
    OLLAMA_TENSOR_MEDIA,
    OLLAMA_USER_STORE,
    OLLAMA_VERSION_PATH,
)
from mtpinspect.errors import FormatError, SourceError, UsageError
from mtpinspect.files import kind_of, read_bounded

DEFAULT_HOST = "registry.ollama.ai"
DEFAULT_NAMESPACE = "library"
DEFAULT_TAG = "latest"

MODEL_MEDIA, DRAFT_MEDIA, PARAMS_MEDIA = OLLAMA_MODEL_MEDIA, OLLAMA_DRAFT_MEDIA, OLLAMA_PARAMS_MEDIA
TENSOR_MEDIA, JSON_MEDIA = OLLAMA_TENSOR_MEDIA, OLLAMA_JSON_MEDIA

# Bounds on what a manifest may make us read.
MANIFEST_LIMIT = 16 * 1024 * 1024
JSON_BLOB_LIMIT = 1024 * 1024
# Blobs up to this size are hashed on every check (a fraction of a second); larger ones with verify_digest.
DIGEST_LIMIT = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
# How a layer is named in messages.
_KIND = {MODEL_MEDIA: "model", DRAFT_MEDIA: "draft", PARAMS_MEDIA: "params", OLLAMA_PROJECTOR_MEDIA: "projector",
         OLLAMA_ADAPTER_MEDIA: "adapter", TENSOR_MEDIA: "tensor", JSON_MEDIA: "json",
         "application/vnd.docker.container.image.v1+json": "config"}
# An MLX model's tensor layers: how many are listed by name before the rest are left out (a 1T model has
# some 60,000; each name is read from the manifest, no blob is opened for it).
MAX_TENSOR_LAYERS = 200_000

# Asking the running server its version: one small JSON answer, soon or never (Ollama not running).
VERSION_TIMEOUT_S = 1.0
VERSION_LIMIT = 4096
_VERSION = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+.][0-9A-Za-z.+-]*)?$")

_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,349}$")
_HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*(:\d+)?$")
_DIGEST = re.compile(r"^sha256[:-]([0-9a-fA-F]{64})$")


class NotGguf(SourceError):
    """A model of the store with no local weights to read: a cloud model, or one without a model layer."""


def store_root() -> tuple[Path, str]:
    """Where Ollama keeps models, and how that was decided (for messages): $OLLAMA_MODELS; else the user's
    ~/.ollama/models when it holds a store; else the Linux service's when that one does; else the user's."""
    env = os.environ.get(OLLAMA_MODELS_ENV)
    if env:
        return Path(env).expanduser(), OLLAMA_MODELS_ENV
    user = Path.home() / OLLAMA_USER_STORE
    service = app_facts.OLLAMA_SERVICE_STORE  # read here, so that a test can point it at a folder of its own
    if not (user / "manifests").is_dir() and _readable_dir(service / "manifests"):
        return service, f"the Linux service's store; {OLLAMA_MODELS_ENV} is not set and {user} holds none"
    return user, f"the default; {OLLAMA_MODELS_ENV} is not set (the Linux service's store {service} holds none either)"


def _readable_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


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
    name: str = ""  # an MLX model's tensor or file name

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
    model: Path | None  # the GGUF blob (the last model layer); None for an MLX model
    draft: Path | None  # the DRAFT layer's GGUF blob (the last one)
    parameters: dict[str, Any]
    draft_num_predict: int | None  # the Modelfile's draft_num_predict; None when it sets none
    digests: str  # what was verified, in one line
    notes: tuple[str, ...] = ()  # what Ollama does that the reader should know (layers it ignores)
    # An MLX model: each tensor's blob by tensor name, and its JSON files (config.json) by name.
    tensors: dict[str, Path] | None = None
    json_files: dict[str, Path] | None = None


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
        parameters: dict[str, Any] = {}
        if PARAMS_MEDIA in by_type:
            parameters = _json_object(checks.read_small(by_type[PARAMS_MEDIA][-1]), f"{label}: params")
        n_max = whole_number(parameters, DRAFT_NUM_PREDICT, label)
        if MODEL_MEDIA not in by_type:
            if TENSOR_MEDIA not in by_type:
                raise NotGguf(f"{label}: stored without a model layer: no weights to check ({path})")
            tensors, json_files = _mlx_layers(by_type, checks, label)
            return OllamaModel(name, path, None, None, parameters, n_max, checks.summary(), (),
                               tensors, json_files)
        # Ollama keeps the last layer of each kind (server/images.go: each one overwrites the path).
        notes = tuple(f"{label}: the manifest has {len(by_type[media])} {kind} layers; Ollama loads the last one"
                      for media, kind in ((MODEL_MEDIA, "model"), (DRAFT_MEDIA, "draft")) if len(by_type.get(media, [])) > 1)
        model = checks.blob(by_type[MODEL_MEDIA][-1])
        draft = checks.blob(by_type[DRAFT_MEDIA][-1]) if DRAFT_MEDIA in by_type else None
        return OllamaModel(name, path, model, draft, parameters, n_max, checks.summary(), notes)


def _mlx_layers(by_type: dict[str, list[Layer]], checks: _BlobChecks, label: str) -> tuple[dict[str, Path], dict[str, Path]]:
    """An MLX model's tensor blobs by tensor name and its JSON files by name, each checked against the manifest."""
    tensor_layers = by_type[TENSOR_MEDIA]
    if len(tensor_layers) > MAX_TENSOR_LAYERS:
        raise FormatError(f"{label}: {len(tensor_layers):,} tensor layers, more than a model has ({MAX_TENSOR_LAYERS:,})")
    unnamed = [layer.digest for layer in tensor_layers if not layer.name]
    if unnamed:
        raise FormatError(f"{label}: tensor layer {unnamed[0]} has no name: not a manifest Ollama writes")
    tensors = {layer.name: checks.sized(layer) for layer in tensor_layers}
    json_files = {layer.name: checks.sized(layer) for layer in by_type.get(JSON_MEDIA, []) if layer.name}
    return tensors, json_files


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
    name = item.get("name") if isinstance(item.get("name"), str) else ""
    return Layer(media, "sha256:" + _DIGEST.match(digest).group(1).lower(), size, name)  # type: ignore[union-attr]


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
        self.sized_blobs: list[str] = []
        self.sized_only = 0

    def _path(self, layer: Layer) -> Path:
        path = self.blobs / layer.blob_name
        if not path.is_file():
            try:
                mode = path.stat().st_mode
            except OSError:  # missing, or a dangling link: not there
                raise SourceError(f"{self.label}: the manifest names blob {layer.blob_name} ({layer.kind} layer), "
                                  f"which is not in {self.blobs}") from None
            # There, but no file Ollama wrote: never opened (a FIFO would block the read), said as what it is.
            raise SourceError(f"{self.label}: blob {path} ({layer.kind} layer) is a {kind_of(mode)}, not a regular "
                              "file; Ollama writes each blob as a file: `ollama pull` or `ollama create` the model again")
        size = path.stat().st_size
        if size != layer.size:
            raise SourceError(f"{self.label}: blob {path} holds {size:,} bytes, the manifest says {layer.size:,} "
                              f"(the file was cut short or replaced; `ollama pull` or `ollama create` it again)")
        return path

    def _mismatch(self, path: Path, layer: Layer, actual: str) -> SourceError:
        return SourceError(f"{self.label}: blob {path} does not match its digest (its content hashes to sha256:{actual}): "
                           "the file changed after Ollama stored it; `ollama pull` or `ollama create` the model again")

    def sized(self, layer: Layer) -> Path:
        """A blob read later by range (an MLX tensor file): its size checked now, its header when it is read."""
        path = self._path(layer)
        self.sized_only += 1
        return path

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
            self.sized_blobs.append(f"{layer.kind} ({size})")
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
        if self.sized_blobs:
            line += (f"; size only: {', '.join(self.sized_blobs)} (--verify-digest hashes it; Ollama verified it when it "
                     "pulled it)")
        if self.sized_only:
            line += f"; size only: {self.sized_only} tensor and JSON blob(s) of the MLX model (read by range)"
        return line


def server_address() -> tuple[str, int]:
    """Where the Ollama server listens, read from OLLAMA_HOST as Ollama reads it (envconfig.Host:
    [scheme://]host[:port], default 127.0.0.1:11434); a wildcard address is reached on loopback."""
    text = os.environ.get(OLLAMA_HOST_ENV, "").strip()
    scheme, sep, rest = text.partition("://")
    hostport = (rest if sep else text).split("/", 1)[0]
    port = {"http": 80, "https": 443}.get(scheme, OLLAMA_DEFAULT_PORT) if sep else OLLAMA_DEFAULT_PORT
    host, colon, port_text = hostport.rpartition(":") if hostport.count(":") == 1 or "]:" in hostport else ("", "", "")
    if colon and port_text.isdigit() and int(port_text) <= 65535:
        port = int(port_text)
    else:
        host = hostport
    host = host.strip("[]") or OLLAMA_DEFAULT_HOST
    return (OLLAMA_DEFAULT_HOST if host in ("0.0.0.0", "::") else host), port


def server_version() -> str | None:
    """The running Ollama's version (GET /api/version), or None when no Ollama answers there in time."""
    import http.client  # with ssl and email: only an ollama: source asks the server

    host, port = server_address()
    connection = http.client.HTTPConnection(host, port, timeout=VERSION_TIMEOUT_S)
    try:
        connection.request("GET", OLLAMA_VERSION_PATH)
        response = connection.getresponse()
        data = response.read(VERSION_LIMIT) if response.status == 200 else b""
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    try:
        version = json.loads(data).get("version")
    except (ValueError, AttributeError):
        return None
    return version if isinstance(version, str) and _VERSION.match(version) else None
