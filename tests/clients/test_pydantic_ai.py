"""pydantic-ai, unmodified, on its OpenAI Responses model through the gateway over the scripted backend:
`Agent(output_type=...)` to a typed value (`NativeOutput`, the Responses `text.format`, and the default
tool output), and a function tool's round trip with a `NativeOutput` answer, the conversation sent whole
or continued from the gateway's store (`openai_previous_response_id`); `run` and `run_stream`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
from pydantic_ai.providers.openai import OpenAIProvider
from scripted import USAGE, WEATHER

pytestmark = pytest.mark.anyio

TOOL_RESULT = '{"temperature_c": 21}'
INSTRUCTIONS = "Answer with the weather."
PROMPT = "The weather in Paris?"


class Weather(BaseModel):
    city: str
    temperature_c: int


def _agent(gateway: Any, output_type: Any, stored: bool = False) -> Agent[None, Weather]:
    settings = OpenAIResponsesModelSettings(openai_previous_response_id="auto") if stored else None
    model = OpenAIResponsesModel("m", provider=OpenAIProvider(base_url=gateway.base_url, api_key="none"))
    return Agent(model, output_type=output_type, instructions=INSTRUCTIONS, retries=0, model_settings=settings)


async def _run(agent: Agent[None, Weather], stream: bool) -> tuple[Weather, Any]:
    """(output, run): `agent.run`, or `agent.run_stream` read through its partial outputs."""
    async with agent:  # closes the provider's own HTTP client on this test's event loop
        if not stream:
            result = await agent.run(PROMPT)
            return result.output, result
        async with agent.run_stream(PROMPT) as run:
            partials = [partial async for partial in run.stream_output(debounce_by=None)]
            output = await run.get_output()
        assert partials and partials[-1] == output
        return output, run


@pytest.mark.parametrize("mode", ["native", "tool"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_output_type(scripted: Any, stream: bool, mode: str) -> None:
    backend, gateway = scripted
    backend.calls = [("final_result", json.dumps(WEATHER))]  # the default output tool's name
    output, _ = await _run(_agent(gateway, NativeOutput(Weather) if mode == "native" else Weather), stream)
    assert output == Weather(**WEATHER)
    (body,) = backend.bodies
    assert body.get("stream", False) is stream
    assert body["messages"][0] == {"role": "system", "content": INSTRUCTIONS}
    if mode == "native":  # the Responses `text.format`, as a Chat Completions `response_format`
        assert body["response_format"]["json_schema"]["name"] == "Weather" and "tools" not in body
    else:  # an output tool the model must call, read back from the gateway's `function_call` item
        assert body["tool_choice"] == "required" and "response_format" not in body
        assert [t["function"]["name"] for t in body["tools"]] == ["final_result"]


@pytest.mark.parametrize("stored", [False, True], ids=["sent", "stored"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_function_tool_round_trip(scripted: Any, stream: bool, stored: bool) -> None:
    backend, gateway = scripted
    agent = _agent(gateway, NativeOutput(Weather), stored)
    looked_up: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        looked_up.append(city)
        return TOOL_RESULT

    output, run = await _run(agent, stream)
    assert output == Weather(**WEATHER) and looked_up == ["Paris"]
    first = next(m for m in run.all_messages() if isinstance(m, ModelResponse))
    (call,) = [part for part in first.parts if isinstance(part, ToolCallPart)]
    assert (call.tool_name, call.args_as_dict()) == ("get_weather", {"city": "Paris"})
    usage = run.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (
        2, 2 * USAGE["prompt_tokens"], 2 * USAGE["completion_tokens"])  # fmt: skip
    sent_input = gateway.app.requests[1]["input"]
    if stored:  # only the tool result was sent: the gateway rebuilt the rest from the first response
        assert gateway.app.requests[1]["previous_response_id"] == first.provider_response_id
        assert [item["type"] for item in sent_input] == ["function_call_output"]
    else:
        assert [item.get("type") for item in sent_input] == [None, "function_call", "function_call_output"]
    assert len(backend.bodies) == 2 and all(body.get("stream", False) is stream for body in backend.bodies)
    assert [t["function"]["name"] for t in backend.bodies[0]["tools"]] == ["get_weather"]
    assert all(body["response_format"]["json_schema"]["name"] == "Weather" for body in backend.bodies)
    sent = backend.bodies[1]["messages"]
    assert sent[:-2] == backend.bodies[0]["messages"]
    (sent_call,) = sent[-2]["tool_calls"]
    assert (sent[-2]["role"], sent_call["id"], sent_call["function"]["name"]) == ("assistant", call.tool_call_id,
                                                                                   "get_weather")  # fmt: skip
    assert json.loads(sent_call["function"]["arguments"]) == {"city": "Paris"}
    assert sent[-1] == {"role": "tool", "tool_call_id": call.tool_call_id, "content": TOOL_RESULT}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_backend_reasoning_reaches_the_agent_as_a_thinking_part(scripted: Any, stream: bool) -> None:
    """pydantic-ai reads OpenAI's reasoning events (`response.reasoning_text.*`) and items, and keeps the
    reasoning text as it keeps gpt-oss's raw chain of thought (no summary: empty `content`); the spec's
    names sent beside them are validated by the fixture's tap."""
    backend, gateway = scripted
    backend.reasoning = "Paris is named; answer in the format."
    output, run = await _run(_agent(gateway, NativeOutput(Weather)), stream)
    assert output == Weather(**WEATHER)
    (response,) = [m for m in run.all_messages() if isinstance(m, ModelResponse)]
    thinking, text = response.parts
    assert isinstance(thinking, ThinkingPart) and isinstance(text, TextPart)
    assert thinking.content == "" and (thinking.provider_details or {}).get("raw_content") == [backend.reasoning]
