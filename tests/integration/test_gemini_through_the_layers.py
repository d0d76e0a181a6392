"""The Gemini adapter under the structured-output and retries layers, through the real, unmodified
`google-genai` SDK against the loopback server of `tests/providers/google/gemini_server.py` (it names
the documented wire format it speaks)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from gemini_server import Answer, GeminiServer, error_body, serving, text_answer
from google import genai
from pydantic import BaseModel

from so_middleware import (
    ContentFilterError,
    IncompleteOutputError,
    StructuredOutput,
    as_chat_client,
    failure_of,
    with_retries,
    with_structured_output,
)
from so_middleware.google import GEMINI_API, GeminiChatClient

pytestmark = pytest.mark.anyio


class City(BaseModel):
    name: str
    population: int


@pytest.fixture
def gemini_sync() -> Iterator[tuple[GeminiServer, genai.Client]]:
    """For the sync entry points, which run on so_middleware's own loop (it outlives the test)."""
    with serving() as found:
        yield found


@pytest.fixture
async def gemini() -> AsyncIterator[tuple[GeminiServer, genai.Client]]:
    """The async client's connections belong to the test's loop: closed before the loop ends."""
    with serving() as (server, sdk):
        yield server, sdk
        await sdk.aio.aclose()


def _client(sdk: genai.Client, model: str = "gemini-2.5-flash", **options: Any) -> GeminiChatClient:
    return GeminiChatClient(sdk, model, **options)


async def test_structured_output_sends_the_json_schema_dialect_and_ends_typed(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    server.script(Answer(text_answer('{"name": "Oslo", "population": 709000}')))
    client = with_structured_output(_client(sdk))
    response = await client.get_response("Oslo?", output_type=City)
    assert response.value == City(name="Oslo", population=709000)
    config = server.requests[0][1]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config["responseJsonSchema"]
    assert schema["propertyOrdering"] == ["name", "population"]
    assert "responseSchema" not in config


async def test_a_model_before_json_schema_gets_the_openapi_form(gemini: tuple[GeminiServer, genai.Client]) -> None:
    server, sdk = gemini
    server.script(Answer(text_answer('{"name": "Bergen", "population": 291000}')))
    client = with_structured_output(_client(sdk, "gemini-2.0-flash"))
    response = await client.get_response("Bergen?", output_type=City)
    assert response.value.population == 291000
    config = server.requests[0][1]["generationConfig"]
    assert config["responseSchema"]["type"] == "OBJECT"
    assert config["responseSchema"]["properties"]["population"] == {"type": "INTEGER"}
    assert "responseJsonSchema" not in config


async def test_a_stream_gives_partial_values_and_the_typed_end(gemini: tuple[GeminiServer, genai.Client]) -> None:
    server, sdk = gemini
    pieces = ['{"name": "Tro', 'ndheim", "population": ', "212000}"]
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}]} for piece in pieces
    ]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = {"promptTokenCount": 5, "candidatesTokenCount": 9, "totalTokenCount": 14}
    server.script(Answer(chunks=chunks))
    client = with_structured_output(_client(sdk))
    stream = client.get_response("Trondheim?", output_type=City, stream=True)
    partials = [update.partial_value async for update in stream if update.partial_value is not None]
    final = await stream.get_final_response()
    assert final.value == City(name="Trondheim", population=212000)
    assert partials and partials[-1] == final.value
    assert final.usage is not None and final.usage.total_tokens == 14
    assert server.requests[0][0].endswith(":streamGenerateContent")


@pytest.mark.parametrize("finish", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"])
async def test_a_blocked_answer_is_a_typed_content_filter_end(
    gemini: tuple[GeminiServer, genai.Client], finish: str
) -> None:
    server, sdk = gemini
    server.script(Answer(text_answer('{"name": "Os', finish=finish)))
    with pytest.raises(ContentFilterError):
        await with_structured_output(_client(sdk)).get_response("Oslo?", output_type=City)


async def test_an_answer_cut_at_its_token_limit_is_incomplete(gemini: tuple[GeminiServer, genai.Client]) -> None:
    server, sdk = gemini
    server.script(Answer(text_answer('{"name": "Os', finish="MAX_TOKENS")))
    with pytest.raises(IncompleteOutputError):
        await with_structured_output(_client(sdk)).get_response("Oslo?", output_type=City)


async def test_a_429_is_transient_with_its_retry_after_and_the_retries_layer_gets_the_answer(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    busy = Answer(error_body(429, "RESOURCE_EXHAUSTED", "Quota exceeded"), status=429, headers={"retry-after": "0"})
    server.script(busy)
    with pytest.raises(Exception) as info:
        await _client(sdk).get_response("x")
    failure = failure_of(info.value)
    assert (failure.status, failure.transient, failure.retry_after) == (429, True, 0.0)
    server.script(busy, Answer(text_answer("fine")))
    response = await with_retries(_client(sdk), base_delay=0).get_response("x")
    assert response.text == "fine"
    assert len(server.requests) == 3  # the SDK's own retries are off: one request per attempt


def test_as_chat_client_finds_the_gemini_adapter_and_the_sync_entry_point_works(
    gemini_sync: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini_sync
    server.script(Answer(text_answer('{"name": "Oslo", "population": 1}')))
    client = as_chat_client(sdk, model="gemini-2.5-flash")
    assert isinstance(client, GeminiChatClient)
    assert client.capabilities == GEMINI_API
    value = with_structured_output(client).get_response_sync("Oslo?", output_type=City).value
    assert value == City(name="Oslo", population=1)


async def test_a_structured_stream_request_sends_the_schema_once_as_a_json_string_free_dict(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    """The options' features never reach the wire: only what Gemini reads is sent."""
    server, sdk = gemini
    server.script(Answer(text_answer('{"name": "A", "population": 2}')))
    await with_structured_output(_client(sdk)).get_response(
        "A?", options={"features": [StructuredOutput(City)], "seed": 3}
    )
    sent = server.requests[0][1]
    assert sent["generationConfig"]["seed"] == 3
    assert "features" not in json.dumps(sent)
