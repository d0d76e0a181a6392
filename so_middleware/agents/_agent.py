"""`ChatAgent` over any ChatClient and `DelegatingAgent` for decorators (the `Agent` contract and
`AgentThread` are in `_protocol`)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import wrapt

from ..core import (
    AgentSpans,
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    FinishReason,
    OptionsInput,
    ResponseStream,
    UserError,
    as_chat_client,
    as_messages,
    with_continuation,
)
from ..middleware.function_invocation import (
    ACTIVITIES_KEY,
    APPROVALS_KEY,
    CONVERSATION_KEY,
    Approvals,
    FunctionInvokingChatClient,
    Tool,
    ToolActivity,
    running_tool,
    with_function_invocation,
)
from ._input import TypedInput
from ._paused import (
    MemoryPausedRuns,
    PausedRun,
    PausedRunStore,
    new_token,
    paused_key,
    tool_fingerprints,
    type_name,
)
from ._protocol import Agent, AgentCall, AgentRuns, AgentStream, AgentThread, SyncRuns, TIn, TypedAgentStream
from ._response import AgentResponse, AgentResponseUpdate, require_chat_response

__all__ = [
    "Agent",
    "AgentCall",
    "AgentRuns",
    "AgentStream",
    "AgentThread",
    "ChatAgent",
    "DelegatingAgent",
    "SyncRuns",
    "TypedAgentStream",
]


class ChatAgent(AgentRuns[TIn], SyncRuns[TIn]):
    """An agent over a chat client: instructions, default options, threads, typed runs.

    `run(..., output_type=T)` needs a structured-output layer in the client's stack. With `tools`
    the client is wrapped in the function-invocation layer: the model's tool calls are run and
    answered until it answers without one (`response.secondary.tool_runs` lists them). A thread
    keeps the conversation (the inputs and final answers), not the tool calls and results: they
    belong to the run that made them, and a later run asks again if it needs them.

    A call of a tool marked `requires_approval` pauses the run: the response lists the waiting calls
    (`approval_requests`, arguments validated) and carries a `continuation_token`; the run is kept in
    `paused_runs` (in memory by default; `SQLitePausedRuns` or `PostgresPausedRuns` to resume in
    another process, after a restart). `run(continuation_token=token, approvals={call_id: True |
    False | "reason"})` resumes it, once: approved calls run, declined ones go back to the model as
    refusals. The thread given to the resumed run gets the paused run's input and final answer.

    `input_type=Order` (a pydantic model or a dataclass) makes it a `ChatAgent[Order]`: `run(order)`
    takes an `Order` (or a dict of its fields), validated before any call (a `UserError` names each
    wrong field) and sent as JSON with its schema; text and messages are still taken as they are.

    Example:
        agent = ChatAgent(with_structured_output(client), name="extractor", instructions="Extract people.")
        response = await agent.run("Ada Lovelace, 36", output_type=Person)
        response.value, response.text, response.secondary.attempts
    """

    def __init__(
        self,
        client: ChatClient | Any,
        *,
        name: str | None = None,
        instructions: str | None = None,
        options: OptionsInput = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        paused_runs: PausedRunStore | None = None,
        input_type: type[TIn] | None = None,
    ) -> None:
        inner = as_chat_client(client)
        invoking = with_function_invocation(inner, tools=tools) if tools else None
        if paused_runs is not None and not isinstance(paused_runs, PausedRunStore):
            raise UserError(f"paused_runs must be a paused-run store (SQLitePausedRuns, ...), not {paused_runs!r:.60}")
        self.client: ChatClient = invoking or inner
        self.paused_runs: PausedRunStore = paused_runs if paused_runs is not None else MemoryPausedRuns()
        self._tools: list[Tool] = invoking.tools if isinstance(invoking, FunctionInvokingChatClient) else []
        self._input = TypedInput(input_type) if input_type is not None else None
        self.name = name
        self.instructions = instructions
        self.default_options = ChatOptions.coerce(options)

    def _options(self, options: OptionsInput) -> ChatOptions:
        merged = ChatOptions.coerce(options).merged_over(self.default_options)
        if self.instructions and merged.instructions is None:
            merged = merged.replace(instructions=self.instructions)
        return merged

    def _run(self, call: AgentCall) -> Awaitable[AgentResponse[Any]] | AgentStream:
        """`run`'s work (its arguments as one `AgentCall`)."""
        key = paused_key(call.continuation_token)
        if key is not None:
            start: Callable[[], Awaitable[_Start]] = functools.partial(self._resumed, call, key)
        elif call.approvals is not None:
            raise UserError(
                "approvals= resumes a paused run: pass it with the continuation_token of the response that asked"
            )
        else:
            start = functools.partial(_ready, self._started(call))
        if call.stream:
            return self._stream(start, call.thread, call.output_type)
        return self._respond(start, call.thread, call.output_type)

    def _started(self, call: AgentCall) -> _Start:
        thread = call.thread
        new_messages = self._input.messages(call.input) if self._input else as_messages(call.input)
        history = [*(thread.messages if thread else []), *new_messages]
        chat_options = self._options(call.options)
        if call.continuation_token is not None:
            history = []  # the server holds the run's conversation
            chat_options = with_continuation(chat_options, call.continuation_token)
        elif not history:
            raise UserError("nothing to run: give input or a thread with messages")
        return _Start(history, new_messages, chat_options)

    async def _resumed(self, call: AgentCall, key: str) -> _Start:
        """The paused run `key` names, checked against this run's arguments, then taken (once)."""
        store = self.paused_runs
        named = f"continuation token {str(call.continuation_token)[:18]}..."
        found = await store.load(key)
        if found is None:
            raise UserError(f"{named} names no paused run of tenant {store.tenant!r} (unknown, or another tenant's)")
        if found[1]:
            raise UserError(f"{named} was already used: a paused run resumes once")
        paused = PausedRun.from_json(found[0])
        changed = _changed(paused.tools, tool_fingerprints(self._tools))
        if changed:
            raise UserError(
                f"the agent's tools changed since the run paused ({changed}): resume it with the same tools"
            )
        decisions = Approvals(call.approvals or {})
        unknown = sorted(set(decisions.decisions) - {request.call_id for request in paused.requests})
        if unknown:
            waiting = ", ".join(repr(request.call_id) for request in paused.requests)
            raise UserError(f"approvals name {', '.join(map(repr, unknown))}, which the paused run does not wait for "
                            f"(it waits for {waiting})")  # fmt: skip
        missing = [request.call_id for request in paused.requests if request.call_id not in decisions.decisions]
        if missing:  # a decision for each: one given now and not kept would be asked for again
            raise UserError(f"approvals has no decision for {', '.join(map(repr, missing))}: decide every waiting call")
        if type_name(call.output_type) != paused.output_type:
            raise UserError(f"the paused run asked for output_type {paused.output_type}: resume it with the same")
        if call.input is not None:
            raise UserError("a paused run resumes with approvals only: give no input (run again for a new question)")
        if not await store.take(key):
            raise UserError(f"{named} was already used: a paused run resumes once")
        options = self._options(ChatOptions.coerce(call.options).merged_over(ChatOptions(**paused.options)))
        options = options.with_features([*options.features, decisions])
        return _Start(paused.messages, paused.new, options, paused.activities)

    def _span(self) -> contextlib.AbstractContextManager[Any]:
        spans = getattr(self.client, "get_service", lambda kind: None)(AgentSpans)  # the telemetry layer, if any
        if spans is None:
            return contextlib.nullcontext()
        return spans.agent_span(self.name, model=getattr(self.client, "model", None))  # type: ignore[no-any-return]

    async def _respond(
        self, start: Callable[[], Awaitable[_Start]], thread: AgentThread | None, output_type: Any
    ) -> AgentResponse[Any]:
        started = await start()
        with self._span():
            chat = require_chat_response(
                await self.client.get_response(started.history, options=started.options, output_type=output_type)
            )
        return await self._settle(chat, started, thread, output_type)

    def _stream(
        self, start: Callable[[], Awaitable[_Start]], thread: AgentThread | None, output_type: Any
    ) -> AgentStream:
        final: list[AgentResponse[Any]] = []

        async def updates() -> AsyncIterator[AgentResponseUpdate[Any]]:
            started = await start()
            with self._span():
                inner = self.client.get_response(
                    started.history, options=started.options, stream=True, output_type=output_type
                )
                async with inner:
                    async for update in inner:
                        yield AgentResponseUpdate(update, agent_name=self.name)
                    chat = require_chat_response(await inner.get_final_response())
            final.append(await self._settle(chat, started, thread, output_type))

        def finalize(_: Sequence[AgentResponseUpdate[Any]]) -> AgentResponse[Any]:
            return final[0]

        return ResponseStream(updates(), finalize)

    async def _settle(
        self, chat: ChatResponse[Any], started: _Start, thread: AgentThread | None, output_type: Any
    ) -> AgentResponse[Any]:
        """The run's response: paused (kept in the store, with a token), or final (the thread gets it)."""
        props = chat.additional_properties
        if started.activities:  # the tools that ran before a pause, then the resumed run's
            props[ACTIVITIES_KEY] = [*started.activities, *props.get(ACTIVITIES_KEY, [])]
        requests = props.get(APPROVALS_KEY)
        if requests:
            paused = PausedRun(
                messages=list(props.get(CONVERSATION_KEY, [])),
                new=started.new,
                requests=list(requests),
                tools=tool_fingerprints(self._tools),
                output_type=type_name(output_type),
                options=PausedRun.kept_options(started.options),
                activities=list(props.get(ACTIVITIES_KEY, [])),
            )
            token = new_token()
            await self.paused_runs.save(paused_key(token) or "", paused.to_json())
            chat.continuation_token = token
            return AgentResponse(chat, agent_name=self.name)
        response: AgentResponse[Any] = AgentResponse(chat, agent_name=self.name)
        if thread is not None:
            thread.messages.extend([*started.new, *_final_messages(response)])
        return response

    def as_tool(self, name: str | None = None, description: str | None = None, *, output_type: Any = None) -> Tool:
        """This agent as a tool of another agent: the model writes a request, this agent runs it,
        and its answer (its typed value with `output_type`, else its text) is the tool's result.
        An agent with `input_type=T` takes a `T` as the request (the tool's schema is `T`'s). The
        inner run spends the outer run's `ToolBudget` and keeps its deadline; its tool calls are
        the `nested` activities of the outer run's call of this tool.

        Example:
            researcher = ChatAgent(client, name="researcher", instructions="Find facts.")
            writer = ChatAgent(client, tools=[researcher.as_tool(description="Ask for facts.")])
        """
        agent = self

        async def ask(request: str) -> Any:
            """Ask the agent.

            Args:
                request: What to ask the agent, in full: it sees nothing else of the conversation.
            """
            scope = running_tool()  # the outer run's: its budget is this run's too
            options = {"features": [scope.budget]} if scope is not None else None
            response = await agent.run(request, output_type=output_type, options=options)
            if scope is not None:
                scope.nested.extend(response.secondary.tool_runs)
            return response.value if output_type is not None else response.text

        if self._input is not None:  # the schema layer reads the request's type from the hints
            ask.__annotations__ = {**ask.__annotations__, "request": self._input.input_type}
        tool_name = name or self.name
        if tool_name is None:
            raise UserError("as_tool() needs a name: give the agent one (ChatAgent(name=...)) or pass name=")
        return Tool.of(ask, name=tool_name, description=description or self.instructions)

    def __repr__(self) -> str:
        return f"ChatAgent(name={self.name!r}, client={self.client!r})"


@dataclass(frozen=True)
class _Start:
    """What a run sends: its conversation, its own input (for the thread), its options, and the
    tools that ran before it paused (a resumed run)."""

    history: list[ChatMessage]
    new: list[ChatMessage]
    options: ChatOptions
    activities: list[ToolActivity] = field(default_factory=list)


async def _ready(start: _Start) -> _Start:
    return start


def _changed(paused: dict[str, str], now: dict[str, str]) -> str:
    """The tools that differ, named: `'a' (changed), 'b' (gone), 'c' (new)`."""
    notes = [f"{name!r} (changed)" for name in paused if name in now and now[name] != paused[name]]
    notes += [f"{name!r} (gone)" for name in paused if name not in now]
    notes += [f"{name!r} (new)" for name in now if name not in paused]
    return ", ".join(notes)


def _final_messages(response: AgentResponse[Any]) -> list[ChatMessage]:
    return [] if response.finish_reason == FinishReason.LONG_RUNNING else response.messages


class DelegatingAgent(wrapt.BaseObjectProxy, AgentRuns, SyncRuns):  # type: ignore[type-arg]
    """Base of agent decorators, with `Agent`'s typed `run` and `run_sync`: a decorator overrides
    `run` where it must; everything else passes through.

    `run(..., output_type=...)` keeps working through any decorator: the run is passed on with
    the arguments it was given (`AgentCall.given()`), so an inner agent whose `run` takes fewer
    still runs.
    """

    def _run(self, call: AgentCall) -> Awaitable[AgentResponse[Any]] | AgentStream:
        """Pass the run to the inner agent unchanged."""
        return self.__wrapped__.run(call.input, **call.given())  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__wrapped__!r})"
