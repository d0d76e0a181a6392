"""Profile-specific rewrites: what moves where, what is refused, and the documented limits."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, ConfigDict, Field, create_model

from so_middleware import UserError
from so_middleware.schema import OutputSchema

Checker = Callable[[dict[str, Any]], None]


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    name: str = Field("Rex", min_length=1, max_length=20)


class Owner(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    nickname: str | None = None
    score: float = Field(0.5, ge=0, le=1, multiple_of=0.5)
    website: str = Field("", json_schema_extra={"format": "uri"})
    tags: list[str] = Field(default_factory=list, min_length=2, max_length=5)
    unique: set[int] = set()


def _walk(node: Any) -> list[dict[str, Any]]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            found.append(current)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


def test_openai_strict_rewrites(check_openai_strict: Checker) -> None:
    schema = OutputSchema(Owner).json_schema("openai-strict")
    check_openai_strict(schema)
    nodes = _walk(schema)
    assert not any("oneOf" in node or "discriminator" in node or "default" in node for node in nodes)
    props = schema["properties"]
    assert schema["required"] == list(props)
    assert props["nickname"]["anyOf"][1] == {"type": "null"}
    assert props["score"]["minimum"] == 0 and props["score"]["multipleOf"] == 0.5
    assert "default=0.5" in props["score"]["description"]
    assert "format=uri" in props["website"]["description"] and "format" not in props["website"]
    assert props["tags"]["minItems"] == 2 and props["tags"]["maxItems"] == 5
    assert "uniqueItems=true" in props["unique"]["description"]
    dog = schema["$defs"]["Dog"]["properties"]
    assert "minLength=1" in dog["name"]["description"] and "maxLength=20" in dog["name"]["description"]
    assert dog["kind"] == {"enum": ["dog"], "type": "string"}


def test_anthropic_rewrites(check_anthropic: Checker) -> None:
    schema = OutputSchema(Owner).json_schema("anthropic")
    check_anthropic(schema)
    props = schema["properties"]
    assert schema["required"] == ["pet"]
    assert props["website"]["format"] == "uri"
    assert "minimum=0" in props["score"]["description"] and "minimum" not in props["score"]
    assert "minItems=2" in props["tags"]["description"] and "maxItems" not in props["tags"]
    assert schema["$defs"]["Dog"]["properties"]["kind"] == {"const": "dog", "type": "string"}


def test_min_items_of_one_is_kept_for_anthropic() -> None:
    schema = OutputSchema(Annotated[list[int], Field(min_length=1)]).json_schema("anthropic")
    assert schema["properties"]["response"]["minItems"] == 1


def test_ref_with_description_is_inlined_or_wrapped(check_openai_strict: Checker) -> None:
    class Inner(BaseModel):
        x: int

    class Tree(BaseModel):
        inner: Inner = Field(description="an inner")
        child: Tree | None = Field(None, description="a subtree")

    Tree.model_rebuild()
    schema = OutputSchema(Tree).json_schema()
    check_openai_strict(schema)
    assert schema["properties"]["inner"]["description"] == "an inner"
    assert schema["properties"]["inner"]["properties"] == {"x": {"type": "integer"}}
    child = schema["properties"]["child"]
    assert child["description"] == "a subtree"
    assert {"$ref": "#/$defs/Tree"} in child["anyOf"]


@pytest.mark.parametrize(
    ("output_type", "path"),
    [
        (dict[str, int], "<root>"),
        (list[dict[str, int]], "response[]"),
        (create_model("Holder", data=(dict[str, float], ...)), "data"),
        (create_model("Loose", __config__=ConfigDict(extra="allow"), x=(int, ...)), "<root>"),
        (create_model("AnyField", x=(Any, ...)), "x"),
    ],
    ids=["dict", "list-of-dict", "field", "extra-allow", "any-field"],
)
def test_strict_refusals_name_the_field_path(output_type: Any, path: str) -> None:
    with pytest.raises(UserError) as info:
        OutputSchema(output_type)
    message = str(info.value)
    assert f"{path}:" in message and "strict=False" in message
    fallback = OutputSchema(output_type, strict=False)
    assert not fallback.is_strict_json_schema()
    assert fallback.json_schema("openai-strict") == fallback.json_schema("json-schema")


def test_strict_false_keeps_the_strict_form_when_possible() -> None:
    schema = OutputSchema(Owner, strict=False)
    assert not schema.is_strict_json_schema()
    assert schema.json_schema("openai-strict") == OutputSchema(Owner).json_schema("openai-strict")


def test_anthropic_gets_recursion_unrolled_three_levels_deep(
    check_openai_strict: Checker, check_anthropic: Checker
) -> None:
    class Node(BaseModel):
        children: list[Node] = []

    schema = OutputSchema(Node, strict=False)
    check_openai_strict(schema.json_schema())
    rendered = schema.json_schema("anthropic")
    check_anthropic(rendered)
    # The root and three levels of Node below it; the optional field that would recurse further is left out.
    level = rendered
    for _ in range(3):
        level = level["properties"]["children"]["items"]
    assert level["properties"] == {}
    assert schema.validate_json('{"children": [{"children": [{"children": [{"children": []}]}]}]}')


def test_raw_schema_self_reference(check_openai_strict: Checker, check_anthropic: Checker) -> None:
    raw = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["name", "kids"],
        "additionalProperties": False,
    }
    schema = OutputSchema(raw)
    check_openai_strict(schema.json_schema())
    assert schema.validate_json('{"name": "a", "kids": [{"name": "b", "kids": []}]}')["kids"][0]["name"] == "b"
    rendered = schema.json_schema("anthropic")
    check_anthropic(rendered)
    # The required list that would recurse a fourth time is an empty list.
    deepest = rendered["properties"]["kids"]["items"]["properties"]["kids"]["items"]["properties"]["kids"]
    assert deepest["items"] == {"type": "null"}
    assert "maxItems=0" in deepest["description"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}, "'not'"),
        (
            {"type": "object", "properties": {"a": {"allOf": [{"type": "integer"}, {"type": "string"}]}}},
            "no type in common",
        ),
        ({"type": "object", "properties": {"a": {"$ref": "https://example.com/x.json"}}}, "not a local"),
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"a": {"type": "array", "items": [{"type": "integer"}]}},
            },
            "tuple-style",
        ),
    ],
    ids=["not", "allOf-conflict", "external-ref", "items-list"],
)
def test_inexpressible_raw_schemas(raw: dict[str, Any], reason: str) -> None:
    with pytest.raises(UserError, match=reason):
        OutputSchema(raw)


def _wide_model(count: int) -> Any:
    return create_model("Wide", **{f"field_{index}": (int, ...) for index in range(count)})  # type: ignore[call-overload]


def _deep_model(levels: int) -> Any:
    model: Any = create_model("Level0", value=(int, ...))
    for level in range(1, levels):
        model = create_model(f"Level{level}", child=(model, ...))
    return model


def test_openai_limits(check_openai_strict: Checker) -> None:
    check_openai_strict(OutputSchema(_wide_model(5000)).json_schema())
    with pytest.raises(UserError, match="5001 object properties"):
        OutputSchema(_wide_model(5001))
    check_openai_strict(OutputSchema(_deep_model(10)).json_schema())
    with pytest.raises(UserError, match="11 levels of object nesting"):
        OutputSchema(_deep_model(11))
    many = Enum("Many", {f"V{index}": f"v{index}" for index in range(1001)})  # type: ignore[misc]
    with pytest.raises(UserError, match="1001 enum values"):
        OutputSchema(many)
    long_values = Enum("Long", {f"V{index}": f"{index:04d}" + "x" * 60 for index in range(300)})  # type: ignore[misc]
    with pytest.raises(UserError, match="string enum of 300 values"):
        OutputSchema(long_values)
    huge_names = create_model("Names", **{"n" * 200 + str(index): (int, ...) for index in range(700)})  # type: ignore[call-overload]
    with pytest.raises(UserError, match="characters of names"):
        OutputSchema(huge_names)
    assert not OutputSchema(_wide_model(5001), strict=False).is_strict_json_schema()


def test_anthropic_complexity_limits() -> None:
    optional = create_model("Opt", **{f"f{index}": (Optional[int], None) for index in range(25)})  # type: ignore[call-overload]
    with pytest.raises(UserError, match="25 optional properties"):
        OutputSchema(optional).json_schema("anthropic")
    unions = create_model("Uni", **{f"f{index}": (Union[int, str], ...) for index in range(17)})  # type: ignore[call-overload]
    with pytest.raises(UserError, match="17 properties with union types"):
        OutputSchema(unions).json_schema("anthropic")


def test_anthropic_demotes_complex_patterns() -> None:
    simple = OutputSchema(Annotated[str, Field(pattern=r"^[a-z]{2,5}$")]).json_schema("anthropic")
    assert simple["properties"]["response"]["pattern"] == r"^[a-z]{2,5}$"
    for pattern in (r"^\w+\b$", r"^a{1,500}$"):
        complex_ = OutputSchema(Annotated[str, Field(pattern=pattern)]).json_schema("anthropic")
        assert "pattern" not in complex_["properties"]["response"]
        assert "pattern=" in complex_["properties"]["response"]["description"]
        assert OutputSchema(Annotated[str, Field(pattern=pattern)]).json_schema()["properties"]["response"]["pattern"]


def test_unknown_profile() -> None:
    with pytest.raises(UserError, match="Unknown schema profile"):
        OutputSchema(int).json_schema("cohere")  # type: ignore[arg-type]
