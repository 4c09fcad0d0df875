"""config.json: which MTP depth a model announces, under which key, and the shapes needed to judge it.

Families spell the depth differently (`num_nextn_predict_layers` for DeepSeek, GLM, MiMo, Step;
`mtp_num_hidden_layers` for Qwen3.5/3.6, often under `text_config`), some announce 0 (Kimi-K2), and
Qwen3-Next announces nothing at all: only its `mtp.*` tensors tell.

A key this module reads must hold what the key means (a count is a non-negative integer, a name a
string, `architectures` a list of names), or the file is a FormatError naming the file, the key and
the value: a config that says `"num_hidden_layers": "61"` is broken, not silent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtpinspect.errors import FormatError, shown

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


def _count(scope: Mapping[str, Any], key: str, where: str, name: str) -> int | None:
    """``scope[key]`` as a count, None when absent or null; FormatError for anything else."""
    value = scope.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    raise FormatError(f"{name}: {where}{key} is {shown(value)}, not a count (an integer from 0 to {MAX_COUNT:,})")


def _name(value: Any, key: str, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise FormatError(f"{name}: {key} is {shown(value)}, not a name")


def _names(value: Any, key: str, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise FormatError(f"{name}: {key} is {shown(value)}, not a list of names")


def _find_mtp(raw: Mapping[str, Any], name: str) -> MtpDeclaration | None:
    scopes: list[tuple[str, Mapping[str, Any]]] = [("", raw)]
    scopes += [(f"{k}.", raw[k]) for k in _NESTED if isinstance(raw.get(k), Mapping)]
    for keys, ambiguous in ((MTP_KEYS, False), (AMBIGUOUS_MTP_KEYS, True)):
        for prefix, scope in scopes:
            for key in keys:
                n = _count(scope, key, prefix, name)
                if n is not None:
                    return MtpDeclaration(layers=n, key=f"{prefix}{key}", ambiguous=ambiguous)
    return None


def parse_config(raw: Mapping[str, Any], name: str = "config.json") -> ModelConfig:
    """The decoder's shape and MTP declaration of a config.json; ``name`` is the file, for messages."""
    prefix = next((f"{k}." for k in _NESTED if isinstance(raw.get(k), Mapping) and "num_hidden_layers" in raw[k]), "")
    text = raw[prefix.rstrip(".")] if prefix else raw

    def count(key: str) -> int | None:
        return _count(text, key, prefix, name) if key in text else _count(raw, key, "", name)

    def pick(key: str) -> Any:
        return text.get(key, raw.get(key))

    archs_key = "architectures" if raw.get("architectures") is not None else f"{prefix}architectures"
    return ModelConfig(
        model_type=_name(raw.get("model_type"), "model_type", name),
        architectures=_names(raw.get("architectures") or (text.get("architectures") if prefix else None), archs_key, name),
        num_hidden_layers=count("num_hidden_layers"),
        hidden_size=count("hidden_size"),
        vocab_size=count("vocab_size"),
        torch_dtype=_name(pick("torch_dtype") or pick("dtype"), "torch_dtype", name),
        mtp=_find_mtp(raw, name),
        text_prefix=prefix,
        raw=raw,
    )
