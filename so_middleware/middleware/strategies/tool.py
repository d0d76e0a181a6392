"""`tool`: one function tool with the schema as its parameters, forced where the backend allows
(or emulated by the adapter, `tool_emulation`); the answer is the call's arguments, and a re-ask
is an error tool result paired with the call."""

from __future__ import annotations

from typing import Any, ClassVar

from ...core import (
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    TextContent,
)
from ._base import Answer, AttemptRequest, Strategy, Target, feedback, history_of, schema_problem

__all__ = ["Tool"]


class Tool(Strategy):
    name: ClassVar[str] = "tool"
    lenient: ClassVar[bool] = True

    def unavailable(self, target: Target) -> str | None:
        if not (target.capabilities.tools or target.capabilities.tool_emulation):
            return "it says function tools are unsupported (tools=False)"
        return schema_problem(target)

    def in_auto(self, capabilities: Capabilities) -> bool:
        return capabilities.tools and capabilities.forced_tool_choice

    def turned_off(self, capabilities: Capabilities) -> Capabilities:
        return capabilities.replace(tools=False, forced_tool_choice=False, strict_tools=False, tool_emulation=False)

    def plan(self, target: Target, messages: list[ChatMessage], options: ChatOptions) -> AttemptRequest:
        schema, caps = target.schema, target.capabilities
        name = schema.wire_name(target.profile)
        strict = caps.strict_tools and schema.is_strict_json_schema()
        tool = FunctionTool(
            name,
            schema.json_schema(target.profile),
            target.description or f"Return the final answer as {schema.name()}.",
            strict=True if strict else None,
        )
        # an emulated tool choice is always honoured: the adapter asks for the call by schema
        choice = ForcedTool(name) if caps.forced_tool_choice or caps.tool_emulation else "required"
        changed = options.replace(tools=[*(options.tools or []), tool], tool_choice=choice)
        return AttemptRequest(self, list(messages), changed, tool_name=name, strict=strict)

    def delta(self, plan: AttemptRequest, update: ChatResponseUpdate[Any]) -> str:
        return "".join(
            c.arguments
            for c in update.contents
            if isinstance(c, FunctionCallContent) and c.name in ("", plan.tool_name)
        )

    def answer(self, plan: AttemptRequest, response: ChatResponse[Any]) -> Answer:
        for message in reversed(response.messages):
            for call in message.function_calls:
                if call.name == plan.tool_name:
                    return Answer(call.arguments, call, message)
        return Answer(response.text)

    def ignored(self, plan: AttemptRequest, answer: Answer) -> bool:
        return answer.call is None  # the tool choice was forced: no call means it was not honoured

    def reask(self, plan: AttemptRequest, answer: Answer, error: Exception) -> list[ChatMessage]:
        history = history_of(plan)
        call = answer.call
        if call is None:
            told = f"You must call the function {plan.tool_name} with the answer as its arguments. {feedback(error)}"
            return [
                *history,
                ChatMessage("assistant", [TextContent(answer.text or "(no answer)")]),
                ChatMessage("user", told),
            ]
        # The turn goes back whole: Anthropic refuses a tool loop whose thinking blocks (with their
        # signatures) are missing, and every call in it needs a result.
        turn = ChatMessage("assistant", list(answer.turn.contents)) if answer.turn else ChatMessage("assistant", [call])
        results = [
            FunctionResultContent(
                other.call_id,
                feedback(error) if other is call else f"Not run: call only {plan.tool_name}.",
                is_error=True,
                name=other.name,
            )
            for other in turn.function_calls
        ]
        return [*history, turn, ChatMessage("tool", results)]
