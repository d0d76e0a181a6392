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

import base64
from collections.abc import Mapping
from typing import Any

from ...core import (
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    Content,
    DataContent,
    FinishReason,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    TextContent,
    UsageDetails,
    UserError,
)
from .._prefill import prefill_of, strip_echo

__all__ = [
    "build_request",
    "finish_reason",
    "prefill_of",
    "response_to_chat",
    "strip_echo",
    "usage_from",
]

TERMINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")

_INCOMPLETE_REASONS = {"max_output_tokens": FinishReason.LENGTH, "content_filter": FinishReason.CONTENT_FILTER}


def build_request(
    messages: list[ChatMessage], options: ChatOptions, *, model: str | None, capabilities: Capabilities
) -> dict[str, Any]:
    """The keyword arguments of `responses.create` for this call (without `stream`).

    With `capabilities.response_format_passthrough` the format is also sent as a Chat
    Completions `response_format` key (in `extra_body`), for servers that ignore `text.format`.
    """
    chosen_model = options.model or model
    if not chosen_model:
        raise UserError("no model given: pass model=... to the adapter or options={'model': ...}")
    if options.stop:
        raise UserError("the Responses API has no stop sequences; drop 'stop' or use the Chat Completions adapter")
    system = [options.instructions] if options.instructions else []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.text)
        else:
            items.extend(_message_to_items(message))
    request: dict[str, Any] = {"model": chosen_model, "input": items}
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
        request["tools"] = [_tool_to_wire(tool) for tool in options.tools]
    if options.tool_choice is not None:
        request["tool_choice"] = (
            {"type": "function", "name": options.tool_choice.name}
            if isinstance(options.tool_choice, ForcedTool)
            else options.tool_choice
        )
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


def _tool_to_wire(tool: FunctionTool | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(tool, Mapping):
        return dict(tool)
    # The API treats a missing `strict` as true, which rejects non-strict schemas: say it.
    wire: dict[str, Any] = {
        "type": "function",
        "name": tool.name,
        "parameters": dict(tool.parameters),
        "strict": bool(tool.strict),
    }
    if tool.description:
        wire["description"] = tool.description
    return wire


def _message_to_items(message: ChatMessage) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    parts: list[Content] = []

    def flush() -> None:
        if parts:
            items.append(_message_item(message.role, list(parts)))
            parts.clear()

    for content in message.contents:
        if isinstance(content, FunctionCallContent):
            flush()
            items.append(
                {
                    "type": "function_call",
                    "call_id": content.call_id,
                    "name": content.name,
                    "arguments": content.arguments or "{}",
                }
            )
        elif isinstance(content, FunctionResultContent):
            flush()
            output = ("Error: " if content.is_error else "") + content.result_text
            items.append({"type": "function_call_output", "call_id": content.call_id, "output": output})
        elif isinstance(content, ReasoningContent):
            continue  # reasoning items need server ids to go back; the text alone is not accepted
        else:
            parts.append(content)
    flush()
    return items


def _message_item(role: str, parts: list[Content]) -> dict[str, Any]:
    role = "user" if role == "tool" else role
    if all(isinstance(p, (TextContent, RefusalContent)) for p in parts):
        text = "".join(p.text if isinstance(p, TextContent) else p.refusal for p in parts)  # type: ignore[union-attr]
        # "type" is optional for the API but llama-server needs it to tell a message from other items.
        return {"type": "message", "role": role, "content": text}
    if role == "assistant":
        raise UserError("an assistant message on the Responses API can carry text only, not data")
    return {"type": "message", "role": role, "content": [_part_to_wire(p) for p in parts]}


def _part_to_wire(content: Content) -> dict[str, Any]:
    if isinstance(content, TextContent):
        return {"type": "input_text", "text": content.text}
    if isinstance(content, DataContent):
        if content.media_type.startswith("image/"):
            data = content.data
            url = data if isinstance(data, str) and data.startswith(("http", "data:")) else _data_uri(content)
            return {"type": "input_image", "image_url": url, "detail": "auto"}
        if content.media_type == "application/json" or content.media_type.startswith("text/"):
            text = content.data if isinstance(content.data, str) else content.data.decode("utf-8", "replace")
            return {"type": "input_text", "text": text}
        if content.media_type == "application/pdf":
            return {"type": "input_file", "filename": "document.pdf", "file_data": _data_uri(content)}
    raise UserError(f"the Responses API cannot carry {type(content).__name__} ({getattr(content, 'media_type', '')})")


def _data_uri(content: DataContent) -> str:
    raw = content.data.encode() if isinstance(content.data, str) else content.data
    return f"data:{content.media_type};base64,{base64.b64encode(raw).decode()}"


# ---------------------------------------------------------------- responses


def usage_from(usage: Any) -> UsageDetails | None:
    """Map a `ResponseUsage` (or None)."""
    if usage is None:
        return None
    return UsageDetails(
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        total_tokens=getattr(usage, "total_tokens", None),
        cached_input_tokens=getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", None),
        reasoning_tokens=getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", None),
    )


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


def failure_of(response: Any) -> ProviderResponseError | None:
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


def output_contents(output: Any) -> list[Content]:
    """The contents of a response's `output` items, in order."""
    contents: list[Content] = []
    for item in output or []:
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "output_text" and part.text:
                    contents.append(TextContent(part.text))
                elif getattr(part, "type", None) == "refusal":
                    contents.append(RefusalContent(part.refusal))
        elif kind == "function_call":
            contents.append(FunctionCallContent(item.call_id, item.name, item.arguments or ""))
        elif kind == "reasoning":
            text = "".join(getattr(s, "text", "") for s in (getattr(item, "summary", None) or []))
            text = text or "".join(getattr(c, "text", "") for c in (getattr(item, "content", None) or []))
            if text:
                contents.append(ReasoningContent(text))
    return contents


def response_to_chat(response: Any, *, prefill: str = "") -> ChatResponse[Any]:
    """Map a `Response` to a `ChatResponse`; `prefill` is stripped from the text when echoed.

    A `failed` or `cancelled` response, or one without an `output` list, raises
    `ProviderResponseError`.
    """
    failure = failure_of(response)
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
