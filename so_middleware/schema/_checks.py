"""Construction-time checks of a JSON schema's values, each failure a short `UserError` naming the field.

- Every value is JSON: a `set` in a `default`, `NaN` in a `maximum` or a non-string key would
  fail only when the request is serialised, after the caller's call started.
- An `enum` has at least one value (an empty `Enum` can never be answered) and no value twice.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..core import UserError

__all__ = ["check_schema_values", "drop_repeated_enum_values", "field_path"]

_JSON_TYPES = (str, bool, int, type(None), dict, list)
# Keywords whose values are data, not schemas.
_DATA = frozenset({"enum", "const", "default", "examples"})
_NAMES = {"properties": "", "$defs": "$defs.", "definitions": "definitions."}


def field_path(pointer: tuple[str, ...]) -> str:
    """`("properties", "a", "items", "properties", "b")` → `a[].b`: the field, not the schema path."""
    parts: list[str] = []
    index = 0
    while index < len(pointer):
        key = pointer[index]
        if key in _NAMES and index + 1 < len(pointer):
            name = _NAMES[key] + pointer[index + 1]
            parts.append(f".{name}" if parts else name)
            index += 2
            continue
        if key == "items":
            parts.append("[]")
        elif key not in ("anyOf", "oneOf", "allOf") and not key.isdigit():
            parts.append(f".{key}" if parts else key)
        index += 1
    return "".join(parts) or "<root>"


def _not_json(value: Any) -> str | None:
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} (not a finite number)"
    if isinstance(value, _JSON_TYPES):
        return None
    return f"a {type(value).__name__}"


def _enum_problem(values: Any) -> str | None:
    if not isinstance(values, list):
        return None
    if not values:
        return "'enum' has no values, so no answer can match (an Enum class without members?)"
    return None


def drop_repeated_enum_values(schema: Any) -> None:
    """Keep, in place, only the first copy of each value an `enum` lists twice.

    A repeated value changes nothing the schema allows (JSON Schema asks enums to be unique;
    many in the wild are not), but some providers refuse it.
    """
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("enum"), list):
                node["enum"] = _first_copies(node["enum"])
            stack.extend(value for key, value in node.items() if key not in _DATA)
        elif isinstance(node, list):
            stack.extend(node)


def _first_copies(values: list[Any]) -> list[Any]:
    kept: list[Any] = []
    seen: set[str] = set()
    for value in values:
        try:
            key = json.dumps(value, sort_keys=True)
        except (TypeError, ValueError):
            kept.append(value)  # reported as not JSON
            continue
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


def check_schema_values(schema: Any, what: str) -> None:
    """Raise `UserError` for the first value that is not JSON or enum that cannot work."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    while stack:
        node, pointer = stack.pop()
        reason = _not_json(node)
        if reason is None and isinstance(node, dict):
            bad_key = next((key for key in node if not isinstance(key, str)), None)
            if bad_key is not None:
                reason = f"a key {bad_key!r} that is not a string"
            elif "enum" in node and (not pointer or pointer[-1] != "properties"):
                reason = _enum_problem(node["enum"])
                pointer = (*pointer, "enum") if reason else pointer
        if reason is not None:
            where = field_path(pointer[:-1]) if pointer else "<root>"
            keyword = f" ('{pointer[-1]}')" if pointer else ""
            raise UserError(f"The JSON schema of {what} is not usable at {where}{keyword}: {reason}.")
        if isinstance(node, dict):
            stack.extend((value, (*pointer, str(key))) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, (*pointer, str(index))) for index, value in enumerate(node))
