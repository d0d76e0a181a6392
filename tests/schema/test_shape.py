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
        (bool, '{"response": <boolean>}'),
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
