"""The table of docs/reference/schema.md ("What each provider's dialect keeps") is what the code
does: each feature, put in a one-property type, is rendered in each provider's dialect
(`render_profile`, strict), and the result sorted as native (the keyword sent as written),
transformed (said another way: `const` as a one-value `enum`, `oneOf` as `anyOf`, `nullable`,
`$ref` inlined, recursion unrolled), validated only (left out of the schema, checked after the
answer) or refused (a `UserError` naming the type before any call)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from so_middleware import UserError
from so_middleware.schema._schema_tools import cyclic_definitions
from so_middleware.schema.dialects import DEFAULT_RECURSION_DEPTH, render_profile

PAGE = Path(__file__).parents[2] / "docs" / "reference" / "schema.md"
HEADING = "## What each provider's dialect keeps"

PROFILES = {
    "OpenAI (strict)": "openai-strict",
    "Anthropic": "anthropic",
    "Gemini": "gemini",
    "Gemini 1.x, 2.0": "gemini-openapi",
    "Bedrock": "bedrock",
    "Mistral": "mistral",
    "Ollama": "ollama",
}
WORDS = {"native": "native", "transformed": "transformed", "validated": "validated only", "refused": "refused"}
NODE = {
    "type": "object",
    "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
    "required": ["children"],
    "additionalProperties": False,
}
ITEM = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}
# feature -> (the property's schema, the keyword, what the constraint is when said another way)
FEATURES: dict[str, tuple[dict[str, Any], str, Any]] = {
    "`pattern`": ({"type": "string", "pattern": "^[a-z]+$"}, "pattern", None),
    "`minLength` / `maxLength`": ({"type": "string", "minLength": 2}, "minLength", None),
    "`format: date-time`": ({"type": "string", "format": "date-time"}, "format", None),
    "`format: email`": ({"type": "string", "format": "email"}, "format", None),
    "`minimum` / `maximum`": ({"type": "integer", "minimum": 1}, "minimum", None),
    "`exclusiveMinimum`": ({"type": "number", "exclusiveMinimum": 0}, "exclusiveMinimum", None),
    "`multipleOf`": ({"type": "integer", "multipleOf": 5}, "multipleOf", None),
    "`minItems` above 1": ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, "minItems", None),
    "`maxItems`": ({"type": "array", "items": {"type": "integer"}, "maxItems": 3}, "maxItems", None),
    "`enum` of strings": ({"type": "string", "enum": ["a", "b"]}, "enum", None),
    "`enum` of numbers": ({"type": "integer", "enum": [1, 2]}, "enum", None),
    "`const`": ({"type": "string", "const": "a"}, "const", lambda p: p.get("enum") == ["a"]),
    "`anyOf`": ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "anyOf", lambda p: "anyOf" in p),
    "`oneOf`": ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "oneOf", lambda p: "anyOf" in p),
    "a nullable value": (
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "anyOf",
        lambda p: p.get("nullable") is True,
    ),
    "`prefixItems` (a tuple)": (
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
        "prefixItems",
        None,
    ),
    "`additionalProperties` schema (a dict)": (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        "additionalProperties",
        None,
    ),
    "`default`": ({"type": "integer", "default": 3}, "default", None),
    "`allOf`": ({"allOf": [ITEM]}, "allOf", lambda p: p.get("properties") == ITEM["properties"]),
}


def _root(prop: dict[str, Any], defs: dict[str, Any] | None = None) -> dict[str, Any]:
    root = {"type": "object", "properties": {"x": prop}, "required": ["x"], "additionalProperties": False}
    return {**root, "$defs": defs} if defs else root


def _render(schema: dict[str, Any], profile: str) -> dict[str, Any]:
    return render_profile(schema, profile, strict=True, wrapped=False, what="Probe")


def classify(feature: str, profile: str) -> str:
    prop, keyword, said_otherwise = FEATURES[feature]
    try:
        rendered = _render(_root(prop), profile)["properties"]["x"]
    except UserError:
        return "refused"
    if rendered.get(keyword) == prop[keyword]:
        return "native"
    if said_otherwise is not None and said_otherwise(rendered):
        return "transformed"
    return "validated"


def classify_refs(profile: str, recursive: bool) -> str:
    defs = {"Node": NODE} if recursive else {"Item": ITEM}
    schema = _root({"$ref": "#/$defs/Node" if recursive else "#/$defs/Item"}, defs)
    try:
        rendered = _render(schema, profile)
    except UserError:
        return "refused"
    if recursive:
        return "native" if cyclic_definitions(rendered) else "transformed"
    return "native" if "$ref" in str(rendered) else "transformed"


def computed_rows() -> list[list[str]]:
    rows = [[feature, *(WORDS[classify(feature, profile)] for profile in PROFILES.values())] for feature in FEATURES]
    rows.append(["`$defs` / `$ref`", *(WORDS[classify_refs(profile, False)] for profile in PROFILES.values())])
    rows.append(["recursion", *(WORDS[classify_refs(profile, True)] for profile in PROFILES.values())])
    return rows


def table(rows: list[list[str]]) -> str:
    lines = ["| feature | " + " | ".join(PROFILES) + " |", "|---" * (len(PROFILES) + 1) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def page_table() -> str:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def test_the_docs_table_is_what_the_dialects_do() -> None:
    """Run `python tests/schema/test_dialect_table.py` to print the table the code gives."""
    assert page_table() == table(computed_rows())
    assert DEFAULT_RECURSION_DEPTH == 3  # the page says so


@pytest.mark.parametrize("profile", ["anthropic", "gemini-openapi"])
def test_a_refused_feature_is_a_user_error_naming_the_field(profile: str) -> None:
    prop, _, _ = FEATURES["`additionalProperties` schema (a dict)"]
    with pytest.raises(UserError, match=r"Probe.*x"):
        _render(_root(prop), profile)


if __name__ == "__main__":
    print(table(computed_rows()))
