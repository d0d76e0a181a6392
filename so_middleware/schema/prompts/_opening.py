"""The opening of a JSON answer that only one shape can start with: a prefill for prompting.

A small model asked for JSON without constrained decoding still continues a started answer,
and what it continues is what it gets right: prefilled `{"numbers": ` SmolLM2-135M wrote
`4, 8, 15}` (a list without its brackets); prefilled `{"numbers": [` it closed the list. So the
opening goes as deep as the schema has a single way on: into an object's first property, an
array's items, a string's opening quote, and through a choice between shapes (`anyOf`) as far
as every option starts alike (`{"kind": "` of a tagged union); it stops before a number, a
boolean, and anything it cannot follow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._refs import pointer_of, resolve

__all__ = ["opening"]

_MAX_DEPTH = 8


def opening(schema: Mapping[str, Any]) -> str:
    """The longest JSON prefix every answer of `schema` starts with, by the first property's path.

    Example: `opening({"type": "object", "properties": {"n": {"type": "array", "items": {}}}})`
    gives `'{"n": ['`.
    """
    return _open(schema, schema, 0)


def _open(root: Mapping[str, Any], node: Any, depth: int) -> str:
    node = _followed(root, node)
    if node is None or depth > _MAX_DEPTH or "allOf" in node:
        return ""
    options = node.get("anyOf", node.get("oneOf"))
    if isinstance(options, list):  # what every option starts with: `{"kind": "` of a tagged union
        return _common_prefix([_open(root, option, depth + 1) for option in options])
    kind = node.get("type")
    if isinstance(node.get("enum"), list) or "const" in node:
        choices = node["enum"] if "enum" in node else [node["const"]]
        return '"' if choices and all(isinstance(choice, str) for choice in choices) else ""
    if kind == "string":
        return '"'
    if kind == "array" and not isinstance(node.get("prefixItems", node.get("items")), list):
        return "[" + _open(root, node.get("items"), depth + 1)
    properties = node.get("properties")
    if (kind == "object" or kind is None) and isinstance(properties, Mapping) and properties:
        first = next(iter(properties))
        return "{" + json.dumps(first) + ": " + _open(root, properties[first], depth + 1)
    return ""


def _followed(root: Mapping[str, Any], node: Any) -> Mapping[str, Any] | None:
    """The node with its local `$ref` followed (a few hops at most), or None if it leads nowhere."""
    for _ in range(_MAX_DEPTH):
        if not isinstance(node, Mapping):
            return None
        if "$ref" not in node:
            return node
        pointer = pointer_of(node["$ref"])
        node = resolve(root, pointer) if pointer is not None else None
    return None


def _common_prefix(texts: list[str]) -> str:
    """The longest text every one of `texts` starts with ("" for none)."""
    if not texts:
        return ""
    shortest, longest = min(texts), max(texts)  # the sorted extremes differ first where any two do
    at = next((i for i, (a, b) in enumerate(zip(shortest, longest, strict=False)) if a != b), len(shortest))
    return shortest[:at]
