"""The happy path's cheaper pieces keep their behaviour: schemas are still fresh copies per call,
and checking a profile raises what rendering it raises."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from so_middleware import ResponseFormat, UserError
from so_middleware.core._formats import copy_json
from so_middleware.schema import OutputSchema


class Person(BaseModel):
    name: str
    tags: list[str]


def test_copy_json_is_a_deep_copy() -> None:
    value = {"a": [1, {"b": (2, 3)}], "c": {"d": None}}
    copied = copy_json(value)
    assert copied == value
    copied["a"][1]["b"] = "changed"
    copied["c"]["d"] = 1
    assert value == {"a": [1, {"b": (2, 3)}], "c": {"d": None}}


def test_json_schema_is_a_fresh_copy_each_call() -> None:
    schema = OutputSchema(Person)
    first = schema.json_schema()
    first["properties"]["name"]["type"] = "integer"
    assert schema.json_schema()["properties"]["name"]["type"] == "string"


def test_check_profile_raises_what_json_schema_raises() -> None:
    assert OutputSchema(Person).check_profile("anthropic") is None
    plain = OutputSchema(str)
    with pytest.raises(UserError) as rendered:
        plain.json_schema()
    with pytest.raises(UserError) as checked:
        plain.check_profile()
    assert str(checked.value) == str(rendered.value)


def test_request_schema_is_not_the_format_schema() -> None:
    fmt = ResponseFormat.json_schema({"type": "object", "properties": {"x": {"type": "integer"}}}, name="X")
    wire = fmt.to_chat_completions()
    assert wire is not None
    wire["json_schema"]["schema"]["properties"]["x"]["type"] = "string"
    assert fmt.schema is not None and fmt.schema["properties"]["x"]["type"] == "integer"
