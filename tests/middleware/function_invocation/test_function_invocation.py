"""The function-invocation layer on a scripted model: the loop, errors back to the model, every bound."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from so_middleware import (
    ChatMessage,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    Tool,
    ToolActivity,
    ToolBudget,
    ToolLoopError,
    Tools,
    UsageDetails,
    UserError,
    tool,
    with_function_invocation,
)
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["respond", "stream"])


@dataclass
class Weather:
    city: str
    degrees: int


def get_weather(city: str, unit: Literal["C", "F"] = "C") -> Weather:
    """The weather now.

    Args:
        city: The city's English name.
    """
    return Weather(city, 21 if unit == "C" else 70)


def call(name: str, arguments: str) -> Reply:
    return Reply(tool_calls=[(name, arguments)])


async def ask(client: Any, stream: bool, prompt: str = "Weather in Paris?", **kwargs: Any) -> ChatResponse[Any]:
    if not stream:
        return await client.get_response(prompt, **kwargs)  # type: ignore[no-any-return]
    response_stream = client.get_response(prompt, stream=True, **kwargs)
    async with response_stream:
        async for _ in response_stream:
            pass
    return await response_stream.get_final_response()  # type: ignore[no-any-return]


def results_sent(fake: FakeChatClient, index: int) -> list[FunctionResultContent]:
    """The tool results the model received in call `index`."""
    tool_messages = [m for m in fake.calls[index].messages if m.role == "tool"]
    return [c for c in tool_messages[-1].contents if isinstance(c, FunctionResultContent)]


@STREAM
async def test_a_call_runs_the_function_and_the_model_answers_with_its_result(stream: bool) -> None:
    fake = FakeChatClient([call("get_weather", '{"city": "Paris"}'), "Take a light jacket."])
    response = await ask(with_function_invocation(fake, tools=[get_weather]), stream)
    assert response.text == "Take a light jacket."
    assert [m.role for m in fake.calls[1].messages] == ["user", "assistant", "tool"]
    assert isinstance(fake.calls[1].messages[1].contents[0], FunctionCallContent)
    assert results_sent(fake, 1) == [
        FunctionResultContent("call_0", '{"city": "Paris", "degrees": 21}', is_error=False, name="get_weather")
    ]
    (activity,) = response.additional_properties["tool_activities"]
    assert isinstance(activity, ToolActivity)
    assert (activity.name, activity.call_id, activity.iteration, activity.error) == ("get_weather", "call_0", 1, None)
    assert response.usage == UsageDetails(20, 10, 30)  # both model calls


async def test_the_tool_is_declared_with_the_schema_of_its_signature() -> None:
    fake = FakeChatClient("no call")
    await with_function_invocation(fake, tools=[get_weather]).get_response("Hi")
    (declared,) = fake.calls[0].options.tools or []
    assert isinstance(declared, FunctionTool)
    assert (declared.name, declared.description, declared.strict) == ("get_weather", "The weather now.", True)
    assert declared.parameters["properties"]["city"]["description"] == "The city's English name."
    assert declared.parameters["properties"]["unit"]["enum"] == ["C", "F"]


async def test_tools_given_per_run_join_the_layers_own() -> None:
    def today() -> str:
        return "2026-11-28"

    fake = FakeChatClient([Reply(tool_calls=[("today", "{}"), ("get_weather", '{"city": "Oslo"}')]), "ok"])
    client = with_function_invocation(fake, tools=[get_weather])
    await client.get_response("Hi", options={"features": [Tools(today)]})
    assert [r.result for r in results_sent(fake, 1)] == ["2026-11-28", '{"city": "Oslo", "degrees": 21}']
    await client.get_response("Hi again")
    assert [t.name for t in fake.calls[-1].options.tools or []] == ["get_weather"]  # type: ignore[union-attr]


@STREAM
async def test_invalid_arguments_go_back_to_the_model_and_the_function_does_not_run(stream: bool) -> None:
    ran: list[str] = []

    def record(city: str) -> str:
        ran.append(city)
        return city

    fake = FakeChatClient([call("record", '{"city": 5}'), call("record", '{"city": "Rome"}'), "done"])
    response = await ask(with_function_invocation(fake, tools=[record]), stream)
    assert response.text == "done"
    (first,) = results_sent(fake, 1)
    assert first.is_error and "invalid arguments for record" in first.result and "city" in first.result
    assert ran == ["Rome"]


async def test_an_unknown_tool_is_answered_with_the_known_ones() -> None:
    fake = FakeChatClient([call("get_wether", "{}"), "sorry"])
    response = await with_function_invocation(fake, tools=[get_weather]).get_response("Hi")
    (result,) = results_sent(fake, 1)
    assert result.is_error and "no tool named 'get_wether'" in result.result and "get_weather" in result.result
    assert response.additional_properties["tool_activities"][0].error == result.result


@pytest.mark.parametrize("detailed", [False, True])
async def test_an_exception_in_a_tool_is_a_short_error_its_message_only_on_opt_in(detailed: bool) -> None:
    def broken(city: str) -> str:
        raise RuntimeError("database password is hunter2")

    fake = FakeChatClient([call("broken", '{"city": "x"}'), "sorry"])
    await with_function_invocation(fake, tools=[broken], detailed_errors=detailed).get_response("Hi")
    (result,) = results_sent(fake, 1)
    assert result.is_error
    assert ("hunter2" in result.result) is detailed
    assert result.result.startswith("Error: broken failed")


@STREAM
async def test_max_iterations_ends_the_run_typed_with_every_attempt_and_the_usage(stream: bool) -> None:
    fake = FakeChatClient(call("get_weather", '{"city": "Paris"}'))
    with pytest.raises(ToolLoopError) as raised:
        await ask(with_function_invocation(fake, tools=[get_weather], max_iterations=3), stream)
    error = raised.value
    assert error.bound == "iterations" and "3 iterations" in str(error)
    assert len(error.attempts) == 3 == len(fake.calls)
    assert error.usage == UsageDetails(30, 15, 45)
    assert len(error.activities) == 3


@STREAM
async def test_consecutive_errors_end_the_run_and_a_success_resets_the_count(stream: bool) -> None:
    bad, good = call("get_weather", "{}"), call("get_weather", '{"city": "Paris"}')
    fake = FakeChatClient([bad, bad, good, bad, bad, bad, "never"])
    with pytest.raises(ToolLoopError) as raised:
        await ask(with_function_invocation(fake, tools=[get_weather], max_consecutive_errors=3), stream)
    assert raised.value.bound == "consecutive_errors"
    assert len(fake.calls) == 6
    assert "invalid arguments" in str(raised.value)


@pytest.mark.parametrize(
    ("budget", "calls", "message"),
    [
        (ToolBudget(max_requests=2), 2, "2 requests"),
        (ToolBudget(max_tokens=40), 3, "40 tokens"),
        (ToolBudget(max_tool_calls=1), 2, "1 tool calls"),
    ],
    ids=["requests", "tokens", "tool-calls"],
)
async def test_the_budget_ends_the_run_typed(budget: ToolBudget, calls: int, message: str) -> None:
    fake = FakeChatClient(call("get_weather", '{"city": "Paris"}'))
    client = with_function_invocation(fake, tools=[get_weather])
    with pytest.raises(ToolLoopError) as raised:
        await client.get_response("Hi", options={"features": [budget]})
    assert raised.value.bound == "budget" and message in str(raised.value)
    assert len(fake.calls) == calls
    assert len(raised.value.attempts) == calls


async def test_a_budget_given_as_a_feature_is_shared_by_every_call_and_records_the_spending() -> None:
    budget = ToolBudget(max_requests=3)
    fake = FakeChatClient([call("get_weather", '{"city": "Paris"}'), "one", "two", "three"])
    client = with_function_invocation(fake, tools=[get_weather])
    options = {"features": [budget]}
    await client.get_response("a", options=options)
    assert (budget.spent_requests, budget.spent_tool_calls, budget.spent_tokens) == (2, 1, 30)
    await client.get_response("b", options=options)
    with pytest.raises(ToolLoopError, match="3 requests"):
        await client.get_response("c", options=options)


async def test_parallel_calls_run_together_when_allowed_and_results_keep_the_models_order() -> None:
    first_started, second_started = asyncio.Event(), asyncio.Event()

    async def first(x: int) -> int:
        first_started.set()
        await asyncio.wait_for(second_started.wait(), 5)  # only while the other call runs too
        await asyncio.sleep(0.01)
        return x

    async def second(x: int) -> int:
        second_started.set()
        await asyncio.wait_for(first_started.wait(), 5)
        return x * 10

    fake = FakeChatClient([Reply(tool_calls=[("first", '{"x": 1}'), ("second", '{"x": 2}')]), "ok"])
    await with_function_invocation(fake, tools=[first, second], concurrent=True).get_response("Hi")
    assert [(r.call_id, r.result, r.is_error) for r in results_sent(fake, 1)] == [
        ("call_0", "1", False),
        ("call_1", "20", False),
    ]


async def test_calls_run_one_after_another_by_default() -> None:
    order: list[str] = []

    async def slow(x: int) -> int:
        order.append(f"start {x}")
        await asyncio.sleep(0.01)
        order.append(f"end {x}")
        return x

    fake = FakeChatClient([Reply(tool_calls=[("slow", '{"x": 1}'), ("slow", '{"x": 2}')]), "ok"])
    await with_function_invocation(fake, tools=[slow]).get_response("Hi")
    assert order == ["start 1", "end 1", "start 2", "end 2"]


async def test_more_calls_in_one_answer_than_allowed_are_all_answered_as_errors() -> None:
    ran: list[int] = []

    def note(x: int) -> int:
        ran.append(x)
        return x

    fake = FakeChatClient([Reply(tool_calls=[("note", '{"x": 1}')] * 3), "ok"])
    await with_function_invocation(fake, tools=[note], max_calls_per_answer=2).get_response("Hi")
    assert all(r.is_error and "2 calls at most" in r.result for r in results_sent(fake, 1))
    assert ran == []


async def test_a_tool_past_its_timeout_is_an_error_for_the_model_async_and_sync() -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    async def hangs() -> str:
        await asyncio.sleep(60)
        return "never"

    @tool(timeout=0.05)
    def blocks() -> str:
        release.wait(10)
        return "late"

    fake = FakeChatClient([Reply(tool_calls=[("hangs", "{}"), ("blocks", "{}")]), "ok"])
    try:
        await with_function_invocation(fake, tools=[hangs, blocks]).get_response("Hi")
    finally:
        release.set()  # the abandoned thread finishes on its own
    assert [r.result for r in results_sent(fake, 1)] == [
        "Error: hangs did not finish within 0.05 s.",
        "Error: blocks did not finish within 0.05 s.",
    ]


async def test_cancelling_the_run_cancels_an_async_tool() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def waits() -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    fake = FakeChatClient([call("waits", "{}"), "ok"])
    task = asyncio.ensure_future(with_function_invocation(fake, tools=[waits]).get_response("Hi"))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_streamed_tool_activity_arrives_as_its_own_updates_never_as_answer_text() -> None:
    fake = FakeChatClient([call("get_weather", '{"city": "Paris"}'), Reply(text="Jacket.", chunk_size=3)])
    stream = with_function_invocation(fake, tools=[get_weather]).get_response("Hi", stream=True)
    updates = [update async for update in stream]
    kinds = [(u.role, u.text, [type(c).__name__ for c in u.contents]) for u in updates if u.contents]
    assert kinds[0] == ("assistant", "", ["FunctionCallContent"])
    assert kinds[1] == ("tool", "", ["FunctionResultContent"])
    assert "".join(text for role, text, _ in kinds[2:]) == "Jacket."
    (activity,) = updates[1].additional_properties["tool_activity"]
    assert activity.name == "get_weather" and activity.result == '{"city": "Paris", "degrees": 21}'
    final = await stream.get_final_response()
    assert final.text == "Jacket."


async def test_a_call_of_a_tool_the_options_declare_but_the_layer_does_not_run_returns_to_the_caller() -> None:
    declared = FunctionTool("final_answer", {"type": "object", "properties": {}})
    fake = FakeChatClient([call("final_answer", "{}"), "never"])
    client = with_function_invocation(fake, tools=[get_weather])
    response = await client.get_response("Hi", options={"tools": [declared]})
    assert len(fake.calls) == 1
    assert [c.name for c in response.messages[0].contents if isinstance(c, FunctionCallContent)] == ["final_answer"]
    assert [t.name for t in fake.calls[0].options.tools or []] == ["final_answer", "get_weather"]  # type: ignore[union-attr]


def test_the_sync_entry_point_runs_the_loop() -> None:
    fake = FakeChatClient([call("get_weather", '{"city": "Paris"}'), "done"])
    response = with_function_invocation(fake, tools=[get_weather]).get_response_sync("Hi")
    assert response.text == "done"
    assert results_sent(fake, 1)[0].result == '{"city": "Paris", "degrees": 21}'


async def test_the_callers_messages_and_options_are_not_changed() -> None:
    messages = [ChatMessage("user", "Hi")]
    options: dict[str, Any] = {"temperature": 0}
    fake = FakeChatClient([call("get_weather", '{"city": "Paris"}'), "done"])
    await with_function_invocation(fake, tools=[get_weather]).get_response(messages, options=options)
    assert len(messages) == 1 and options == {"temperature": 0}


# ------------------------------------------------------------------------------------ bad input


def _untyped(city):  # type: ignore[no-untyped-def]
    return city


def _star(*cities: str) -> str:
    return ""


def _kwargs(**cities: str) -> str:
    return ""


class _Opaque:
    pass


def _opaque(thing: _Opaque) -> str:
    return ""


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (_untyped, "parameter 'city' has no type annotation"),
        (_star, r"\*args or \*\*kwargs"),
        (_kwargs, r"\*args or \*\*kwargs"),
        (_opaque, "cannot make a schema"),
    ],
    ids=["untyped", "star-args", "kwargs", "unschemable-type"],
)
def test_a_function_that_cannot_be_a_tool_is_a_user_error_naming_the_parameter(function: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        with_function_invocation(FakeChatClient(), tools=[function])


def test_two_tools_with_one_name_and_names_providers_refuse_are_user_errors() -> None:
    def other_weather(city: str) -> str:
        return city

    with pytest.raises(UserError, match="two tools are named 'get_weather'"):
        with_function_invocation(FakeChatClient(), tools=[get_weather, Tool.of(other_weather, name="get_weather")])
    with pytest.raises(UserError, match="refused by providers"):
        Tool.of(get_weather, name="get weather!")
    with pytest.raises(UserError, match="refused by providers"):
        Tool.of(get_weather, name="x" * 65)


async def test_a_name_both_declared_in_the_options_and_run_by_the_layer_is_a_user_error_before_any_call() -> None:
    fake = FakeChatClient("x")
    client = with_function_invocation(fake, tools=[get_weather])
    with pytest.raises(UserError, match="both declared"):
        await client.get_response("Hi", options={"tools": [FunctionTool("get_weather", {"type": "object"})]})
    assert fake.calls == []


async def test_a_tool_returning_something_that_is_not_json_is_a_user_error_naming_it() -> None:
    def handle() -> Any:
        return object()

    fake = FakeChatClient([call("handle", "{}"), "x"])
    with pytest.raises(UserError, match="tool 'handle' returned object"):
        await with_function_invocation(fake, tools=[handle]).get_response("Hi")


@pytest.mark.parametrize(
    ("keyword", "value"),
    [("max_iterations", 0), ("max_consecutive_errors", -1), ("max_calls_per_answer", True), ("tool_timeout", 0)],
)
def test_bounds_are_checked_when_the_layer_is_built(keyword: str, value: Any) -> None:
    with pytest.raises(UserError, match=keyword):
        with_function_invocation(FakeChatClient(), **{keyword: value})


def test_a_budget_with_a_limit_that_is_not_a_positive_int_is_a_user_error() -> None:
    with pytest.raises(UserError, match="max_tokens"):
        ToolBudget(max_tokens=0)


@pytest.mark.parametrize("choice", ["required", "get_weather"])
async def test_a_forced_tool_choice_holds_for_the_first_call_only(choice: str) -> None:
    from so_middleware import ForcedTool

    forced: Any = ForcedTool(choice) if choice != "required" else choice
    fake = FakeChatClient([call("get_weather", '{"city": "Paris"}'), "done"])
    await with_function_invocation(fake, tools=[get_weather]).get_response("Hi", options={"tool_choice": forced})
    assert [c.options.tool_choice for c in fake.calls] == [forced, None]


async def test_a_call_repeated_with_the_same_arguments_is_answered_from_the_first_and_tools_are_withdrawn() -> None:
    ran: list[str] = []

    def lookup(city: str) -> str:
        ran.append(city)
        return f"sunny in {city}"

    fake = FakeChatClient(
        [call("lookup", '{"city": "Paris"}'), call("lookup", '{ "city":"Paris" }'), "It is sunny in Paris."]
    )
    response = await with_function_invocation(fake, tools=[lookup]).get_response("Hi")
    assert response.text == "It is sunny in Paris."
    assert ran == ["Paris"]  # run once
    assert results_sent(fake, 2)[0].result == "sunny in Paris"
    assert [c.options.tool_choice for c in fake.calls] == [None, None, "none"]


async def test_a_repeat_beside_a_new_call_keeps_the_tools_offered() -> None:
    fake = FakeChatClient(
        [
            call("get_weather", '{"city": "Paris"}'),
            Reply(tool_calls=[("get_weather", '{"city": "Paris"}'), ("get_weather", '{"city": "Oslo"}')]),
            "done",
        ]
    )
    await with_function_invocation(fake, tools=[get_weather]).get_response("Hi")
    assert [c.options.tool_choice for c in fake.calls] == [None, None, None]


async def test_each_tool_runs_in_an_execute_tool_span_under_the_current_span(
    tracer_provider: Any, exporter: Any
) -> None:
    fake = FakeChatClient([Reply(tool_calls=[("get_weather", '{"city": "Paris"}'), ("nope", "{}")]), "done"])
    client = with_function_invocation(fake, tools=[get_weather], tracer_provider=tracer_provider)
    with tracer_provider.get_tracer("test").start_as_current_span("invoke_agent planner") as parent:
        await client.get_response("Hi")
    spans = {span.name: span for span in exporter.get_finished_spans()}
    tool_span = spans["execute_tool get_weather"]
    assert dict(tool_span.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "call_0",
        "gen_ai.tool.type": "function",
    }
    assert tool_span.parent.span_id == parent.get_span_context().span_id
    assert "execute_tool nope" in spans  # an unknown tool's call is answered inside its span too
