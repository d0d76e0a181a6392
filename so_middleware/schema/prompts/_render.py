"""A compact outline of a schema, for a model whose engine enforces the schema without showing it.

A grammar makes the answer parse, but the model writing it never reads the field descriptions,
formats or examples: the outline puts them in the instructions, one line per field:

    The answer is JSON: object
    - name: string — the person's full name; e.g. "Ada Lovelace"
    - email: string, format email (optional)
    - tags: list of string, at most 5 items
    - address: object Address
      - city: string

`$ref`s are followed and merged with their siblings; a type met again inside itself is named,
not expanded (`list of Node, as above`). The walk stops at `_MAX_DEPTH` levels and after
`_MAX_NODES` nodes, so any schema gives a bounded outline; the same schema always gives the same
text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._merge import MergeConflict, flatten
from .._refs import pointer_of, resolve

__all__ = ["says_more_than_its_grammar", "schema_outline"]

_MAX_DEPTH = 8
_MAX_NODES = 500
_MAX_CHOICES_SHOWN = 20
_MAX_TEXT = 200  # a description or example longer than this is cut: the outline stays short

_BOUNDS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("multipleOf", "multiple of {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minProperties", "at least {} keys"),
    ("maxProperties", "at most {} keys"),
)


def schema_outline(schema: Mapping[str, Any]) -> str:
    """The outline of `schema`: its root type on the first line, then one line per field.

    Example: `schema_outline({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})`
    gives `"The answer is JSON: object\\n- n: integer"`.
    """
    outline = _Outline(dict(schema))
    node, seen = outline.flat(schema, _root_refs(schema))
    words, fields = outline.words(node, 0, seen)
    outline.lines.append("The answer is JSON: " + words + _notes(node))
    outline.fields(fields, 0)
    return "\n".join(outline.lines)


def _root_refs(schema: Mapping[str, Any]) -> frozenset[str]:
    """The definitions the root is a copy of (pydantic inlines a recursive root and keeps its
    definition too): a ref to one of them is the root met again."""
    own = {key: value for key, value in schema.items() if key not in ("$defs", "definitions")}
    found: set[str] = set()
    for section in ("$defs", "definitions"):
        defs = schema.get(section)
        if isinstance(defs, Mapping):
            found.update(f"#/{section}/{name}" for name, value in defs.items() if value == own)
    return frozenset(found)


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"


def _choices(values: list[Any]) -> str:
    shown = [_json(value) for value in values[:_MAX_CHOICES_SHOWN]]
    if len(values) > _MAX_CHOICES_SHOWN:
        shown.append(f"… ({len(values) - _MAX_CHOICES_SHOWN} more)")
    return ", ".join(shown)


def _notes(node: Mapping[str, Any]) -> str:
    """The words for the model: the description, then the examples."""
    notes = ""
    description = node.get("description")
    if isinstance(description, str) and description.strip():
        text = " ".join(description.split())
        notes += " — " + (text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…")
    examples = node.get("examples")
    if isinstance(examples, list) and examples:
        notes += "; e.g. " + " or ".join(_json(example) for example in examples[:3])
    return notes


def _items_bound(node: Mapping[str, Any]) -> str | None:
    low, high = node.get("minItems"), node.get("maxItems")
    if isinstance(low, int) and isinstance(high, int):
        return f"exactly {low} items" if low == high else f"{low} to {high} items"
    if isinstance(high, int):
        return f"at most {high} items"
    if isinstance(low, int) and low > 0:
        return f"at least {low} items"
    return None


def _constraints(node: Mapping[str, Any]) -> list[str]:
    words: list[str] = []
    if isinstance(node.get("format"), str):
        words.append(f"format {node['format']}")
    if isinstance(node.get("pattern"), str):
        words.append(f"matching {_json(node['pattern'])}")
    for key, template in _BOUNDS:
        value = node.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            words.append(template.format(value))
    bound = _items_bound(node)
    if bound:
        words.append(bound)
    if node.get("uniqueItems") is True:
        words.append("no repeats")
    return words


# The objects whose fields follow a line (one, or one per alternative of a union), each with the
# refs being expanded around it.
_Fields = list[tuple[str | None, Mapping[str, Any], frozenset[str]]]


class _Outline:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.nodes = 0
        self.lines: list[str] = []

    def _target(self, ref: str) -> dict[str, Any] | None:
        pointer = pointer_of(ref)
        found = resolve(self.root, pointer) if pointer is not None else None
        return found if isinstance(found, dict) else None

    def flat(self, node: Any, seen: frozenset[str]) -> tuple[dict[str, Any], frozenset[str]]:
        """The node with its `$ref`s and `allOf` merged in; a ref met again is left in place."""
        if not isinstance(node, Mapping):
            return {}, seen
        if "$ref" not in node and "allOf" not in node:
            return dict(node), seen
        try:
            flat, inlined = flatten(dict(node), self._target, keep_ref=lambda ref: ref in seen)
        except MergeConflict:  # refused when the schema was built; show the node's own keys
            flat, inlined = {key: value for key, value in node.items() if key not in ("$ref", "allOf")}, []
        return flat, seen | set(inlined)

    def words(self, node: dict[str, Any], depth: int, seen: frozenset[str]) -> tuple[str, _Fields]:
        """The type of a flat node in words, and the objects whose fields go on the lines below."""
        self.nodes += 1
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            return "value", []
        if "$ref" in node:  # a type inside itself is named, not expanded again; else it leads nowhere
            ref = str(node["$ref"])
            return (f"{ref.rsplit('/', 1)[-1]}, as above" if ref in seen else "any JSON value"), []
        if isinstance(node.get("enum"), list) and node["enum"]:
            return "one of " + _choices(node["enum"]), []
        if "const" in node:
            return "always " + _json(node["const"]), []
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list) and node[key]:
                return self._union(node[key], depth, seen)
        kind = node.get("type")
        if isinstance(kind, list):
            return self._union([{**node, "type": one} for one in kind], depth, seen)
        constraints = [] if kind in ("null", "boolean") else _constraints(node)  # a `type` list shares its keywords
        if kind == "array" or "items" in node or "prefixItems" in node:
            text, fields = self._array(node, depth, seen)
        elif kind == "object" or isinstance(node.get("properties"), Mapping):
            text, fields = self._object(node, depth, seen)
        else:
            text, fields = str(kind) if isinstance(kind, str) else "any JSON value", []
        return ", ".join([text, *constraints]), fields

    def _union(self, options: list[Any], depth: int, seen: frozenset[str]) -> tuple[str, _Fields]:
        parts: list[str] = []
        fields: _Fields = []
        for index, option in enumerate(options):
            flat, inner = self.flat(option, seen)
            text, more = self.words(flat, depth + 1, inner)
            parts.append(text)
            title = flat.get("title")
            label = f"{title}" if isinstance(title, str) and title else f"option {index + 1}"
            fields.extend((label, obj, around) for _, obj, around in more)
        if len(fields) == 1:  # `X | None`: the one object's fields need no label
            fields = [(None, fields[0][1], fields[0][2])]
        return " or ".join(parts), fields

    def _array(self, node: dict[str, Any], depth: int, seen: frozenset[str]) -> tuple[str, _Fields]:
        items = node.get("prefixItems", node.get("items"))
        if isinstance(items, list):  # a fixed tuple
            shown = []
            for item in items:
                flat, inner = self.flat(item, seen)
                shown.append(self.words(flat, depth + 1, inner)[0])
            return "list [" + ", ".join(shown) + "]", []
        if not isinstance(items, Mapping):
            return "list", []
        flat, inner = self.flat(items, seen)
        text, fields = self.words(flat, depth + 1, inner)
        return "list of " + text, fields

    def _object(self, node: dict[str, Any], depth: int, seen: frozenset[str]) -> tuple[str, _Fields]:
        title = node.get("title")
        named = f"object {title}" if isinstance(title, str) and title.isidentifier() else "object"
        if node.get("properties"):
            return named, [(None, node, seen)]
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping):
            flat, inner = self.flat(extra, seen)
            text, fields = self.words(flat, depth + 1, inner)
            return "object of string keys to " + text, fields
        return named, []

    def fields(self, objects: _Fields, depth: int) -> None:
        """One line per field of each object, each followed by its own fields, indented."""
        for label, obj, around in objects:
            level = depth
            if label is not None:
                self.lines.append("  " * depth + f"- as {label}:")
                level += 1
            listed = obj.get("required")
            required: list[Any] = listed if isinstance(listed, list) else []
            for name, sub in (obj.get("properties") or {}).items():
                flat, inner = self.flat(sub, around)
                text, more = self.words(flat, level + 1, inner)
                optional = "" if name in required else " (optional)"
                self.lines.append("  " * level + f"- {name}: {text}{optional}{_notes(flat)}")
                self.fields(more, level + 1)


# What an outline can show that a grammar does not: a field's name, meaning, choices, form or bounds.
_TOLD = frozenset(
    {"description", "enum", "const", "format", "examples", "pattern", "minimum", "maximum", "exclusiveMinimum",
     "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "minProperties",
     "maxProperties"}
)  # fmt: skip


def says_more_than_its_grammar(schema: Mapping[str, Any], *, wrapped: bool) -> bool:
    """Whether an outline of `schema` tells a model anything its grammar does not: a named field
    (other than the `response` wrapper of a `wrapped` schema), or anything of `_TOLD`. A bare
    `list[int]` or `int` does not.

    Example: `says_more_than_its_grammar({"type": "integer"}, wrapped=False)` is False.
    """
    stack: list[tuple[Any, bool]] = [(schema, wrapped)]
    while stack:
        node, is_wrapper = stack.pop()
        if isinstance(node, list):
            stack.extend((item, False) for item in node)
        elif isinstance(node, Mapping):
            properties = node.get("properties")
            if _TOLD.intersection(node) or (isinstance(properties, Mapping) and properties and not is_wrapper):
                return True
            stack.extend((value, False) for key, value in node.items() if key != "properties")
            if isinstance(properties, Mapping):
                stack.extend((value, False) for value in properties.values())
    return False
