"""A JSON skeleton of a schema, for prompting: what the answer looks like, not the schema itself.

Models asked with a full JSON schema in their instructions often copy the schema back; a skeleton
with placeholders shows the shape to fill in:

    {"name": "<the person's full name>", "age": <integer: age in years>, "tags": ["<string>", ...]}

Constraints the skeleton cannot show are left to validation (and the re-ask's error message).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["shape_hint"]

_MAX_DEPTH = 8


def shape_hint(schema: Mapping[str, Any]) -> str:
    """The skeleton of `schema` as one line of JSON-like text.

    Example: `shape_hint({"type": "object", "properties": {"n": {"type": "integer"}}})`
    gives `{"n": <integer>}`.
    """
    definitions = dict(schema.get("$defs") or schema.get("definitions") or {})
    return _shape(schema, definitions, 0, frozenset())


def _shape(node: Any, definitions: dict[str, Any], depth: int, seen: frozenset[str]) -> str:
    if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
        return "<value>"
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:  # a recursive type: show its name, not another level
            return f"<{name}>"
        return _shape(definitions.get(name, {}), definitions, depth + 1, seen | {name})
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if isinstance(options, list) and options:
            return " | ".join(_shape(option, definitions, depth + 1, seen) for option in options)
    if isinstance(node.get("enum"), list):
        return " | ".join(json.dumps(value) for value in node["enum"])
    if "const" in node:
        return json.dumps(node["const"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(_shape({**node, "type": k}, definitions, depth, seen) for k in kind)
    if kind == "object" or isinstance(node.get("properties"), Mapping):
        properties = node.get("properties") or {}
        if not properties:
            extra = node.get("additionalProperties")
            value = _shape(extra, definitions, depth + 1, seen) if isinstance(extra, Mapping) else "<value>"
            return '{"<key>": ' + value + ", ...}"
        fields = (
            f"{json.dumps(name)}: {_shape(sub, definitions, depth + 1, seen)}" for name, sub in properties.items()
        )
        return "{" + ", ".join(fields) + "}"
    if kind == "array":
        items = node.get("prefixItems", node.get("items"))
        if isinstance(items, list):  # a fixed tuple
            return "[" + ", ".join(_shape(item, definitions, depth + 1, seen) for item in items) + "]"
        return "[" + _shape(items or {}, definitions, depth + 1, seen) + ", ...]"
    if kind == "null":
        return "null"
    label = node.get("description")  # not the title: pydantic's titles only repeat the field name
    if kind == "string":
        return f'"<{label or "string"}>"'
    if kind in ("integer", "number", "boolean"):
        return f"<{kind}: {label}>" if label else f"<{kind}>"
    return f"<{label or 'value'}>"
