"""The Responses API, both directions: the request a client sends (`request_to_wire`) and a server
reads (`request_from_wire`, `options_from_wire`; a server's whole read, `ResponsesRequest.from_wire`,
with the response object it asks for); the answer a client reads (`response_from_wire`;
`responses_events.ResponseWriter` writes it); usage both ways; `incomplete_details.reason` read and
written with one table, `INCOMPLETE_REASONS`. Items are in `responses_items`.

| library                               | Responses API                                                  |
|---------------------------------------|----------------------------------------------------------------|
| `instructions` option + system messages | `instructions` (joined by a blank line)                      |
| messages, calls, results              | input items (`responses_items`)                                |
| `max_tokens`                          | `max_output_tokens`                                            |
| `FunctionTool`                        | `{"type": "function", "name", "parameters", "strict", "description"}` |
| a custom tool                         | `{"type": "custom", "name", ...}`: read as a function of one string `input` |
| `ForcedTool(name)`                    | `{"type": "function" (or "custom"), "name"}`                   |
| `response_format`                     | `text.format` (`text_format_to_wire`: flat)                    |
| `background`                          | `background: true`                                             |
| `UsageDetails`                        | `usage` (`input_tokens`, `output_tokens`, their details, `total_tokens`) |

`seed` has no Responses field and is not sent; `stop` has none either and raises `UserError`.

Streaming events are named once, in `Event` (OpenAI's names) and `SPEC_NAMES` (the Open Responses
spec's, where they differ): the gateway writes them, the adapter's stream reader reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core import (
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    FinishReason,
    ForcedTool,
    FunctionCallContent,
    FunctionTool,
    ProviderResponseError,
    RefusalContent,
    ResponseFormat,
    TextContent,
    UsageDetails,
    UserError,
)
from .chat import response_format_to_wire, responses_format_to_chat
from .common import WireError, chosen_model, field_of, flat_format_to_wire, function_fields, tools_to_wire
from .common import tool_choice_to_wire as _choice
from .prefill import strip_echo
from .responses_items import items_from_wire, items_to_messages, message_to_items, output_contents

__all__ = [
    "CUSTOM_TOOL_PARAMETERS",
    "INCOMPLETE_REASONS",
    "REQUEST_FIELDS",
    "SPEC_NAMES",
    "STATUS_EVENTS",
    "TERMINAL_EVENTS",
    "Event",
    "ResponsesRequest",
    "WireError",
    "echoed_text",
    "echoed_tool",
    "finish_reason_from_wire",
    "incomplete_reason_to_wire",
    "options_from_wire",
    "reported_failure",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "text_format_to_chat",
    "text_format_to_wire",
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


def text_format_to_wire(fmt: ResponseFormat) -> dict[str, Any] | None:
    """`text.format` for `fmt` (None: send nothing): flat, a json_schema's fields beside `type`.

    Example: `text_format_to_wire(ResponseFormat.json_object()) == {"type": "json_object"}`."""
    return flat_format_to_wire(fmt)


# ---------------------------------------------------------------- requests

# `incomplete_details.reason`, read and written: each wire value and the library's reason. An
# incomplete response for a reason not listed here (`max_messages`, ...) is read as `length`.
INCOMPLETE_REASONS = {"max_output_tokens": FinishReason.LENGTH, "content_filter": FinishReason.CONTENT_FILTER}
_WRITTEN_REASONS = {reason: value for value, reason in INCOMPLETE_REASONS.items()}


def request_to_wire(
    messages: list[ChatMessage], options: ChatOptions, *, model: str | None, capabilities: Capabilities
) -> dict[str, Any]:
    """The keyword arguments of `responses.create` for this call (without `stream`).

    With `capabilities.response_format_passthrough` the format is also sent as a Chat
    Completions `response_format` key (in `extra_body`), for servers that ignore `text.format`.
    """
    chosen = chosen_model(options, model)
    if options.stop:
        raise UserError("the Responses API has no stop sequences; drop 'stop' or use the Chat Completions adapter")
    system = [options.instructions] if options.instructions else []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.text)
        else:
            items.extend(message_to_items(message))
    request: dict[str, Any] = {"model": chosen, "input": items}
    if system:
        request["instructions"] = "\n\n".join(system)
    if options.background:
        request["background"] = True
    if options.max_tokens is not None:
        request["max_output_tokens"] = options.max_tokens
    for name in ("temperature", "top_p"):
        value = getattr(options, name)
        if value is not None:
            request[name] = value
    if options.tools:
        request["tools"] = tools_to_wire(options.tools, tool_to_wire)
    if options.tool_choice is not None:
        request["tool_choice"] = tool_choice_to_wire(options.tool_choice)
    extra_body: dict[str, Any] = {}
    if options.response_format is not None:
        text_format = text_format_to_wire(options.response_format)
        if text_format is not None:
            request["text"] = {"format": text_format}
            if capabilities.response_format_passthrough:
                extra_body["response_format"] = response_format_to_wire(options.response_format)
    extra_body.update(options.extra_body or {})  # the caller's own fields win
    if extra_body:
        request["extra_body"] = extra_body
    return request


# The request fields the Responses API defines: read into the options, or used by a server itself
# (`store`, `background`, `previous_response_id`, `metadata`, ...). Any other field is the
# backend's (vLLM's `top_k`, llama.cpp's `min_p`) and goes on in `extra_body`.
REQUEST_FIELDS = frozenset({
    "model", "input", "instructions", "tools", "tool_choice", "temperature", "top_p", "max_output_tokens",
    "parallel_tool_calls", "metadata", "user", "reasoning", "text", "stream", "store", "background",
    "previous_response_id", "include", "truncation", "service_tier", "stream_options", "prompt_cache_key",
    "safety_identifier", "top_logprobs", "max_tool_calls", "conversation", "prompt",
    # What a client says about itself, not to the model: Codex CLI's installation, session and thread
    # ids. Like `metadata`, it stays at the server; a backend may be a third party's. (`user` is the
    # API's field for the provider, and goes on.)
    "client_metadata",
})  # fmt: skip


def request_from_wire(body: Mapping[str, Any]) -> tuple[list[ChatMessage], ChatOptions]:
    """A Responses request body as a server reads it: the messages of its `input` (a string is one
    user message) and `instructions`, and its options (`options_from_wire`). The inverse of
    `request_to_wire`; a field it cannot read is a `WireError` naming it.

    Example: `request_from_wire({"model": "m", "input": "Hi"})`
    gives `([ChatMessage("user", "Hi")], ChatOptions(model="m"))`."""
    value = body.get("input")
    if isinstance(value, str):
        value = [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise WireError("input must be a string or a list of input items", "input")
    return items_to_messages(value), options_from_wire(body)


def options_from_wire(body: Mapping[str, Any], *, default_model: str | None = None) -> ChatOptions:
    """A Responses request's options, in one pass over the body: the model (`default_model` when
    the body names none), instructions, sampling, `max_output_tokens`, `text.format` (forwarded as
    is: `raw`, the flat spelling), tools, tool choice, and the fields for the backend in
    `extra_body` (those the API does not define, and `parallel_tool_calls`, `user`,
    `reasoning.effort`, `text.verbosity`). A field of the wrong type is a `WireError` naming it."""
    return ChatOptions(**_option_fields(body, default_model))


def _option_fields(body: Mapping[str, Any], default_model: str | None) -> dict[str, Any]:
    model = field_of(body, "model", str) or default_model
    if not model:
        raise WireError("model is required", "model")
    options: dict[str, Any] = {"model": model, "instructions": field_of(body, "instructions", str)}
    options["temperature"] = field_of(body, "temperature", (int, float))
    options["top_p"] = field_of(body, "top_p", (int, float))
    options["max_tokens"] = field_of(body, "max_output_tokens", int)
    text = field_of(body, "text", dict) or {}
    if text_format_to_chat(text.get("format")) is not None:  # checked, and `text` sends nothing
        fmt = text["format"]
        schema = fmt.get("schema") if isinstance(fmt.get("schema"), Mapping) else None
        options["response_format"] = ResponseFormat(fmt["type"], name=fmt.get("name"), schema=schema, raw=fmt)
    tools = field_of(body, "tools", list)
    if tools:
        options["tools"] = [tool_from_wire(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    if body.get("tool_choice") is not None:
        options["tool_choice"] = tool_choice_from_wire(body["tool_choice"])
    options["extra_body"] = _extra_body(body, text)
    return {k: v for k, v in options.items() if v is not None}


@dataclass(frozen=True)
class ResponsesRequest:
    """A Responses request as a server reads it, in one call (`ResponsesRequest.from_wire`): the
    options for the chat call, the input items (an `item_reference` still to resolve), the fields
    that are the server's own (`stream`, `store`, `background`, `previous_response_id`), and the
    response object it asks for before the server names it (`frame`: every field the Open
    Responses schema requires, the request's settings echoed, `id`, `created_at` and `status` null).

    Example:
        request = ResponsesRequest.from_wire({"model": "m", "input": "Hi", "store": False})
        assert request.options == ChatOptions(model="m") and not request.store
    """

    options: ChatOptions
    items: list[dict[str, Any]]
    frame: dict[str, Any]
    stream: bool = False
    store: bool = True
    background: bool = False
    previous_response_id: str | None = None

    @property
    def model(self) -> str:
        """The model asked for (the body's, or the default `from_wire` was given)."""
        return str(self.options.model)

    @classmethod
    def from_wire(cls, body: Mapping[str, Any], *, default_model: str | None = None) -> ResponsesRequest:
        """Read and check a whole request body: the options (`options_from_wire`), `input`
        (`responses_items.items_from_wire`) and the server's fields; the first field that cannot be
        read is a `WireError` naming it, before any model call."""
        fields = _option_fields(body, default_model)
        items = items_from_wire(body.get("input"))
        stream, store = bool(field_of(body, "stream", bool)), field_of(body, "store", bool) is not False
        background, previous = bool(field_of(body, "background", bool)), field_of(body, "previous_response_id", str)
        frame = _frame(body, fields["model"], background=background, store=store, previous_response_id=previous)
        return cls(ChatOptions(**fields), items, frame, stream, store, background, previous)


def _frame(
    body: Mapping[str, Any], model: str, *, background: bool, store: bool, previous_response_id: str | None
) -> dict[str, Any]:
    """The response object before any output (see `ResponsesRequest.frame`): the API's defaults
    where the request set none, `text.format` as received."""
    return {
        "id": None,
        "object": "response",
        "created_at": None,
        "completed_at": None,
        "status": None,
        "background": background,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "metadata": body.get("metadata") or {},
        "model": model,
        "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": previous_response_id,
        "prompt_cache_key": body.get("prompt_cache_key"),
        "reasoning": _reasoning(body.get("reasoning")),
        "safety_identifier": body.get("safety_identifier"),
        "service_tier": body.get("service_tier") or "default",
        "store": store,
        "temperature": _number(body.get("temperature"), 1.0),
        "top_p": _number(body.get("top_p"), 1.0),
        "presence_penalty": _number(body.get("presence_penalty"), 0.0),
        "frequency_penalty": _number(body.get("frequency_penalty"), 0.0),
        "top_logprobs": body.get("top_logprobs") if isinstance(body.get("top_logprobs"), int) else 0,
        "text": echoed_text(body.get("text")),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": [echoed_tool(tool) for tool in body.get("tools") or []],
        "truncation": body.get("truncation", "disabled"),
        "usage": None,
        "user": body.get("user"),
    }


def _number(value: Any, default: float) -> float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _reasoning(value: Any) -> dict[str, Any] | None:
    """`reasoning` as the schema has it: both `effort` and `summary` keys (null when not asked)."""
    if not isinstance(value, dict):
        return None
    return {"effort": value.get("effort"), "summary": value.get("summary"), **value}


def _extra_body(body: Mapping[str, Any], text: Mapping[str, Any]) -> dict[str, Any] | None:
    extra = {k: v for k, v in body.items() if k not in REQUEST_FIELDS}
    if field_of(body, "parallel_tool_calls", bool) is not None and body.get("tools"):
        extra["parallel_tool_calls"] = body["parallel_tool_calls"]
    if field_of(body, "user", str) is not None:
        extra["user"] = body["user"]
    reasoning = field_of(body, "reasoning", dict)
    if reasoning and reasoning.get("effort") is not None:
        extra["reasoning_effort"] = reasoning["effort"]
    if text.get("verbosity") is not None:
        extra["verbosity"] = text["verbosity"]
    field_of(body, "metadata", dict)
    return extra or None


# ---------------------------------------------------------------- responses


def incomplete_reason_to_wire(reason: FinishReason | None) -> str | None:
    """`incomplete_details.reason` for a finish reason that leaves a response incomplete (None:
    the response is complete): `INCOMPLETE_REASONS` read backwards."""
    return _WRITTEN_REASONS.get(reason) if reason is not None else None


def finish_reason_from_wire(response: Any, *, called: bool = False, refused: bool = False) -> FinishReason | None:
    """Map `status` and `incomplete_details.reason`; a refusal or a tool call refines `completed`.

    An incomplete response for any other reason (`max_messages`, ...) is reported as `length`:
    its output is cut off either way.
    """
    status = getattr(response, "status", None)
    if status == "incomplete":
        reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
        return INCOMPLETE_REASONS.get(reason or "", FinishReason.LENGTH)
    if status == "completed":
        if refused:
            return FinishReason.REFUSAL
        return FinishReason.TOOL_CALLS if called else FinishReason.STOP
    return None


def reported_failure(response: Any) -> ProviderResponseError | None:
    """The typed error of a `failed`/`cancelled` response (None when it did not fail)."""

    def field(name: str) -> Any:  # an event of a type the SDK does not know carries a plain dict
        return response.get(name) if isinstance(response, Mapping) else getattr(response, name, None)

    status = field("status")
    if status not in ("failed", "cancelled"):
        return None
    error = field("error")
    code = getattr(error, "code", None) or (error.get("code") if isinstance(error, Mapping) else None)
    code = code if isinstance(code, str) else "cancelled" if status == "cancelled" else None
    return ProviderResponseError(f"the response {status}: {code or 'no error code given'}", code=code, reported=True)


def response_from_wire(response: Any, *, prefill: str = "") -> ChatResponse[Any]:
    """Map a `Response` to a `ChatResponse`; `prefill` is stripped from the text when echoed.

    A `failed` or `cancelled` response, or one without an `output` list, raises
    `ProviderResponseError`.
    """
    failure = reported_failure(response)
    if failure is not None:
        raise failure
    if not isinstance(getattr(response, "output", None), list):
        raise ProviderResponseError("the server's answer could not be read: a response without an output list")
    contents = output_contents(response.output)
    if prefill:
        first = next((i for i, c in enumerate(contents) if isinstance(c, TextContent)), None)
        if first is not None:
            contents[first] = TextContent(strip_echo(contents[first].text, prefill))  # type: ignore[union-attr]
    called = any(isinstance(c, FunctionCallContent) for c in contents)
    refused = any(isinstance(c, RefusalContent) for c in contents)
    return ChatResponse(
        ChatMessage("assistant", contents, raw_representation=response),
        usage=usage_from(getattr(response, "usage", None)),
        finish_reason=finish_reason_from_wire(response, called=called, refused=refused),
        response_id=getattr(response, "id", None),
        model_id=getattr(response, "model", None),
        raw_representation=response,
    )


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
