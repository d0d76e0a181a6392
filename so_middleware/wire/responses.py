"""The Responses API's request fields, both directions: what a client sends (the adapter writes it
from the library's types) and what a server reads (the gateway turns it back into them); usage as
a client reads it and as a server writes it. Items are in `responses_items`.

| library                  | Responses API                                                     |
|--------------------------|-------------------------------------------------------------------|
| `FunctionTool`           | `{"type": "function", "name", "parameters", "strict", "description"}` |
| a custom tool            | `{"type": "custom", "name", ...}`: read as a function of one string `input` |
| `ForcedTool(name)`       | `{"type": "function" (or "custom"), "name"}`                      |
| `UsageDetails`           | `usage` (`input_tokens`, `output_tokens`, their details, `total_tokens`) |
| Chat `response_format`   | `text.format` (json_schema's fields flat instead of nested)       |

Streaming events are named once, in `Event` (OpenAI's names) and `SPEC_NAMES` (the Open Responses
spec's, where they differ): the gateway writes them, the adapter's stream reader reads them.
"""

from __future__ import annotations

from typing import Any

from ..core import ForcedTool, FunctionTool, UsageDetails, UserError, responses_format_to_chat
from .common import function_fields
from .common import tool_choice_to_wire as _choice

__all__ = [
    "CUSTOM_TOOL_PARAMETERS",
    "SPEC_NAMES",
    "STATUS_EVENTS",
    "TERMINAL_EVENTS",
    "Event",
    "WireError",
    "echoed_text",
    "echoed_tool",
    "text_format_to_chat",
    "tool_choice_from_wire",
    "tool_choice_to_wire",
    "tool_from_wire",
    "tool_to_wire",
    "usage_from",
    "usage_to_wire",
]

# A custom tool (free-form text input) offered to a backend that knows only functions: a function
# taking that text as its one parameter; the call goes back as a `custom_tool_call` item.
CUSTOM_TOOL_PARAMETERS = {
    "type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"], "additionalProperties": False,
}  # fmt: skip


class WireError(UserError):
    """A request field a server cannot read; `param` names it (`tools[0].type`)."""

    def __init__(self, message: str, param: str | None) -> None:
        super().__init__(message)
        self.param = param


# ---------------------------------------------------------------- tools


def tool_to_wire(tool: FunctionTool) -> dict[str, Any]:
    """A function tool as a client sends it. `strict` is always said: the API treats a missing one
    as true, which rejects non-strict schemas."""
    return {"type": "function", **function_fields(tool), "strict": bool(tool.strict)}


def tool_from_wire(tool: Any, where: str) -> FunctionTool:
    """A `tools[i]` entry as a server reads it: a function tool, or a custom one as a function of
    one string parameter `input`. Any other type raises `WireError`."""
    if isinstance(tool, dict) and tool.get("type") == "custom" and isinstance(tool.get("name"), str):
        return FunctionTool(tool["name"], CUSTOM_TOOL_PARAMETERS, tool.get("description"))
    if not isinstance(tool, dict) or tool.get("type") != "function":
        raise WireError(f"{where}: only function and custom tools can be served by a Chat Completions backend",
                        f"{where}.type")  # fmt: skip
    name, parameters = tool.get("name"), tool.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(name, str) or not isinstance(parameters, dict):
        raise WireError(f"{where} needs a string name and an object parameters", f"{where}.name")
    return FunctionTool(name, parameters, tool.get("description"), tool.get("strict"))


def echoed_tool(tool: Any) -> Any:
    """A tool as a response echoes it: a function tool with `description`, `parameters` and
    `strict` always present (null when not given), as the Open Responses schema requires."""
    if not (isinstance(tool, dict) and tool.get("type") == "function"):
        return tool
    echoed = dict(tool)
    for name in ("description", "parameters", "strict"):
        echoed.setdefault(name, None)
    return echoed


def tool_choice_to_wire(choice: str | ForcedTool) -> Any:
    """`tool_choice` as a client sends it."""
    return _choice(choice, lambda name: {"type": "function", "name": name})


def tool_choice_from_wire(value: Any) -> str | ForcedTool:
    """`tool_choice` as a server reads it (a forced custom tool is a forced function)."""
    if value in ("auto", "none", "required"):
        return str(value)
    if isinstance(value, dict) and value.get("type") in ("function", "custom") and isinstance(value.get("name"), str):
        return ForcedTool(value["name"])
    raise WireError(
        "tool_choice must be 'auto', 'none', 'required' or {'type': 'function' or 'custom', 'name': ...}",
        "tool_choice",
    )


# ---------------------------------------------------------------- text.format


def text_format_to_chat(text_format: Any) -> dict[str, Any] | None:
    """The Chat Completions `response_format` for a Responses `text.format`, as a server reads it:
    the library's one translation (`responses_format_to_chat`: forwarded as is, a json_schema's
    fields nested under `json_schema`, every key and its order kept; `text` or none gives None),
    a format it cannot read a `WireError` naming `text.format.type`.
    """
    try:
        return responses_format_to_chat(text_format)
    except UserError as error:
        raise WireError(str(error), "text.format.type") from None


def echoed_text(text: dict[str, Any] | None) -> dict[str, Any]:
    """`text` as a response echoes it: as received, with a `format` (`text` by default) and, for a
    json_schema format, the keys the schema requires (`description`, `strict`: null and false
    when the request left them out)."""
    echoed = dict(text) if text else {}
    fmt = echoed.setdefault("format", {"type": "text"})
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        echoed["format"] = {**fmt, "description": fmt.get("description"), "strict": fmt.get("strict", False)}
    return echoed


# ---------------------------------------------------------------- streaming events


class Event:
    """The `type` of each Responses streaming event, as OpenAI spells it: what its SDKs, Codex CLI
    and the AI SDK read (the Node SDK throws on an event it does not know)."""

    CREATED = "response.created"
    IN_PROGRESS = "response.in_progress"
    COMPLETED = "response.completed"
    INCOMPLETE = "response.incomplete"
    FAILED = "response.failed"
    CANCELLED = "response.cancelled"
    ERROR = "error"
    OUTPUT_ITEM_ADDED = "response.output_item.added"
    OUTPUT_ITEM_DONE = "response.output_item.done"
    CONTENT_PART_ADDED = "response.content_part.added"
    CONTENT_PART_DONE = "response.content_part.done"
    OUTPUT_TEXT_DELTA = "response.output_text.delta"
    OUTPUT_TEXT_DONE = "response.output_text.done"
    REFUSAL_DELTA = "response.refusal.delta"
    REFUSAL_DONE = "response.refusal.done"
    REASONING_TEXT_DELTA = "response.reasoning_text.delta"
    REASONING_TEXT_DONE = "response.reasoning_text.done"
    REASONING_SUMMARY_TEXT_DELTA = "response.reasoning_summary_text.delta"
    FUNCTION_CALL_ARGUMENTS_DELTA = "response.function_call_arguments.delta"
    FUNCTION_CALL_ARGUMENTS_DONE = "response.function_call_arguments.done"
    CUSTOM_TOOL_CALL_INPUT_DELTA = "response.custom_tool_call_input.delta"
    CUSTOM_TOOL_CALL_INPUT_DONE = "response.custom_tool_call_input.done"


# The event that reports each final status of a response.
STATUS_EVENTS = {
    "completed": Event.COMPLETED, "incomplete": Event.INCOMPLETE, "failed": Event.FAILED, "cancelled": Event.CANCELLED,
}  # fmt: skip
# The events that end a stream: a final status, or an error.
TERMINAL_EVENTS = frozenset({*STATUS_EVENTS.values(), Event.ERROR})
# The Open Responses spec's names where they differ from OpenAI's (reasoning deltas).
SPEC_NAMES = {
    Event.REASONING_TEXT_DELTA: "response.reasoning.delta",
    Event.REASONING_TEXT_DONE: "response.reasoning.done",
}


# ---------------------------------------------------------------- usage


def usage_from(usage: Any) -> UsageDetails | None:
    """A `ResponseUsage` (or None) as a client reads it."""
    if usage is None:
        return None
    return UsageDetails(
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        total_tokens=getattr(usage, "total_tokens", None),
        cached_input_tokens=getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", None),
        reasoning_tokens=getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", None),
        cache_creation_input_tokens=getattr(getattr(usage, "input_tokens_details", None), "cache_write_tokens", None),
    )


def usage_to_wire(usage: UsageDetails | None) -> dict[str, Any]:
    """The `usage` object a server answers (zeros where the backend reported nothing)."""
    usage = usage or UsageDetails()
    inputs, outputs = usage.input_tokens or 0, usage.output_tokens or 0
    return {
        "input_tokens": inputs,
        "input_tokens_details": {
            "cached_tokens": usage.cached_input_tokens or 0,
            "cache_write_tokens": usage.cache_creation_input_tokens or 0,
        },
        "output_tokens": outputs,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
        "total_tokens": usage.total_tokens if usage.total_tokens is not None else inputs + outputs,
    }
