"""`typing.TypedDict` works as an output type on every Python: below 3.12 pydantic refuses it,
so the schema layer rebuilds it as `typing_extensions.TypedDict` (values are dicts either way)."""

from __future__ import annotations

import json
import typing
from typing import Annotated, Any

import pytest
from pydantic import Field
from typed_dicts import Address

from so_middleware import ModelBehaviorError
from so_middleware.schema import OutputSchema


class Person(typing.TypedDict, total=False):
    name: typing.Required[str]
    age: int
    home: Address
    past: list[Address]
    note: Annotated[Address | None, Field(description="any")]


@pytest.mark.parametrize(
    ("output_type", "text", "value"),
    [
        (Address, '{"city": "Oslo"}', {"city": "Oslo"}),
        (list[Address], '{"response": [{"city": "Oslo"}]}', [{"city": "Oslo"}]),
        (Address | None, '{"response": null}', None),
        (
            Person,
            '{"name": "Ada", "home": {"city": "Oslo"}, "past": [{"city": "Rome"}], "note": null}',
            {"name": "Ada", "home": {"city": "Oslo"}, "past": [{"city": "Rome"}], "note": None},
        ),
    ],
)
def test_a_typing_typeddict_is_an_output_type(output_type: Any, text: str, value: Any) -> None:
    schema = OutputSchema(output_type)
    assert schema.validate_json(text) == value
    assert schema.output_type is output_type


def test_the_typeddict_keeps_its_required_keys_and_description() -> None:
    schema = OutputSchema(Person)
    assert schema.validate_json('{"name": "Ada"}') == {"name": "Ada"}  # the other keys are optional
    with pytest.raises(ModelBehaviorError, match="name"):
        schema.validate_json('{"age": 36}')
    assert "Where someone lives." in json.dumps(schema.json_schema())
