"""One conversation, three routes of the real local server, one public API (`get_response`).

Chat Completions (`OpenAIChatClient`), Responses (`OpenAIResponsesClient`) and Anthropic Messages
(`AnthropicChatClient`), each built by `chat_client(server, route)` with its llama-server profile.
The same json_schema format is enforced on chat (grammar), on responses (only because the
adapter also sends the passthrough `response_format`), and not on /v1/messages (the adapter warns;
the free text that comes back does not follow the schema). Cancelling a stream closes the HTTP
connection on every route.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from so_middleware import ChatMessage, FinishReason, ResponseFormat, UserError
from so_middleware.local import ROUTES, LocalModelServer, chat_client
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

pytestmark = pytest.mark.anyio

ZEBRA = ResponseFormat.json_schema(
    {"type": "object", "properties": {"zebra_count": {"type": "integer"}}, "required": ["zebra_count"]}, name="Zebras"
)
CONVERSATION = [
    ChatMessage("system", "You answer in one short sentence."),
    ChatMessage("user", "My name is Ada."),
    ChatMessage("assistant", "Nice to meet you, Ada."),
    ChatMessage("user", "What is my name?"),
]


def conforms(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and isinstance(value.get("zebra_count"), int)


async def close(client: Any) -> None:
    await client.sdk_client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_same_conversation_on_every_route(local_server: LocalModelServer, cassette: Any, stream: bool) -> None:
    """Recorded once from the real server (one cassette per mode, all three routes in it)."""
    answers = {}
    with cassette(f"conversation_{'stream' if stream else 'plain'}"):
        for route in ROUTES:
            client = chat_client(local_server, route)
            options = {"max_tokens": 12, "temperature": 0}
            if stream:
                response = await client.get_response(CONVERSATION, options=options, stream=True).get_final_response()
            else:
                response = await client.get_response(CONVERSATION, options=options)
            await close(client)
            answers[route] = response
    for route, response in answers.items():
        assert response.text.strip(), route
        assert response.finish_reason in (FinishReason.STOP, FinishReason.LENGTH), route
        assert response.usage is not None and response.usage.input_tokens and response.usage.output_tokens, route
    # One model behind three protocols: the same greedy answer comes back on each.
    assert len({response.text.strip() for response in answers.values()}) == 1, {r: a.text for r, a in answers.items()}


async def test_where_a_json_schema_format_is_enforced(local_server: LocalModelServer) -> None:
    enforced = {}
    for route in ROUTES:
        client = chat_client(local_server, route)
        options = {"response_format": ZEBRA, "max_tokens": 30, "temperature": 0}
        if client.capabilities.native_json_schema:
            response = await client.get_response("What is 2 + 4?", options=options)
        else:
            with pytest.warns(UserWarning, match="not enforced by 'llama-server-messages'"):
                response = await client.get_response("What is 2 + 4?", options=options)
        await close(client)
        enforced[route] = conforms(response.text)
        assert enforced[route] == client.capabilities.native_json_schema, (route, response.text)
    assert enforced == {"chat": True, "responses": True, "anthropic": False}


@pytest.mark.parametrize("route", ROUTES)
async def test_cancelling_a_stream_closes_the_connection(local_server: LocalModelServer, route: str) -> None:
    responses: list[httpx2.Response] = []

    async def keep(response: httpx2.Response) -> None:
        responses.append(response)

    http = httpx2.AsyncClient(event_hooks={"response": [keep]})
    client = chat_client(local_server, route, http_client=http)
    stream = client.get_response("Count from 1 to 200.", options={"max_tokens": 400}, stream=True)
    async for update in stream:
        if update.text:
            break
    await stream.aclose()
    assert responses and responses[0].is_closed
    await close(client)


@pytest.mark.parametrize("route", ROUTES)
def test_sync_sdk_clients_on_every_route(local_server: LocalModelServer, route: str) -> None:
    client = chat_client(local_server, route, sync=True)
    assert not client.is_async  # type: ignore[attr-defined]
    response = client.get_response_sync("Say hello.", options={"max_tokens": 6, "temperature": 0})
    client.sdk_client.close()  # type: ignore[attr-defined]
    assert response.text.strip() and response.usage is not None and response.usage.output_tokens


def test_route_names(local_server: LocalModelServer) -> None:
    chat, responses, messages = (chat_client(local_server, route, sync=True) for route in ROUTES)
    assert type(chat.inner_client) is OpenAIChatClient and type(responses.inner_client) is OpenAIResponsesClient
    assert chat.capabilities.name == "llama-server" and responses.capabilities.response_format_passthrough
    assert messages.base_url == local_server.root_url and messages.provider_name == "anthropic"
    for client in (chat, responses, messages):
        client.sdk_client.close()  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="unknown route 'gemini'"):
        chat_client(local_server, "gemini")  # type: ignore[arg-type]
