"""Two SDK failures that say nothing useful on their own, made to say what happened and what to do:
one async SDK client used on two event loops (`get_response_sync` and `asyncio.run`, or two
`asyncio.run`s), and a server that cannot be reached (the SDK's "Connection error.")."""

from __future__ import annotations

import socket
from typing import Any

import anthropic
import openai
import pytest

from so_middleware.anthropic import AnthropicChatClient
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_server_that_is_down_is_named_in_the_sdks_own_connection_error(kind: str, stream: bool) -> None:
    port = closed_port()
    adapter: Any
    if kind == "anthropic":
        sdk: Any = anthropic.AsyncAnthropic(base_url=f"http://127.0.0.1:{port}", api_key="x", max_retries=0)
        adapter, error_type, path = AnthropicChatClient(sdk, "m"), anthropic.APIConnectionError, "/v1/messages"
    else:
        sdk = openai.AsyncOpenAI(
            base_url=f"http://ada:pw-secret@127.0.0.1:{port}/v1", api_key="x", max_retries=0,
            default_query={"api-key": "query-secret"},
        )  # fmt: skip
        kind_of = OpenAIChatClient if kind == "chat" else OpenAIResponsesClient
        adapter, error_type = kind_of(sdk, "m", discover=False), openai.APIConnectionError
        path = "/v1/chat/completions" if kind == "chat" else "/v1/responses"
    with pytest.raises(error_type) as caught:  # the SDK's own type, as before
        if stream:
            async for _ in adapter.get_response("hi", stream=True):
                pass
        else:
            await adapter.get_response("hi")
    message = str(caught.value)
    assert message.startswith("Connection error: cannot reach http://") and f"127.0.0.1:{port}{path}" in message
    assert "pw-secret" not in message and "query-secret" not in message
    await sdk.close()
