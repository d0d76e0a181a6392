"""Checkers written from the providers' documented schema rules, independent of the code under test.

OpenAI: developers.openai.com guides/structured-outputs "Supported schemas".
Anthropic: platform.claude.com structured-outputs "JSON Schema limitations".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

OPENAI_ALLOWED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "description",
    "title",
    "$ref",
    "$defs",
    "definitions",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
}
OPENAI_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
ANTHROPIC_ALLOWED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "allOf",
    "enum",
    "const",
    "description",
    "title",
    "$ref",
    "$defs",
    "definitions",
    "default",
    "format",
    "minItems",
    "pattern",
}
ANTHROPIC_FORMATS = OPENAI_FORMATS | {"uri"}


def _subschemas(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("properties", "$defs", "definitions"):
        yield from (node.get(key) or {}).values()
    if isinstance(node.get("items"), dict):
        yield node["items"]
    for key in ("anyOf", "allOf"):
        yield from node.get(key, [])


def _walk(schema: dict[str, Any]) -> Iterator[tuple[dict[str, Any], int]]:
    """Every schema node, with its object-nesting level (refs not followed)."""
    stack = [(schema, 0)]
    while stack:
        node, level = stack.pop()
        assert isinstance(node, dict), f"schema node must be an object: {node!r}"
        level += 1 if node.get("type") == "object" else 0
        yield node, level
        stack.extend((sub, level) for sub in _subschemas(node))


def _ref_graph_has_cycle(schema: dict[str, Any]) -> bool:
    defs = {f"#/$defs/{name}": body for name, body in (schema.get("$defs") or {}).items()}
    defs["#"] = schema

    def refs(node: dict[str, Any]) -> set[str]:
        return {sub["$ref"] for sub, _ in _walk({k: v for k, v in node.items() if k != "$defs"}) if "$ref" in sub}

    graph = {name: refs(body) for name, body in defs.items()}
    for start in graph:
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            name = stack.pop()
            if name == start:
                return True
            if name not in seen:
                seen.add(name)
                stack.extend(graph.get(name, ()))
    return False


def _openai_strict(schema: dict[str, Any]) -> None:
    """Assert the schema follows OpenAI's documented strict-mode rules."""
    assert schema.get("type") == "object", "root must be an object"
    assert "anyOf" not in schema, "root must not be anyOf"
    properties = enum_values = 0
    for node, level in _walk(schema):
        assert set(node) <= OPENAI_ALLOWED, f"unsupported keywords {set(node) - OPENAI_ALLOWED} in {node}"
        if "$ref" in node:
            assert set(node) == {"$ref"}, f"$ref with siblings: {node}"
        if node.get("type") == "object":
            assert node.get("additionalProperties") is False, f"open object: {node}"
            assert "properties" in node
            assert sorted(node.get("required", [])) == sorted(node["properties"]), f"not all required: {node}"
            properties += len(node["properties"])
        if node.get("type") == "array":
            assert isinstance(node.get("items"), dict), f"array without items: {node}"
        if "format" in node:
            assert node["format"] in OPENAI_FORMATS
        if "enum" in node:
            enum_values += len(node["enum"])
        if "type" in node:
            kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
            assert set(kinds) <= {"string", "number", "integer", "boolean", "object", "array", "null"}
        assert level <= 10, "more than 10 levels of nesting"
        if not any(key in node for key in ("type", "anyOf", "enum", "const", "$ref")):
            raise AssertionError(f"schema node without a type: {node}")
    assert properties <= 5000
    assert enum_values <= 1000


def _anthropic(schema: dict[str, Any]) -> None:
    """Assert the schema stays inside Anthropic's documented JSON-schema subset."""
    assert not _ref_graph_has_cycle(schema), "recursive schema"
    for node, _ in _walk(schema):
        assert set(node) <= ANTHROPIC_ALLOWED, f"unsupported keywords {set(node) - ANTHROPIC_ALLOWED} in {node}"
        if node.get("type") == "object":
            assert node.get("additionalProperties") is False, f"open object: {node}"
        if "minItems" in node:
            assert node["minItems"] in (0, 1)
        if "format" in node:
            assert node["format"] in ANTHROPIC_FORMATS
        for value in node.get("enum", []):
            assert not isinstance(value, dict | list), "complex enum value"
        if "allOf" in node:
            assert not any("$ref" in part for part in node["allOf"]), "allOf with $ref"
        if not any(key in node for key in ("type", "anyOf", "allOf", "enum", "const", "$ref")):
            raise AssertionError(f"schema node without a type: {node}")


# Fixtures rather than imports: a `conftest` module name is shared by every test folder.
@pytest.fixture(scope="session")
def check_openai_strict() -> Callable[[dict[str, Any]], None]:
    """Assert a schema follows OpenAI's strict-mode rules."""
    return _openai_strict


@pytest.fixture(scope="session")
def check_anthropic() -> Callable[[dict[str, Any]], None]:
    """Assert a schema stays inside Anthropic's JSON-schema subset."""
    return _anthropic
