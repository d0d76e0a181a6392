"""Small helpers over JSON-schema dicts: size checks, `$ref`s, recursion, wrapping.

Every walk here is iterative or runs only after `check_schema_size` has bounded the depth, so a
hostile schema cannot cause a `RecursionError`.
"""

from __future__ import annotations

from typing import Any

from ..core import UserError

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "WRAPPER_KEY",
    "check_schema_size",
    "cyclic_definitions",
    "definitions_of",
    "inline_root_ref",
    "is_object_schema",
    "ref_target",
    "wrap_schema",
]

WRAPPER_KEY = "response"
# Same budget as openai-agents' strict-schema walker: enough for any real type, small enough to walk.
MAX_SCHEMA_DEPTH = 100
MAX_SCHEMA_NODES = 100_000
_DEF_KEYS = ("$defs", "definitions")


def check_schema_size(schema: Any, what: str) -> None:
    """Raise `UserError` if the schema nests deeper than 100 levels or has more than 100,000 nodes."""
    stack: list[tuple[Any, int]] = [(schema, 0)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_SCHEMA_DEPTH:
            raise UserError(f"The JSON schema of {what} nests deeper than {MAX_SCHEMA_DEPTH} levels.")
        if nodes > MAX_SCHEMA_NODES:
            raise UserError(f"The JSON schema of {what} has more than {MAX_SCHEMA_NODES} nodes.")
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)


def definitions_of(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The `$defs` (or draft-7 `definitions`) of a root schema, keyed `"$defs/Name"`."""
    found: dict[str, dict[str, Any]] = {}
    for key in _DEF_KEYS:
        defs = schema.get(key)
        if isinstance(defs, dict):
            for name, body in defs.items():
                if isinstance(body, dict):
                    found[f"{key}/{name}"] = body
    return found


def ref_target(ref: Any) -> str | None:
    """`"#/$defs/A"` → `"$defs/A"`; `"#"` → `"#"`; anything else (external, deep pointer) → None."""
    if not isinstance(ref, str):
        return None
    if ref == "#":
        return "#"
    for key in _DEF_KEYS:
        prefix = f"#/{key}/"
        if ref.startswith(prefix) and "/" not in ref[len(prefix) :]:
            name = ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
            return f"{key}/{name}"
    return None


def _refs_in(node: Any) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            target = ref_target(current.get("$ref"))
            if target is not None:
                found.add(target)
            stack.extend(value for key, value in current.items() if key not in _DEF_KEYS)
        elif isinstance(current, list):
            stack.extend(current)
    return found


def cyclic_definitions(schema: dict[str, Any]) -> set[str]:
    """The definitions (and `"#"` for the root) that can reach themselves through `$ref`s."""
    graph = {name: _refs_in(body) for name, body in definitions_of(schema).items()}
    graph["#"] = _refs_in(schema)
    cyclic: set[str] = set()
    for start in graph:
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            name = stack.pop()
            if name == start:
                cyclic.add(start)
                break
            if name in seen:
                continue
            seen.add(name)
            stack.extend(graph.get(name, ()))
    return cyclic


def inline_root_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic roots a recursive model at `$ref`; providers want the object itself at the root."""
    target = ref_target(schema.get("$ref"))
    if target is None or target == "#":
        return schema
    body = definitions_of(schema).get(target)
    if body is None:
        return schema
    merged = {key: value for key, value in schema.items() if key != "$ref"}
    for key, value in body.items():
        merged.setdefault(key, value)
    return merged


def is_object_schema(schema: dict[str, Any]) -> bool:
    """True when the root is a plain object (no union, no `$ref`), so it needs no wrapper."""
    kind = schema.get("type")
    return kind == "object" and not any(key in schema for key in ("anyOf", "oneOf", "allOf", "$ref"))


def wrap_schema(inner: dict[str, Any]) -> dict[str, Any]:
    """`{"type":"object","properties":{"response": inner},...}`, with `$defs` hoisted to the root."""
    body = {key: value for key, value in inner.items() if key not in _DEF_KEYS}
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {WRAPPER_KEY: body},
        "required": [WRAPPER_KEY],
        "additionalProperties": False,
    }
    for key in _DEF_KEYS:
        if key in inner:
            wrapped[key] = inner[key]
    return wrapped
