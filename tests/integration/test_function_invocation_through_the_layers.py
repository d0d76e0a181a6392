"""Tools and structured output together: the function-invocation layer under `with_structured_output`,
over the OpenAI Chat wire, over a backend whose tools are emulated, and on the embedded model."""

from __future__ import annotations

import json
from typing import Any, Literal

import anthropic
import httpx2
import openai
import pytest
from emulation_backend import Backend, get
from pydantic import BaseModel, Field

from so_middleware import (
    OutputError,
    ToolBudget,
    ToolLoopError,
    with_function_invocation,
    with_structured_output,
)
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.local import LocalModelServer, chat_client
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["respond", "stream"])


class Forecast(BaseModel):
    city: str = Field(max_length=20)
    degrees: int


def get_weather(city: str) -> dict[str, Any]:
    """The temperature now in a city, in degrees Celsius."""
    return {"city": city, "degrees": 21}


class ChatWire:
    """Answers chat completions from a script, in the documented wire format (OpenAI API reference,
    "The chat completion object" and "The chat completion chunk object": an assistant message with
    `tool_calls` and `finish_reason: "tool_calls"`), plain or streamed; records the bodies."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        message = self.answers[min(len(self.bodies), len(self.answers)) - 1]
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        usage = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
        if not body.get("stream"):
            return httpx2.Response(200, json={"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4o",
                                              "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                              "usage": usage})  # fmt: skip
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        chunks = [
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {"choices": [], "usage": usage},
        ]
        events = "".join(
            f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', 'created': 0, 'model': 'gpt-4o', **c})}\n\n"
            for c in chunks
        )
        return httpx2.Response(200, text=events + "data: [DONE]\n\n", headers={"content-type": "text/event-stream"})

    def client(self) -> OpenAIChatClient:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        return OpenAIChatClient(openai.AsyncOpenAI(api_key="k", http_client=http), "gpt-4o")


CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    ],
}


@STREAM
async def test_openai_chat_sends_tools_and_the_response_format_and_ends_in_the_type(stream: bool) -> None:
    wire = ChatWire(CALL, {"role": "assistant", "content": '{"city": "Paris", "degrees": 21}'})
    client = with_structured_output(with_function_invocation(wire.client(), tools=[get_weather]))
    response = await get(client, stream, "Weather in Paris?", output_type=Forecast)
    assert response.value == Forecast(city="Paris", degrees=21)
    first, second = wire.bodies
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather"]
    assert first["response_format"]["type"] == "json_schema"
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_abc"
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_abc",
        "content": '{"city": "Paris", "degrees": 21}',
    }
    assert response.usage is not None and response.usage.total_tokens == 24


@STREAM
async def test_on_a_backend_that_ignores_tools_the_emulated_schema_carries_the_call_and_the_typed_answer(
    stream: bool,
) -> None:
    backend = Backend('{"name": "get_weather", "arguments": {"city": "Oslo"}}')
    answers = iter(
        ['{"name": "get_weather", "arguments": {"city": "Oslo"}}', '{"answer": {"city": "Oslo", "degrees": 21}}']
    )
    original = backend.handle

    def handle(request: httpx2.Request) -> httpx2.Response:
        backend.text = next(answers)
        return original(request)

    backend.handle = handle  # type: ignore[method-assign]
    client = with_structured_output(with_function_invocation(backend.client(), tools=[get_weather]))
    response = await get(client, stream, "Weather in Oslo?", output_type=Forecast)
    assert response.value == Forecast(city="Oslo", degrees=21)
    variants = backend.bodies[0]["response_format"]["json_schema"]["schema"]["anyOf"]
    assert variants[0]["properties"]["name"] == {"const": "get_weather"}
    assert "answer" in variants[-1]["properties"]
    assert "Oslo" in json.dumps(backend.bodies[1]["messages"][-1])  # the tool's result, sent as text


async def test_re_asks_for_an_invalid_final_answer_draw_on_the_same_budget() -> None:
    fake = FakeChatClient(
        [Reply(tool_calls=[("get_weather", '{"city": "Rome"}')]), "not json", '{"city": "Rome", "degrees": 21}']
    )
    budget = ToolBudget(max_requests=10)
    client = with_structured_output(with_function_invocation(fake, tools=[get_weather]))
    response = await client.get_response("Rome?", output_type=Forecast, options={"features": [budget]})
    assert response.value == Forecast(city="Rome", degrees=21)
    assert (budget.spent_requests, budget.spent_tool_calls) == (3, 1)


async def test_a_budget_spent_during_a_re_ask_ends_the_run_typed_with_every_attempt() -> None:
    fake = FakeChatClient([Reply(tool_calls=[("get_weather", '{"city": "Rome"}')]), "not json", "still not"])
    client = with_structured_output(with_function_invocation(fake, tools=[get_weather]))
    with pytest.raises(ToolLoopError) as raised:
        await client.get_response("Rome?", output_type=Forecast, options={"features": [ToolBudget(max_requests=2)]})
    assert raised.value.bound == "budget"
    assert len(fake.calls) == 2


@STREAM
async def test_the_tool_strategys_final_answer_tool_ends_the_loop(stream: bool) -> None:
    fake = FakeChatClient(
        [
            Reply(tool_calls=[("get_weather", '{"city": "Rome"}')]),
            Reply(tool_calls=[("Forecast", '{"city": "Rome", "degrees": 21}')]),
        ]
    )
    client = with_structured_output(with_function_invocation(fake, tools=[get_weather]), mode="tool")
    response = await get(client, stream, "Rome?", output_type=Forecast)
    assert response.value == Forecast(city="Rome", degrees=21)
    assert len(fake.calls) == 2
    assert sorted(t.name for t in fake.calls[0].options.tools or []) == ["Forecast", "get_weather"]  # type: ignore[union-attr]


@pytest.mark.local_server
@STREAM
async def test_a_tool_loop_with_a_typed_answer_on_the_embedded_model_ends_typed(
    local_server: LocalModelServer, stream: bool
) -> None:
    adapter = chat_client(local_server, "chat")
    client = with_structured_output(with_function_invocation(adapter, tools=[get_weather], max_iterations=4))
    try:
        response = await get(client, stream, "What is the weather in Paris?", output_type=Forecast,
                             options={"max_tokens": 120, "temperature": 0})  # fmt: skip
    except OutputError as error:  # a bound or an answer that did not validate: a typed end
        assert error.attempts
    else:
        assert isinstance(response.value, Forecast)
    finally:
        await adapter.sdk_client.close()


@pytest.mark.local_server
@STREAM
async def test_a_required_first_call_on_the_embedded_model_runs_the_tool(
    local_server: LocalModelServer, stream: bool
) -> None:
    """The emulated schema makes the forced call parse, so the tool runs with valid arguments (an
    enum argument: the grammar closes it within the token limit, whatever the model samples)."""

    def get_weather(city: Literal["Paris", "Oslo", "Rome"]) -> dict[str, Any]:
        """The temperature now in a city, in degrees Celsius."""
        return {"city": city, "degrees": 21}

    adapter = chat_client(local_server, "chat")
    client = with_function_invocation(adapter, tools=[get_weather], max_iterations=3)
    options = {"max_tokens": 60, "temperature": 0, "tool_choice": "required"}
    try:
        response = await get(client, stream, "What is the weather in Paris?", options=options)
        activities = response.additional_properties["tool_activities"]
    except ToolLoopError as error:  # the model kept calling: the bound ends it, typed
        activities = error.activities
        assert len(error.attempts) == 3
    finally:
        await adapter.sdk_client.close()
    assert activities and activities[0].name == "get_weather" and activities[0].error is None
    assert json.loads(activities[0].result or "")["degrees"] == 21


class Scripted:
    """Serves `bodies` in turn (the last repeating) as JSON and records the requests' bodies."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.sent: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(json.loads(request.content))
        return httpx2.Response(200, json=self.bodies[min(len(self.sent), len(self.bodies)) - 1])

    def http(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))


async def test_openai_responses_runs_the_tool_and_ends_in_the_type() -> None:
    """Documented Responses bodies (API reference, "The response object"): a `function_call` output
    item, then a message whose text is the typed answer."""
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}  # fmt: skip
    base = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-4o", "status": "completed",
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage}  # fmt: skip
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
            "arguments": '{"city":"Paris"}', "status": "completed"}  # fmt: skip
    text = '{"city": "Paris", "degrees": 21}'
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    server = Scripted({**base, "output": [call]}, {**base, "id": "resp_2", "output": [message]})
    sdk = openai.AsyncOpenAI(api_key="x", http_client=server.http(), max_retries=0)
    client = with_structured_output(with_function_invocation(OpenAIResponsesClient(sdk, "gpt-4o"), tools=[get_weather]))
    response = await client.get_response("Weather in Paris?", output_type=Forecast)
    assert response.value == Forecast(city="Paris", degrees=21)
    first, second = server.sent
    assert [t["name"] for t in first["tools"]] == ["get_weather"] and first["text"]["format"]["type"] == "json_schema"
    outputs = [item for item in second["input"] if item.get("type") == "function_call_output"]
    assert outputs == [
        {"type": "function_call_output", "call_id": "call_1", "output": '{"city": "Paris", "degrees": 21}'}
    ]


async def test_anthropic_messages_runs_the_tool_and_ends_in_the_type() -> None:
    """Documented Messages bodies (API reference, "Messages"): a `tool_use` block with
    `stop_reason: "tool_use"`, then the typed answer as text."""
    usage = {"input_tokens": 10, "output_tokens": 5}
    base = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-6", "usage": usage,
            "stop_sequence": None}  # fmt: skip
    use = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}
    text = '{"city": "Paris", "degrees": 21}'
    server = Scripted(
        {**base, "content": [use], "stop_reason": "tool_use"},
        {**base, "id": "msg_2", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"},
    )
    sdk = anthropic.AsyncAnthropic(api_key="x", http_client=server.http(), max_retries=0)
    client = with_structured_output(
        with_function_invocation(AnthropicChatClient(sdk, "claude-opus-4-6"), tools=[get_weather])
    )
    response = await client.get_response("Weather in Paris?", output_type=Forecast)
    assert response.value == Forecast(city="Paris", degrees=21)
    first, second = server.sent
    assert [t["name"] for t in first["tools"]] == ["get_weather"]
    results = [block for message in second["messages"] for block in message["content"] if isinstance(block, dict)
               and block.get("type") == "tool_result"]  # fmt: skip
    assert [(r["tool_use_id"], r["content"]) for r in results] == [("toolu_01", '{"city": "Paris", "degrees": 21}')]
