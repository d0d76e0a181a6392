"""The unmodified OpenAI SDK's own WebSocket Responses client (`client.responses.connect()`), against the
gateway over the scripted backend on a real socket: sequential responses on one connection, a
`store: false` continuation, a tool call and its result, the spec's error events, and the key checked
at the upgrade as on HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from scripted import WEATHER, ScriptedChatBackend
from websockets.exceptions import InvalidStatus

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer

pytestmark = pytest.mark.anyio

KEY = "sdk-socket-key"
TERMINAL = ("response.completed", "response.failed", "response.incomplete", "error")
TOOL = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}  # fmt: skip


@pytest.fixture
def served() -> Iterator[tuple[ScriptedChatBackend, str]]:
    """(backend, the gateway's base URL), the gateway asking for `KEY`."""
    backend = ScriptedChatBackend()
    with AppServer(backend.app()) as backend_server:
        config = GatewayConfig(backend_url=backend_server.base_url, api_keys=[KEY], max_attempts=1)
        with AppServer(create_app(config)) as gateway:
            yield backend, f"http://{gateway.host}:{gateway.port}/v1"


def sdk(base_url: str, key: str = KEY) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0)


async def turn(connection: Any, **create: Any) -> list[Any]:
    """One `response.create` on the socket, and its events up to a terminal one or an error event."""
    await connection.response.create(model="scripted", **create)
    events = []
    async for event in connection:
        events.append(event)
        if event.type in TERMINAL:
            return events
    raise AssertionError(f"the socket closed after {[e.type for e in events]}")


async def test_sequential_responses_share_one_socket(served: tuple[ScriptedChatBackend, str]) -> None:
    backend, base_url = served
    async with sdk(base_url).responses.connect() as connection:
        first = await turn(connection, input="Say something.", store=False)
        second = await turn(connection, input="And again.", store=False)
    for events in (first, second):
        assert events[0].type == "response.created"
        assert events[-1].type == "response.completed"
        assert events[-1].response.output_text == backend.text
    assert first[-1].response.id != second[-1].response.id
    assert len(backend.bodies) == 2


async def test_a_store_false_continuation_sends_the_earlier_turn(served: tuple[ScriptedChatBackend, str]) -> None:
    backend, base_url = served
    async with sdk(base_url).responses.connect() as connection:
        first = await turn(connection, input="Remember: cobalt.", store=False)
        second = await turn(
            connection, input="What was the word?", store=False, previous_response_id=first[-1].response.id
        )
    assert second[-1].type == "response.completed"
    sent = [m.get("content") for m in backend.bodies[-1]["messages"]]
    assert sent == ["Remember: cobalt.", backend.text, "What was the word?"]


async def test_a_tool_call_and_its_result_round_trip(served: tuple[ScriptedChatBackend, str]) -> None:
    backend, base_url = served
    async with sdk(base_url).responses.connect() as connection:
        asked = await turn(connection, input="Weather in Paris?", tools=[TOOL], store=False)
        [call] = [item for item in asked[-1].response.output if item.type == "function_call"]
        assert (call.name, call.arguments) == ("get_weather", '{"city": "Paris"}')
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "21 C"}
        answered = await turn(
            connection, input=[output], tools=[TOOL], store=False, previous_response_id=asked[-1].response.id
        )
    assert answered[-1].type == "response.completed"
    assert answered[-1].response.output_text == backend.final == json.dumps(WEATHER)
    assert backend.tool_results() == ["21 C"]


async def test_an_unknown_previous_response_is_the_specs_error_event(served: tuple[ScriptedChatBackend, str]) -> None:
    backend, base_url = served
    async with sdk(base_url).responses.connect() as connection:
        failed = await turn(connection, input="Go on.", store=False, previous_response_id="resp_nobody_made")
        recovered = await turn(connection, input="Start again.", store=False)
    assert failed[-1].type == "error"
    assert failed[-1].error.code == "previous_response_not_found"
    assert recovered[-1].type == "response.completed"
    assert len(backend.bodies) == 1  # the failed turn never reached the backend


async def test_steering_is_refused_by_name_and_the_socket_stays_usable(
    served: tuple[ScriptedChatBackend, str],
) -> None:
    """`response.steer` (the SDK's, not in the Open Responses spec) is answered with an error event that
    names the field, not a closed socket."""
    _, base_url = served
    async with sdk(base_url).responses.connect() as connection:
        first = await turn(connection, input="Say something.", store=False)
        await connection.response.steer(input="Shorter, please.", previous_response_id=first[-1].response.id)
        refused = await anext(aiter(connection))
        again = await turn(connection, input="Still there?", store=False)
    assert refused.type == "error"
    assert refused.error.param == "type"
    assert again[-1].type == "response.completed"


async def test_a_wrong_key_is_refused_at_the_upgrade(served: tuple[ScriptedChatBackend, str]) -> None:
    backend, base_url = served
    with pytest.raises(InvalidStatus) as refused:
        async with sdk(base_url, key="not-the-key").responses.connect():
            pass
    assert refused.value.response.status_code == 401
    assert b"API key" in refused.value.response.body
    assert backend.bodies == []
