"""The model's recommended sampling temperature (sweep --temperature recommended).

A chat UI samples at the temperature the model's authors recommend, and acceptance under sampling is what
such a user gets. It is read from the GGUF (``general.sampling.temp``, written by convert_hf_to_gguf.py
from generation_config.json) or, when the GGUF has none, from a generation_config.json beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import gguf

from mtpinspect.errors import MtpinspectError, UsageError
from mtpinspect.files import read_bounded
from mtpinspect.formats.gguf import read_gguf_header
from mtpinspect.sources.reader import LocalFileReader

RECOMMENDED = "recommended"
GENERATION_CONFIG = "generation_config.json"
# A generation_config.json is a few hundred bytes.
_CONFIG_LIMIT = 1 << 20


def recommended_temperature(model: str | Path | None) -> float:
    """The temperature the model recommends; UsageError naming where it looked when it gives none."""
    path = _model_path(model)
    try:
        header = read_gguf_header(LocalFileReader(path))
    except MtpinspectError as exc:
        raise UsageError(f"--temperature {RECOMMENDED}: {exc}") from None
    value = header.get(gguf.Keys.General.SAMPLING_TEMP)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    config = path.parent / GENERATION_CONFIG
    if config.is_file():
        try:
            value = json.loads(read_bounded(config, _CONFIG_LIMIT, GENERATION_CONFIG)).get("temperature")
        except (ValueError, AttributeError):
            value = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    raise UsageError(f"--temperature {RECOMMENDED}: {path.name} recommends none (no {gguf.Keys.General.SAMPLING_TEMP} "
                     f"in the GGUF, no temperature in a {GENERATION_CONFIG} beside it); give a number")


def _model_path(model: str | Path | None) -> Path:
    from mtpinspect.trained_model import built_in, is_built_in

    if model is None or is_built_in(model):
        return Path(built_in(model).resolve())
    if isinstance(model, str) and ":" in model and not Path(model).exists():
        raise UsageError(f"--temperature {RECOMMENDED}: read from a GGUF file; for {model} give a number")
    path = Path(model).expanduser()
    if not path.is_file():
        raise UsageError(f"--temperature {RECOMMENDED}: {model}: no such model file")
    return path
