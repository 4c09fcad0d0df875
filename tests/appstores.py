"""Model stores laid out on disk as the desktop apps write them, for tests: no app installed.

Ollama (github.com/ollama/ollama: manifest/manifest.go WriteManifest, manifest/layer.go NewLayer,
server/create.go setParameters): ``blobs/sha256-<hex>`` holds each layer under the sha256 of its bytes;
``manifests/<host>/<namespace>/<model>/<tag>`` is the manifest as Go's json.Encoder writes it (compact,
fields in struct order, a trailing newline, ``from``/``name`` left out when empty); the params layer is
the Modelfile's PARAMETERs as a JSON object with sorted keys (a Go map); the config layer is ConfigV2.

LM Studio: ``~/.lmstudio/models/<publisher>/<repo>/*.gguf`` (older: ``~/.cache/lm-studio/models``).
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
        config["draft"] = {"model_format": "gguf", "architecture": architecture}
    config.update({"architecture": "amd64", "os": "linux"})
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": add_blob(store, _go_json(config), CONFIG),
                "layers": layers}
    path = store / "manifests" / host / namespace / model / tag
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_go_json(manifest))
    return path


def blob_path(store: Path, manifest: Path, media_type: str) -> Path:
    layer = next(item for item in json.loads(manifest.read_text())["layers"] if item["mediaType"] == media_type)
    return store / "blobs" / layer["digest"].replace(":", "-")


def write_lmstudio_repo(home: Path, repo: str, files: list[Path], *, legacy: bool = False) -> Path:
    """Copy GGUF files into LM Studio's models folder under PUBLISHER/REPO; returns the repo folder."""
    root = home / ".cache" / "lm-studio" / "models" if legacy else home / ".lmstudio" / "models"
    folder = root / repo
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copyfile(f, folder / f.name)
    return folder
