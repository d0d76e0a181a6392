"""LangChain's `ChatOpenAI(use_responses_api=True)` (langchain-openai), unmodified, through the gateway over
the scripted backend: `with_structured_output` to a typed value (`invoke`, `stream`), and `bind_tools`
with a tool-message round trip and a structured final answer (`ainvoke`, `astream`), the conversation
sent whole or continued from the gateway's store (`use_previous_response_id`)."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr
from scripted import USAGE, WEATHER

TOOL_RESULT = '{"temperature_c": 21}'
PROMPT = "The weather in Paris?"


class Weather(BaseModel):
    city: str
    temperature_c: int


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return TOOL_RESULT


def _model(gateway: Any, stored: bool = False) -> ChatOpenAI:
    return ChatOpenAI(model="m", use_responses_api=True, base_url=gateway.base_url, api_key=SecretStr("none"),
                      max_retries=0, timeout=30, use_previous_response_id=stored)  # fmt: skip


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_with_structured_output(
    scripted: Any, stream: bool, method: Literal["json_schema", "function_calling"]
) -> None:
    backend, gateway = scripted
    backend.calls = [("Weather", json.dumps(WEATHER))]  # what the backend answers when made to call `Weather`
    structured = _model(gateway).with_structured_output(Weather, method=method)
    value = list(structured.stream(PROMPT))[-1] if stream else structured.invoke(PROMPT)
    assert value == Weather(**WEATHER)
    (body,) = backend.bodies
    assert body.get("stream", False) is stream
    if method == "json_schema":  # the Responses `text.format`, as a Chat Completions `response_format`
        assert body["response_format"]["json_schema"]["name"] == "Weather" and "tools" not in body
    else:  # a forced call of a `Weather` function, read back from the gateway's `function_call` item
        assert body["tool_choice"] == {"type": "function", "function": {"name": "Weather"}}
        assert [t["function"]["name"] for t in body["tools"]] == ["Weather"] and "response_format" not in body


@pytest.mark.anyio
@pytest.mark.parametrize("stored", [False, True], ids=["sent", "stored"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_bind_tools_round_trip(scripted: Any, stream: bool, stored: bool) -> None:
    backend, gateway = scripted
    model = _model(gateway, stored).bind_tools([get_weather], response_format=Weather, strict=True)
    messages: list[BaseMessage] = [HumanMessage(PROMPT)]

    async def turn() -> AIMessage:
        if not stream:
            return await model.ainvoke(messages)
        chunks: list[AIMessageChunk] = []
        async for chunk in model.astream(messages):
            assert isinstance(chunk, AIMessageChunk)
            chunks.append(chunk)
        assert len(chunks) > 2  # the answer arrived in pieces, not at once
        return add_ai_message_chunks(*chunks)

    first = await turn()
    assert [(call["name"], call["args"]) for call in first.tool_calls] == [("get_weather", {"city": "Paris"})]
    messages += [first, *[await get_weather.ainvoke(call) for call in first.tool_calls]]
    second = await turn()
    assert second.additional_kwargs["parsed"] == Weather(**WEATHER) and second.tool_calls == []
    assert second.text == backend.final  # streamed: the text deltas add up to it
    assert second.usage_metadata is not None
    assert (second.usage_metadata["input_tokens"], second.usage_metadata["output_tokens"]) == (
        USAGE["prompt_tokens"], USAGE["completion_tokens"])  # fmt: skip
    sent_input = gateway.app.requests[1]["input"]
    if stored:  # only the tool result was sent: the gateway rebuilt the rest from the first response
        assert gateway.app.requests[1]["previous_response_id"] == first.response_metadata["id"]
        assert [item["type"] for item in sent_input] == ["function_call_output"]
    else:
        assert [item["type"] for item in sent_input] == ["message", "function_call", "function_call_output"]
    assert len(backend.bodies) == 2 and all(body.get("stream", False) is stream for body in backend.bodies)
    assert [t["function"]["name"] for t in backend.bodies[0]["tools"]] == ["get_weather"]
    assert backend.bodies[1]["response_format"]["json_schema"]["name"] == "Weather"
    sent = backend.bodies[1]["messages"]
    assert sent[:-2] == backend.bodies[0]["messages"]
    call_id = first.tool_calls[0]["id"]
    (call,) = sent[-2]["tool_calls"]
    assert (sent[-2]["role"], call["id"], call["function"]["name"]) == ("assistant", call_id, "get_weather")
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert sent[-1] == {"role": "tool", "tool_call_id": call_id, "content": TOOL_RESULT}
