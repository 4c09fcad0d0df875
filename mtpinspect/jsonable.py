"""Results as plain JSON values: the one path from a typed result to what --format json prints and what the
report and journal files hold.

A dataclass becomes an object of its fields, in order. Field metadata (:func:`json_field`) adjusts one
field: left out, written under another name, or given a value for None; a class maps JSON keys to the
properties to add in ``json_properties``. A class with ``json_schema`` is a document: its object starts with the
one header all the documents share, ``$schema`` (the schema's id) and ``schema_version``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

SCHEMA_BASE = "https://mtpinspect.invalid/schemas/"
# Bumped when a field changes meaning or disappears (mtpinspect/schemas/<name>.schema.json says the same).
SCHEMA_VERSIONS = {"check": 3, "sweep": 1, "diagnose": 1, "find": 1, "drift": 1}

_NAME = "json_name"
_OMIT = "json_omit"
_WHEN_NONE = "json_when_none"
_UNSET = object()


def json_field(*, name: str | None = None, omit: bool = False, when_none: Any = _UNSET, **kwargs: Any) -> Any:
    """A dataclass field with its JSON form: written as ``name``, left out, or ``when_none`` for None."""
    metadata = {_NAME: name, _OMIT: omit}
    if when_none is not _UNSET:
        metadata[_WHEN_NONE] = when_none
    return dataclasses.field(metadata=metadata, **kwargs)


def schema_header(name: str) -> dict[str, Any]:
    return {"$schema": f"{SCHEMA_BASE}{name}.schema.json", "schema_version": SCHEMA_VERSIONS[name]}


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, tuples and paths become plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _object(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(to_jsonable(k)): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _object(value: Any) -> dict[str, Any]:
    schema = getattr(value, "json_schema", None)
    data: dict[str, Any] = schema_header(schema) if schema else {}
    for f in dataclasses.fields(value):
        if f.metadata.get(_OMIT):
            continue
        item = getattr(value, f.name)
        if item is None and _WHEN_NONE in f.metadata:
            item = f.metadata[_WHEN_NONE]
        data[f.metadata.get(_NAME) or f.name] = to_jsonable(item)
    for key, name in getattr(value, "json_properties", {}).items():
        data[key] = to_jsonable(getattr(value, name))
    return data
