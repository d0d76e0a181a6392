"""shape_hint: the skeleton used to prompt models without constrained decoding."""

from __future__ import annotations

from enum import Enum
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from so_middleware.schema import OutputSchema, shape_hint


class Kind(Enum):
    A = "a"
    B = "b"


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Item(BaseModel):
    name: str = Field(description="the item's name")
    price: float
    tags: list[str]
    kind: Kind
    note: str | None = None
    flag: Literal["x"] = "x"


@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (list[int], '{"response": [<integer>, ...]}'),
        (bool, '{"response": <boolean>}\nresponse is true or false'),  # spelled out: SmolLM2 wrote 2
        (dict[str, int], '{"<key>": <integer>, ...}'),
        (
            Item,
            '{"name": "<the item\'s name>", "price": <number>, "tags": ["<string>", ...], '
            '"kind": "a", "note": "<string>" | null, "flag": "x"}\nkind is one of "a" or "b"',
        ),
        (tuple[int, str], '{"response": [<integer>, "<string>"]}'),
    ],
)
def test_shapes(output_type: object, expected: str) -> None:
    schema = OutputSchema(output_type, strict=False).json_schema("json-schema")
    assert shape_hint(schema) == expected


def test_recursive_type_stops_at_its_name() -> None:
    hint = shape_hint(OutputSchema(Node, strict=False).json_schema("json-schema"))
    # the root is inlined, so one level shows before the name stops the recursion
    assert hint == '{"value": <integer>, "children": [{"value": <integer>, "children": [<Node>, ...]}, ...]}'


def test_hostile_schemas_do_not_explode() -> None:
    deep: dict[str, object] = {"type": "string"}
    for _ in range(1000):
        deep = {"type": "array", "items": deep}
    assert "<value>" in shape_hint(deep)
    assert shape_hint({"$ref": "#/$defs/missing"}) == "<value>"
    assert shape_hint({"type": ["string", "null"]}) == '"<string>" | null'


class Day(BaseModel):
    day: Literal["monday", "tuesday", "friday"]
    mood: Kind | None = None
    tags: list[Literal["x", "y"]] = []


def test_choices_show_the_first_as_the_example_and_are_listed_in_words() -> None:
    """A small model copied `"spam" | "ham"` verbatim; the skeleton shows one value instead."""
    hint = shape_hint(OutputSchema(Day, strict=False).json_schema("anthropic"))
    assert hint.splitlines() == [
        '{"day": "monday", "mood": "a" | null, "tags": ["x", ...]}',
        'day is one of "monday", "tuesday" or "friday"',
        'mood is one of "a" or "b"',
        'tags[] is one of "x" or "y"',
    ]


def test_a_root_enum_and_a_long_enum() -> None:
    assert shape_hint(OutputSchema(Kind).json_schema()) == '{"response": "a"}\nresponse is one of "a" or "b"'
    many = {"type": "object", "properties": {"n": {"enum": list(range(30))}}}
    assert shape_hint(many).splitlines()[1] == "n is one of " + ", ".join(str(i) for i in range(20)) + " or 10 more"
