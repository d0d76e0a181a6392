"""An adapter's fresh updates are filled in by the structured-output layer right above it, not
copied (`streams_fresh_updates`); every other update is copied and left as the server made it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama
import pytest
from pydantic import BaseModel

from so_middleware import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FinishReason,
    ReasoningContent,
    TextContent,
    with_retries,
    with_structured_output,
)
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.bedrock import BedrockChatClient
from so_middleware.core import BaseChatClient, Capabilities, streams_fresh_updates
from so_middleware.google import GeminiChatClient
from so_middleware.mistral import MistralChatClient
from so_middleware.ollama import OllamaChatClient

PIECES = ['{"name": "Re', 'x", "age": 3', "}"]


class Pet(BaseModel):
    name: str
    age: int


class _Fresh(BaseChatClient):
    """An adapter whose stream makes a new update for every piece, and keeps each one it made."""

    capabilities = Capabilities(native_json_schema=True)

    def __init__(self, extra: dict[str, Any] | None = None, thinking: bool = False) -> None:
        self.made: list[ChatResponseUpdate[Any]] = []
        self.extra = extra or {}
        self.thinking = thinking  # the first update also carries reasoning: its contents are not the delta

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        raise AssertionError("only streamed here")

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        for index, piece in enumerate(PIECES):
            last = index == len(PIECES) - 1
            update: ChatResponseUpdate[Any] = ChatResponseUpdate(
                [ReasoningContent("hm"), TextContent(piece)] if self.thinking and not index else [TextContent(piece)],
                finish_reason=FinishReason.STOP if last else None,
                additional_properties=dict(self.extra) if last else {},
            )  # fmt: skip
            self.made.append(update)
            yield update

    fresh_stream = _stream


class _Replaying(_Fresh):
    """A subclass whose stream is its own: it does not inherit the promise."""

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        async for update in super()._stream(messages, options):
            yield update


async def _streamed(client: Any) -> tuple[list[ChatResponseUpdate[Any]], Any]:
    stream = client.get_response("Pet?", output_type=Pet, stream=True)
    seen = [update async for update in stream]
    return seen, (await stream.get_final_response()).value


async def _names_while_read(client: Any) -> list[str | None]:
    """Each update's partial name as the caller reads it (the value is a live view: it grows later)."""
    return [update.partial_value.name async for update in client.get_response("Pet?", output_type=Pet, stream=True)]


def test_an_adapter_that_declares_its_stream_fresh_is_known_by_its_class_and_a_layer_over_it_is_not() -> None:
    fresh = _Fresh()
    assert streams_fresh_updates(fresh)
    assert not streams_fresh_updates(_Replaying())
    assert not streams_fresh_updates(with_structured_output(fresh))  # a layer holds what it passes on
    assert not streams_fresh_updates(object())


@pytest.mark.parametrize(
    "adapter", [OllamaChatClient, GeminiChatClient, MistralChatClient, BedrockChatClient, AnthropicChatClient]
)
def test_each_adapter_whose_reader_makes_its_updates_declares_its_stream_fresh(adapter: type[Any]) -> None:
    assert adapter.fresh_stream is adapter._stream


@pytest.mark.anyio
async def test_an_adapters_fresh_updates_are_filled_in_in_place() -> None:
    fresh = _Fresh()
    seen, value = await _streamed(with_structured_output(fresh))
    assert value == Pet(name="Rex", age=3)
    assert all(update is made for update, made in zip(seen, fresh.made, strict=True))
    assert [(u.role, u.attempt, u.text) for u in seen] == [("assistant", 0, piece) for piece in PIECES]
    assert seen[-1].partial_value == Pet(name="Rex", age=3)
    assert await _names_while_read(with_structured_output(_Fresh())) == ["Re", "Rex", "Rex"]


@pytest.mark.anyio
@pytest.mark.parametrize("case", ["subclass", "additional properties", "two contents", "retries"])
async def test_other_updates_are_copied_and_the_servers_are_left_unchanged(case: str) -> None:
    fresh = _Replaying() if case == "subclass" else _Fresh({"k": 1} if case == "additional properties" else None)
    fresh.thinking = case == "two contents"
    client = with_retries(with_structured_output(fresh)) if case == "retries" else with_structured_output(fresh)
    seen, value = await _streamed(client)
    assert value == Pet(name="Rex", age=3)
    alone = {"additional properties": slice(-1, None), "two contents": slice(0, 1)}.get(case, slice(None))
    copied, made = seen[alone], fresh.made[alone]
    assert all(update is not own for update, own in zip(copied, made, strict=True))
    assert all(own.partial_value is None and own.role is None for own in made)
    if case == "additional properties":
        assert (seen[-1].additional_properties, made[-1].additional_properties) == ({}, {"k": 1})
    if case == "two contents":  # the caller's update holds the answer's delta; the server's keeps its reasoning
        assert (seen[0].contents, made[0].contents) == (
            [TextContent(PIECES[0])],
            [ReasoningContent("hm"), TextContent(PIECES[0])],
        )


@pytest.mark.anyio
async def test_the_ollama_adapters_stream_is_filled_in_and_sends_nothing_before_it_is_read() -> None:
    """The Ollama adapter's stream is the chunk reader's own generator: no request before the first
    read, the request's own errors raised there, and its updates filled in by the layer."""
    requests: list[httpx.Request] = []
    lines = [{"model": "m", "message": {"role": "assistant", "content": piece}, "done": False} for piece in PIECES]
    lines.append({"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"})
    body = b"".join(httpx.Response(200, json=line).content + b"\n" for line in lines)

    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, headers={"content-type": "application/x-ndjson"}, content=body)

    sdk = ollama.AsyncClient(host="http://ollama.test:11434", transport=httpx.MockTransport(answer))
    adapter = OllamaChatClient(sdk, "llama3.2")
    stream = with_structured_output(adapter).get_response("Pet?", output_type=Pet, stream=True)
    assert requests == []
    seen = [update async for update in stream]
    assert len(requests) == 1 and (await stream.get_final_response()).value == Pet(name="Rex", age=3)
    assert [update.partial_value is not None for update in seen] == [True] * len(seen)
    unnamed = OllamaChatClient(sdk).get_response("Hi", stream=True)  # no model: the codec's error, on reading
    assert len(requests) == 1
    with pytest.raises(Exception, match="model"):
        [update async for update in unnamed]
    assert len(requests) == 1
