"""schema_outline: the schema in a few lines, for a model whose engine enforces it unseen."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from so_middleware.schema import OutputSchema, schema_outline


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    city: str = Field(description="the city")
    zip: str | None = None


class Person(BaseModel):
    """A person."""

    name: str = Field(description="full name", examples=["Ada Lovelace"])
    age: int = Field(ge=0, le=150)
    email: str = Field(json_schema_extra={"format": "email"})
    tags: list[str] = Field(max_length=5)
    color: Color
    kind: Literal["a", "b"]
    home: Address
    work: Address | None = None
    pair: tuple[int, str]


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Cat(BaseModel):
    meow: bool


class Dog(BaseModel):
    bark: int


class Pet(BaseModel):
    pet: Cat | Dog


def outline(output_type: Any) -> str:
    return schema_outline(OutputSchema(output_type, strict=False).json_schema("json-schema"))


PERSON = """\
The answer is JSON: object Person — A person.
- name: string — full name; e.g. "Ada Lovelace"
- age: integer, >= 0, <= 150
- email: string, format email
- tags: list of string, at most 5 items
- color: one of "red", "blue"
- kind: one of "a", "b"
- home: object Address
  - city: string — the city
  - zip: string or null (optional)
- work: object Address or null (optional)
  - city: string — the city
  - zip: string or null (optional)
- pair: list [integer, string], exactly 2 items"""


@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (Person, PERSON),  # nested, enum, literal, optional, list, tuple, format, example, description
        (Node, "The answer is JSON: object Node\n- value: integer\n- children: list of Node, as above (optional)"),
        (
            Pet,  # a union of models: each alternative's fields under its name
            "The answer is JSON: object Pet\n- pet: object Cat or object Dog\n"
            "  - as Cat:\n    - meow: boolean\n  - as Dog:\n    - bark: integer",
        ),
        (list[int], "The answer is JSON: object\n- response: list of integer"),
        (dict[str, int], "The answer is JSON: object of string keys to integer"),
    ],
)
def test_the_outline_of_a_type(output_type: Any, expected: str) -> None:
    assert outline(output_type) == expected


def test_the_outline_is_the_same_every_time() -> None:
    assert {outline(Person) for _ in range(3)} == {PERSON}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "format": "uri", "minLength": 3}, "string, format uri, at least 3 characters"),
        (
            {"type": "array", "items": {"type": "integer"}, "minItems": 1, "uniqueItems": True},
            "list of integer, at least 1 items, no repeats",
        ),
        (
            {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4},
            "list of integer, 2 to 4 items",
        ),
        ({"type": ["string", "null"], "pattern": "^a"}, 'string, matching "^a" or null'),
        ({"const": 3}, "always 3"),
        ({"enum": list(range(25))}, "one of " + ", ".join(str(i) for i in range(20)) + ", … (5 more)"),
        ({}, "any JSON value"),
        ({"$ref": "#/$defs/missing"}, "any JSON value"),
    ],
)
def test_the_words_of_a_raw_schema(schema: dict[str, Any], expected: str) -> None:
    assert schema_outline(schema) == "The answer is JSON: " + expected


def test_a_recursive_raw_schema_is_named_not_expanded() -> None:
    tree = {
        "$defs": {
            "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}
        },
        "$ref": "#/$defs/Tree",
    }
    assert schema_outline(tree) == "The answer is JSON: object\n- kids: list of Tree, as above (optional)"


def test_a_long_description_is_cut_and_a_deep_schema_ends() -> None:
    long = schema_outline({"type": "object", "properties": {"a": {"type": "string", "description": "x" * 500}}})
    assert long.endswith("x" * 200 + "…") and len(long) < 300
    deep: dict[str, Any] = {"type": "integer"}
    for _ in range(50):
        deep = {"type": "object", "properties": {"a": deep}, "required": ["a"]}
    lines = schema_outline(deep).splitlines()
    assert len(lines) < 15 and lines[-1].strip() == "- a: value"


def test_an_output_schemas_outline_is_none_when_it_says_nothing_more_than_its_grammar() -> None:
    """`OutputSchema.outline()`: a bare `list[int]` has none; a bound, a named field or a
    description makes one; the text is made once per type."""
    from typing import Annotated

    from pydantic import BaseModel, Field

    from so_middleware.schema import OutputSchema

    class Point(BaseModel):
        x: int

    assert OutputSchema(list[int]).outline() is None
    assert OutputSchema(int).outline() is None
    assert "at most 3 items" in (OutputSchema(Annotated[list[int], Field(max_length=3)]).outline() or "")
    assert OutputSchema(Point).outline() == "The answer is JSON: object Point\n- x: integer"
    assert OutputSchema(Point).outline() is OutputSchema(Point).outline()
