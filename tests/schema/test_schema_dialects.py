"""The Gemini, Bedrock, Mistral and Ollama dialects: what each type is sent as, and what is refused.

Each table row is a type and the rendered schema's part the provider's documented rules decide
(sources in `tests/schema/conftest.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from so_middleware import UserError
from so_middleware.schema import OutputSchema


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Chain(BaseModel):
    value: int
    next: Chain | None = None


class Loop(BaseModel):
    again: Loop


def _response(output_type: Any, profile: Any) -> Any:
    return OutputSchema(output_type).json_schema(profile)["properties"]["response"]


@pytest.mark.parametrize(
    ("output_type", "profile", "sent"),
    [
        (Annotated[int, Field(ge=1, le=5)], "gemini", {"type": "integer", "minimum": 1, "maximum": 5}),
        (
            Annotated[str, Field(pattern=r"^[a-z]+$")],
            "gemini",
            {"description": 'pattern="^[a-z]+$"', "type": "string"},
        ),
        (
            tuple[int, str],
            "gemini",
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2},
        ),
        (Literal["a"], "gemini", {"type": "string", "enum": ["a"]}),
        (int | None, "gemini-openapi", {"type": "INTEGER", "nullable": True}),
        (list[str], "gemini-openapi", {"type": "ARRAY", "items": {"type": "STRING"}}),
        (Literal[1, 2], "gemini-openapi", {"type": "INTEGER", "description": "one of [1, 2]"}),
        (Annotated[int, Field(ge=1)], "bedrock", {"description": "minimum=1", "type": "integer"}),
        (Annotated[int, Field(ge=1)], "mistral", {"type": "integer", "minimum": 1}),
        (Annotated[str, Field(pattern=r"^a\b")], "mistral", {"type": "string", "pattern": r"^a\b"}),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_what_each_dialect_sends(output_type: Any, profile: Any, sent: dict[str, Any]) -> None:
    assert _response(output_type, profile) == sent


def test_gemini_keeps_an_open_object_and_the_property_order() -> None:
    class Scores(BaseModel):
        zeta: int
        alpha: dict[str, int]

    schema = OutputSchema(Scores, strict=False).json_schema("gemini")
    assert schema["propertyOrdering"] == ["zeta", "alpha"]
    assert schema["properties"]["alpha"]["additionalProperties"] == {"type": "integer"}


def test_gemini_openapi_refuses_a_dict_naming_the_field_and_the_other_route() -> None:
    class Scores(BaseModel):
        by_name: dict[str, int]

    with pytest.raises(UserError, match=r"gemini-openapi.*by_name: is an open object.*use the 'gemini' profile"):
        OutputSchema(Scores, strict=False).json_schema("gemini-openapi")
    assert OutputSchema(Scores, strict=False).json_schema("gemini")["properties"]["by_name"]["additionalProperties"]


def test_mistral_sends_an_open_object_as_the_plain_schema_without_strict() -> None:
    """Strict mode needs every object closed; a type with a dict is sent as it is, non-strict."""

    class Scores(BaseModel):
        by_name: dict[str, int]

    plain = OutputSchema(Scores, strict=False)
    assert plain.json_schema("mistral") == plain.json_schema("json-schema")


@pytest.mark.parametrize("profile", ["anthropic", "bedrock", "ollama", "gemini", "gemini-openapi"])
def test_a_recursive_type_is_unrolled_to_the_depth_asked_and_read_whole(profile: Any) -> None:
    schema = OutputSchema(Chain, recursion_depth=2)
    rendered = schema.json_schema(profile)
    assert "$defs" not in rendered and "$ref" not in str(rendered)
    levels = 0
    node = rendered
    while "next" in node.get("properties", {}):
        nxt = node["properties"]["next"]
        node = next((b for b in nxt.get("anyOf", [nxt]) if "properties" in b), {})
        levels += 1
    assert levels == 2
    deeper = '{"value": 1, "next": {"value": 2, "next": {"value": 3, "next": {"value": 4}}}}'
    assert schema.validate_json(deeper).next.next.next.value == 4


def test_mistral_keeps_recursion_as_refs() -> None:
    rendered = OutputSchema(Node).json_schema("mistral")
    assert rendered["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}


@pytest.mark.parametrize("profile", ["anthropic", "bedrock", "ollama", "gemini", "gemini-openapi"])
def test_a_type_whose_every_value_recurses_is_a_user_error_naming_the_provider(profile: Any) -> None:
    with pytest.raises(UserError, match=r"Cannot unroll the recursive type Loop for (Anthropic|Amazon|Ollama|Gemini)"):
        OutputSchema(Loop, strict=False).json_schema(profile)


@pytest.mark.parametrize("depth", [0, -1, True, 2.5])
def test_a_recursion_depth_that_is_no_positive_whole_number_is_refused(depth: Any) -> None:
    with pytest.raises(UserError, match="recursion_depth"):
        OutputSchema(Node, recursion_depth=depth)


def test_an_unrolled_schema_too_large_names_the_depth() -> None:
    class Wide(BaseModel):
        a: Wide | None = None
        b: Wide | None = None
        c: Wide | None = None
        d: Wide | None = None

    with pytest.raises(UserError, match="smaller recursion_depth"):
        OutputSchema(Wide, recursion_depth=12).json_schema("ollama")
