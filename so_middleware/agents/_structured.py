"""`StructuredOutputAgent`: typed output for an agent that cannot produce it itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import replace
from typing import Any, cast

from ..core import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    FinishReason,
    ResponseStream,
    UserError,
)
from ..middleware.structured_output import StructuredOutput, StructuredOutputChatClient, with_structured_output
from ._agent import Agent, AgentCall, AgentStream, DelegatingAgent
from ._response import AgentResponse, AgentResponseUpdate, require_chat_response

__all__ = ["StructuredOutputAgent"]

CONVERTER_INSTRUCTIONS = (
    "You are a JSON expert. When given any text, you convert it to the requested JSON format, "
    "using only facts stated in the text."
)


class StructuredOutputAgent(DelegatingAgent):
    """Runs the inner agent as is, then converts its text answer with a chat client that can.

    The type comes from `run(..., output_type=T)`, a `StructuredOutput` feature in the options
    (the feature's `.response` is filled in), or the `output_type` given here. The response's
    `.inner_response` is the inner agent's own response.

    Example:
        agent = StructuredOutputAgent(a2a_agent, OpenAIChatClient(AsyncOpenAI(), "gpt-4o-mini"))
        (await agent.run("Tell me about John, 35", output_type=Person)).value
    """

    def __init__(self, inner_agent: Agent | Any, chat_client: ChatClient | Any, output_type: Any = None) -> None:
        if not callable(getattr(inner_agent, "run", None)):
            raise UserError(
                f"StructuredOutputAgent needs an agent with a run() method, not {type(inner_agent).__name__}"
            )
        super().__init__(inner_agent)
        converter = chat_client
        if getattr(chat_client, "get_service", lambda kind: None)(StructuredOutputChatClient) is None:
            converter = with_structured_output(chat_client)
        self._self_converter = converter
        self._self_default = StructuredOutput(output_type) if output_type is not None else None

    def _run(self, call: AgentCall) -> Awaitable[AgentResponse[Any]] | AgentStream:
        """Run the inner agent, then convert its answer to the requested type. A background run
        of the inner agent is returned as it is (`LONG_RUNNING`, with its token) until a run with
        `continuation_token=...` finds it complete; its answer is converted then."""
        chat_options = ChatOptions.coerce(call.options)
        features = [f for f in chat_options.features if isinstance(f, StructuredOutput)]
        feature = features[0] if features else None
        if feature is None and call.output_type is None and self._self_default is None:
            return super()._run(call)
        if feature is None and call.output_type is not None:
            feature = StructuredOutput(call.output_type)
        elif feature is None:
            feature = self._self_default.copy_for_run()  # type: ignore[union-attr]
        inner_options = chat_options.with_features([f for f in chat_options.features if f is not feature])
        inner = replace(call, options=inner_options, output_type=None, stream=False)  # the inner agent answers in text
        if call.stream:
            return self._stream(inner, feature)
        return self._respond(inner, feature)

    async def _inner_response(self, call: AgentCall) -> AgentResponse[Any]:
        """The inner agent's text answer (`call` asks for no stream)."""
        return await cast(Awaitable[AgentResponse[Any]], DelegatingAgent._run(self, call))

    def _conversion(self, text: str) -> list[ChatMessage]:
        return [ChatMessage("system", CONVERTER_INSTRUCTIONS), ChatMessage("user", text)]

    async def _respond(self, call: AgentCall, feature: StructuredOutput[Any]) -> AgentResponse[Any]:
        inner = await self._inner_response(call)
        if inner.finish_reason == FinishReason.LONG_RUNNING:
            return inner
        chat = require_chat_response(
            await self._self_converter.get_response(self._conversion(inner.text), options={"features": [feature]})
        )
        response: AgentResponse[Any] = AgentResponse(chat, agent_name=getattr(inner, "agent_name", None))
        response.inner_response = inner  # type: ignore[attr-defined]
        return response

    def _stream(self, call: AgentCall, feature: StructuredOutput[Any]) -> AgentStream:
        final: list[AgentResponse[Any]] = []

        async def updates() -> AsyncIterator[AgentResponseUpdate[Any]]:
            inner = await self._inner_response(call)
            if inner.finish_reason == FinishReason.LONG_RUNNING:
                final.append(inner)
                return
            stream = self._self_converter.get_response(
                self._conversion(inner.text), options={"features": [feature]}, stream=True
            )
            async with stream:
                async for update in stream:
                    yield AgentResponseUpdate(update)
                chat = require_chat_response(await stream.get_final_response())
            response: AgentResponse[Any] = AgentResponse(chat)
            response.inner_response = inner  # type: ignore[attr-defined]
            final.append(response)

        def finalize(_: Sequence[AgentResponseUpdate[Any]]) -> AgentResponse[Any]:
            return final[0]

        return ResponseStream(updates(), finalize)
