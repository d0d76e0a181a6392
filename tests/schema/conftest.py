"""Checkers written from the providers' documented schema rules, independent of the code under test.

OpenAI: developers.openai.com guides/structured-outputs "Supported schemas".
Anthropic: platform.claude.com structured-outputs "JSON Schema limitations".
Gemini: ai.google.dev structured-output guide (`response_json_schema`, the keywords listed as supported)
and generativelanguage v1beta `Schema` (the OpenAPI subset of `response_schema`).
Amazon Bedrock: docs.aws.amazon.com Bedrock user guide "structured output" (Anthropic's subset).
Mistral: docs.mistral.ai custom structured outputs (strict needs `additionalProperties: false`).
Ollama: docs.ollama.com structured outputs (a JSON schema, compiled to a grammar, no recursion).
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


GEMINI_ALLOWED = {
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
}
GEMINI_OPENAPI_ALLOWED = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "propertyOrdering",
    "anyOf",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "default",
    "example",
    "minProperties",
    "maxProperties",
}
GEMINI_OPENAPI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}


def _gemini_walk(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    stack = [schema]
    while stack:
        node = stack.pop()
        assert isinstance(node, dict), f"schema node must be an object: {node!r}"
        yield node
        for key in ("properties", "$defs"):
            stack.extend((node.get(key) or {}).values())
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                stack.append(node[key])
        for key in ("anyOf", "oneOf", "prefixItems"):
            stack.extend(node.get(key, []))


def _gemini(schema: dict[str, Any]) -> None:
    """Assert the schema uses only the JSON-schema keywords Gemini documents as supported."""
    for node in _gemini_walk(schema):
        assert set(node) <= GEMINI_ALLOWED, f"unsupported keywords {set(node) - GEMINI_ALLOWED} in {node}"
        if "$ref" in node:
            assert all(key.startswith("$") for key in node), f"$ref with non-$ siblings: {node}"
        if isinstance(node.get("properties"), dict) and node["properties"]:
            assert node.get("propertyOrdering") == list(node["properties"]), f"no propertyOrdering: {node}"
        if not any(key in node for key in ("type", "anyOf", "oneOf", "enum", "$ref")):
            raise AssertionError(f"schema node without a type: {node}")


def _gemini_openapi(schema: dict[str, Any]) -> None:
    """Assert the schema stays inside the OpenAPI subset of Gemini's `response_schema`."""
    for node in _gemini_walk(schema):
        allowed = GEMINI_OPENAPI_ALLOWED
        assert set(node) <= allowed, f"unsupported keywords {set(node) - allowed} in {node}"
        if "anyOf" not in node:
            assert node.get("type") in GEMINI_OPENAPI_TYPES, f"type missing or not upper-case: {node}"
        if node.get("type") == "OBJECT":
            assert node.get("properties"), f"OBJECT without properties: {node}"
            assert node.get("propertyOrdering") == list(node["properties"])
        if node.get("type") == "ARRAY":
            assert isinstance(node.get("items"), dict), f"ARRAY without items: {node}"
        assert all(isinstance(value, str) for value in node.get("enum", [])), f"enum of non-strings: {node}"
        if "format" in node:
            assert node["format"] in {"date-time", "enum", "float", "double", "int32", "int64"}


def _mistral(schema: dict[str, Any]) -> None:
    """Assert every object of the schema is closed, as Mistral's strict mode requires."""
    for node, _ in _walk(schema):
        if node.get("type") == "object":
            assert node.get("additionalProperties") is False, f"open object: {node}"


def _ollama(schema: dict[str, Any]) -> None:
    """Assert the schema has no recursion, which Ollama's grammar compiler cannot take."""
    assert not _ref_graph_has_cycle(schema), "recursive schema"


# Fixtures rather than imports: a `conftest` module name is shared by every test folder.
@pytest.fixture(scope="session")
def check_openai_strict() -> Callable[[dict[str, Any]], None]:
    """Assert a schema follows OpenAI's strict-mode rules."""
    return _openai_strict


@pytest.fixture(scope="session")
def check_anthropic() -> Callable[[dict[str, Any]], None]:
    """Assert a schema stays inside Anthropic's JSON-schema subset."""
    return _anthropic


@pytest.fixture(scope="session")
def dialect_checkers() -> dict[str, Callable[[dict[str, Any]], None]]:
    """Each new dialect's documented rules, by profile name."""
    return {
        "gemini": _gemini,
        "gemini-openapi": _gemini_openapi,
        "bedrock": _anthropic,
        "mistral": _mistral,
        "ollama": _ollama,
    }
