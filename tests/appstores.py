"""Model stores laid out on disk as the desktop apps write them, for tests: no app installed.

Ollama (github.com/ollama/ollama: manifest/manifest.go WriteManifest, manifest/layer.go NewLayer,
server/create.go setParameters): ``blobs/sha256-<hex>`` holds each layer under the sha256 of its bytes;
``manifests/<host>/<namespace>/<model>/<tag>`` is the manifest as Go's json.Encoder writes it (compact,
fields in struct order, a trailing newline, ``from``/``name`` left out when empty); the params layer is
the Modelfile's PARAMETERs as a JSON object with sorted keys (a Go map); the config layer is ConfigV2.

An MLX-engine model (x/create: one ``application/vnd.ollama.image.tensor`` layer per tensor, named by it,
each blob a safetensors file; config.json as an ``application/vnd.ollama.image.json`` layer named by the
file; a drafter as ``draft.*`` tensors and ``draft/config.json``).

LM Studio (lmstudio-js findLMStudioHome.ts): the home is the path in ``~/.lmstudio-home-pointer``, else
``~/.cache/lm-studio`` when it exists, else ``~/.lmstudio``; models in ``settings.json``'s
``downloadsFolder`` or ``<home>/models/<publisher>/<repo>/*.gguf``; engines in
``<home>/extensions/backends/llama.cpp-<platform>-<variant>-<version>/``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

MODEL = "application/vnd.ollama.image.model"
DRAFT = "application/vnd.ollama.image.draft"
PARAMS = "application/vnd.ollama.image.params"
TEMPLATE = "application/vnd.ollama.image.template"
LICENSE = "application/vnd.ollama.image.license"
TENSOR = "application/vnd.ollama.image.tensor"
JSON = "application/vnd.ollama.image.json"
CONFIG = "application/vnd.docker.container.image.v1+json"
MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


def _go_json(value: Any, *, sort_keys: bool = False) -> bytes:
    return (json.dumps(value, separators=(",", ":"), sort_keys=sort_keys, ensure_ascii=False) + "\n").encode()


def add_blob(store: Path, data: bytes, media_type: str) -> dict[str, Any]:
    """Store ``data`` under its digest; the manifest layer that names it."""
    digest = hashlib.sha256(data).hexdigest()
    blobs = store / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    (blobs / f"sha256-{digest}").write_bytes(data)
    return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}


def add_file_blob(store: Path, path: Path, media_type: str) -> dict[str, Any]:
    """Store a file (a GGUF) under its digest, streamed as Ollama's NewLayer does."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    blobs = store / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, blobs / f"sha256-{digest.hexdigest()}")
    return {"mediaType": media_type, "digest": f"sha256:{digest.hexdigest()}", "size": path.stat().st_size}


def write_ollama_model(
    store: Path,
    name: str,
    *,
    gguf: Path | None,
    params: dict[str, Any] | None = None,
    draft: Path | None = None,
    template: str | None = "{{ .Prompt }}",
    architecture: str = "glm4moe",
    extra_layers: list[dict[str, Any]] | None = None,
    config_extra: dict[str, Any] | None = None,
    draft_architecture: str | None = None,
) -> Path:
    """Write one model as `ollama create` / `ollama pull` leaves it; ``name`` is host/namespace/model:tag
    (or model:tag in the library). Returns the manifest's path."""
    rest, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "latest")
    parts = rest.split("/")
    host, namespace, model = {1: ["registry.ollama.ai", "library", *parts], 2: ["registry.ollama.ai", *parts]}.get(
        len(parts), parts)
    layers = []
    if gguf is not None:
        layers.append(add_file_blob(store, gguf, MODEL))
    if draft is not None:
        layers.append(add_file_blob(store, draft, DRAFT))
    if template is not None:
        layers.append(add_blob(store, template.encode(), TEMPLATE))
    layers += extra_layers or []
    if params is not None:
        layers.append(add_blob(store, _go_json(params, sort_keys=True), PARAMS))
    config: dict[str, Any] = {
        "model_format": "gguf", "model_family": architecture, "model_families": [architecture],
        "model_type": "0.1M", "file_type": "F32", **(config_extra or {}),
    }
    if draft is not None:
        config["draft"] = {"model_format": "gguf", "architecture": draft_architecture or architecture}
    config.update({"architecture": "amd64", "os": "linux"})
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": add_blob(store, _go_json(config), CONFIG),
                "layers": layers}
    path = store / "manifests" / host / namespace / model / tag
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_go_json(manifest))
    return path


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A safetensors file (zeros) as the format lays it out: length, JSON header padded to 8 bytes, data."""
    header: dict[str, Any] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = {"F32": 4, "BF16": 2, "F16": 2, "U32": 4, "U8": 1}[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"\0" * offset


def write_ollama_mlx_model(store: Path, name: str, *, config: dict[str, Any],
                           tensors: dict[str, tuple[str, list[int]]], draft_config: dict[str, Any] | None = None) -> Path:
    """Write an MLX-engine model as `ollama create` of a safetensors folder leaves it: a tensor layer per tensor
    (``draft.*`` ones too), config.json (and draft/config.json) as JSON layers."""
    layers = []
    for tensor, spec in tensors.items():
        layer = add_blob(store, safetensors_bytes({tensor: spec}), TENSOR)
        layers.append({**layer, "name": tensor})
    for file, doc in [("config.json", config), *([("draft/config.json", draft_config)] if draft_config else [])]:
        layers.append({**add_blob(store, _go_json(doc), JSON), "name": file})
    return write_ollama_model(store, name, gguf=None, template=None, extra_layers=layers,
                              config_extra={"model_format": "safetensors"})


def blob_path(store: Path, manifest: Path, media_type: str) -> Path:
    layer = next(item for item in json.loads(manifest.read_text())["layers"] if item["mediaType"] == media_type)
    return store / "blobs" / layer["digest"].replace(":", "-")


def write_lmstudio_repo(home: Path, repo: str, files: list[Path], *, legacy: bool = False,
                        models: Path | None = None) -> Path:
    """Copy GGUF files into LM Studio's models folder (``models``, else the default one under the user's
    ``home``) under PUBLISHER/REPO; returns the repo folder."""
    root = models or (home / ".cache" / "lm-studio" / "models" if legacy else home / ".lmstudio" / "models")
    folder = root / repo
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copyfile(f, folder / f.name)
    return folder


def write_lmstudio_pointer(home: Path, lm_home: Path) -> None:
    """~/.lmstudio-home-pointer as LM Studio writes it: the home folder's path, no newline."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".lmstudio-home-pointer").write_text(str(lm_home), encoding="utf-8")


def write_lmstudio_settings(lm_home: Path, downloads: Path) -> None:
    """LM Studio's settings.json with its models folder moved (downloadsFolder)."""
    lm_home.mkdir(parents=True, exist_ok=True)
    (lm_home / "settings.json").write_text(json.dumps({"downloadsFolder": str(downloads), "language": "en"}, indent=2))


def write_lmstudio_engine(lm_home: Path, version: str, variant: str = "linux-x86_64-avx2") -> Path:
    """An installed llama.cpp engine folder with its backend-manifest.json."""
    folder = lm_home / "extensions" / "backends" / f"llama.cpp-{variant}-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "backend-manifest.json").write_text(json.dumps({"name": f"llama.cpp-{variant}", "engine": "llama.cpp",
                                                              "version": version}))
    return folder
