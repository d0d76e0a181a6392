"""Function invocation: the model asks for tool calls, the layer runs them and asks again.

    client = with_function_invocation(adapter, tools=[get_weather, today])
    response = await client.get_response("What should I wear in Paris today?")
    response.text                                        # the model's answer, after the calls
    response.additional_properties["tool_activities"]    # what ran: ToolActivity records

**The loop.** Each answer's calls of tools the layer knows are run, their results are added to
the conversation (the assistant's calls, then one `tool` message with the results, in the model's
order) and the model is asked again, until it answers without a call. A call of a tool the
options declare but the layer does not run (a `FunctionTool`, a strategy's final-answer tool)
ends the loop and returns the answer to the caller, who handles that call.

**Tools** are plain functions, sync or async, typed (`def get_weather(city: str) -> Weather`):
their arguments' schema comes from the signature and docstring (`so_middleware.schema.function_schema`),
the arguments are validated before the function runs, and what it returns is sent as JSON (a str
as it is). `@tool(name=..., description=..., timeout=...)` says what the signature can't. Tools
are given to the layer, and per run as a feature: `options={"features": [Tools(search)]}`.

**Errors go back to the model.** Invalid arguments, an unknown tool, a timeout, or an exception
in the tool become that call's result (`is_error=True`), a short text the model can act on; the
exception's own message only with `detailed_errors=True`.

**Bounds**, each with a default, each ending the run with a `ToolLoopError` that carries every
attempt (the raw text of every answer) and the usage summed over them: `max_iterations` model
calls (10), `max_consecutive_errors` answers whose every call failed (3), `max_calls_per_answer`
(16; more calls in one answer are all answered as errors), a tool's `timeout` (per tool, or the
layer's `tool_timeout`, 60 s), and a `ToolBudget` of tokens, requests and tool calls. A budget
given as a feature (`options={"features": [ToolBudget(max_tokens=20_000)]}`) is shared by every
call made with those options, structured output's re-asks included, and records what was spent.

A `tool_choice` that forces a call (`"required"`, or a named tool) holds for the first model
call only; after a round of calls the model is free to answer (`"auto"`), or it could never stop.
A call repeated with the same arguments is answered with the first one's result, not run again,
and when every call of an answer is such a repeat the next request offers no tool
(`tool_choice="none"`): the model has what it asked for, and small models otherwise ask again
until a bound ends the run.

**Concurrency.** The calls of one answer run one after another, or together with
`concurrent=True` (at most `max_concurrency` at a time); results keep the model's order. Sync
tools run on worker threads: cancelling the run cancels async tools and abandons sync ones (a
thread cannot be stopped: it finishes on its own, its result dropped).

**Streaming.** Every update of every model call streams through (tool calls arrive as
`FunctionCallContent`, never as text); after each round of calls one update with role `tool`
carries the results (`FunctionResultContent`) and, in `additional_properties["tool_activity"]`,
the `ToolActivity` of each. The final response is the last answer's.

**Logging.** Each call is one `tool` record (logger `so_middleware`, `INFO`): its name, call id,
iteration, duration and outcome (`ok` or `error`), the same fields in `record.so_middleware`; its
arguments and its result or error text only with `include_content=True`, as `with_logging` does.

**Telemetry.** Each tool runs inside an OpenTelemetry GenAI `execute_tool {name}` span
(`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`), a child
of the span current at the time (an agent's `invoke_agent` span), from `tracer_provider` or the
global one, when OpenTelemetry is installed.

Put structured output outside this layer: `with_structured_output(with_function_invocation(...))`
validates the final answer, and its re-asks run the loop again on the same budget.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ...core import (
    ChatClient,
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    ResponseStream,
    as_messages,
)
from ._approvals import APPROVALS_KEY, CONVERSATION_KEY, ApprovalRequest, Approvals
from ._calls import Calls, check_bounds
from ._records import ACTIVITIES_KEY, ACTIVITY_KEY, ToolActivity, ToolBudget, ToolLoopError, ToolScope, running_tool
from ._rounds import after_round, calls_in, finished, foreign, resume, start, waits
from ._tools import Tool, Tools, as_tools, tool

__all__ = [
    "ACTIVITIES_KEY",
    "ACTIVITY_KEY",
    "APPROVALS_KEY",
    "CONVERSATION_KEY",
    "ApprovalRequest",
    "Approvals",
    "FunctionInvokingChatClient",
    "Tool",
    "ToolActivity",
    "ToolBudget",
    "ToolLoopError",
    "ToolScope",
    "Tools",
    "running_tool",
    "tool",
    "with_function_invocation",
]


class FunctionInvokingChatClient(DelegatingChatClient):
    """Runs the tool calls the model asks for and asks again, within bounds (see the module).

    Example:
        client = FunctionInvokingChatClient(adapter, tools=[get_weather], max_iterations=5)
    """

    def __init__(
        self,
        inner: ChatClient | Any,
        *,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        max_iterations: int = 10,
        max_consecutive_errors: int = 3,
        max_calls_per_answer: int = 16,
        tool_timeout: float | None = 60.0,
        concurrent: bool = False,
        max_concurrency: int = 8,
        detailed_errors: bool = False,
        tracer_provider: Any = None,
        include_content: bool = False,
    ) -> None:
        check_bounds(
            max_iterations=max_iterations,
            max_consecutive_errors=max_consecutive_errors,
            max_calls_per_answer=max_calls_per_answer,
            max_concurrency=max_concurrency,
            tool_timeout=tool_timeout,
        )
        own = as_tools(tools)
        super().__init__(inner)
        self._self_tools = own
        self._self_max_iterations = max_iterations
        self._self_max_consecutive_errors = max_consecutive_errors
        concurrency = max_concurrency if concurrent else 1
        self._self_calls = Calls(
            max_calls_per_answer, tool_timeout, concurrency, detailed_errors, tracer_provider, include_content
        )

    @property
    def tools(self) -> list[Tool]:
        """The layer's own tools (a copy)."""
        return list(self._self_tools)

    # ------------------------------------------------------------------ the two verbs

    async def respond(self, call: LayerCall) -> ChatResponse[Any]:
        """Ask, run the calls, ask again, until an answer has no call this layer runs."""
        run, options = start(self._self_tools, call.options)
        history, stopped = await resume(run, as_messages(call.messages), self._self_calls)
        if stopped is not None:
            return stopped
        for iteration in range(1, self._self_max_iterations + 1):
            run.check_budget()
            response = await super().respond(call.replace(messages=history, options=options))
            run.record(response)
            calls = calls_in(response)
            if not calls or foreign(calls, run.tools, options) or waits(response, calls, run, history):
                return finished(response, run)
            results = await self._self_calls.run_calls(run, calls, iteration)
            history = [*history, *response.messages, ChatMessage("tool", list(results))]
            options = after_round(options, run, len(calls))
            run.check_errors(results, response, self._self_max_consecutive_errors)
        raise run.out_of_iterations(self._self_max_iterations)

    def stream(self, call: LayerCall) -> ChatStream:
        """The same loop, streamed: every answer's updates, then each round's results (see the module)."""
        run, options = start(self._self_tools, call.options)
        finals: list[ChatResponse[Any]] = []

        async def updates() -> AsyncIterator[ChatResponseUpdate[Any]]:
            history, stopped = await resume(run, as_messages(call.messages), self._self_calls)
            if stopped is not None:
                finals.append(stopped)
                return
            current = options
            for iteration in range(1, self._self_max_iterations + 1):
                run.check_budget()
                inner = super(FunctionInvokingChatClient, self).stream(call.replace(messages=history, options=current))
                async with inner:
                    async for update in inner:
                        yield update
                    response = await inner.get_final_response()
                run.record(response)
                calls = calls_in(response)
                if not calls or foreign(calls, run.tools, current) or waits(response, calls, run, history):
                    finals.append(finished(response, run))
                    return
                results = await self._self_calls.run_calls(run, calls, iteration)
                activities = run.activities[-len(results) :]
                yield ChatResponseUpdate(
                    contents=list(results), role="tool", additional_properties={ACTIVITY_KEY: activities}
                )
                history = [*history, *response.messages, ChatMessage("tool", list(results))]
                current = after_round(current, run, len(calls))
                run.check_errors(results, response, self._self_max_consecutive_errors)
            raise run.out_of_iterations(self._self_max_iterations)

        def final(_: Sequence[Any]) -> ChatResponse[Any]:
            return finals[-1]

        return ResponseStream(updates(), final)


def with_function_invocation(
    client: ChatClient | Any,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    max_iterations: int = 10,
    max_consecutive_errors: int = 3,
    max_calls_per_answer: int = 16,
    tool_timeout: float | None = 60.0,
    concurrent: bool = False,
    max_concurrency: int = 8,
    detailed_errors: bool = False,
    tracer_provider: Any = None,
    include_content: bool = False,
) -> FunctionInvokingChatClient:
    """Wrap `client` so the tool calls it answers with are run and answered (see the module).

    Example:
        client = with_structured_output(with_function_invocation(adapter, tools=[get_weather]))
        response = await client.get_response("Weather in Paris?", output_type=Forecast)
    """
    return FunctionInvokingChatClient(
        client,
        tools=tools,
        max_iterations=max_iterations,
        max_consecutive_errors=max_consecutive_errors,
        max_calls_per_answer=max_calls_per_answer,
        tool_timeout=tool_timeout,
        concurrent=concurrent,
        max_concurrency=max_concurrency,
        detailed_errors=detailed_errors,
        tracer_provider=tracer_provider,
        include_content=include_content,
    )
