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
