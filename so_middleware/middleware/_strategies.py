"""How a type reaches a model: the four strategies, as pure request planning and answer reading.

| strategy      | the request                                                         | the answer            |
|---------------|---------------------------------------------------------------------|-----------------------|
| `native`      | `response_format` json_schema (strict where the profile allows)     | the text              |
| `tool`        | one function tool with the schema as parameters, forced when allowed | the call's arguments  |
| `json_object` | JSON mode plus the schema in the instructions                       | the text, leniently   |
| `prompted`    | the schema in the instructions, and a JSON prefill where supported  | prefill + text, leniently |

`mode="auto"` tries them in that order, keeping those the capability profile allows; a later
strategy is used when an answer shows the backend ignored the constraint (no JSON at all).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..core import (
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ResponseFormat,
    TextContent,
    UserError,
)
from ..schema import OutputSchema, SchemaProfile, shape_hint

__all__ = ["MODES", "Mode", "Plan", "Strategy", "answer_of", "plan_request", "reask_messages", "strategies_for"]

Strategy = Literal["native", "tool", "json_object", "prompted"]
Mode = Literal["auto", "native", "tool", "json_object", "prompted"]
MODES: tuple[Mode, ...] = ("auto", "native", "tool", "json_object", "prompted")
_ORDER: tuple[Strategy, ...] = ("native", "tool", "json_object", "prompted")


def strategies_for(mode: Mode, capabilities: Capabilities) -> list[Strategy]:
    """The strategies to use, in order: the one asked for, or every one the profile allows."""
    if mode != "auto":
        return [mode]
    allowed = {
        "native": capabilities.native_json_schema,
        "tool": capabilities.tools and capabilities.forced_tool_choice,
        "json_object": capabilities.json_object,
        "prompted": True,
    }
    return [strategy for strategy in _ORDER if allowed[strategy]]


@dataclass(frozen=True)
class Plan:
    """One attempt's request: what to send, and how to read the answer back."""

    strategy: Strategy
    messages: list[ChatMessage]
    options: ChatOptions
    prefill: str = ""
    tool_name: str | None = None


def _instructions(options: ChatOptions, schema: OutputSchema, profile: SchemaProfile) -> str:
    # A skeleton, not the JSON schema: models prompted with a schema often copy it back
    # (SmolLM2 did on 2 of 3 extractions; with the skeleton, on none). What the skeleton cannot
    # show is checked by validation and named in the re-ask.
    asked = (
        "Respond with only a JSON object shaped like this, filled in with values taken from the "
        f"conversation (no prose, no code fences):\n{shape_hint(schema.json_schema(profile))}"
    )
    return f"{options.instructions}\n\n{asked}" if options.instructions else asked


def _prefill(schema: OutputSchema, profile: SchemaProfile) -> str:
    # A JSON prefill that starts the first value: small models that ignore instructions (and
    # copy the schema back) still continue a started object. A string value is opened with its
    # quote, so the model writes a value rather than another object.
    properties = schema.json_schema(profile).get("properties") or {}
    first = next(iter(properties), None)
    if not isinstance(first, str):
        return "{"
    opening = '{"' + first + '": '
    return opening + '"' if properties[first].get("type") == "string" else opening


def plan_request(
    strategy: Strategy,
    schema: OutputSchema,
    messages: list[ChatMessage],
    options: ChatOptions,
    capabilities: Capabilities,
    *,
    description: str | None = None,
) -> Plan:
    """The request for one attempt with `strategy` (the caller's messages/options are not changed)."""
    profile = capabilities.schema_profile
    name = schema.wire_name(profile)
    if strategy == "native":
        strict = True if profile == "openai-strict" and schema.is_strict_json_schema() else None
        if profile == "openai-strict" and not schema.is_strict_json_schema():
            strict = False
        fmt = ResponseFormat.json_schema(schema.json_schema(profile), name=name, strict=strict, description=description)
        return Plan(strategy, list(messages), options.replace(response_format=fmt))
    if strategy == "tool":
        tool = FunctionTool(
            name,
            schema.json_schema(profile),
            description or f"Return the final answer as {schema.name()}.",
            strict=True if capabilities.strict_tools and schema.is_strict_json_schema() else None,
        )
        choice = ForcedTool(name) if capabilities.forced_tool_choice else "required"
        tools = [*(options.tools or []), tool]
        return Plan(strategy, list(messages), options.replace(tools=tools, tool_choice=choice), tool_name=name)
    if strategy == "json_object":
        changed = options.replace(
            response_format=ResponseFormat.json_object(), instructions=_instructions(options, schema, profile)
        )
        return Plan(strategy, list(messages), changed)
    if strategy == "prompted":
        changed = options.replace(instructions=_instructions(options, schema, profile))
        if capabilities.assistant_prefill:
            prefill = _prefill(schema, profile)
            return Plan(strategy, [*messages, ChatMessage("assistant", prefill)], changed, prefill=prefill)
        return Plan(strategy, list(messages), changed)
    raise UserError(f"unknown structured-output strategy {strategy!r}; expected one of {', '.join(_ORDER)}")


def answer_of(plan: Plan, response: ChatResponse[Any]) -> tuple[str, FunctionCallContent | None]:
    """The raw JSON text of an answer (and the tool call it came from, in tool mode)."""
    if plan.strategy == "tool":
        for message in reversed(response.messages):
            for call in message.function_calls:
                if call.name == plan.tool_name:
                    return call.arguments, call
        return response.text, None
    return plan.prefill + response.text, None


def reask_messages(
    plan: Plan, answer: str, call: FunctionCallContent | None, error: Exception, tool_name: str | None
) -> list[ChatMessage]:
    """The conversation for the next attempt: the failed answer, then the validation errors.

    In tool mode the errors go back as an error tool result paired with the call (every
    provider needs a result for every call); otherwise as a user message.
    """
    history = [m for m in plan.messages if not (plan.prefill and m is plan.messages[-1])]
    feedback = (
        f"That answer is not valid: {error}\nReply again with only the corrected JSON, following the schema exactly."
    )
    if call is not None:
        return [
            *history,
            ChatMessage("assistant", [call]),
            ChatMessage("tool", [FunctionResultContent(call.call_id, feedback, is_error=True, name=call.name)]),
        ]
    if plan.strategy == "tool" and tool_name:
        feedback = f"You must call the function {tool_name} with the answer as its arguments. {feedback}"
    return [*history, ChatMessage("assistant", [TextContent(answer or "(no answer)")]), ChatMessage("user", feedback)]
