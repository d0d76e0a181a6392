"""User code that must type-check with `mypy --strict` (checked by tests/test_typing.py)."""

from __future__ import annotations

from so_middleware import (
    ChatAgent,
    with_retries,
    with_structured_output,
    with_telemetry,
)
from so_middleware.agents import AgentResponse
from so_middleware.testing import FakeChatClient


async def layered() -> None:
    client = with_telemetry(with_retries(with_structured_output(FakeChatClient("x"))))
    response = await client.get_response("hi", output_type=int)
    stream = client.get_response("hi", stream=True)
    async for update in stream:
        print(update.text, update.attempt, update.partial_value)
    final = await stream.get_final_response()
    print(final.text, final.usage)
    print(response.text, response.attempts)


async def agent() -> None:
    result = await ChatAgent(with_structured_output(FakeChatClient("x"))).run("hi", output_type=int)
    assert isinstance(result, AgentResponse)
    print(result.text)


def sync_streaming() -> None:
    from typing import Any

    from typing_extensions import assert_type

    from so_middleware import ChatResponse, ChatResponseUpdate
    from so_middleware.core import SyncResponseStream

    client = with_retries(with_structured_output(FakeChatClient("x")))
    stream = client.get_response_sync("hi", stream=True, output_type=int)
    assert_type(stream, SyncResponseStream[ChatResponseUpdate[Any], ChatResponse[Any]])
    with stream:
        for update in stream:
            assert_type(update, ChatResponseUpdate[Any])
    assert_type(stream.get_final_response(), ChatResponse[Any])
    assert_type(FakeChatClient("x").get_response_sync("hi"), ChatResponse[Any])
    assert_type(FakeChatClient("x").get_response_sync("hi", stream=True).get_final_response(), ChatResponse[Any])
