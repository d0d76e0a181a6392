"""opening: the JSON prefix a prompted answer is started with, as deep as one shape goes."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from so_middleware.schema import OutputSchema, opening


class Genre(Enum):
    COMEDY = "comedy"
    DRAMA = "drama"


class Point(BaseModel):
    x: int
    y: int


class Segment(BaseModel):
    start: Point
    end: Point


class Email(BaseModel):
    kind: Literal["email"]
    address: str


class Phone(BaseModel):
    kind: Literal["phone"]
    number: str


class Contacts(BaseModel):
    contacts: list[Email | Phone]


class Numbers(BaseModel):
    numbers: list[int]


class Movie(BaseModel):
    genre: Genre
    title: str


class Maybe(BaseModel):
    note: str | None
    other: int


class Flag(BaseModel):
    is_open: bool


class Mixed(BaseModel):
    value: Email | int


@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (Numbers, '{"numbers": ['),  # a list is opened with its bracket, not left to bare numbers
        (list[str], '{"response": ["'),
        (Segment, '{"start": {"x": '),  # through nested models ($ref) to the first number
        (Contacts, '{"contacts": [{"kind": "'),  # every option of the union starts with its tag
        (Movie, '{"genre": "'),  # an enum of strings is opened with its quote
        (Maybe, '{"note": '),  # a string or null: the options part at the value
        (Flag, '{"is_open": '),
        (Mixed, '{"value": '),
    ],
)
def test_opening_goes_as_deep_as_one_shape(output_type: Any, expected: str) -> None:
    assert opening(OutputSchema(output_type).json_schema("json-schema")) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, '{"a": '),
        (
            {"type": "object", "properties": {"a": {"$ref": "#"}}},
            '{"a": {"a": {"a": {"a": {"a": {"a": {"a": {"a": {"a": ',
        ),
        ({"type": "object", "properties": {"a": {"anyOf": []}}}, '{"a": '),
        ({"type": "object", "properties": {"a": {"enum": [1, "x"]}}}, '{"a": '),
        ({"type": "object", "properties": {"a": {"const": "x"}}}, '{"a": "'),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, ""),  # no first property to open
        ({"type": "array", "prefixItems": [{"type": "string"}]}, ""),  # a tuple: its items differ
    ],
)
def test_opening_stops_where_it_cannot_follow(schema: dict[str, Any], expected: str) -> None:
    assert opening(schema) == expected
