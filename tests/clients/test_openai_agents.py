"""The OpenAI Agents SDK for Python, unmodified, on its Responses model through the gateway over the
scripted backend: `Agent(output_type=...)` with a function tool, `Runner.run` and `Runner.run_streamed`."""

from __future__ import annotations

from typing import Any

import agents
import pytest
from openai import AsyncOpenAI
from pydantic import BaseModel
from scripted import WEATHER

pytestmark = pytest.mark.anyio


class Weather(BaseModel):
    city: str
    temperature_c: int


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    agents.set_tracing_disabled(True)  # its traces would go to a hosted endpoint


def _agent(client: AsyncOpenAI, looked_up: list[str]) -> Any:
    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        looked_up.append(city)
        return '{"temperature_c": 21}'

    model = agents.OpenAIResponsesModel(model="m", openai_client=client)
    return agents.Agent(name="weather", instructions="Answer with the weather.", tools=[get_weather],
                        output_type=Weather, model=model)  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_agent_output_type_with_a_function_tool(scripted: Any, stream: bool) -> None:
    backend, gateway = scripted
    looked_up: list[str] = []
    async with AsyncOpenAI(base_url=gateway.base_url, api_key="none", max_retries=0, timeout=30) as client:
        agent = _agent(client, looked_up)
        if stream:
            result = agents.Runner.run_streamed(agent, "The weather in Paris?")
            kinds = [event.type async for event in result.stream_events()]
            assert "raw_response_event" in kinds and "run_item_stream_event" in kinds
        else:
            result = await agents.Runner.run(agent, "The weather in Paris?")
    assert result.final_output == Weather(**WEATHER)
    assert looked_up == ["Paris"]
    assert backend.tool_results() == ['{"temperature_c": 21}']
    assert backend.bodies[-1]["response_format"]["type"] == "json_schema"
    assert len(backend.bodies) == 2
