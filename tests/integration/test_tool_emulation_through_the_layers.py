"""Tool emulation under the structured-output layer: an answer beside auto tools, the tool strategy on
a backend that ignores tools."""

from __future__ import annotations

import pytest
from emulation_backend import WEATHER, Answer, Backend, get
from pydantic import BaseModel, Field

from so_middleware import (
    OutputError,
    with_structured_output,
)
from so_middleware.local import LocalModelServer, chat_client


class City(BaseModel):
    city: str = Field(max_length=20)  # bounded: the grammar closes the string whatever the model samples


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_with_auto_tools_reads_the_answer_as_its_value(stream: bool) -> None:
    backend = Backend('{"answer": {"city": "Oslo"}}')
    client = with_structured_output(backend.client(), mode="native")
    response = await get(client, stream, "Where?", output_type=Answer, options={"tools": [WEATHER]})
    assert response.value == Answer(city="Oslo")
    answer_variant = backend.bodies[0]["response_format"]["json_schema"]["schema"]["anyOf"][-1]
    assert answer_variant["properties"]["answer"]["properties"] == {"city": {"title": "City", "type": "string"}}


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_the_tool_strategy_works_on_a_backend_that_ignores_tools(stream: bool) -> None:
    backend = Backend('{"name": "Answer", "arguments": {"city": "Oslo"}}')
    client = with_structured_output(backend.client(), mode="tool")
    response = await get(client, stream, "Where?", output_type=Answer)
    assert response.value == Answer(city="Oslo")
    assert backend.bodies[0]["response_format"]["json_schema"]["schema"]["properties"]["name"] == {"const": "Answer"}


@pytest.mark.anyio
@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True])
async def test_the_tool_strategy_on_the_embedded_model_ends_typed(local_server: LocalModelServer, stream: bool) -> None:
    adapter = chat_client(local_server, "chat")
    client = with_structured_output(adapter, mode="tool")
    try:
        response = await get(client, stream, "Oslo is cold today. Which city?", output_type=City,
                             options={"max_tokens": 120, "temperature": 0})  # fmt: skip
    except OutputError as error:  # the model's answer did not validate: a typed outcome too
        assert error.attempts and all(a.strategy == "tool" for a in error.attempts)
    else:
        assert isinstance(response.value, City)
        assert all(a.strategy == "tool" for a in response.attempts)
    finally:
        await adapter.sdk_client.close()
