"""The adapters read streamed bodies themselves (SSE framing, jiter per event); the SDK's own
stream reading gives the same updates, the same final response and the same error on a cut
stream, on all three routes.

The bodies are real: the recorded conversation of cassettes/test_routes_local (all three routes)
and bodies streamed live from the local llama-server. Each body is replayed through
`httpx2.MockTransport` to both readers: ours (the adapter) and the SDK's (`create(stream=True)`,
each SDK event mapped by the same reader after `to_dict()`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
import yaml

from so_middleware import ChatMessage, ChatResponse, ChatResponseUpdate, StreamInterruptedError
from so_middleware.local import LocalModelServer, chat_client
from so_middleware.providers._sse import JSONView
from so_middleware.wire.chat import ChunkReader
from so_middleware.wire.messages import StreamReader as MessagesReader
from so_middleware.wire.responses_events import StreamReader as ResponsesReader

pytestmark = pytest.mark.anyio

CASSETTE = (
    Path(__file__).resolve().parent.parent.parent / "cassettes" / "test_routes_local" / "conversation_stream.yaml"
)
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages"}
CONVERSATION = [ChatMessage("system", "You answer in one short sentence."), ChatMessage("user", "What is 2+2?")]


def recorded_bodies() -> dict[str, bytes]:
    interactions = yaml.safe_load(CASSETTE.read_text())["interactions"]
    bodies = {}
    for route, path in PATHS.items():
        found = next(i for i in interactions if i["request"]["uri"].endswith(path))
        bodies[route] = found["response"]["body"]["string"].encode()
    return bodies


class _CutStream(httpx2.AsyncByteStream):
    """The first `cut` bytes of a body, then a broken connection."""

    def __init__(self, body: bytes, cut: int | None) -> None:
        self.body, self.cut = body, cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.cut is None:
            yield self.body
            return
        yield self.body[: self.cut]
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")


def serving(body: bytes, cut: int | None = None) -> dict[str, Any]:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=_CutStream(body, cut))

    return {"http_client": httpx2.AsyncClient(transport=httpx2.MockTransport(handler)), "max_retries": 0}


def adapter(server: LocalModelServer, route: str, body: bytes, cut: int | None = None) -> Any:
    return chat_client(server, route, **serving(body, cut))  # type: ignore[arg-type]


async def sdk_events(client: Any, route: str) -> AsyncIterator[Any]:
    """The SDK's own stream over the adapter's SDK client (the body is the mock's, whatever is sent)."""
    sdk, model = client.sdk_client, "SmolLM2-135M-Instruct"
    if route == "chat":
        stream = await sdk.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "x"}], stream=True
        )
    elif route == "responses":
        stream = await sdk.responses.create(model=model, input="x", stream=True)
    else:
        messages = [{"role": "user", "content": "x"}]
        stream = await sdk.messages.create(model=model, messages=messages, max_tokens=8, stream=True)
    async with stream:
        async for event in stream:
            yield event


def sdk_reader(route: str) -> Any:
    return {"chat": ChunkReader, "responses": ResponsesReader, "anthropic": MessagesReader}[route]()


def comparable(update: ChatResponseUpdate[Any]) -> dict[str, Any]:
    fields = {f.name: getattr(update, f.name) for f in dataclasses.fields(update) if f.name != "raw_representation"}
    return fields


def final_fields(response: ChatResponse[Any]) -> tuple[Any, ...]:
    return (response.text, response.usage, response.finish_reason, response.response_id, response.model_id)


async def ours(server: LocalModelServer, route: str, body: bytes, cut: int | None = None) -> Any:
    client = adapter(server, route, body, cut)
    updates: list[ChatResponseUpdate[Any]] = []
    stream = client.get_response(CONVERSATION, options={"max_tokens": 16}, stream=True)
    try:
        async for update in stream:
            updates.append(update)
        return updates, await stream.get_final_response(), None
    except StreamInterruptedError as error:
        return updates, None, error
    finally:
        await client.sdk_client.close()


async def theirs(server: LocalModelServer, route: str, body: bytes, cut: int | None = None) -> Any:
    client = adapter(server, route, body, cut)
    reader = sdk_reader(route)
    updates: list[ChatResponseUpdate[Any]] = []
    try:
        async for event in sdk_events(client, route):
            update = reader.read(JSONView(event.to_dict()))
            if update is not None:
                updates.append(update)
    except (httpx2.RemoteProtocolError, openai.APIConnectionError) as error:
        return updates, None, error
    finally:
        await client.sdk_client.close()
    return updates, ChatResponse.from_updates(updates), None


async def assert_same(server: LocalModelServer, route: str, body: bytes) -> None:
    our_updates, our_final, our_error = await ours(server, route, body)
    sdk_updates, sdk_final, _ = await theirs(server, route, body)
    assert our_error is None
    assert [comparable(u) for u in our_updates] == [comparable(u) for u in sdk_updates]
    assert final_fields(our_final) == final_fields(sdk_final)
    assert our_final.text  # a real answer, not two empty ones
    # Cut in the middle of an event: the same updates up to the cut, then StreamInterruptedError
    # carrying the text the SDK had yielded when its connection broke, caused by what the SDK raised.
    cut = body.index(b"\n\n", len(body) // 2) - 5
    our_updates, _, our_error = await ours(server, route, body, cut)
    sdk_updates, _, sdk_error = await theirs(server, route, body, cut)
    assert sdk_error is not None and isinstance(our_error, StreamInterruptedError)
    assert type(our_error.__cause__) is type(sdk_error)
    assert str(our_error.__cause__) == str(sdk_error)
    assert [comparable(u) for u in our_updates] == [comparable(u) for u in sdk_updates]
    assert our_error.partial_text == ChatResponse.from_updates(sdk_updates).text
    assert our_error.updates == len(sdk_updates)


@pytest.mark.parametrize("route", list(PATHS))
async def test_recorded_streams_read_the_same_as_the_sdk(local_server: LocalModelServer, route: str) -> None:
    await assert_same(local_server, route, recorded_bodies()[route])


class _Tee(httpx2.AsyncBaseTransport):
    """The real server's transport, keeping each streamed body."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.bodies: list[bytes] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        self.bodies.append(body)
        return httpx2.Response(response.status_code, headers=response.headers, content=body)


@pytest.mark.parametrize("route", list(PATHS))
async def test_live_streams_read_the_same_as_the_sdk(local_server: LocalModelServer, route: str) -> None:
    tee = _Tee()
    client = chat_client(local_server, route, http_client=httpx2.AsyncClient(transport=tee))  # type: ignore[arg-type]
    options = {"max_tokens": 24, "temperature": 0}
    live = await client.get_response(CONVERSATION, options=options, stream=True).get_final_response()
    await client.sdk_client.close()
    body = tee.bodies[-1]
    assert live.text and b"data:" in body
    await assert_same(local_server, route, body)
