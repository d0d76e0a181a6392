"""Conversations Mistral's chat API reads its own way, through the real `mistralai` SDK against the
loopback stand-in (`mistral_server.py` names the documented wire format it speaks): call ids from
other providers, which Mistral refuses unless they are 9 characters of `[a-zA-Z0-9]`, and an
assistant prefill, sent as Mistral's `prefix: true` and repeated at the start of the answer."""

from __future__ import annotations

import copy
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mistral_server import MODEL, Answer, MistralServer, chat_answer, chunk, serving
from mistralai.client import Mistral

from so_middleware import ChatMessage, FunctionCallContent, FunctionResultContent, FunctionTool
from so_middleware.mistral import MISTRAL_API, MistralChatClient

pytestmark = pytest.mark.anyio

WEATHER = FunctionTool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}}, "Weather")
NINE = re.compile(r"[a-zA-Z0-9]{9}")


@pytest.fixture
async def mistral() -> AsyncIterator[tuple[MistralServer, Mistral]]:
    """The async client's connections belong to the test's loop: closed before the loop ends."""
    with serving() as (server, sdk):
        yield server, sdk
        await sdk.__aexit__(None, None, None)


async def final(client: MistralChatClient, messages: Any, stream: bool, **options: Any) -> Any:
    """The final response of a plain call or of a stream read to its end."""
    if stream:
        return await client.get_response(messages, stream=True, options=options).get_final_response()
    return await client.get_response(messages, options=options)


def history() -> list[ChatMessage]:
    """A conversation carried over from other providers: OpenAI's and Anthropic's call ids, and one of Mistral's."""
    return [
        ChatMessage("user", "Weather in Oslo, Rome and Paris?"),
        ChatMessage(
            "assistant",
            [
                FunctionCallContent("call_Xq3fD9Lk2mNpQrSt", "get_weather", '{"city": "Oslo"}'),
                FunctionCallContent("toolu_01A09q90qw90lq917835lq9", "get_weather", '{"city": "Rome"}'),
                FunctionCallContent("D681PevKs", "get_weather", '{"city": "Paris"}'),
            ],
        ),
        ChatMessage(
            "tool",
            [
                FunctionResultContent("call_Xq3fD9Lk2mNpQrSt", "sunny"),
                FunctionResultContent("toolu_01A09q90qw90lq917835lq9", "rain"),
                FunctionResultContent("D681PevKs", "cloudy"),
            ],
        ),
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_call_ids_mistral_refuses_go_as_nine_characters_and_come_back_as_the_callers(
    mistral: tuple[MistralServer, Mistral], stream: bool
) -> None:
    server, sdk = mistral
    messages = history()
    kept = copy.deepcopy(messages)
    client = MistralChatClient(sdk, MODEL)
    server.script(Answer(chat_answer("Sunny, rain, cloudy.")), Answer(chat_answer("Again.")))
    await client.get_response(messages)
    sent = server.requests[0]["messages"]
    call_ids = [call["id"] for call in sent[1]["tool_calls"]]
    result_ids = [message["tool_call_id"] for message in sent[2:5]]
    assert all(NINE.fullmatch(call_id) for call_id in call_ids)
    assert call_ids == result_ids  # a call and its result keep one id
    assert call_ids[2] == "D681PevKs" and len(set(call_ids)) == 3  # Mistral's own id as it was; none twice
    await client.get_response(history())
    assert [call["id"] for call in server.requests[1]["messages"][1]["tool_calls"]] == call_ids  # the same each time
    assert messages == kept  # the caller's messages are not changed

    # An answer naming one of the ids sent for the caller's (a call asked again) gives the caller's id back.
    again = {
        "id": call_ids[0],
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
    if stream:
        last = chunk(finish="tool_calls", usage=True)
        last["choices"][0]["delta"] = {"tool_calls": [{**again, "index": 0}]}
        server.script(Answer(chunks=[last]))
    else:
        server.script(Answer(chat_answer("", finish="tool_calls", tool_calls=[again])))
    response = await final(client, messages, stream, tools=[WEATHER])
    assert [c.call_id for c in response.messages[-1].contents if isinstance(c, FunctionCallContent)] == [
        "call_Xq3fD9Lk2mNpQrSt"
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_trailing_assistant_message_is_a_prefix_and_the_answer_is_its_continuation(
    mistral: tuple[MistralServer, Mistral], stream: bool
) -> None:
    server, sdk = mistral
    prefill = '{"name": "'
    if stream:  # the repeated prefill split across pieces, as a model's tokens split it
        server.script(Answer(chunks=[chunk('{"na'), chunk('me": "Ada'), chunk('"}', finish="stop", usage=True)]))
    else:
        server.script(Answer(chat_answer(prefill + 'Ada"}')))
    client = MistralChatClient(sdk, MODEL)
    assert client.capabilities.assistant_prefill and client.capabilities.prefill_echoed
    response = await final(client, [ChatMessage("user", "Name?"), ChatMessage("assistant", prefill)], stream)
    assert response.text == 'Ada"}'
    assert server.requests[0]["messages"][-1] == {"role": "assistant", "content": prefill, "prefix": True}


@pytest.mark.parametrize("stream", [False, True])
async def test_an_answer_that_does_not_repeat_the_prefill_is_kept_whole(
    mistral: tuple[MistralServer, Mistral], stream: bool
) -> None:
    server, sdk = mistral
    if stream:
        server.script(Answer(chunks=[chunk("Ad"), chunk("a", finish="stop", usage=True)]))
    else:
        server.script(Answer(chat_answer("Ada")))
    messages = [ChatMessage("user", "Name?"), ChatMessage("assistant", "Ada Lovelace")]
    assert (await final(MistralChatClient(sdk, MODEL), messages, stream)).text == "Ada"


async def test_an_assistant_message_that_is_not_last_or_asks_a_call_is_no_prefix(
    mistral: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral
    server.script(Answer(chat_answer("ok")), Answer(chat_answer("ok")))
    client = MistralChatClient(sdk, MODEL)
    await client.get_response([ChatMessage("assistant", "Hello."), ChatMessage("user", "Hi")])
    await client.get_response(history()[:2])
    assert server.requests[0]["messages"][0]["prefix"] is False
    assert server.requests[1]["messages"][-1]["prefix"] is False  # a call asked: the model does not continue it
    assert MISTRAL_API.assistant_prefill
