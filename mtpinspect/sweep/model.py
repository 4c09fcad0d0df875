"""The model a measurement runs on llama-server: a GGUF the user names, or the built-in trained model."""

from __future__ import annotations

from pathlib import Path

from mtpinspect.errors import SourceError


def model_file(model: Path | None) -> tuple[Path, bool]:
    """The GGUF's resolved path, and whether it is a built-in model (None asks for the default one,
    ``builtin:NAME`` for another)."""
    from mtpinspect.trained_model import built_in, is_built_in

    if model is None or is_built_in(model):
        # A built-in model, read where the package keeps it: its head learned to draft, so acceptance
        # depends on the prompt class as a real head's does (trained_model.py).
        return built_in(model).resolve(), True
    path = Path(model).expanduser()
    if not path.is_file():
        raise SourceError(f"{model}: no such model file")
    return path.resolve(), False
