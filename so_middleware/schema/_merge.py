"""Merge sub-schemas that apply to the same value (`allOf`, a `$ref` beside other keywords) into one.

The merge is a conjunction: every constraint of every part is kept (`required` lists are joined,
bounds tightened, types and enums intersected, shared properties combined under `allOf`). Where
one schema cannot say what the parts say together (two different patterns, two unions, a type
no part allows), `MergeConflict` names the keyword instead of dropping either side. Annotations
(`description`, `title`, `default`) are taken from the outer schema, the more specific one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._refs import ANNOTATIONS

__all__ = ["MergeConflict", "merge_schemas"]

_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
_SUB_SCHEMAS = ("items", "additionalProperties", "contains", "propertyNames", "unevaluatedItems")
_DROPPED = frozenset({"$defs", "definitions", "$id", "$schema", "$anchor"})


class MergeConflict(ValueError):
    """Two parts of an `allOf` (or a `$ref` and its siblings) cannot be written as one schema."""


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=repr) == json.dumps(b, sort_keys=True, default=repr)


def _types(value: Any) -> set[str]:
    return set(value) if isinstance(value, list) else {value}


def _merge_type(a: Any, b: Any) -> Any:
    left, right = _types(a), _types(b)
    both = (left & right) | ({"integer"} if ("integer" in left and "number" in right) else set())
    both |= {"integer"} if ("number" in left and "integer" in right) else set()
    if not both:
        raise MergeConflict(f"'type' {a!r} and {b!r} have no type in common")
    ordered = [kind for kind in (a if isinstance(a, list) else [a]) if kind in both]
    ordered += sorted(both - set(ordered))
    return ordered[0] if len(ordered) == 1 else ordered


def _merge_enum(a: list[Any], b: list[Any]) -> list[Any]:
    kept = [value for value in a if any(_same(value, other) for other in b)]
    if not kept:
        raise MergeConflict("the 'enum' lists have no value in common")
    return kept


def _merge_properties(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    merged = dict(a)
    for name, sub in b.items():
        merged[name] = {"allOf": [merged[name], sub]} if name in merged and not _same(merged[name], sub) else sub
    return merged


def _check_closed(closed: dict[str, Any], other: dict[str, Any]) -> None:
    """`additionalProperties: false` on one side forbids the other side's extra properties."""
    if closed.get("additionalProperties") is not False:
        return
    known = set(closed.get("properties") or {})
    extra = [name for name in (other.get("properties") or {}) if name not in known]
    if extra:
        raise MergeConflict(
            f"one part closes the object (additionalProperties: false) and another adds properties {extra[:5]}"
        )


def _merge_key(key: str, a: Any, b: Any) -> Any:
    if _same(a, b):
        return a
    if key == "type":
        return _merge_type(a, b)
    if key == "required" and isinstance(a, list) and isinstance(b, list):
        return list(dict.fromkeys([*a, *b]))
    if key == "properties" and isinstance(a, dict) and isinstance(b, dict):
        return _merge_properties(a, b)
    if key == "enum" and isinstance(a, list) and isinstance(b, list):
        return _merge_enum(a, b)
    numbers = all(isinstance(value, int | float) and not isinstance(value, bool) for value in (a, b))
    if key in _LOWER_BOUNDS and numbers:
        return max(a, b)
    if key in _UPPER_BOUNDS and numbers:
        return min(a, b)
    if key == "uniqueItems":
        return bool(a) or bool(b)
    if key == "allOf" and isinstance(a, list) and isinstance(b, list):
        return [*a, *b]
    if key in _SUB_SCHEMAS and isinstance(a, dict) and isinstance(b, dict):
        return {"allOf": [a, b]}
    if key == "additionalProperties" and (a is False or b is False):
        return False
    raise MergeConflict(f"'{key}' is given twice with different values ({_brief(a)} and {_brief(b)})")


def _brief(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


def merge_schemas(inner: dict[str, Any], outer: dict[str, Any]) -> dict[str, Any]:
    """One schema that means `inner` AND `outer`; `outer`'s annotations win."""
    _check_closed(inner, outer)
    _check_closed(outer, inner)
    merged = {key: value for key, value in inner.items() if key not in _DROPPED}
    for key, value in outer.items():
        if key in _DROPPED:
            continue
        if key in ANNOTATIONS or key not in merged:
            merged[key] = value
        else:
            merged[key] = _merge_key(key, merged[key], value)
    if "const" in merged and "enum" in merged:
        if not any(_same(merged["const"], value) for value in merged["enum"]):
            raise MergeConflict("'const' is not one of the 'enum' values")
        del merged["enum"]
    return merged


def flatten(
    schema: dict[str, Any], resolve_ref: Callable[[str], dict[str, Any] | None], *, keep_ref: Callable[[str], bool]
) -> tuple[dict[str, Any], list[str]]:
    """Merge `schema`'s `allOf` parts and `$ref` targets into it, until neither is left.

    `keep_ref(ref)` says a `$ref` must stay a reference (a recursion being inlined); it is then
    left in the result, and a second such ref is a `MergeConflict`. Returns the flat schema and
    the refs inlined. Iterative, so a chain of thousands of aliases costs no recursion.
    """
    current = dict(schema)
    pending: list[dict[str, Any]] = []
    inlined: list[str] = []
    while True:
        parts = current.get("allOf")
        if isinstance(parts, list) and all(isinstance(part, dict) for part in parts):
            del current["allOf"]
            pending[0:0] = parts
            continue
        ref = current.get("$ref")
        if isinstance(ref, str) and ref in inlined:  # A and A is A
            del current["$ref"]
            continue
        if isinstance(ref, str) and not keep_ref(ref):
            target = resolve_ref(ref)
            if target is not None:
                del current["$ref"]
                inlined.append(ref)
                pending.insert(0, target)
                continue
        if not pending:
            return current, inlined
        part = pending.pop(0)
        part_ref = part.get("$ref")
        if isinstance(part_ref, str) and part_ref in inlined:
            part = {key: value for key, value in part.items() if key != "$ref"}
        elif isinstance(part_ref, str) and "$ref" in current and not keep_ref(part_ref):
            target = resolve_ref(part_ref)
            if target is not None:
                inlined.append(part_ref)
                pending[0:0] = [target, {key: value for key, value in part.items() if key != "$ref"}]
                continue
        current = merge_schemas(part, current)
