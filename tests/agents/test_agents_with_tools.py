"""Agents that act: `ChatAgent(tools=...)`, tool runs as secondary output, agents as tools."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import (
    AgentThread,
    ChatAgent,
    FunctionResultContent,
    ToolActivity,
    ToolBudget,
    ToolLoopError,
    UserError,
    with_structured_output,
)
from so_middleware.core import call_deadline, seconds_left
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio


class Outfit(BaseModel):
    top: str


def get_weather(city: str) -> str:
    """The weather now in a city."""
    return f"sunny in {city}"


def asks_weather(city: str = "Paris") -> Reply:
    return Reply(tool_calls=[("get_weather", f'{{"city": "{city}"}}')])


async def test_an_agent_with_tools_runs_them_and_keeps_them_out_of_the_answer_and_the_thread() -> None:
    fake = FakeChatClient([asks_weather(), "Wear sunglasses."])
    agent = ChatAgent(fake, tools=[get_weather], instructions="Advise on clothes.")
    thread = AgentThread()
    response = await agent.run("What should I wear in Paris?", thread=thread)
    assert response.text == "Wear sunglasses."
    assert [m.role for m in response.messages] == ["assistant"]
    (run,) = response.secondary.tool_runs
    assert isinstance(run, ToolActivity)
    assert (run.name, run.arguments, run.result, run.error, run.iteration) == (
        "get_weather",
        '{"city": "Paris"}',
        "sunny in Paris",
        None,
        1,
    )
    assert [(m.role, m.text) for m in thread.messages] == [
        ("user", "What should I wear in Paris?"),
        ("assistant", "Wear sunglasses."),
    ]
    assert fake.calls[0].options.instructions == "Advise on clothes."


async def test_a_streamed_agent_run_with_tools_streams_the_tool_activity_apart_from_the_answer() -> None:
    fake = FakeChatClient([asks_weather(), Reply(text="Sunglasses.", chunk_size=4)])
    stream = ChatAgent(fake, tools=[get_weather]).run("Wear?", stream=True)
    texts: list[str] = []
    results: list[Any] = []
    async for update in stream:
        texts.append(update.text)
        results.extend(c for c in update.contents if isinstance(c, FunctionResultContent))
    final = await stream.get_final_response()
    assert "".join(texts) == "Sunglasses." == final.text
    assert [r.result for r in results] == ["sunny in Paris"]
    assert [r.name for r in final.secondary.tool_runs] == ["get_weather"]


async def test_an_agent_with_tools_ends_in_the_typed_value() -> None:
    fake = FakeChatClient([asks_weather("Oslo"), '{"top": "coat"}'])
    agent = ChatAgent(with_structured_output(fake), tools=[get_weather])
    response = await agent.run("Oslo?", output_type=Outfit)
    assert response.value == Outfit(top="coat")
    assert [r.result for r in response.secondary.tool_runs] == ["sunny in Oslo"]


async def test_an_agent_is_a_tool_of_another_and_its_answer_is_the_result() -> None:
    researcher_model = FakeChatClient("It is sunny in Paris.")
    researcher = ChatAgent(researcher_model, name="researcher", instructions="Find weather facts.")
    fake = FakeChatClient([Reply(tool_calls=[("researcher", '{"request": "Weather in Paris?"}')]), "Sunglasses."])
    writer = ChatAgent(fake, tools=[researcher.as_tool()])
    response = await writer.run("What to wear in Paris?")
    assert response.text == "Sunglasses."
    (run,) = response.secondary.tool_runs
    assert (run.name, run.result) == ("researcher", "It is sunny in Paris.")
    assert researcher_model.calls[0].messages[-1].text == "Weather in Paris?"
    (declared,) = fake.calls[0].options.tools or []
    assert declared.description == "Find weather facts."  # type: ignore[union-attr]


async def test_an_agent_tool_with_an_output_type_returns_the_value_as_json() -> None:
    stylist = ChatAgent(with_structured_output(FakeChatClient('{"top": "coat"}')), name="stylist")
    fake = FakeChatClient([Reply(tool_calls=[("stylist", '{"request": "Oslo in winter"}')]), "A coat."])
    response = await ChatAgent(fake, tools=[stylist.as_tool(output_type=Outfit)]).run("Oslo?")
    assert response.secondary.tool_runs[0].result == '{"top": "coat"}'


def test_an_agent_without_a_name_needs_one_to_be_a_tool() -> None:
    with pytest.raises(UserError, match="needs a name"):
        ChatAgent(FakeChatClient("x")).as_tool()
    assert ChatAgent(FakeChatClient("x")).as_tool(name="helper").name == "helper"


async def test_an_agent_tools_calls_nest_in_the_outer_runs_activity() -> None:
    inner = ChatAgent(FakeChatClient([asks_weather(), "Sunny in Paris."]), name="researcher", tools=[get_weather])
    fake = FakeChatClient([Reply(tool_calls=[("researcher", '{"request": "Weather in Paris?"}')]), "Sunglasses."])
    response = await ChatAgent(fake, tools=[inner.as_tool()]).run("What to wear in Paris?")
    (outer,) = response.secondary.tool_runs
    assert (outer.name, outer.result) == ("researcher", "Sunny in Paris.")
    assert [(n.name, n.result) for n in outer.nested] == [("get_weather", "sunny in Paris")]


async def test_an_agent_tool_spends_the_outer_runs_budget() -> None:
    """The outer run's budget of 3 requests: its own first call, the inner agent's two, and the
    outer run has none left for its answer."""
    budget = ToolBudget(max_requests=3)
    inner = ChatAgent(FakeChatClient([asks_weather(), "Sunny."]), name="researcher", tools=[get_weather])
    fake = FakeChatClient([Reply(tool_calls=[("researcher", '{"request": "Weather?"}')]), "never"])
    with pytest.raises(ToolLoopError, match="budget of 3 requests is spent") as caught:
        await ChatAgent(fake, tools=[inner.as_tool()]).run("Wear?", options={"features": [budget]})
    assert budget.spent_requests == 3 and budget.spent_tool_calls == 2
    assert caught.value.bound == "budget" and len(fake.calls) == 1


async def test_an_agent_tool_runs_within_the_outer_runs_deadline() -> None:
    seen: list[float | None] = []

    def clock() -> str:
        """The time left to the run."""
        seen.append(seconds_left())
        return "plenty"

    inner = ChatAgent(FakeChatClient([Reply(tool_calls=[("clock", "{}")]), "ok"]), name="timer", tools=[clock])
    fake = FakeChatClient([Reply(tool_calls=[("timer", '{"request": "How long?"}')]), "Done."])
    with call_deadline(30):
        await ChatAgent(fake, tools=[inner.as_tool()]).run("Go")
    assert len(seen) == 1 and seen[0] is not None and 0 < seen[0] <= 30
