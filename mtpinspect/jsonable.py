"""Results as plain JSON values: what --format json prints and what the JSONL and report files hold."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, tuples and paths become plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            return to_jsonable(to_dict())
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
