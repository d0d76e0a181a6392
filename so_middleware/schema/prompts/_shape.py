"""A JSON skeleton of a schema, for prompting: what the answer looks like, not the schema itself.

Models asked with a full JSON schema in their instructions often copy the schema back; a skeleton
with placeholders shows the shape to fill in:

    {"name": "<the person's full name>", "age": <integer: age in years>, "tags": ["<string>", ...]}

A field with a fixed set of choices (`Enum`, `Literal`) shows its first choice as the example
value, and a line after the skeleton lists the choices in words: small models copied a
`"spam" | "ham"` placeholder verbatim. Constraints the skeleton cannot show are left to
validation (and the re-ask's error message).

`$ref`s are followed (percent- and `~`-decoded), merged with their sibling keywords and `allOf`
parts, and shown by name once they recur; the walk stops at `_MAX_DEPTH` levels and after
`_MAX_NODES` nodes, so any schema gives a bounded skeleton.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._merge import MergeConflict, flatten
from .._refs import pointer_of, resolve

__all__ = ["shape_hint"]

_MAX_DEPTH = 8
_MAX_NODES = 2_000
_MAX_CHOICES_SHOWN = 20


def shape_hint(schema: Mapping[str, Any]) -> str:
    """The skeleton of `schema` as one line of JSON-like text, then one line per field with choices.

    Example: `shape_hint({"type": "object", "properties": {"n": {"type": "integer"}}})`
    gives `{"n": <integer>}`.
    """
    skeleton = _Skeleton(dict(schema))
    text = skeleton.shape(schema, 0, frozenset(), "")
    return "\n".join([text, *skeleton.choices])


def _words(values: list[Any]) -> str:
    shown = [json.dumps(value, ensure_ascii=False) for value in values[:_MAX_CHOICES_SHOWN]]
    if len(values) > _MAX_CHOICES_SHOWN:
        shown.append(f"{len(values) - _MAX_CHOICES_SHOWN} more")
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


class _Skeleton:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.nodes = 0
        self.choices: list[str] = []

    def _target(self, ref: str) -> dict[str, Any] | None:
        pointer = pointer_of(ref)
        found = resolve(self.root, pointer) if pointer is not None else None
        return found if isinstance(found, dict) else None

    def _flat(self, node: Mapping[str, Any], seen: frozenset[str]) -> tuple[dict[str, Any], frozenset[str]]:
        """The node with its `$ref`s and `allOf` merged in; a recurring ref is left in place."""
        try:
            flat, inlined = flatten(dict(node), self._target, keep_ref=lambda ref: ref in seen)
        except MergeConflict:  # refused when the schema was built; show the node's own keys
            flat, inlined = {key: value for key, value in node.items() if key not in ("$ref", "allOf")}, []
        return flat, seen | set(inlined)

    def shape(self, node: Any, depth: int, seen: frozenset[str], path: str) -> str:
        self.nodes += 1
        if not isinstance(node, Mapping) or depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            return "<value>"
        if "$ref" in node or "allOf" in node:
            node, seen = self._flat(node, seen)
            if "$ref" in node:
                ref = str(node["$ref"])
                if ref in seen:  # a recursive type: show its name, not another level
                    return f"<{ref.rsplit('/', 1)[-1]}>"
                return "<value>"  # a reference that leads nowhere
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if isinstance(options, list) and options:
                return " | ".join(self.shape(option, depth + 1, seen, path) for option in options)
        if isinstance(node.get("enum"), list) and node["enum"]:
            values = node["enum"]
            if len(values) > 1:
                self.choices.append(f"{path or 'the value'} is one of {_words(values)}")
            return json.dumps(values[0], ensure_ascii=False)
        if "const" in node:
            return json.dumps(node["const"], ensure_ascii=False)
        kind = node.get("type")
        if isinstance(kind, list):
            return " | ".join(self.shape({**node, "type": k}, depth, seen, path) for k in kind)
        if kind == "object" or isinstance(node.get("properties"), Mapping):
            return self._object(node, depth, seen, path)
        if kind == "array":
            items = node.get("prefixItems", node.get("items"))
            if isinstance(items, list):  # a fixed tuple
                return (
                    "["
                    + ", ".join(self.shape(item, depth + 1, seen, f"{path}[{i}]") for i, item in enumerate(items))
                    + "]"
                )
            return "[" + self.shape(items or {}, depth + 1, seen, f"{path}[]") + ", ...]"
        if kind == "null":
            return "null"
        label = node.get("description")  # not the title: pydantic's titles only repeat the field name
        if kind == "string":
            return f'"<{label or "string"}>"'
        if kind == "boolean":  # SmolLM2 answered `<boolean>` with 2: the two values are spelled out too
            self.choices.append(f"{path or 'the value'} is true or false")
        if kind in ("integer", "number", "boolean"):
            return f"<{kind}: {label}>" if label else f"<{kind}>"
        return f"<{label or 'value'}>"

    def _object(self, node: Mapping[str, Any], depth: int, seen: frozenset[str], path: str) -> str:
        properties = node.get("properties") or {}
        if not properties:
            extra = node.get("additionalProperties")
            inner = f"{path}.<key>" if path else "<key>"
            value = self.shape(extra, depth + 1, seen, inner) if isinstance(extra, Mapping) else "<value>"
            return '{"<key>": ' + value + ", ...}"
        fields = []
        for name, sub in properties.items():
            child = f"{path}.{name}" if path else str(name)
            fields.append(f"{json.dumps(name)}: {self.shape(sub, depth + 1, seen, child)}")
        return "{" + ", ".join(fields) + "}"
