"""diagnose for a model of an app: the run's settings read from the app, and the fixes said in its terms.

An Ollama model's run is what Ollama starts (github.com/ollama/ollama llm/llama_server.go, server/routes.go):
its Modelfile's ``temperature`` (0.8 when neither the Modelfile nor the request sets one), ``num_ctx``
as ``-c``, and, when the GGUF has a head (or the manifest a DRAFT layer) and ``draft_num_predict`` is
above 0 (4 by default with a DRAFT layer), ``--spec-type draft-mtp --spec-draft-n-max N`` with the
DRAFT blob as the draft model. LM Studio keeps its load settings to itself: its run is the flags given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mtpinspect.apps import (
    APP_NAMES,
    DRAFT_NUM_PREDICT,
    OLLAMA_DEFAULT_TEMPERATURE,
    OLLAMA_NUM_CTX,
    OLLAMA_TEMPERATURE,
    app_setting,
    ollama_n_max,
)
from mtpinspect.diagnosis.causes import Cause
from mtpinspect.errors import FormatError
from mtpinspect.inspection.report import CheckReport
from mtpinspect.runtime.flags import CTX_SIZE, DRAFT_MODEL, MTP_SPEC_TYPE, N_MAX, SPEC_TYPE, TEMPERATURE, ServerArgs
from mtpinspect.sources.app_stores import AppModel
from mtpinspect.sources.ollama import whole_number
from mtpinspect.vocabulary import App


def ollama_run_settings(app: AppModel, report: CheckReport) -> tuple[ServerArgs, list[str]]:
    """The llama-server settings Ollama runs this model with, and one line per setting saying where it comes from."""
    args: list[str] = []
    origin: list[str] = []
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
    num_ctx = whole_number(app.parameters, OLLAMA_NUM_CTX, f"ollama:{app.name}")
    if num_ctx is not None:
        args += CTX_SIZE.spelled(num_ctx)
        origin.append(f"-c {num_ctx}: PARAMETER {OLLAMA_NUM_CTX} {num_ctx}")
    n_max = ollama_n_max(app)
    has_head = report.mtp_layers > 0 or app.draft_file is not None
    if n_max > 0 and has_head:
        args += [*SPEC_TYPE.spelled(MTP_SPEC_TYPE), *N_MAX.spelled(n_max)]
        if app.draft_file:
            args += DRAFT_MODEL.spelled(app.draft_file)
        given = f"PARAMETER {DRAFT_NUM_PREDICT} {app.draft_num_predict}" if app.draft_num_predict is not None else \
            f"{DRAFT_NUM_PREDICT} unset: Ollama's default with a DRAFT layer"
        origin.append(f"--spec-type {MTP_SPEC_TYPE} --spec-draft-n-max {n_max}"
                      + (" -md DRAFT-blob" if app.draft_file else "") + f": {given}")
    elif n_max > 0:
        origin.append(f"no --spec-type: {DRAFT_NUM_PREDICT} {n_max} is set, but there is no head to draft with")
    else:
        origin.append(f"no --spec-type: the Modelfile sets {DRAFT_NUM_PREDICT} "
                      + ("0" if app.draft_num_predict == 0 else "nowhere") + ", so Ollama starts no speculation")
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
    }
    out = []
    for cause in causes:
        fix = fixes.get(cause.code)
        out.append(dataclasses.replace(cause, fix=f"in {name}: {fix} (llama-server: {cause.fix})") if fix else cause)
    return out
