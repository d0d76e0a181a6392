"""Server discovery under the structured-output layer: adapters made from a base URL alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel

from so_middleware import with_structured_output
from so_middleware.anthropic import LLAMA_SERVER_MESSAGES, AnthropicChatClient
from so_middleware.local import LocalModelServer
from so_middleware.openai import (
    LLAMA_SERVER_CHAT,
    LLAMA_SERVER_RESPONSES,
    OpenAIChatClient,
    OpenAIResponsesClient,
    reset_discovery,
)


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    reset_discovery()
    yield
    reset_discovery()


class Person(BaseModel):
    name: str
    age: int


@pytest.mark.local_server
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("route", "expected"),
    [("chat", LLAMA_SERVER_CHAT), ("responses", LLAMA_SERVER_RESPONSES), ("anthropic", LLAMA_SERVER_MESSAGES)],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_adapters_by_base_url_alone_find_the_llama_server_profile(
    local_server: LocalModelServer, route: str, expected: Any, stream: bool
) -> None:
    client: Any
    if route == "anthropic":
        sdk: Any = anthropic.AsyncAnthropic(api_key="local", base_url=local_server.root_url)
        client = AnthropicChatClient(sdk, local_server.model)
    else:
        sdk = openai.AsyncOpenAI(api_key="local", base_url=local_server.base_url)
        adapter = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
        client = adapter(sdk, local_server.model)
    try:
        structured = with_structured_output(client, max_retries=2)
        text = "John Smith is a 35-year-old engineer."
        options = {"max_tokens": 100, "temperature": 0}
        if stream:
            answer = structured.get_response(text, output_type=Person, options=options, stream=True)
            async for _ in answer:
                pass
            response = await answer.get_final_response()
        else:
            response = await structured.get_response(text, output_type=Person, options=options)
        assert client.capabilities == expected
        assert structured.capabilities == expected  # visible through the layer
        assert client.server_info is not None and client.server_info.kind == "llama.cpp"
        assert isinstance(response.value, Person)
        if route != "anthropic":  # the format is enforced on both OpenAI routes: first attempt, native
            assert [a.strategy for a in response.attempts] == ["native"]
    finally:
        await sdk.close()
