"""Every supported kind of output type, through every profile: schema, validation, round trip."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import date, datetime
from enum import Enum
from typing import Annotated, Any, Generic, Literal, NamedTuple, Optional, TypeVar, Union

import jsonschema
import pydantic
import pytest
from pydantic import BaseModel, Field
from typing_extensions import NotRequired, TypedDict

from so_middleware import ModelBehaviorError, UserError
from so_middleware.schema import OutputSchema

Checker = Callable[[dict[str, Any]], None]

T = TypeVar("T")


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    city: str
    zip: Annotated[str, Field(min_length=5, max_length=10, description="Postal code")]


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)
    email: str | None = None
    address: Address = Field(description="Home address")
    tags: list[str] = []
    born: date | None = None


class Box(BaseModel, Generic[T]):
    item: T


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


@dataclasses.dataclass
class Point:
    x: float
    y: float
    label: str = ""


@pydantic.dataclasses.dataclass
class PydPoint:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


class PartialMovie(TypedDict, total=False):
    title: str
    year: int


class MovieNR(TypedDict):
    title: str
    rating: NotRequired[float]


class Pair(NamedTuple):
    left: int
    right: str


class Event(BaseModel):
    at: datetime
    color: Color


# (type, example value, expected to be wrapped)
CASES: list[tuple[Any, Any, bool]] = [
    (int, 5, True),
    (float, 2.5, True),
    (bool, True, True),
    (list[int], [1, 2, 3], True),
    (list[str], ["a", "b"], True),
    (tuple[int, str], (1, "a"), True),
    (tuple[int, ...], (1, 2, 3), True),
    (set[int], {1, 2}, True),
    (frozenset[str], frozenset({"x"}), True),
    (Literal["a", "b"], "b", True),
    (Literal[1, 2], 2, True),
    (Color, Color.GREEN, True),
    (Optional[int], None, True),
    (int | None, 3, True),
    (Union[int, str], "x", True),
    (Annotated[int, Field(ge=0, le=10)], 7, True),
    (Annotated[str, Field(pattern=r"^[a-z]+$")], "abc", True),
    (Person, Person(name="Ann", age=30, address=Address(city="Oslo", zip="12345")), False),
    (list[Person], [Person(name="Bo", age=1, address=Address(city="X", zip="99999"), tags=["t"])], True),
    (Box[int], Box[int](item=3), False),
    (Box[list[Address]], Box[list[Address]](item=[Address(city="c", zip="11111")]), False),
    (Node, Node(value=1, children=[Node(value=2, children=[Node(value=3)])]), False),
    (Pet, Pet(pet=Dog(kind="dog", good=True)), False),
    (Union[Cat, Dog], Cat(kind="cat", lives=9), True),
    (Point, Point(1.0, 2.0, "p"), False),
    (PydPoint, PydPoint(x=1, y=2), False),
    (Movie, {"title": "Heat", "year": 1995}, False),
    (PartialMovie, {"title": "Heat"}, False),
    (MovieNR, {"title": "Heat", "rating": 8.5}, False),
    (Pair, Pair(1, "r"), True),
    (Event, Event(at=datetime(2024, 1, 2, 3, 4, 5), color=Color.RED), False),
    (list[tuple[int, int]], [(1, 2), (3, 4)], True),
    (list[Address | None], [None, Address(city="a", zip="22222")], True),
]

IDS = [OutputSchema(case[0], strict=False).name() for case in CASES]


@pytest.mark.parametrize(("output_type", "value", "wrapped"), CASES, ids=IDS)
def test_wrapping_and_round_trip(output_type: Any, value: Any, wrapped: bool) -> None:
    schema = OutputSchema(output_type)
    assert schema.is_wrapped is wrapped
    assert not schema.is_plain_text()
    wire = schema.dump_json(value)
    assert ("response" in json.loads(wire)) is wrapped
    assert schema.validate_json(wire) == value
    assert schema.validate_python(json.loads(wire)) == value


@pytest.mark.parametrize(("output_type", "value", "wrapped"), CASES, ids=IDS)
def test_every_profile_is_valid(
    output_type: Any, value: Any, wrapped: bool, check_openai_strict: Checker, check_anthropic: Checker
) -> None:
    schema = OutputSchema(output_type)
    strict = schema.json_schema("openai-strict")
    check_openai_strict(strict)
    assert schema.is_strict_json_schema()
    plain = schema.json_schema("json-schema")
    assert plain["type"] == "object"
    check_anthropic(schema.json_schema("anthropic"))
    if wrapped:
        for rendered in (strict, plain):
            assert rendered["required"] == ["response"]
            assert rendered["additionalProperties"] is False


@pytest.mark.parametrize(("output_type", "value", "wrapped"), CASES, ids=IDS)
def test_wrong_values_raise_model_behavior_error(output_type: Any, value: Any, wrapped: bool) -> None:
    schema = OutputSchema(output_type)
    bad = '{"response": {"nope": [1, {}]}}' if wrapped else "[1, {}]"
    with pytest.raises(ModelBehaviorError) as info:
        schema.validate_json(bad)
    assert info.value.raw_text == bad
    assert info.value.errors
    assert schema.name() in str(info.value)


@pytest.mark.parametrize(
    ("output_type", "name", "wire"),
    [
        (int, "int", "int"),
        (list[int], "list[int]", "list_int"),
        (dict[str, int], "dict[str, int]", "dict_str_int"),
        (Person, "Person", "Person"),
        (Box[int], "Box[int]", "Box_int"),
        (Optional[Person], "Person | None", "Person_None"),
        (Literal["a", "b"], "Literal['a', 'b']", "Literal_a_b"),
        (tuple[int, ...], "tuple[int, ...]", "tuple_int"),
    ],
)
def test_names(output_type: Any, name: str, wire: str) -> None:
    schema = OutputSchema(output_type, strict=False)
    assert schema.name() == name
    assert schema.wire_name() == wire
    assert schema.wire_name("anthropic") == wire


def test_wire_name_is_sanitised_and_bounded() -> None:
    schema = OutputSchema(int, name="my schema/with:odd chars" + "x" * 100)
    wire = schema.wire_name()
    assert wire.startswith("my_schema_with_odd_chars")
    assert len(wire) <= 64
    assert OutputSchema(int, name="!!!").wire_name() == "response"


@pytest.mark.parametrize("output_type", [str, None])
def test_plain_text(output_type: Any) -> None:
    schema = OutputSchema(output_type)
    assert schema.is_plain_text()
    assert not schema.is_wrapped
    assert schema.validate_json("hello {not json") == "hello {not json"
    assert schema.validate_json('"quoted"', lenient=True) == '"quoted"'
    assert schema.dump_json("text") == "text"
    assert schema.validate_python("x") == "x"
    with pytest.raises(ModelBehaviorError):
        schema.validate_python(3)
    with pytest.raises(UserError, match="plain text"):
        schema.json_schema()
    parser = schema.partial_parser()
    assert parser.feed("Hel") and parser.feed("lo")
    assert parser.value == "Hello"
    assert parser.finish() == "Hello"


def test_dict_of_str_is_an_unwrapped_object_but_not_strict() -> None:
    with pytest.raises(UserError) as info:
        OutputSchema(dict[str, int])
    assert "strict=False" in str(info.value)
    schema = OutputSchema(dict[str, int], strict=False)
    assert not schema.is_wrapped
    assert not schema.is_strict_json_schema()
    assert schema.json_schema("openai-strict") == {"additionalProperties": {"type": "integer"}, "type": "object"}
    assert schema.validate_json('{"a": 1}') == {"a": 1}
    with pytest.raises(UserError, match="open object"):
        schema.json_schema("anthropic")


RAW_OBJECT = {
    "title": "Invoice",
    "type": "object",
    "properties": {"total": {"type": "number", "minimum": 0}, "lines": {"type": "array", "items": {"type": "string"}}},
    "required": ["total", "lines"],
    "additionalProperties": False,
}
RAW_ARRAY = {"type": "array", "items": {"type": "integer"}}


def test_raw_object_schema(check_openai_strict: Checker, check_anthropic: Checker) -> None:
    schema = OutputSchema(RAW_OBJECT)
    assert schema.name() == "Invoice"
    assert not schema.is_wrapped
    check_openai_strict(schema.json_schema())
    check_anthropic(schema.json_schema("anthropic"))
    assert schema.validate_json('{"total": 3.5, "lines": ["a"]}') == {"total": 3.5, "lines": ["a"]}
    with pytest.raises(ModelBehaviorError) as info:
        schema.validate_json('{"total": -1, "lines": [2]}')
    assert "total" in str(info.value) and "lines[0]" in str(info.value)
    assert schema.dump_json({"total": 1, "lines": []}) == '{"total": 1, "lines": []}'


def test_raw_array_schema_is_wrapped() -> None:
    schema = OutputSchema(RAW_ARRAY)
    assert schema.is_wrapped
    assert schema.json_schema()["properties"]["response"] == RAW_ARRAY
    assert schema.validate_json('{"response": [1, 2]}') == [1, 2]
    assert schema.validate_json("[1, 2]", lenient=True) == [1, 2]
    with pytest.raises(ModelBehaviorError):
        schema.validate_json("[1, 2]")
    with pytest.raises(ModelBehaviorError):
        schema.validate_json('{"response": ["x"]}')
    assert schema.validate_python({"response": [4]}) == [4]


def test_invalid_raw_schema_is_a_user_error() -> None:
    with pytest.raises(UserError, match="invalid"):
        OutputSchema({"type": "nonsense"})


class Undefined(BaseModel):
    x: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821


def _deep_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (object, "accepts any value"),
        (Any, "accepts any value"),
        (lambda: 1, "function"),
        (len, "function"),
        ("Person", "forward reference"),
        (5, "not a type"),
        (Undefined, "not fully defined"),
        (_deep_schema(100_000), "deeper than"),
        (list[Any], "any JSON value"),
    ],
    ids=["object", "Any", "lambda", "builtin", "string", "instance", "undefined-ref", "deep-schema", "list-Any"],
)
def test_bad_types_raise_user_error_at_construction(bad: Any, reason: str) -> None:
    with pytest.raises(UserError, match=reason):
        OutputSchema(bad)


def test_list_any_is_fine_without_strict() -> None:
    schema = OutputSchema(list[Any], strict=False)
    assert schema.validate_json('{"response": [1, "a"]}') == [1, "a"]


def test_compiled_state_is_cached_per_type() -> None:
    first = OutputSchema(list[Person])
    second = OutputSchema(list[Person])
    assert first._compiled is second._compiled
    unhashable = Annotated[int, {"unhashable": []}]
    assert OutputSchema(unhashable).validate_json('{"response": 1}') == 1
    assert OutputSchema(dict(RAW_ARRAY))._compiled is OutputSchema(dict(RAW_ARRAY))._compiled


def test_json_schema_returns_a_copy() -> None:
    schema = OutputSchema(Person)
    schema.json_schema()["properties"].clear()
    assert schema.json_schema()["properties"]


def test_error_message_is_concise_for_huge_output() -> None:
    schema = OutputSchema(list[int])
    huge = '{"response": [' + ",".join(['"x"'] * 50_000) + "]}"
    with pytest.raises(ModelBehaviorError) as info:
        schema.validate_json(huge)
    message = str(info.value)
    assert len(message) < 2_000
    assert "response[0]" in message and "more errors" in message
    assert info.value.raw_text == huge


def test_dump_json_rejects_wrong_values() -> None:
    with pytest.raises(UserError):
        OutputSchema(Person).dump_json(3)


@pytest.mark.parametrize("profile", ["gemini", "gemini-openapi", "bedrock", "mistral", "ollama"])
@pytest.mark.parametrize(("output_type", "value", "wrapped"), CASES, ids=IDS)
def test_every_new_dialect_follows_its_rules_and_takes_the_value(
    output_type: Any, value: Any, wrapped: bool, profile: Any, dialect_checkers: dict[str, Checker]
) -> None:
    """Every type of the corpus renders in each dialect by that provider's documented rules, and the
    example value (dumped as it would be sent) validates against what is sent."""
    schema = OutputSchema(output_type)
    rendered = schema.json_schema(profile)
    dialect_checkers[profile](rendered)
    if profile != "gemini-openapi":  # the OpenAPI spelling is no JSON Schema a validator reads
        jsonschema.validate(json.loads(schema.dump_json(value)), rendered)


def test_names_are_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema's readable name is made once: a run asks for it (and for the wire name) on every call."""
    from so_middleware.schema import _output_schema

    made: list[Any] = []
    monkeypatch.setattr(_output_schema, "readable_name", lambda output_type: made.append(output_type) or "Person")
    schema = OutputSchema(Person)
    names = {(schema.name(), schema.wire_name(), schema.wire_name("anthropic")) for _ in range(3)}
    assert names == {("Person", "Person", "Person")}
    assert made == [Person]


def test_shared_schema_is_made_once_per_type_strict_and_name() -> None:
    """`shared_schema` returns the one schema of a hashable type, strict setting and name; a raw
    schema dict gets a new one each time (the dict is the caller's, and may change)."""
    from so_middleware.schema import shared_schema

    assert shared_schema(list[int]) is shared_schema(list[int])
    assert shared_schema(list[int], strict=False) is not shared_schema(list[int])
    assert shared_schema(list[int], name="n").wire_name() == "n"
    raw = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert shared_schema(raw, strict=False) is not shared_schema(raw, strict=False)
