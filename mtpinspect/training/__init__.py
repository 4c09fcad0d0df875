"""The recipe of the built-in trained model (trained_model.py): corpus -> tokenizer -> model -> train ->
checkpoint -> the pinned converter. Everything here but this module and toolchain.py needs the train
extra (torch, transformers), and nothing at run time imports it: `sweep`, `check` and `tiny-model
--trained` read the shipped GGUF.
"""

from __future__ import annotations

import importlib.util

TRAIN_EXTRA = "pip install '.[train]' in mtpinspect's checkout; docs/train.md"
_NEEDS = ("torch", "transformers", "safetensors")


def missing(names: tuple[str, ...] = _NEEDS) -> list[str]:
    """The train extra's packages that cannot be imported here."""
    absent = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a finder that refuses the name, or a module left half-imported
            found = False
        if not found:
            absent.append(name)
    return absent
