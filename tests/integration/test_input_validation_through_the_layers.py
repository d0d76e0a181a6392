"""Input validation in the middleware layers: the structured-output layer refuses bad messages before
any call, with_retries bad settings at construction."""

from __future__ import annotations

import re
from typing import Any

import openai
import pytest
from input_cases import BLANK, SURROGATES, Person, Recorded

from so_middleware import (
    StructuredOutput,
    UserError,
    with_retries,
    with_structured_output,
)
from so_middleware.local import chat_client
from so_middleware.openai import OpenAIChatClient
from so_middleware.testing import FakeChatClient

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("messages", ["", "   ", *BLANK.args[1]], ids=["empty-str", "blank-str", *BLANK.kwargs["ids"]])
async def test_blank_messages_are_refused_by_the_structured_output_layer_before_any_call(messages: Any) -> None:
    """Before: the layer's own instructions made the request non-empty; it was sent and paid for,
    and the model invented a Person."""
    recorded = Recorded("chat")
    client = with_structured_output(recorded.client)
    with pytest.raises(UserError, match=r"no messages to send|is blank"):
        await client.get_response(messages, output_type=Person)
    with pytest.raises(UserError, match=r"no messages to send|is blank"):
        client.get_response(messages, output_type=Person, stream=True)
    assert recorded.requests == []


@pytest.mark.parametrize(
    "messages", [{"Who is Ada?", "She wrote programs."}, frozenset({"a", "b"})], ids=["set", "frozenset"]
)
@pytest.mark.parametrize("structured", [False, True], ids=["adapter", "structured"])
async def test_an_unordered_collection_of_messages_is_refused(messages: Any, structured: bool) -> None:
    """Before: a set was sent in whatever order it iterates."""
    recorded = Recorded("chat")
    client: Any = with_structured_output(recorded.client) if structured else recorded.client
    kwargs = {"output_type": Person} if structured else {}
    with pytest.raises(UserError, match="must be in order"):
        await client.get_response(messages, **kwargs)
    with pytest.raises(UserError, match="must be in order"):
        client.get_response(messages, stream=True, **kwargs)
    assert recorded.requests == []
    await client.get_response(("Who is Ada?", "She wrote programs."))  # a tuple is in order
    assert [m["content"] for m in recorded.sent_messages()[-2:]] == ["Who is Ada?", "She wrote programs."]


@SURROGATES
async def test_a_lone_surrogate_is_refused_by_the_structured_output_layer_before_any_call(
    messages: Any, options: Any, where: str
) -> None:
    recorded = Recorded("chat")
    client = with_structured_output(recorded.client)
    with pytest.raises(UserError, match="lone UTF-16 surrogate"):
        await client.get_response(messages, options=options, output_type=Person)
    with pytest.raises(UserError, match="lone UTF-16 surrogate"):
        client.get_response(messages, options=options, output_type=Person, stream=True)
    assert recorded.requests == []


async def test_a_structured_output_description_of_the_wrong_type_is_refused_before_the_call() -> None:
    fake = FakeChatClient(['{"name": "Ada"}'])
    client = with_structured_output(fake)
    with pytest.raises(UserError, match="description must be a str"):
        await client.get_response("hi", options={"features": [StructuredOutput(Person, description=5)]})  # type: ignore[arg-type]
    assert fake.calls == []


@pytest.mark.parametrize("setting", ["retry_if", "sleep", "clock"])
def test_with_retries_refuses_a_non_callable_at_construction(setting: str) -> None:
    with pytest.raises(UserError, match=f"{setting} must be a callable"):
        with_retries(FakeChatClient(["ok"]), **{setting: 5})


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (
            chat_client,
            "function so_middleware.local._clients.chat_client itself; pass the client it makes: chat_client(...)",
        ),
        (openai.AsyncOpenAI, "class openai.AsyncOpenAI itself; pass the client it makes: AsyncOpenAI(...)"),
        (OpenAIChatClient, "class so_middleware.providers.openai._chat.OpenAIChatClient itself"),
        (FakeChatClient("{}").get_response, "function"),
    ],
)
def test_a_function_or_class_in_place_of_a_client_says_to_call_it(given: Any, named: str) -> None:
    for wrap in (with_structured_output, with_retries):
        with pytest.raises(UserError, match="expected a client, got the " + re.escape(named)):
            wrap(given)
