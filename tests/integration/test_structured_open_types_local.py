"""Plain text and open types on the three routes of the real local model (llama-server profiles):
`str` is the text, never a `UserError`; `dict[str, int]` needs no flag on a backend without
strict mode. Plain and streaming."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

from so_middleware import IncompleteOutputError, ModelBehaviorError, with_structured_output
from so_middleware.local import LocalModelServer, chat_client

pytestmark = pytest.mark.anyio
OPTIONS = {"max_tokens": 60, "temperature": 0}


@pytest.fixture
async def route_client(local_server: LocalModelServer, request: pytest.FixtureRequest) -> Any:
    client = chat_client(local_server, request.param)
    yield client
    await client.sdk_client.close()


async def ask(client: Any, stream: bool, prompt: str, output_type: Any) -> Any:
    if stream:
        return await client.get_response(
            prompt, output_type=output_type, options=OPTIONS, stream=True
        ).get_final_response()
    return await client.get_response(prompt, output_type=output_type, options=OPTIONS)


@pytest.mark.parametrize("route_client", ["chat", "responses", "anthropic"], indirect=True)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("output_type", [str, Annotated[str, Field(min_length=1)]], ids=["str", "annotated"])
async def test_plain_text_is_the_text(route_client: Any, stream: bool, output_type: Any) -> None:
    response = await ask(with_structured_output(route_client), stream, "Say hello to Ada.", output_type)
    assert isinstance(response.value, str) and response.value == response.text and response.value
    assert [a.strategy for a in response.attempts] == ["text"]


@pytest.mark.parametrize("route_client", ["chat", "responses", "anthropic"], indirect=True)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_open_dict_needs_no_flag(route_client: Any, stream: bool) -> None:
    client = with_structured_output(route_client)
    prompt = "Fruit counts as a JSON object mapping fruit name to count: 3 apples, 2 pears."
    try:
        response = await ask(client, stream, prompt, dict[str, int])
    except (ModelBehaviorError, IncompleteOutputError) as error:  # a prompted 135M model may ramble or stay invalid
        assert route_client.capabilities.native_json_schema is False
        assert error.attempts and all(a.strict is False for a in error.attempts)
        return
    assert isinstance(response.value, dict) and all(isinstance(v, int) for v in response.value.values())
    assert all(a.strict is False for a in response.attempts)
    if route_client.capabilities.native_json_schema:
        assert [a.strategy for a in response.attempts] == ["native"]
