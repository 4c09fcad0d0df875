"""Ollama and LM Studio in their own terms: the setting that switches MTP on in each, the version that
has it, and how an n-max is written there. One place for these words; check, sweep and diagnose print them.

Ollama (read in its source, github.com/ollama/ollama, v0.30.0 and later: llm/llama_server.go,
server/routes.go, api/types.go, docs/modelfile.mdx) runs GGUF models with llama.cpp's llama-server:

- a GGUF whose ``<arch>.nextn_predict_layers`` is above 0 (or a qwen35 GGUF with ``mtp.*`` tensors) gets
  ``--spec-type draft-mtp --spec-draft-n-max N`` where N is the Modelfile parameter
  ``draft_num_predict``; when the Modelfile does not set it, Ollama sets N to 0 and starts no
  speculation (``modelOptions``: an unset draft_num_predict is zeroed when there is no draft model);
- a model with a ``DRAFT`` layer (media type ``application/vnd.ollama.image.draft``) drafts with that
  GGUF (``--spec-draft-model``, type draft-mtp unless the drafter's architecture is dflash) and
  draft_num_predict defaults to 4 there;
- ``draft_num_predict 0`` switches speculation off in both cases.

LM Studio (closed source; its release notes) has "MTP Speculative Decoding" from 0.4.14 for GGUFs that
carry the head: a switch and two numbers set at load time or under the sidebar's Advanced Configuration.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from mtpinspect.vocabulary import App

if TYPE_CHECKING:
    from mtpinspect.sources.app_stores import AppModel

OLLAMA_MIN_VERSION = "0.30.0"
LM_STUDIO_MIN_VERSION = "0.4.14"

DRAFT_NUM_PREDICT = "draft_num_predict"
# Ollama's draft_num_predict when a DRAFT layer is present and the Modelfile sets none (api.DefaultOptions).
OLLAMA_DRAFTER_DEFAULT_N_MAX = 4
# Ollama's sampling temperature when neither the Modelfile nor the request sets one (api.DefaultOptions).
OLLAMA_DEFAULT_TEMPERATURE = 0.8
# Modelfile parameters that become llama-server settings of the run (diagnose reads them).
OLLAMA_TEMPERATURE = "temperature"
OLLAMA_NUM_CTX = "num_ctx"

LM_STUDIO_SWITCH = "MTP Speculative Decoding"
LM_STUDIO_MAX = "MTP Max Draft Tokens"
LM_STUDIO_MIN = "MTP Min Draft Tokens"

APP_NAMES = {App.ollama: "Ollama", App.lm_studio: "LM Studio"}


def ollama_n_max(app: AppModel) -> int:
    """The draft length Ollama runs an Ollama model with: draft_num_predict, else 4 with a DRAFT layer, else 0 (off)."""
    if app.draft_num_predict is not None:
        return max(app.draft_num_predict, 0)
    return OLLAMA_DRAFTER_DEFAULT_N_MAX if app.draft_file else 0


def ollama_parameter(n_max: int) -> str:
    """The Modelfile line that sets the draft length (0: no speculation)."""
    return f"PARAMETER {DRAFT_NUM_PREDICT} {n_max}"


def ollama_modelfile(base: str, n_max: int, *, draft: str | None = None) -> list[str]:
    """A Modelfile deriving a model from ``base`` (a local name or a GGUF path) that drafts ``n_max`` tokens."""
    return [f"FROM {base}", *([f"DRAFT {draft}"] if draft else []), ollama_parameter(n_max)]


def ollama_create_command(base: str, name: str, n_max: int, *, draft: str | None = None) -> str:
    """One shell line: write the Modelfile, then `ollama create NAME -f Modelfile`."""
    lines = ollama_modelfile(base, n_max, draft=draft)
    text = "".join(line.replace("\\", "\\\\").replace("%", "%%") + "\\n" for line in lines)
    return f"printf {shlex.quote(text)} > Modelfile && ollama create {shlex.quote(name)} -f Modelfile"


def lm_studio_setting(n_max: int) -> str:
    """LM Studio's three MTP settings, with ``n_max`` as the maximum."""
    return f'"{LM_STUDIO_SWITCH}" on, "{LM_STUDIO_MAX}" {n_max}, "{LM_STUDIO_MIN}" 0'


def app_setting(app: App, n_max: int | None) -> str:
    """An n-max (None: leave MTP off) as the app's own setting."""
    if app is App.ollama:
        if n_max is None:
            return f"{ollama_parameter(0)} (or leave {DRAFT_NUM_PREDICT} unset): no speculation"
        return ollama_parameter(n_max)
    if n_max is None:
        return f'"{LM_STUDIO_SWITCH}" off'
    return lm_studio_setting(n_max)

