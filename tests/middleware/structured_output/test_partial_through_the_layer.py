"""The partial parser as the structured-output layer uses it (split from tests/schema/test_partial.py,
whose unit tests call the parser itself)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import with_structured_output
from so_middleware.testing import FakeChatClient


class Address(BaseModel):
    city: str
    zip: str


class Person(BaseModel):
    name: str
    age: int
    address: Address
    tags: list[str] = []
    note: str | None = None


class Pet(BaseModel):
    name: str
    tags: list[str] = []


class People(BaseModel):
    title: str
    people: list[Person]
    pets: list[Pet] = []


@pytest.mark.anyio
async def test_streamed_updates_carry_the_items_of_a_list_inside_a_model() -> None:
    """docs/how-to/streaming.md: `update.completed_items` holds the list items that just closed."""
    people = [{"name": f"p{index}", "age": index, "address": {"city": "c", "zip": "z"}} for index in range(2)]
    fake = FakeChatClient([json.dumps({"title": "t", "people": people})])
    stream = with_structured_output(fake).get_response("Who?", output_type=People, stream=True)
    seen: list[Any] = []
    async with stream:
        async for update in stream:
            seen.extend(update.completed_items)
    assert seen == [Person.model_validate(person) for person in people]
    assert (await stream.get_final_response()).value.people == seen
