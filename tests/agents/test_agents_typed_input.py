"""Typed input (seed 003): `ChatAgent(..., input_type=T)` takes a `T` as a run's input, validates
it before any call and sends it as JSON with its schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, Field

from so_middleware import ChatAgent, UserError
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio


class Line(BaseModel):
    sku: str
    quantity: int = Field(gt=0)


class Order(BaseModel):
    customer: str
    lines: list[Line]


@dataclass
class Ticket:
    title: str
    priority: int


def sent_json(fake: FakeChatClient) -> tuple[Any, dict[str, Any]]:
    """The input's JSON and its schema, as the message sent says them."""
    text = fake.calls[0].messages[-1].text
    value, schema = text.split("\n", 1)[1].split("\n\nIts JSON schema:\n")
    return json.loads(value), json.loads(schema)


@pytest.mark.parametrize("given", [
    Order(customer="Ada", lines=[Line(sku="A-1", quantity=2)]),
    {"customer": "Ada", "lines": [{"sku": "A-1", "quantity": 2}]},
], ids=["instance", "dict"])  # fmt: skip
async def test_a_typed_input_is_sent_as_json_with_its_schema(given: Any) -> None:
    fake = FakeChatClient("Two of A-1 for Ada.")
    response = await ChatAgent(fake, input_type=Order).run(given)
    assert response.text == "Two of A-1 for Ada."
    value, schema = sent_json(fake)
    assert value == {"customer": "Ada", "lines": [{"sku": "A-1", "quantity": 2}]}
    assert schema == Order.model_json_schema()


async def test_a_dataclass_is_a_typed_input_too() -> None:
    fake = FakeChatClient("ok")
    await ChatAgent(fake, input_type=Ticket).run(Ticket("Printer on fire", 1))
    assert sent_json(fake)[0] == {"title": "Printer on fire", "priority": 1}


@pytest.mark.parametrize(("given", "field"), [
    ({"customer": "Ada", "lines": [{"sku": "A-1", "quantity": 0}]}, "'lines.0.quantity'"),
    (Order.model_construct(customer="Ada", lines=[Line.model_construct(sku="A-1", quantity=-1)]), "'lines.0.quantity'"),
    ({"lines": []}, "'customer'"),
    (Ticket("x", "high"), "'priority'"),  # type: ignore[arg-type]
])  # fmt: skip
async def test_an_invalid_typed_input_is_refused_naming_the_field_before_any_call(given: Any, field: str) -> None:
    fake = FakeChatClient("never")
    input_type = Ticket if isinstance(given, Ticket) else Order
    with pytest.raises(UserError, match=f"invalid {input_type.__name__} input: field {field}"):
        ChatAgent(fake, input_type=input_type).run(given)
    assert fake.calls == []


def test_an_instance_of_another_type_is_refused() -> None:
    with pytest.raises(UserError, match="this agent's input is Order, not Ticket"):
        ChatAgent(FakeChatClient("x"), input_type=Order).run(Ticket("x", 1))  # type: ignore[arg-type]


async def test_a_typed_agent_still_takes_text() -> None:
    fake = FakeChatClient("hello")
    assert (await ChatAgent(fake, input_type=Order).run("hi")).text == "hello"
    assert fake.calls[0].messages[-1].text == "hi"


def test_an_input_type_is_a_model_or_a_dataclass() -> None:
    with pytest.raises(UserError, match="input_type must be a pydantic model or a dataclass, not <class 'int'>"):
        ChatAgent(FakeChatClient("x"), input_type=int)


async def test_an_agent_with_typed_input_is_a_tool_whose_request_is_that_type() -> None:
    clerk_model = FakeChatClient("Noted.")
    clerk = ChatAgent(clerk_model, name="clerk", input_type=Order)
    request = '{"request": {"customer": "Ada", "lines": [{"sku": "A-1", "quantity": 2}]}}'
    fake = FakeChatClient([Reply(tool_calls=[("clerk", request)]), "Ordered."])
    response = await ChatAgent(fake, tools=[clerk.as_tool()]).run("Order two A-1 for Ada")
    (declared,) = fake.calls[0].options.tools or []
    assert declared.parameters["properties"]["request"]["required"] == ["customer", "lines"]  # type: ignore[union-attr]
    assert response.secondary.tool_runs[0].result == "Noted."
    assert sent_json(clerk_model)[0] == {"customer": "Ada", "lines": [{"sku": "A-1", "quantity": 2}]}
