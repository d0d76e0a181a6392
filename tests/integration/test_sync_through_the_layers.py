"""Blocking entry points through the structured-output layer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from so_middleware import (
    with_structured_output,
)
from so_middleware.testing import FakeChatClient, Reply


class Person(BaseModel):
    name: str
    age: int


def test_structured_output_streams_partial_values_synchronously() -> None:
    client = with_structured_output(FakeChatClient(Reply('{"name": "Ada", "age": 36}', chunk_size=4)))
    partials: list[Any] = []
    with client.get_response_sync("Ada, 36", stream=True, output_type=Person) as stream:
        for update in stream:
            if update.partial_value is not None:
                partials.append(update.partial_value.model_copy())
    assert stream.get_final_response().value == Person(name="Ada", age=36)
    assert partials and partials[-1] == Person(name="Ada", age=36)
