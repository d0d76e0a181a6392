"""Small helpers over JSON-schema dicts: size checks, `$ref`s, recursion, wrapping.

Every walk here is iterative or runs only after `check_schema_size` has bounded the depth, so a
hostile schema cannot cause a `RecursionError`.
"""

from __future__ import annotations

from typing import Any

from ..core import UserError
from ._merge import MergeConflict, flatten
from ._refs import pointer_of

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "WRAPPER_KEY",
    "check_schema_size",
    "cyclic_definitions",
    "definitions_of",
    "flatten_root",
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
    """`"#/$defs/A"` → `"$defs/A"` (percent- and `~`-decoded); `"#"` → `"#"`; anything else → None."""
    pointer = pointer_of(ref)
    if pointer == ():
        return "#"
    if pointer is not None and len(pointer) == 2 and pointer[0] in _DEF_KEYS:
        return f"{pointer[0]}/{pointer[1]}"
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


def flatten_root(schema: dict[str, Any]) -> dict[str, Any]:
    """The root with its `$ref` and `allOf` merged in, so an object root is seen as one.

    Pydantic roots a recursive model at a `$ref`; raw schemas may do the same, or combine parts
    with `allOf`. The definitions stay as they are. Parts that conflict leave the root as it is.
    """
    if "$ref" not in schema and "allOf" not in schema:
        return schema
    definitions = {key: schema[key] for key in _DEF_KEYS if key in schema}
    body = {key: value for key, value in schema.items() if key not in _DEF_KEYS}
    found = definitions_of(schema)

    def target(ref: str) -> dict[str, Any] | None:
        return found.get(ref_target(ref) or "#")

    try:
        flat, _ = flatten(body, target, keep_ref=lambda ref: ref_target(ref) in (None, "#"))
    except MergeConflict:  # left as written: the strict profiles report the conflict
        return schema
    return {**flat, **definitions}


def is_object_schema(schema: dict[str, Any]) -> bool:
    """True when the root is a plain object (no union, no `$ref`), so it needs no wrapper.

    A root without `type` that lists `properties` is taken as an object too.
    """
    if any(key in schema for key in ("anyOf", "oneOf", "allOf", "$ref", "enum", "const", "items", "prefixItems")):
        return False
    kind = schema.get("type")
    return kind == "object" or (kind is None and isinstance(schema.get("properties"), dict))


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
