"""Ollama and LM Studio in their own terms: the sentences check, sweep and diagnose print about them, built
from the facts of mtpinspect/app_facts.py (each with the source line it was read at). One place for
these words.

Ollama runs a GGUF with llama.cpp's llama-server (from 0.30.0): a head gets ``--spec-type draft-mtp
--spec-draft-n-max N --spec-draft-backend-sampling`` with N = ``draft_num_predict``, set in the Modelfile,
in a request's ``options`` or with ``/set parameter`` in ``ollama run``; unset everywhere, N is 0 (no
speculation) unless a ``DRAFT`` layer makes it 4. A DRAFT layer is ``--spec-draft-model``, as draft-mtp or,
for a DFlash drafter, draft-dflash (from 0.32.7). A safetensors model runs on Ollama's MLX engine, which
drafts by itself whenever the checkpoint ships a draft head.

LM Studio (0.4.14 with its llama.cpp engine 2.15.0 or later) drafts with a bundled head when "Draft MTP"
is on, with "Max Draft Tokens", "Min Draft Tokens" and "Drafting Probability Cutoff" (the names since
2026-06-09; before: "MTP Speculative Decoding", "MTP Max Draft Tokens", "MTP Min Draft Tokens").
"""

from __future__ import annotations

import shlex

from mtpinspect.app_facts import (
    DRAFT_NUM_PREDICT,
    LM_STUDIO_CUTOFF,
    LM_STUDIO_FORMER_NAMES,
    LM_STUDIO_MAX,
    LM_STUDIO_MIN,
    LM_STUDIO_MIN_ENGINE,
    LM_STUDIO_MIN_VERSION,
    LM_STUDIO_RENAMED_ON,
    LM_STUDIO_SWITCH,
    OLLAMA_DFLASH_ARCH,
    OLLAMA_DFLASH_FROM,
    OLLAMA_DRAFT_DFLASH,
    OLLAMA_DRAFT_MTP,
    OLLAMA_DRAFTER_DEFAULT_N_MAX,
    OLLAMA_LLAMA_SERVER_FROM,
    at_least,
)
from mtpinspect.sources.target import AppModel
from mtpinspect.vocabulary import App

APP_NAMES = {App.ollama: "Ollama", App.lm_studio: "LM Studio"}
# How the request-time ways to set draft_num_predict are said (server/routes.go 136-156).
OLLAMA_REQUEST_WAYS = (f'a request\'s "options" ({{"{DRAFT_NUM_PREDICT}": N}}) or `/set parameter '
                       f'{DRAFT_NUM_PREDICT} N` in `ollama run`')


def ollama_version_said(app: AppModel | None) -> str:
    """'Ollama 0.32.15' when the running server said its version, else 'Ollama 0.30.0 or later'."""
    if app is not None and app.version:
        return f"Ollama {app.version}"
    return f"Ollama {OLLAMA_LLAMA_SERVER_FROM} or later"


def ollama_runs_mtp(version: str | None) -> bool:
    """Whether an Ollama of ``version`` runs GGUFs on llama-server (None: unknown, taken as yes)."""
    return version is None or at_least(version, OLLAMA_LLAMA_SERVER_FROM)


def ollama_draft_type(draft_arch: str | None, version: str | None) -> str:
    """The --spec-type Ollama passes for a DRAFT layer whose GGUF has ``draft_arch``."""
    if draft_arch == OLLAMA_DFLASH_ARCH and (version is None or at_least(version, OLLAMA_DFLASH_FROM)):
        return OLLAMA_DRAFT_DFLASH
    return OLLAMA_DRAFT_MTP


def lm_studio_engine_said(app: AppModel | None) -> str:
    """LM Studio's versions that run MTP, with the engine the tool found when it found one."""
    base = f"LM Studio {LM_STUDIO_MIN_VERSION}+ with its llama.cpp engine {LM_STUDIO_MIN_ENGINE}+"
    if app is not None and app.app is App.lm_studio and app.version:
        ok = at_least(app.version, LM_STUDIO_MIN_ENGINE)
        return f"{base} (newest engine installed here: {app.version}{'' if ok else ', too old for MTP: update it'})"
    return base


def lm_studio_engine_too_old(app: AppModel | None) -> bool:
    return app is not None and app.app is App.lm_studio and app.version is not None and \
        not at_least(app.version, LM_STUDIO_MIN_ENGINE)


LM_STUDIO_FORMER = (f"before {LM_STUDIO_RENAMED_ON}: " + ", ".join(f'"{n}"' for n in LM_STUDIO_FORMER_NAMES))


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
    """LM Studio's MTP settings (the names since 2026-06-09), with ``n_max`` as the maximum."""
    return f'"{LM_STUDIO_SWITCH}" on, "{LM_STUDIO_MAX}" {n_max}, "{LM_STUDIO_MIN}" 0, "{LM_STUDIO_CUTOFF}" 0'


def app_setting(app: App, n_max: int | None) -> str:
    """An n-max (None: leave MTP off) as the app's own setting."""
    if app is App.ollama:
        if n_max is None:
            # Not "leave it unset": with a DRAFT layer an unset draft_num_predict is 4 (api.DefaultOptions).
            return f"{ollama_parameter(0)}: no speculation"
        return ollama_parameter(n_max)
    if n_max is None:
        return f'"{LM_STUDIO_SWITCH}" off'
    return lm_studio_setting(n_max)

