# pyright: strict
"""A layer written on the per-verb hooks, as docs/how-to/writing-a-layer.md writes it: it must
type-check under `mypy --strict` and pyright strict (checked by tests/test_typing.py), with no
cast and no ignore, and keep `output_type=Person` on `.value` through it."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel
from typing_extensions import assert_type

from so_middleware import (
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    TextContent,
    with_structured_output,
)
from so_middleware.core import SyncResponseStream
from so_middleware.testing import FakeChatClient


class Person(BaseModel):
    name: str


class RedactingChatClient(DelegatingChatClient):
    """Replaces a word in every answer, plain and streamed, and sends each call at temperature 0."""

    def __init__(self, inner: Any, *, word: str) -> None:
        super().__init__(inner)
        self._self_word = word

    async def respond(self, call: LayerCall) -> ChatResponse[Any]:
        response = await super().respond(call.replace(options=call.options.replace(temperature=0)))
        return ChatResponse(ChatMessage("assistant", self._clean(response.text)), usage=response.usage)

    def stream(self, call: LayerCall) -> ChatStream:
        return super().stream(call).map(self._clean_update, lambda final: final)

    def _clean(self, text: str) -> str:
        return text.replace(self._self_word, "***")

    def _clean_update(self, update: ChatResponseUpdate[Any]) -> ChatResponseUpdate[Any]:
        return dataclasses.replace(update, contents=[TextContent(self._clean(update.text))])


async def use() -> None:
    layer = RedactingChatClient(FakeChatClient('{"name": "Ada"}'), word="secret")
    response = await layer.get_response("hi")
    assert_type(response.text, str)
    stream = layer.get_response("hi", stream=True)
    async for update in stream:
        assert_type(update, ChatResponseUpdate[Any])
    typed = with_structured_output(layer)
    assert_type((await typed.get_response("hi", output_type=Person)).value, Person)


def use_blocking() -> None:
    """The layer's inherited blocking twin is typed from the same overloads as `get_response`."""
    layer = RedactingChatClient(with_structured_output(FakeChatClient('{"name": "Ada"}')), word="secret")
    assert_type(layer.get_response_sync("hi", output_type=Person).value, Person)
    assert_type(layer.get_response_sync("hi").value, Any)
    stream = layer.get_response_sync("hi", stream=True, output_type=Person)
    assert_type(stream, SyncResponseStream[ChatResponseUpdate[Person], ChatResponse[Person]])
