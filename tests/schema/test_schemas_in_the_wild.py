"""Schemas as people write them: anchors, old drafts' ids, web-compatible patterns, repeated enums.

Each shape here is one that real schemas use (the JSONSchemaBench collection, drawn from GitHub
and SchemaStore, has every one of them); each is accepted, sent in a form engines resolve, and
validated as its draft means it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from so_middleware import ModelBehaviorError, UserError
from so_middleware.schema import OutputSchema
from so_middleware.schema._patterns import strict_spelling

DRAFT_04 = "http://json-schema.org/draft-04/schema#"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


def _sent_and_checked(raw: dict[str, Any], good: Any, bad: Any) -> dict[str, Any]:
    before = copy.deepcopy(raw)
    schema = OutputSchema(raw, strict=False)
    sent = schema.json_schema("json-schema")
    assert schema.validate_python(good) == good
    with pytest.raises(ModelBehaviorError):
        schema.validate_python(bad)
    assert raw == before  # the caller's schema is never changed
    return sent


@pytest.mark.parametrize(
    ("dialect", "definition"),
    [
        (DRAFT_04, {"id": "#code", "type": "string", "maxLength": 3}),
        (DRAFT_07, {"$id": "#code", "type": "string", "maxLength": 3}),
        (DRAFT_2020, {"$anchor": "code", "type": "string", "maxLength": 3}),
    ],
    ids=["draft-04-id", "draft-07-id", "2020-anchor"],
)
def test_a_ref_to_a_plain_name_anchor_is_sent_as_the_pointer_it_names(dialect: str, definition: Any) -> None:
    raw = {
        "$schema": dialect,
        "type": "object",
        "definitions": {"code": definition},
        "properties": {"code": {"$ref": "#code"}},
        "required": ["code"],
    }
    sent = _sent_and_checked(raw, {"code": "abc"}, {"code": "abcd"})
    assert sent["properties"]["code"] == {"$ref": "#/definitions/code"}


def test_a_ref_to_an_anchor_nobody_defines_is_refused_naming_it() -> None:
    raw = {"type": "object", "properties": {"code": {"$ref": "#nowhere"}}}
    with pytest.raises(UserError, match="'#nowhere' at properties/code"):
        OutputSchema(raw, strict=False)


def test_a_ref_spelling_out_the_roots_own_id_is_local() -> None:
    raw = {
        "$schema": DRAFT_04,
        "id": "http://example.com/news.json#",
        "type": "object",
        "definitions": {"item": {"type": "integer"}},
        "properties": {"whole": {"$ref": "http://example.com/news.json#/definitions/item"}},
    }
    sent = _sent_and_checked(raw, {"whole": 1}, {"whole": "one"})
    assert sent["properties"]["whole"] == {"$ref": "#/definitions/item"}


def test_a_ref_to_another_document_is_still_refused() -> None:
    raw = {"type": "object", "properties": {"t": {"$ref": "http://json-schema.org/draft-04/schema#/properties/type"}}}
    with pytest.raises(UserError, match="not a local reference"):
        OutputSchema(raw, strict=False)


def test_a_dollar_id_in_a_draft_04_schema_is_no_keyword() -> None:
    """Draft-04 spells the id `id`; a `$id` there (schema generators write one per node) means nothing."""
    raw = {
        "$schema": DRAFT_04,
        "type": "object",
        "definitions": {"name": {"type": "string", "minLength": 1}},
        "properties": {
            "names": {
                "$id": "/properties/names",
                "type": "array",
                "items": {"$id": "/properties/names/items", "$ref": "#/definitions/name"},
            }
        },
    }
    _sent_and_checked(raw, {"names": ["a"]}, {"names": [""]})


@pytest.mark.parametrize(("dialect", "key"), [(DRAFT_04, "id"), (DRAFT_07, "$id")], ids=["draft-04", "draft-07"])
def test_a_sub_schema_that_moves_the_base_uri_is_refused_naming_its_keyword(dialect: str, key: str) -> None:
    raw = {
        "$schema": dialect,
        "type": "object",
        "definitions": {"name": {"type": "string"}},
        "properties": {"names": {key: "other.json", "items": {"$ref": "#/definitions/name"}, "type": "array"}},
    }
    with pytest.raises(UserError, match=f"own \\{key}" if key.startswith("$") else f"own {key} at properties/names"):
        OutputSchema(raw, strict=False)


# Patterns in ECMA-262's web-compatible grammar, where a brace or bracket that opens or closes
# nothing is a literal: each with a value it matches and one it does not.
ANNEX_B_PATTERNS = [
    ("^PUBMED:\\{d}", "PUBMED:{d}", "PUBMED:dd"),
    (".*\\{\\{.+}}.*", "a{{b}}c", "a{b}c"),
    ("^[[a-z]*[-]?[a-z]*]*$", "[ab]", "{"),
    ("^x{$", "x{", "x"),
    ("^a{,2}$", "a{,2}", "aa"),
    ("^\\d{2}}$", "12}", "12"),
]


@pytest.mark.parametrize("dialect", [DRAFT_04, DRAFT_07, DRAFT_2020], ids=["draft-04", "draft-07", "2020-12"])
@pytest.mark.parametrize(("pattern", "matching", "other"), ANNEX_B_PATTERNS)
def test_a_pattern_with_literal_braces_or_brackets_is_accepted_and_means_what_ecma_says(
    dialect: str, pattern: str, matching: str, other: str
) -> None:
    raw = {"$schema": dialect, "type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    sent = _sent_and_checked(raw, {"s": matching}, {"s": other})
    assert sent["properties"]["s"]["pattern"] == pattern  # engines get the author's spelling


@pytest.mark.parametrize(
    ("pattern", "spelled"),
    [
        ("a}", "a\\}"),
        ("a]", "a\\]"),
        ("x{", "x\\{"),
        ("a{2}", "a{2}"),
        ("a{2,}", "a{2,}"),
        ("a{2,5}b", "a{2,5}b"),
        ("\\d{2}", "\\d{2}"),
        ("{2}", "\\{2\\}"),
        ("[[a]", "[\\[a]"),
        ("[^]a]", "[^]a\\]"),
        ("[\\]]", "[\\]]"),
        ("\\{\\}", "\\{\\}"),
        ("(a|b)+", "(a|b)+"),
    ],
)
def test_the_strict_spelling_escapes_only_the_literals(pattern: str, spelled: str) -> None:
    assert strict_spelling(pattern) == spelled


def test_a_lookaround_in_pattern_properties_is_refused_with_its_pointer_and_the_engines() -> None:
    raw = {"type": "object", "patternProperties": {"^(?!@@)[a-z/]+$": {"type": "string"}}}
    with pytest.raises(UserError) as raised:
        OutputSchema(raw, strict=False)
    message = str(raised.value)
    assert "at /patternProperties/^(?!@@)[a-z~1]+$" in message
    assert "lookaround ('(?!...)')" in message and "llama.cpp" in message and "Python's re" in message


def test_a_pattern_the_draft_ignores_beside_a_ref_does_not_refuse_the_schema() -> None:
    """Before 2019-09, keywords beside a `$ref` are ignored, so a pattern there is never run."""
    raw = {
        "$schema": DRAFT_07,
        "type": "object",
        "definitions": {"name": {"type": "string"}},
        "properties": {"name": {"$ref": "#/definitions/name", "pattern": "^((?!clyde).)*$"}},
    }
    schema = OutputSchema(raw, strict=False)
    assert schema.validate_python({"name": "clyde"}) == {"name": "clyde"}
