"""The OpenAI Python SDK, unmodified, through the gateway over the scripted backend: structured output
(`responses.parse`, `responses.stream` with `text_format`) and a function-tool round trip, plain and streamed."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from pydantic import BaseModel
from scripted import WEATHER

TOOLS: list[Any] = [{"type": "function", "name": "get_weather", "description": "The weather in a city.",
                     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                    "required": ["city"], "additionalProperties": False}, "strict": True}]  # fmt: skip


class Weather(BaseModel):
    city: str
    temperature_c: int


def _client(gateway: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key="none", max_retries=0, timeout=30)


def _turn(client: openai.OpenAI, stream: bool, **request: Any) -> Any:
    """One `responses.parse` call, or the same through `responses.stream`, returning the parsed response."""
    if not stream:
        return client.responses.parse(model="m", text_format=Weather, **request)
    with client.responses.stream(model="m", text_format=Weather, **request) as events:
        kinds = [event.type for event in events]
        final = events.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    return final


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_structured_output(scripted: Any, stream: bool) -> None:
    backend, gateway = scripted
    with _client(gateway) as client:
        response = _turn(client, stream, input="The weather in Paris?")
    assert response.output_parsed == Weather(**WEATHER)
    assert backend.bodies[0]["response_format"]["json_schema"]["name"] == "Weather"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_function_tool_round_trip(scripted: Any, stream: bool) -> None:
    backend, gateway = scripted
    with _client(gateway) as client:
        first = _turn(client, stream, input="The weather in Paris?", tools=TOOLS)
        calls = [item for item in first.output if item.type == "function_call"]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris"})]
        assert calls[0].parsed_arguments == {"city": "Paris"}  # strict tool: the SDK parses the arguments
        result = {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"temperature_c": 21}'}
        second = _turn(client, stream, input=[*first.output, result], tools=TOOLS)
    assert second.output_parsed == Weather(**WEATHER)
    sent = backend.bodies[1]["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert sent[-1] == {"role": "tool", "tool_call_id": calls[0].call_id, "content": '{"temperature_c": 21}'}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_backend_reasoning_reaches_the_sdk_as_a_reasoning_item(scripted: Any, stream: bool) -> None:
    """The SDK reads OpenAI's reasoning events (`response.reasoning_text.*`) as its typed events; the
    spec's names sent beside them are validated by the fixture's tap."""
    backend, gateway = scripted
    backend.reasoning = "Paris is named; look its weather up."
    with _client(gateway) as client:
        if stream:
            with client.responses.stream(model="m", input="The weather in Paris?") as events:
                deltas = [
                    e.delta for e in events if isinstance(e, openai.types.responses.ResponseReasoningTextDeltaEvent)
                ]
                response = events.get_final_response()
            assert "".join(deltas) == backend.reasoning
        else:
            response = client.responses.create(model="m", input="The weather in Paris?")
    reasoning = [item for item in response.output if item.type == "reasoning"]
    assert [part.text for part in reasoning[0].content or []] == [backend.reasoning]
    assert response.output_text == backend.text


PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_input_items_lists_every_kind_of_item_the_turns_sent(scripted: Any) -> None:
    """`responses.input_items.list` after a tool round trip whose first turn sent an image (no `detail`),
    a file, a system and an assistant message (an `output_text` part without `annotations`): the SDK reads
    each item, and the fixture's tap checks each against the spec's `ItemField`."""
    backend, gateway = scripted
    backend.reasoning = "Paris is named; look its weather up."
    question: list[Any] = [
        {"role": "system", "content": "Answer briefly."},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Ask me."}]},
        {"role": "user", "content": [{"type": "input_text", "text": "The weather in Paris?"},
                                     {"type": "input_image", "image_url": PIXEL},
                                     {"type": "input_file", "filename": "a.txt",
                                      "file_data": "data:text/plain;base64,UGFyaXM="}]},
    ]  # fmt: skip
    with _client(gateway) as client:
        first = client.responses.create(model="m", input=question, tools=TOOLS)
        call = next(item for item in first.output if item.type == "function_call")
        result = {"type": "function_call_output", "call_id": call.call_id, "output": '{"temperature_c": 21}'}
        sent_back: list[Any] = [*first.output, result]
        second = client.responses.create(model="m", input=sent_back, tools=TOOLS)
        items = client.responses.input_items.list(second.id, order="asc").data
    assert [item.type for item in items] == ["reasoning", "function_call", "function_call_output"]
    with _client(gateway) as client:
        listed = client.responses.input_items.list(first.id, order="asc").data
    assert [getattr(item, "role", None) for item in listed] == ["system", "assistant", "user"]
    image = listed[2].content[1]  # type: ignore[union-attr]
    assert (image.type, image.detail) == ("input_image", "auto")  # type: ignore[union-attr]
