"""The Mistral adapter under the structured-output and retries layers, through the real, unmodified
`mistralai` SDK against the loopback server of `tests/providers/mistral/mistral_server.py` (it names
the documented wire format it speaks)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from mistral_server import MODEL, Answer, MistralServer, chat_answer, chunk, error_body, serving
from mistralai.client import Mistral
from pydantic import BaseModel

from so_middleware import (
    ChatOptions,
    DeadlineExceededError,
    IncompleteOutputError,
    ProviderResponseError,
    StructuredOutput,
    as_chat_client,
    with_retries,
    with_structured_output,
)
from so_middleware.core import call_deadline
from so_middleware.mistral import MISTRAL_API, MistralChatClient

pytestmark = pytest.mark.anyio


class City(BaseModel):
    name: str
    population: int


class Node(BaseModel):
    label: str
    children: list[Node] = []


@pytest.fixture
def mistral_sync() -> Iterator[tuple[MistralServer, Mistral]]:
    """For the sync entry points, which run on so_middleware's own loop (it outlives the test)."""
    with serving() as found:
        yield found


@pytest.fixture
async def mistral() -> AsyncIterator[tuple[MistralServer, Mistral]]:
    """The async client's connections belong to the test's loop: closed before the loop ends."""
    with serving() as (server, sdk):
        yield server, sdk
        await sdk.__aexit__(None, None, None)


def _client(sdk: Mistral, **options: Any) -> MistralChatClient:
    return MistralChatClient(sdk, MODEL, **options)


async def test_structured_output_sends_a_strict_json_schema_in_the_mistral_dialect_and_ends_typed(
    mistral: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral
    server.script(Answer(chat_answer('{"name": "Oslo", "population": 709000}')))
    response = await with_structured_output(_client(sdk)).get_response("Oslo?", output_type=City)
    assert response.value == City(name="Oslo", population=709000)
    assert response.attempts[0].strategy == "native" and response.attempts[0].strict
    sent = server.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    schema = sent["json_schema"]["schema"]
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"name", "population"}
    assert "tools" not in server.requests[0]  # the native route, not the tool route


@pytest.mark.parametrize("stream", [False, True])
async def test_the_prompted_route_prefills_the_answer_as_a_mistral_prefix_and_ends_typed(
    mistral: tuple[MistralServer, Mistral], stream: bool
) -> None:
    """Mistral repeats the prefix at the start of its answer; the value reads the same."""
    server, sdk = mistral
    pieces = ['{"name": "Os', 'lo", "population": ', "709000}"]
    if stream:
        server.script(Answer(chunks=[*(chunk(piece) for piece in pieces), chunk("", finish="stop", usage=True)]))
    else:
        server.script(Answer(chat_answer("".join(pieces))))
    client = with_structured_output(_client(sdk))
    options = {"features": [StructuredOutput(City, mode="prompted")]}
    if stream:
        response = await client.get_response("Oslo?", options=options, stream=True).get_final_response()
    else:
        response = await client.get_response("Oslo?", options=options)
    assert response.value == City(name="Oslo", population=709000)
    assert response.attempts[0].strategy == "prompted"
    last = server.requests[0]["messages"][-1]
    assert last["role"] == "assistant" and last["prefix"] is True and "".join(pieces).startswith(last["content"])


async def test_a_recursive_type_goes_as_is(mistral: tuple[MistralServer, Mistral]) -> None:
    """Mistral's strict mode takes recursion: the schema keeps its `$ref`, nothing is unrolled."""
    server, sdk = mistral
    server.script(Answer(chat_answer('{"label": "a", "children": [{"label": "b", "children": []}]}')))
    response = await with_structured_output(_client(sdk)).get_response("Tree?", output_type=Node)
    assert response.value.children[0].label == "b"
    assert "#/$defs/Node" in str(server.requests[0]["response_format"]["json_schema"]["schema"])


async def test_a_type_that_cannot_be_strict_goes_with_strict_false_and_is_validated(
    mistral: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral
    server.script(Answer(chat_answer('{"a": 1, "b": 2}')))
    response = await with_structured_output(_client(sdk)).get_response("Counts?", output_type=dict[str, int])
    assert response.value == {"a": 1, "b": 2}
    assert server.requests[0]["response_format"]["json_schema"]["strict"] is False


async def test_a_stream_gives_partial_values_and_the_typed_end(mistral: tuple[MistralServer, Mistral]) -> None:
    server, sdk = mistral
    pieces = ['{"name": "Tro', 'ndheim", "population": ', "212000}"]
    server.script(Answer(chunks=[*(chunk(piece) for piece in pieces), chunk("", finish="stop", usage=True)]))
    stream = with_structured_output(_client(sdk)).get_response("Trondheim?", output_type=City, stream=True)
    partials = [update.partial_value async for update in stream if update.partial_value is not None]
    final = await stream.get_final_response()
    assert final.value == City(name="Trondheim", population=212000)
    assert partials and partials[-1] == final.value
    assert final.usage is not None and final.usage.total_tokens == 14


@pytest.mark.parametrize("finish", ["length", "model_length"])
async def test_an_answer_cut_at_a_limit_is_incomplete(mistral: tuple[MistralServer, Mistral], finish: str) -> None:
    server, sdk = mistral
    server.script(Answer(chat_answer('{"name": "Os', finish=finish)))
    with pytest.raises(IncompleteOutputError):
        await with_structured_output(_client(sdk)).get_response("Oslo?", output_type=City)


async def test_a_finish_reason_of_error_ends_typed_with_the_raw_text(mistral: tuple[MistralServer, Mistral]) -> None:
    server, sdk = mistral
    server.script(*[Answer(chat_answer('{"name": "Os', finish="error"))] * 3)
    with pytest.raises(ProviderResponseError) as info:
        await with_structured_output(_client(sdk), max_retries=0).get_response("Oslo?", output_type=City)
    assert info.value.attempts and info.value.attempts[-1].text == '{"name": "Os'


async def test_a_429_is_transient_and_the_retries_layer_gets_the_answer(
    mistral: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral
    busy = Answer(error_body("Requests rate limit exceeded", "rate_limited", "1300"), status=429,
                  headers={"retry-after": "0"})  # fmt: skip
    server.script(busy, Answer(chat_answer('{"name": "Oslo", "population": 1}')))
    client = with_structured_output(with_retries(_client(sdk), base_delay=0))
    response = await client.get_response("Oslo?", output_type=City)
    assert response.value == City(name="Oslo", population=1)
    assert len(server.requests) == 2  # the SDK's own retries are off: one request per attempt


async def test_a_deadline_becomes_the_requests_timeout(mistral: tuple[MistralServer, Mistral]) -> None:
    """A stalled answer under `with_retries(deadline=...)` ends at the deadline, typed."""
    server, sdk = mistral
    server.script(Answer(chunks=[chunk("Hel"), chunk("lo", finish="stop")], stall=30))
    client = with_retries(_client(sdk, idle_timeout=None), deadline=0.5, max_attempts=1)
    with pytest.raises(DeadlineExceededError) as info:
        async for _ in client.get_response("Hi", stream=True):
            pass
    assert info.value.partial_text == "Hel"
    with call_deadline(2.0):
        assert 0 < _client(sdk).request_for([], ChatOptions())["timeout_ms"] <= 2000


def test_as_chat_client_finds_the_mistral_adapter_and_the_sync_entry_point_works(
    mistral_sync: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral_sync
    server.script(Answer(chat_answer('{"name": "Oslo", "population": 1}')))
    client = as_chat_client(sdk, model=MODEL)
    assert isinstance(client, MistralChatClient) and client.capabilities == MISTRAL_API
    value = with_structured_output(client).get_response_sync("Oslo?", output_type=City).value
    assert value == City(name="Oslo", population=1)


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("MISTRAL_API_KEY"), reason="needs MISTRAL_API_KEY")
@pytest.mark.parametrize("stream", [False, True])
async def test_mistral_native_strict_live(stream: bool) -> None:
    """Mistral's API itself: `MISTRAL_API_KEY=... pytest -m live` (model: `MISTRAL_MODEL`)."""
    async with Mistral() as sdk:
        client = with_structured_output(sdk, model=os.environ.get("MISTRAL_MODEL", "mistral-small-latest"))
        if stream:
            response = await client.get_response(
                "Oslo has 709,000 people.", output_type=City, stream=True
            ).get_final_response()
        else:
            response = await client.get_response("Oslo has 709,000 people.", output_type=City)
    assert response.value == City(name="Oslo", population=709000)
    assert response.attempts[0].strategy == "native" and response.attempts[0].strict
