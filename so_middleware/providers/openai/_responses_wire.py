"""Responses API wire translation: so_middleware types to `responses.create` kwargs, SDK objects back.

Pure functions (and one small stateful reader for streams): no client, no I/O. SDK objects are
read by attribute, so the official API and compatible servers (llama-server) map the same way.

Request mapping:

| so_middleware                         | Responses API                                                  |
|---------------------------------------|----------------------------------------------------------------|
| `instructions` option + system messages | `instructions` (joined by a blank line)                      |
| user / assistant text                 | `{"type": "message", "role": ..., "content": ...}` input items |
| `FunctionCallContent`                 | `{"type": "function_call", "call_id", "name", "arguments"}`    |
| `FunctionResultContent`               | `{"type": "function_call_output", "call_id", "output"}`        |
| `max_tokens`                          | `max_output_tokens`                                            |
| `FunctionTool`                        | `{"type": "function", "name", "parameters", "strict", "description"}` |
| `response_format`                     | `text.format` (`ResponseFormat.to_responses()`)                |
| `background`                          | `background: true` (see `_background.py`)                      |

`seed` has no Responses field and is not sent; `stop` has none either and raises `UserError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core import (
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    FinishReason,
    FunctionCallContent,
    ProviderResponseError,
    RefusalContent,
    TextContent,
    UserError,
)
from ...wire.common import chosen_model, tools_to_wire
from ...wire.responses import tool_choice_to_wire, tool_to_wire, usage_from
from ...wire.responses_items import message_to_items, output_contents
from .._prefill import prefill_of, strip_echo

__all__ = [
    "build_request",
    "finish_reason",
    "prefill_of",
    "response_to_chat",
    "strip_echo",
    "usage_from",
]

_INCOMPLETE_REASONS = {"max_output_tokens": FinishReason.LENGTH, "content_filter": FinishReason.CONTENT_FILTER}


def build_request(
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
        text_format = options.response_format.to_responses()
        if text_format is not None:
            request["text"] = {"format": text_format}
            if capabilities.response_format_passthrough:
                extra_body["response_format"] = options.response_format.to_chat_completions()
    extra_body.update(options.extra_body or {})  # the caller's own fields win
    if extra_body:
        request["extra_body"] = extra_body
    return request


# ---------------------------------------------------------------- responses


def finish_reason(response: Any, *, called: bool = False, refused: bool = False) -> FinishReason | None:
    """Map `status` and `incomplete_details.reason`; a refusal or a tool call refines `completed`.

    An incomplete response for any other reason (`max_messages`, ...) is reported as `length`:
    its output is cut off either way.
    """
    status = getattr(response, "status", None)
    if status == "incomplete":
        reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
        return _INCOMPLETE_REASONS.get(reason or "", FinishReason.LENGTH)
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


def response_to_chat(response: Any, *, prefill: str = "") -> ChatResponse[Any]:
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
        finish_reason=finish_reason(response, called=called, refused=refused),
        response_id=getattr(response, "id", None),
        model_id=getattr(response, "model", None),
        raw_representation=response,
    )
