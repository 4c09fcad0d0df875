"""diagnose for a model of an app: the run's settings read from the app, and the fixes said in its terms.

An Ollama model's run is what Ollama starts (github.com/ollama/ollama llm/llama_server.go 369-400 and
802-835, server/routes.go 125-160, server/sched.go 497-510; the facts with their lines:
mtpinspect/app_facts.py): ``-c`` (num_ctx, else OLLAMA_CONTEXT_LENGTH, else its default by VRAM, capped at
the model's training context, times the slots) and ``-np``; ``-b``/``-ub``; the KV-cache type and the
flash-attention mode from its environment; the temperature (0.8 when neither the Modelfile nor the
request sets one); and, when the GGUF has a head or the manifest a DRAFT layer and ``draft_num_predict``
is above 0, ``--spec-type draft-mtp --spec-draft-n-max N --spec-draft-backend-sampling`` (draft-dflash for
a DFlash drafter, from 0.32.7) with the DRAFT blob as the draft model. The llama.cpp is the pinned one,
not the build Ollama vendors: the notes say which that is. LM Studio keeps its load settings to itself:
its run is the flags given.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mtpinspect.app_facts import (
    DRAFT_NUM_PREDICT,
    OLLAMA_BUILDS_CHECKED_TO,
    OLLAMA_CONTEXT_LENGTH_ENV,
    OLLAMA_DEFAULT_NUM_BATCH,
    OLLAMA_DEFAULT_NUM_CTX_BY_VRAM,
    OLLAMA_DEFAULT_TEMPERATURE,
    OLLAMA_DRAFT_MTP,
    OLLAMA_FLASH_ATTENTION_ENV,
    OLLAMA_KV_CACHE_TYPE_ENV,
    OLLAMA_LLAMA_CPP_BUILDS,
    OLLAMA_NUM_BATCH,
    OLLAMA_NUM_CTX,
    OLLAMA_NUM_PARALLEL_ENV,
    OLLAMA_SINGLE_SLOT_FAMILIES,
    OLLAMA_TEMPERATURE,
    ollama_default_num_ctx,
    ollama_llama_cpp_build,
)
from mtpinspect.apps import APP_NAMES, app_setting, ollama_draft_type, ollama_n_max, ollama_version_said
from mtpinspect.causes import Cause
from mtpinspect.errors import FormatError, MtpinspectError
from mtpinspect.runtime.flags import (
    BATCH,
    CACHE_TYPE_K,
    CACHE_TYPE_V,
    CTX_SIZE,
    DRAFT_MODEL,
    FLASH_ATTN,
    N_MAX,
    PARALLEL,
    SPEC_BACKEND_SAMPLING,
    SPEC_TYPE,
    TEMPERATURE,
    UBATCH,
    ServerArgs,
)
from mtpinspect.runtime.pin import PINNED_LLAMA_CPP, PINNED_PACKAGE, PINNED_VERSION
from mtpinspect.sources.local import LocalFileReader
from mtpinspect.sources.target import AppModel
from mtpinspect.vocabulary import App

if TYPE_CHECKING:
    from mtpinspect.inspection.report import CheckReport

_TRUE = ("1", "true", "t", "yes", "on")  # Go's strconv.ParseBool, as envconfig.BoolWithDefault reads it
_FALSE = ("0", "false", "f", "no", "off")


def _gguf_facts(path: str) -> tuple[str | None, int | None]:
    """A GGUF's architecture and training context (None when it cannot be read: check said why)."""
    from mtpinspect.formats.gguf import read_gguf_header  # an app model's: `diagnose --log` reads none

    try:
        header = read_gguf_header(LocalFileReader(path))
    except MtpinspectError:
        return None, None
    arch = header.architecture
    ctx = header.get(f"{arch}.context_length") if arch else None
    return arch, ctx if isinstance(ctx, int) and not isinstance(ctx, bool) and ctx > 0 else None


def _context(app: AppModel, train_ctx: int | None, slots: int) -> tuple[int, str]:
    """-c as Ollama computes it, and where it comes from."""
    from mtpinspect.sources.ollama import whole_number  # Ollama's reader for its models only: never for a log

    num_ctx = whole_number(app.parameters, OLLAMA_NUM_CTX, f"ollama:{app.name}")
    env = os.environ.get(OLLAMA_CONTEXT_LENGTH_ENV, "").strip()
    if num_ctx is not None:
        ctx, why = num_ctx, f"PARAMETER {OLLAMA_NUM_CTX} {num_ctx}"
    elif env.isdigit() and int(env) > 0:
        ctx, why = int(env), f"{OLLAMA_CONTEXT_LENGTH_ENV}={env} in this environment"
    else:
        ctx = ollama_default_num_ctx(0)
        tiers = ", ".join(f"{c} from {v} GiB" for v, c in OLLAMA_DEFAULT_NUM_CTX_BY_VRAM if v)
        why = (f"no {OLLAMA_NUM_CTX} and no {OLLAMA_CONTEXT_LENGTH_ENV}: Ollama's default under 23 GiB of VRAM "
               f"({tiers}; a request's options may set {OLLAMA_NUM_CTX})")
    if train_ctx is not None and ctx > train_ctx:
        ctx, why = train_ctx, f"{why}, capped at the model's training context {train_ctx}"
    if slots > 1:
        why += f", times {slots} slots"
    return ctx * slots, why


def _slots(arch: str | None) -> tuple[int, str]:
    env = os.environ.get(OLLAMA_NUM_PARALLEL_ENV, "").strip()
    slots = max(int(env), 1) if env.isdigit() else 1
    if arch in OLLAMA_SINGLE_SLOT_FAMILIES and slots > 1:
        return 1, f"one slot: Ollama loads {arch} with one whatever {OLLAMA_NUM_PARALLEL_ENV} says"
    return slots, (f"{OLLAMA_NUM_PARALLEL_ENV}={env} in this environment" if env.isdigit() else
                   f"{OLLAMA_NUM_PARALLEL_ENV} unset: one slot")


def _environment_flags() -> tuple[list[str], list[str]]:
    """The KV-cache type and flash-attention mode Ollama passes, from the environment it would read."""
    args: list[str] = []
    origin: list[str] = []
    kv = os.environ.get(OLLAMA_KV_CACHE_TYPE_ENV, "").strip().lower()
    if kv:
        args += [*CACHE_TYPE_K.spelled(kv), *CACHE_TYPE_V.spelled(kv)]
        origin.append(f"--cache-type-k {kv} --cache-type-v {kv}: {OLLAMA_KV_CACHE_TYPE_ENV} in this environment")
    fa = os.environ.get(OLLAMA_FLASH_ATTENTION_ENV, "").strip().lower()
    mode = "on" if fa in _TRUE else "off" if fa in _FALSE else "auto"
    args += FLASH_ATTN.spelled(mode)
    origin.append(f"--flash-attn {mode}: " + (f"{OLLAMA_FLASH_ATTENTION_ENV}={fa} in this environment" if mode != "auto"
                                               else f"{OLLAMA_FLASH_ATTENTION_ENV} unset (Ollama passes off instead on a GPU "
                                               "without flash-attention support)"))
    return args, origin


def ollama_build_note(app: AppModel) -> str:
    """Which llama.cpp Ollama runs this model on, and that the probe runs the pinned one."""
    from mtpinspect.sources.ollama import server_address  # as in _context

    ours = f"this run uses mtpinspect's pinned llama.cpp {PINNED_LLAMA_CPP} ({PINNED_PACKAGE} {PINNED_VERSION})"
    build = ollama_llama_cpp_build(app.version) if app.version else None
    if build:
        return (f"{ollama_version_said(app)} (the server answering on {':'.join(map(str, server_address()))}) vendors "
                f"llama.cpp {build} (its LLAMA_CPP_VERSION); {ours}, another build: acceptance and speed can differ")
    first, last = OLLAMA_LLAMA_CPP_BUILDS[0], OLLAMA_LLAMA_CPP_BUILDS[-1]
    which = (f"Ollama {app.version} is past the releases mtpinspect knows (to {OLLAMA_BUILDS_CHECKED_TO})" if app.version
             else f"no Ollama answered on {':'.join(map(str, server_address()))} to say its version")
    return (f"Ollama {first[0]} to {OLLAMA_BUILDS_CHECKED_TO} vendor llama.cpp {first[1]} to {last[1]} (their "
            f"LLAMA_CPP_VERSION); {which}; {ours}, another build: acceptance and speed can differ")


def ollama_run_settings(app: AppModel, report: CheckReport) -> tuple[ServerArgs, list[str]]:
    """The llama-server settings Ollama runs this model with, and one line per setting saying where it comes from."""
    from mtpinspect.sources.ollama import whole_number  # as in _context

    arch, train_ctx = _gguf_facts(app.model_file)
    slots, slots_why = _slots(arch)
    ctx, ctx_why = _context(app, train_ctx, slots)
    args = [*CTX_SIZE.spelled(ctx), *PARALLEL.spelled(slots)]
    origin = [f"-c {ctx}: {ctx_why}", f"-np {slots}: {slots_why}"]
    temperature = app.parameters.get(OLLAMA_TEMPERATURE)
    if temperature is None:
        args += TEMPERATURE.spelled(OLLAMA_DEFAULT_TEMPERATURE)
        origin.append(f"--temp {OLLAMA_DEFAULT_TEMPERATURE:g}: the Modelfile sets no temperature, so Ollama samples at "
                      "its default unless the request's options set one")
    elif isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise FormatError(f"ollama:{app.name}: Modelfile parameter {OLLAMA_TEMPERATURE} is {temperature!r}, not a number")
    else:
        args += TEMPERATURE.spelled(f"{temperature:g}")
        origin.append(f"--temp {temperature:g}: PARAMETER {OLLAMA_TEMPERATURE} {temperature:g}")
    n_max = ollama_n_max(app)
    has_head = report.mtp_layers > 0 or app.draft_file is not None
    if n_max > 0 and has_head:
        spec_type = ollama_draft_type(_gguf_facts(app.draft_file)[0], app.version) if app.draft_file else OLLAMA_DRAFT_MTP
        args += [*SPEC_TYPE.spelled(spec_type), *N_MAX.spelled(n_max)]
        if spec_type == OLLAMA_DRAFT_MTP:
            args += SPEC_BACKEND_SAMPLING.spelled()
        if app.draft_file:
            args += DRAFT_MODEL.spelled(app.draft_file)
        given = f"PARAMETER {DRAFT_NUM_PREDICT} {app.draft_num_predict}" if app.draft_num_predict is not None else \
            f"{DRAFT_NUM_PREDICT} unset: Ollama's default with a DRAFT layer"
        sampling = f" {SPEC_BACKEND_SAMPLING.spellings[0]}" if spec_type == OLLAMA_DRAFT_MTP else ""
        origin.append(f"--spec-type {spec_type} --spec-draft-n-max {n_max}{sampling}"
                      + (" -md DRAFT-blob" if app.draft_file else "") + f": {given}")
    elif n_max > 0:
        origin.append(f"no --spec-type: {DRAFT_NUM_PREDICT} {n_max} is set, but there is no head to draft with")
    else:
        origin.append(f"no --spec-type: the Modelfile sets {DRAFT_NUM_PREDICT} "
                      + ("0" if app.draft_num_predict == 0 else "nowhere") + ", so Ollama starts no speculation unless "
                      "a request's options or `/set parameter` set it")
    env_args, env_origin = _environment_flags()
    args += env_args
    origin += env_origin
    num_batch = whole_number(app.parameters, OLLAMA_NUM_BATCH, f"ollama:{app.name}")
    batch = num_batch if num_batch is not None else OLLAMA_DEFAULT_NUM_BATCH
    args += [*BATCH.spelled(batch), *UBATCH.spelled(batch)]
    origin.append(f"-b {batch} -ub {batch}: " + (f"PARAMETER {OLLAMA_NUM_BATCH} {num_batch}" if num_batch is not None
                                                 else "Ollama's generation batch for a context of 4096 or less"))
    origin.append(ollama_build_note(app))
    return ServerArgs.of(args), origin


def in_app_terms(causes: Sequence[Cause], app: AppModel, report: CheckReport, smallest_n_max: int | None) -> list[Cause]:
    """Each cause's fix as the app's setting first, the llama-server form after it."""
    name = APP_NAMES[app.app]
    runtime = report.runtimes.get(app.app.value)
    fixes = {
        "MTP_NOT_ENABLED": runtime.command if runtime is not None and runtime.command else None,
        "SLOWER_THAN_BASELINE": f"{app_setting(app.app, None)} (leave MTP off on this machine)",
        "NMAX_TOO_HIGH": app_setting(app.app, smallest_n_max) if smallest_n_max else None,
        "HIGH_TEMPERATURE": (f"PARAMETER {OLLAMA_TEMPERATURE} 0 in the Modelfile (or \"options\": "
                             f"{{\"{OLLAMA_TEMPERATURE}\": 0}} in the request) for the best acceptance; Ollama samples at "
                             f"{OLLAMA_DEFAULT_TEMPERATURE:g} when neither sets it") if app.app is App.ollama else
        "Temperature 0 in the chat's sampling settings for the best acceptance",
        "NO_MTP_HEAD": "a model whose GGUF carries an MTP head (check it first: mtpinspect check on its GGUF)",
        "MTP_WEIGHTS_MISSING": ("a tag whose GGUF carries the head, or the mtp- file as a Modelfile DRAFT layer"
                                if app.app is App.ollama else "a GGUF that bundles the head"),
        "HEAD_FOREIGN": ("a DRAFT layer made from the same release as the model (its own mtp- file, same repo and "
                         "revision), or a tag whose GGUF bundles the head" if app.app is App.ollama
                         else "a GGUF of this model that bundles its own head"),
    }
    out = []
    for cause in causes:
        fix = fixes.get(cause.code)
        out.append(dataclasses.replace(cause, fix=f"in {name}: {fix} (llama-server: {cause.fix})") if fix else cause)
    return out
