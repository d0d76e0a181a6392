"""`ChatAgent` over any ChatClient and `DelegatingAgent` for decorators (the `Agent` contract and
`AgentThread` are in `_protocol`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import wrapt

from ..core import (
    AgentSpans,
    ChatClient,
    ChatMessage,
    ChatOptions,
    FinishReason,
    OptionsInput,
    ResponseStream,
    UserError,
    as_chat_client,
    as_messages,
    with_continuation,
)
from ..middleware.function_invocation import Tool, with_function_invocation
from ._protocol import Agent, AgentCall, AgentRuns, AgentStream, AgentThread, SyncRuns, TypedAgentStream
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


class ChatAgent(AgentRuns, SyncRuns):
    """An agent over a chat client: instructions, default options, threads, typed runs.

    `run(..., output_type=T)` needs a structured-output layer in the client's stack. With `tools`
    the client is wrapped in the function-invocation layer: the model's tool calls are run and
    answered until it answers without one (`response.secondary.tool_runs` lists them). A thread
    keeps the conversation (the inputs and final answers), not the tool calls and results: they
    belong to the run that made them, and a later run asks again if it needs them.

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
    ) -> None:
        inner = as_chat_client(client)
        self.client: ChatClient = with_function_invocation(inner, tools=tools) if tools else inner
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
        thread = call.thread
        new_messages = as_messages(call.input)
        history = [*(thread.messages if thread else []), *new_messages]
        chat_options = self._options(call.options)
        if call.continuation_token is not None:
            history = []  # the server holds the run's conversation
            chat_options = with_continuation(chat_options, call.continuation_token)
        elif not history:
            raise UserError("nothing to run: give input or a thread with messages")
        if call.stream:
            return self._stream(history, new_messages, thread, chat_options, call.output_type)
        return self._respond(history, new_messages, thread, chat_options, call.output_type)

    def _span(self) -> contextlib.AbstractContextManager[Any]:
        spans = getattr(self.client, "get_service", lambda kind: None)(AgentSpans)  # the telemetry layer, if any
        if spans is None:
            return contextlib.nullcontext()
        return spans.agent_span(self.name, model=getattr(self.client, "model", None))  # type: ignore[no-any-return]

    async def _respond(
        self,
        history: list[ChatMessage],
        new: list[ChatMessage],
        thread: AgentThread | None,
        options: ChatOptions,
        output_type: Any,
    ) -> AgentResponse[Any]:
        with self._span():
            chat = require_chat_response(
                await self.client.get_response(history, options=options, output_type=output_type)
            )
        response: AgentResponse[Any] = AgentResponse(chat, agent_name=self.name)
        if thread is not None:
            thread.messages.extend([*new, *_final_messages(response)])
        return response

    def _stream(
        self,
        history: list[ChatMessage],
        new: list[ChatMessage],
        thread: AgentThread | None,
        options: ChatOptions,
        output_type: Any,
    ) -> AgentStream:
        final: list[AgentResponse[Any]] = []

        async def updates() -> AsyncIterator[AgentResponseUpdate[Any]]:
            with self._span():
                inner = self.client.get_response(history, options=options, stream=True, output_type=output_type)
                async with inner:
                    async for update in inner:
                        yield AgentResponseUpdate(update, agent_name=self.name)
                    chat = require_chat_response(await inner.get_final_response())
            response: AgentResponse[Any] = AgentResponse(chat, agent_name=self.name)
            if thread is not None:
                thread.messages.extend([*new, *_final_messages(response)])
            final.append(response)

        def finalize(_: Sequence[AgentResponseUpdate[Any]]) -> AgentResponse[Any]:
            return final[0]

        return ResponseStream(updates(), finalize)

    def as_tool(self, name: str | None = None, description: str | None = None, *, output_type: Any = None) -> Tool:
        """This agent as a tool of another agent: the model writes a request, this agent runs it,
        and its answer (its typed value with `output_type`, else its text) is the tool's result.

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
            response = await agent.run(request, output_type=output_type)
            return response.value if output_type is not None else response.text

        tool_name = name or self.name
        if tool_name is None:
            raise UserError("as_tool() needs a name: give the agent one (ChatAgent(name=...)) or pass name=")
        return Tool.of(ask, name=tool_name, description=description or self.instructions)

    def __repr__(self) -> str:
        return f"ChatAgent(name={self.name!r}, client={self.client!r})"


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
