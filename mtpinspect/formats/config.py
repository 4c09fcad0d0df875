"""config.json: which MTP depth a model announces, under which key, and the shapes needed to judge it.

Families spell the depth differently (`num_nextn_predict_layers` for DeepSeek, GLM, MiMo, Step;
`mtp_num_hidden_layers` for Qwen3.5/3.6, often under `text_config`), some announce 0 (Kimi-K2), and
Qwen3-Next announces nothing at all: only its `mtp.*` tensors tell.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtpinspect.errors import FormatError

# In the order we trust them; `num_mtp_modules` (MiniMax) is ambiguous and only used when nothing else is set.
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "nextn_predict_layers", "num_mtp_layers")
AMBIGUOUS_MTP_KEYS = ("num_mtp_modules",)
_NESTED = ("text_config", "language_config", "llm_config")
# No real count (layers, hidden size, vocabulary) comes near 2**31; engines keep them in 32-bit ints.
MAX_COUNT = 2**31 - 1


@dataclass(frozen=True)
class MtpDeclaration:
    layers: int
    key: str  # dotted path, e.g. "text_config.mtp_num_hidden_layers"
    ambiguous: bool = False


@dataclass(frozen=True)
class ModelConfig:
    model_type: str | None
    architectures: tuple[str, ...]
    num_hidden_layers: int | None
    hidden_size: int | None
    vocab_size: int | None
    torch_dtype: str | None
    mtp: MtpDeclaration | None  # None: the config names no MTP depth at all
    text_prefix: str  # "" or "text_config." : where the decoder's keys live
    raw: Mapping[str, Any]

    @property
    def text(self) -> Mapping[str, Any]:
        return self.raw.get(self.text_prefix.rstrip("."), self.raw) if self.text_prefix else self.raw


def _count(scope: Mapping[str, Any], key: str, path: str) -> int | None:
    """``scope[key]`` as a count (layers, widths, vocabulary): None when absent or null. Anything but an integer
    from 0 to MAX_COUNT is a FormatError naming the key and the value: engines would fail on it, or worse."""
    value = scope.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        shown = json.dumps(value) if isinstance(value, (bool, int, float, str)) else type(value).__name__
        raise FormatError(f"config.json: {path} = {shown[:80]}: expected an integer from 0 to {MAX_COUNT}")
    return value


def _find_mtp(raw: Mapping[str, Any]) -> MtpDeclaration | None:
    scopes: list[tuple[str, Mapping[str, Any]]] = [("", raw)]
    scopes += [(f"{k}.", raw[k]) for k in _NESTED if isinstance(raw.get(k), Mapping)]
    for keys, ambiguous in ((MTP_KEYS, False), (AMBIGUOUS_MTP_KEYS, True)):
        for prefix, scope in scopes:
            for key in keys:
                n = _count(scope, key, f"{prefix}{key}")
                if n is not None:
                    return MtpDeclaration(layers=n, key=f"{prefix}{key}", ambiguous=ambiguous)
    return None


def parse_config(raw: Mapping[str, Any]) -> ModelConfig:
    prefix = next((f"{k}." for k in _NESTED if isinstance(raw.get(k), Mapping) and "num_hidden_layers" in raw[k]), "")
    text = raw[prefix.rstrip(".")] if prefix else raw

    def pick(key: str) -> Any:
        return text.get(key, raw.get(key))

    def count(key: str) -> int | None:
        return _count(text, key, f"{prefix}{key}") if key in text else _count(raw, key, key)

    archs = raw.get("architectures") or text.get("architectures") or ()
    return ModelConfig(
        model_type=raw.get("model_type") if isinstance(raw.get("model_type"), str) else None,
        architectures=tuple(a for a in archs if isinstance(a, str)),
        num_hidden_layers=count("num_hidden_layers"),
        hidden_size=count("hidden_size"),
        vocab_size=count("vocab_size"),
        torch_dtype=pick("torch_dtype") or pick("dtype"),
        mtp=_find_mtp(raw),
        text_prefix=prefix,
        raw=raw,
    )
