"""Validation errors in the words of the manifest, not of the library that checked it (pure).

pydantic says "Input should be greater than or equal to 1" and "Field required"; a user wrote
`minProcesses: 0` and wants to read "must be at least 1". Unknown fields get the nearest real field
of the same object as a suggestion (`minProccesses` -> `minProcesses`).
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails


def plain_message(error: ErrorDetails) -> str:
    """One pydantic error as a short sentence about the value."""
    kind, ctx = error["type"], error.get("ctx") or {}
    value = error.get("input")
    simple = {
        "missing": "required field is missing",
        "int_type": f"must be a whole number, not {value!r}",
        "int_parsing": f"must be a whole number, not {value!r}",
        "int_from_float": f"must be a whole number, not {value!r}",
        "float_type": f"must be a number, not {value!r}",
        "float_parsing": f"must be a number, not {value!r}",
        "bool_type": f"must be true or false, not {value!r}",
        "bool_parsing": f"must be true or false, not {value!r}",
        "string_type": f"must be a string, not {value!r}",
        "list_type": f"must be a list, not {type(value).__name__}",
        "dict_type": f"must be a mapping (key: value), not {type(value).__name__}",
        "model_type": f"must be a mapping (key: value), not {type(value).__name__}",
        "model_attributes_type": f"must be a mapping (key: value), not {type(value).__name__}",
        "greater_than_equal": f"must be at least {ctx.get('ge')}, not {value!r}",
        "greater_than": f"must be more than {ctx.get('gt')}, not {value!r}",
        "less_than_equal": f"must be at most {ctx.get('le')}, not {value!r}",
        "less_than": f"must be less than {ctx.get('lt')}, not {value!r}",
        "too_long": f"has too many entries: at most {ctx.get('max_length')}",
        "too_short": f"has too few entries: at least {ctx.get('min_length')}",
        "string_too_long": f"is too long: at most {ctx.get('max_length')} characters",
        "string_too_short": f"is too short: at least {ctx.get('min_length')} characters",
        "literal_error": f"must be one of {ctx.get('expected')}, not {value!r}",
        "enum": f"must be one of {ctx.get('expected')}, not {value!r}",
        "string_pattern_mismatch": f"{value!r} does not have the required form ({ctx.get('pattern')})",
    }
    if kind in simple:
        return simple[kind]
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message.replace("Input should be", "must be")


def field_names(model: type[BaseModel], location: Sequence[str | int]) -> list[str]:
    """The names (camelCase aliases) a user may write in the object at `location` inside `model`."""
    current: Any = model
    for part in location:
        if isinstance(part, int) or not _is_model(current):
            continue
        found = next(
            (f for name, f in current.model_fields.items() if part in (name, f.alias)),
            None,
        )
        if found is None:
            return []
        current = _model_in(found.annotation)
        if current is None:
            return []
    return [f.alias or name for name, f in current.model_fields.items()] if _is_model(current) else []


def nearest(name: str, candidates: Sequence[str]) -> str | None:
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered:
        return lowered[name.lower()]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_field_message(name: str, candidates: Sequence[str]) -> str:
    suggestion = nearest(name, candidates)
    if suggestion:
        return f"unknown field; did you mean {suggestion}?"
    known = ", ".join(candidates)
    return f"unknown field; the fields here are {known}" if known else "unknown field"


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model inside an annotation such as `TenantsSpec | None` or `list[PoolSpec]`."""
    if _is_model(annotation):
        return typing.cast(type[BaseModel], annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None
