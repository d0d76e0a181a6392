"""Anthropic Messages, both directions: the request a client sends (`request_to_wire`), the
message it reads (`response_from_wire`) and its stream events (`StreamReader`), and the message a
server writes (`response_to_wire`). One table, `STOP_REASONS`, reads and writes `stop_reason`.

Pure functions (and one small stateful reader for streams): no client, no I/O.

Request mapping:

| so_middleware                          | Messages API                                                        |
|----------------------------------------|---------------------------------------------------------------------|
| `instructions` option + system messages | `system` (joined by a blank line)                                  |
| text / data contents                   | `text` / `image` / `document` blocks                                |
| `FunctionCallContent`                  | `{"type": "tool_use", "id", "name", "input"}` in the assistant turn |
| `FunctionResultContent`                | `{"type": "tool_result", "tool_use_id", "content", "is_error"}` in a user turn |
| `ReasoningContent` with a signature    | `{"type": "thinking", "thinking", "signature"}`                     |
| `max_tokens`                           | `max_tokens` (the adapter's default when unset: the API requires it) |
| `stop`                                 | `stop_sequences`                                                    |
| `temperature`, `top_p`                 | the same names, in `extra_body` (the SDK has no keyword for them)   |
| `FunctionTool`                         | `{"name", "description", "input_schema", "strict"}`                 |
| `tool_choice`                          | `{"type": "auto" / "any" / "tool" / "none"}`; a forced choice becomes `auto` when thinking is on |
| `response_format` json_schema          | `output_config.format` (`output_format_to_wire`)                   |
| `response_format` json_object          | nothing: not expressible on this API (the adapter warns)           |

Consecutive turns of the same role are merged (tool results of several tool messages go back in
one user turn, right after the assistant turn that called them). `seed` is not part of the
Messages API and is not sent.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    DataContent,
    FinishReason,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    HostedFileContent,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    ResponseFormat,
    TextContent,
    UsageDetails,
    UserError,
    copy_json,
)
from .common import JSONView, WireError, chosen_model, field_of, function_fields, tool_choice_to_wire, tools_to_wire
from .prefill import EchoFilter, strip_echo

__all__ = [
    "STOP_REASONS",
    "StreamReader",
    "finish_reason_from_wire",
    "finish_reason_to_wire",
    "output_format_to_wire",
    "refusal_of",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "usage_from",
    "usage_to_wire",
]

# `stop_reason`, read and written: each wire value and the library's reason; a reason is written
# as the first value listed for it.
STOP_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "pause_turn": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.REFUSAL,
}
_WRITTEN_REASONS = {reason: value for value, reason in reversed(STOP_REASONS.items())}
_TOOL_CHOICES = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}


def request_to_wire(
    messages: list[ChatMessage], options: ChatOptions, *, model: str | None, max_tokens: int
) -> dict[str, Any]:
    """The keyword arguments of `messages.create` for this call (without `stream`)."""
    chosen = chosen_model(options, model)
    system = [options.instructions] if options.instructions else []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.text)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    request: dict[str, Any] = {
        "model": chosen,
        "max_tokens": options.max_tokens if options.max_tokens is not None else max_tokens,
        "messages": [_compact(turn) for turn in turns],
    }
    if system:
        request["system"] = "\n\n".join(system)
    if options.stop:
        request["stop_sequences"] = list(options.stop)
    extra_body: dict[str, Any] = {}
    for name in ("temperature", "top_p"):
        value = getattr(options, name)
        if value is not None:
            extra_body[name] = value
    extra_body.update(options.extra_body or {})  # the caller's own fields win
    if options.tools:
        request["tools"] = tools_to_wire(options.tools, _tool_to_wire)
    if options.tool_choice is not None:
        choice = tool_choice_to_wire(options.tool_choice, lambda name: {"type": "tool", "name": name})
        choice = dict(_TOOL_CHOICES[choice]) if isinstance(choice, str) else choice
        if choice["type"] in ("any", "tool") and _thinking_on(extra_body):
            choice = {"type": "auto"}  # a forced tool is refused together with extended thinking
        request["tool_choice"] = choice
    output_format = output_format_to_wire(options.response_format) if options.response_format is not None else None
    if output_format is not None:
        output_config = dict(extra_body.pop("output_config", None) or {})
        request["output_config"] = {**output_config, "format": output_format}
    if extra_body:
        request["extra_body"] = extra_body
    return request


# The request fields `request_from_wire` reads into the options; any other goes to `extra_body`.
_READ_FIELDS = frozenset({
    "model", "system", "messages", "max_tokens", "stop_sequences", "temperature", "top_p", "tools", "tool_choice",
})  # fmt: skip
_CHOICES_READ = {"auto": "auto", "any": "required", "none": "none"}


def request_from_wire(body: Mapping[str, Any]) -> tuple[list[ChatMessage], ChatOptions]:
    """A Messages request body as a server reads it: its turns as messages (text, tool_use,
    tool_result and signed thinking blocks; `system` as the instructions) and its options (other
    fields in `extra_body`, `output_config`'s other keys too). The inverse of `request_to_wire`; an
    image or document block, or a field of the wrong type, is a `WireError` naming it.

    Example: `request_from_wire({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Hi"}]})`
    gives `([ChatMessage("user", "Hi")], ChatOptions(model="m", max_tokens=9))`."""
    turns = field_of(body, "messages", list) or []
    messages = [_turn_from_wire(turn, f"messages[{i}]") for i, turn in enumerate(turns)]
    options: dict[str, Any] = {"model": field_of(body, "model", str), "instructions": field_of(body, "system", str)}
    options["max_tokens"] = field_of(body, "max_tokens", int)
    options["stop"] = field_of(body, "stop_sequences", list)
    options["temperature"] = field_of(body, "temperature", (int, float))
    options["top_p"] = field_of(body, "top_p", (int, float))
    tools = field_of(body, "tools", list)
    if tools:
        options["tools"] = [_tool_from_wire(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    choice = field_of(body, "tool_choice", dict)
    if choice is not None:
        named = choice.get("name")
        options["tool_choice"] = (
            ForcedTool(named) if choice.get("type") == "tool" else _CHOICES_READ.get(choice.get("type"))
        )
        if options["tool_choice"] is None or (choice.get("type") == "tool" and not isinstance(named, str)):
            raise WireError("tool_choice must be auto, any, none or a tool by name", "tool_choice.type")
    extra = {k: v for k, v in body.items() if k not in _READ_FIELDS}
    config = dict(field_of(extra, "output_config", dict) or {})
    fmt = config.pop("format", None)
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), Mapping):
        options["response_format"] = ResponseFormat.json_schema(fmt["schema"])
        extra.pop("output_config")
        if config:
            extra["output_config"] = config
    options["extra_body"] = extra or None
    return messages, ChatOptions(**{k: v for k, v in options.items() if v is not None})


def _tool_from_wire(tool: Any, where: str) -> FunctionTool:
    if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
        raise WireError(f"{where} must be a tool with a string name", f"{where}.name")
    schema = tool.get("input_schema") or {"type": "object", "properties": {}}
    return FunctionTool(tool["name"], schema, tool.get("description"), tool.get("strict"))


def _turn_from_wire(turn: Any, where: str) -> ChatMessage:
    if not isinstance(turn, Mapping) or turn.get("role") not in ("user", "assistant"):
        raise WireError(f"{where} must be a turn of role user or assistant", f"{where}.role")
    content = turn.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        raise WireError(f"{where}.content must be a string or a list of blocks", f"{where}.content")
    contents: list[Content] = []
    for i, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            contents.append(TextContent(block["text"]))
        elif kind == "tool_use":
            contents.append(FunctionCallContent(block["id"], block["name"], json.dumps(block.get("input") or {})))
        elif kind == "tool_result":
            result = block.get("content")
            contents.append(FunctionResultContent(block["tool_use_id"], result, bool(block.get("is_error"))))
        elif kind == "thinking":
            contents.append(ReasoningContent(block["thinking"], block.get("signature")))
        else:
            raise WireError(f"{where}.content[{i}]: a {kind} block is not read", f"{where}.content[{i}].type")
    return ChatMessage(turn["role"], contents)


def output_format_to_wire(fmt: ResponseFormat) -> dict[str, Any] | None:
    """`output_config.format` for `fmt` (None: send nothing, or not expressible here): a json_schema
    format as `{"type": "json_schema", "schema": ...}` (a copy of the schema); a format forwarded
    as is (`raw`) of a type this API has no form for, as given."""
    if fmt.raw is not None and fmt.type != "json_schema":
        forwarded: dict[str, Any] = copy_json(dict(fmt.raw))
        return forwarded
    if fmt.type != "json_schema" or fmt.schema is None:
        return None
    return {"type": "json_schema", "schema": copy_json(dict(fmt.schema))}


def _thinking_on(extra_body: Mapping[str, Any]) -> bool:
    thinking = extra_body.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")


def _compact(turn: dict[str, Any]) -> dict[str, Any]:
    blocks = turn["content"]
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return {"role": turn["role"], "content": blocks[0]["text"]}
    return turn


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            blocks.append({"type": "text", "text": content.text})
        elif isinstance(content, RefusalContent):
            blocks.append({"type": "text", "text": content.refusal})
        elif isinstance(content, FunctionCallContent):
            blocks.append(
                {"type": "tool_use", "id": content.call_id, "name": content.name, "input": content.parsed_arguments()}
            )
        elif isinstance(content, FunctionResultContent):
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": content.call_id,
                    "content": content.result_text,
                    "is_error": content.is_error,
                }
            )
        elif isinstance(content, ReasoningContent):
            if content.signature:  # the API only takes back thinking it signed
                blocks.append({"type": "thinking", "thinking": content.text, "signature": content.signature})
        elif isinstance(content, DataContent):
            blocks.append(_data_block(content))
        elif isinstance(content, HostedFileContent):  # its Files API is a beta this adapter does not speak
            raise UserError(f"Anthropic Messages cannot carry a file by id ({content.file_id}): send its data")
    return blocks


def _data_block(content: DataContent) -> dict[str, Any]:
    data = content.data
    if content.media_type == "application/json" or content.media_type.startswith("text/"):
        return {"type": "text", "text": data if isinstance(data, str) else data.decode("utf-8", "replace")}
    kind = (
        "image"
        if content.media_type.startswith("image/")
        else "document"
        if content.media_type == "application/pdf"
        else None
    )
    if kind is None:
        raise UserError(f"Anthropic Messages cannot carry {content.media_type} data")
    if isinstance(data, str) and data.startswith("http"):
        return {"type": kind, "source": {"type": "url", "url": data}}
    raw = data.encode() if isinstance(data, str) else data
    encoded = base64.b64encode(raw).decode()
    return {"type": kind, "source": {"type": "base64", "media_type": content.media_type, "data": encoded}}


def _tool_to_wire(tool: FunctionTool) -> dict[str, Any]:
    return function_fields(tool, parameters="input_schema")


# ---------------------------------------------------------------- responses


def usage_from(usage: Any, *, part: Literal["all", "input", "output"] = "all") -> UsageDetails | None:
    """Map Anthropic usage (an object, or its JSON); input counts include cache reads and writes
    (as OpenAI's do).

    A stream reports input at `message_start` (its output count is a placeholder) and the final,
    cumulative output at `message_delta` (which may repeat the input): each event maps one `part`,
    so the updates add up to the right totals.
    """
    if usage is None:
        return None
    if isinstance(usage, JSONView):
        usage = usage.to_dict()
    read: Callable[[str], Any] = usage.get if type(usage) is dict else functools.partial(_attribute, usage)
    cached = read("cache_read_input_tokens") if part != "output" else None
    created = read("cache_creation_input_tokens") if part != "output" else None
    parts = [read("input_tokens"), cached, created]
    input_tokens = sum(p or 0 for p in parts) if part != "output" and any(p is not None for p in parts) else None
    output_tokens = read("output_tokens") if part != "input" else None
    counted = [t for t in (input_tokens, output_tokens) if t is not None]
    return UsageDetails(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=sum(counted) if counted else None,
        cached_input_tokens=cached,
        cache_creation_input_tokens=created,
    )


def _attribute(value: Any, name: str) -> Any:
    return getattr(value, name, None)


def finish_reason_from_wire(stop_reason: str | None) -> FinishReason | None:
    """Map a `stop_reason` (`end_turn`/`stop_sequence` stop, `max_tokens` length, ...)."""
    return STOP_REASONS.get(stop_reason) if stop_reason else None


def finish_reason_to_wire(reason: FinishReason | None) -> str | None:
    """`stop_reason` as a server writes it (`STOP_REASONS` read backwards: `end_turn` for a stop)."""
    return _WRITTEN_REASONS.get(reason) if reason is not None else None


def usage_to_wire(usage: UsageDetails) -> dict[str, Any]:
    """Usage as a server writes it: `input_tokens` without the cache reads and writes, which have
    their own counts (the inverse of `usage_from`)."""
    cached, created = usage.cached_input_tokens, usage.cache_creation_input_tokens
    wire: dict[str, Any] = {"input_tokens": (usage.input_tokens or 0) - (cached or 0) - (created or 0)}
    if created is not None:
        wire["cache_creation_input_tokens"] = created
    if cached is not None:
        wire["cache_read_input_tokens"] = cached
    wire["output_tokens"] = usage.output_tokens or 0
    return wire


def refusal_of(stop_details: Any) -> RefusalContent | None:
    """The refusal a `stop_details` of type `refusal` carries (None for any other stop)."""
    if getattr(stop_details, "type", None) != "refusal":
        return None
    explanation = getattr(stop_details, "explanation", None) or getattr(stop_details, "category", None)
    return RefusalContent(explanation or "refused")


def response_from_wire(message: Any, *, prefill: str = "") -> ChatResponse[Any]:
    """Map a `Message` (or a `JSONView` of its JSON) to a `ChatResponse`; `prefill` is stripped from
    the text when echoed.

    A message without a `content` list raises `ProviderResponseError`.
    """
    if isinstance(message, JSONView):  # its JSON, read as it is
        return _response_from_json(message, message.to_dict(), prefill)
    if not isinstance(getattr(message, "content", None), list):
        raise ProviderResponseError("the server's answer could not be read: a message without a content list")
    contents: list[Content] = []
    for block in message.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            text, prefill = strip_echo(block.text, prefill), ""  # only the first text block echoes
            if text:
                contents.append(TextContent(text))
        elif kind == "tool_use":
            arguments = block.input.to_dict() if isinstance(block.input, JSONView) else block.input  # read as JSON too
            contents.append(FunctionCallContent(block.id, block.name, json.dumps(arguments)))
        elif kind == "thinking":
            contents.append(ReasoningContent(block.thinking, getattr(block, "signature", None)))
    refusal = refusal_of(getattr(message, "stop_details", None))
    if refusal is not None:
        contents.append(refusal)
    return ChatResponse(
        ChatMessage("assistant", contents, raw_representation=message),
        usage=usage_from(getattr(message, "usage", None)),
        finish_reason=finish_reason_from_wire(getattr(message, "stop_reason", None)),
        response_id=getattr(message, "id", None),
        model_id=getattr(message, "model", None),
        raw_representation=message,
    )


def _response_from_json(message: JSONView, data: dict[str, Any], prefill: str) -> ChatResponse[Any]:
    """`response_from_wire` of a message's JSON `data` (a missing field reads as None, as on its view)."""
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise ProviderResponseError("the server's answer could not be read: a message without a content list")
    contents: list[Content] = []
    for block in blocks:
        if type(block) is not dict:  # not an object: no block type to read, as on its view
            continue
        kind = block.get("type")
        if kind == "text":
            text, prefill = strip_echo(block.get("text"), prefill), ""  # type: ignore[arg-type]  # only the first echoes
            if text:
                contents.append(TextContent(text))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input"))
            contents.append(FunctionCallContent(block.get("id"), block.get("name"), arguments))  # type: ignore[arg-type]
        elif kind == "thinking":
            contents.append(ReasoningContent(block.get("thinking"), block.get("signature")))  # type: ignore[arg-type]
    stop_details = data.get("stop_details")
    refusal = refusal_of(JSONView(stop_details) if type(stop_details) is dict else stop_details)
    if refusal is not None:
        contents.append(refusal)
    return ChatResponse(
        ChatMessage("assistant", contents, raw_representation=message),
        usage=usage_from(data.get("usage")),
        finish_reason=finish_reason_from_wire(data.get("stop_reason")),
        response_id=data.get("id"),
        model_id=data.get("model"),
        raw_representation=message,
    )


def response_to_wire(response: ChatResponse[Any]) -> dict[str, Any]:
    """A `ChatResponse` as the message a server answers: thinking, text and tool_use blocks in the
    answer's order, `stop_reason` from `STOP_REASONS`, `usage` where known. What
    `response_from_wire` reads back (a refusal is said by `stop_reason` alone)."""
    blocks: list[dict[str, Any]] = []
    for content in (c for m in response.messages for c in m.contents):
        if isinstance(content, TextContent):
            blocks.append({"type": "text", "text": content.text})
        elif isinstance(content, FunctionCallContent):
            blocks.append({"type": "tool_use", "id": content.call_id, "name": content.name,
                           "input": json.loads(content.arguments or "{}")})  # fmt: skip
        elif isinstance(content, ReasoningContent):
            blocks.append({"type": "thinking", "thinking": content.text, "signature": content.signature})
    message: dict[str, Any] = {"id": response.response_id, "type": "message", "role": "assistant"}
    message.update(model=response.model_id, content=blocks, stop_reason=finish_reason_to_wire(response.finish_reason))
    if response.usage is not None:
        message["usage"] = usage_to_wire(response.usage)
    return message


# ---------------------------------------------------------------- streams


@dataclass
class StreamReader:
    """Turns Messages stream events into updates; keeps what spans events (block kinds, text).

    `read(event)` returns an update or None; `finished` turns True on `message_stop`. An event is
    its JSON as a `JSONView` (as the adapter reads streams) or an SDK event object (read through
    its `to_dict()`).
    """

    prefill: str = ""
    text: list[str] = field(default_factory=list)
    finished: bool = False
    _calls: dict[int, str] = field(default_factory=dict)  # block index -> tool_use id
    _echo: EchoFilter | None = None

    def __post_init__(self) -> None:
        self._echo = EchoFilter(self.prefill) if self.prefill else None

    def _text(self, piece: str) -> list[Content]:
        piece = self._echo.feed(piece) if self._echo else piece
        if not piece:
            return []
        self.text.append(piece)
        return [TextContent(piece)]

    def read(self, event: Any) -> ChatResponseUpdate[Any] | None:
        data = event.to_dict() if isinstance(event, JSONView) else _json_of(event)
        kind = data.get("type")
        contents: list[Content] = []
        if kind == "content_block_delta":  # most events of a stream
            delta = _block(data.get("delta"))
            delta_kind = delta.get("type")
            if delta_kind == "text_delta":
                contents = self._text(delta.get("text"))  # type: ignore[arg-type]  # None when absent, as read by attribute
            elif delta_kind == "input_json_delta":
                index = data.get("index")
                call_id = self._calls.get(index, f"toolu_{index}")  # type: ignore[arg-type]
                contents.append(FunctionCallContent(call_id, "", delta.get("partial_json")))  # type: ignore[arg-type]
            elif delta_kind == "thinking_delta":
                contents.append(ReasoningContent(delta.get("thinking")))  # type: ignore[arg-type]
            elif delta_kind == "signature_delta":  # closes the thinking block; the API wants it back
                contents.append(ReasoningContent("", delta.get("signature")))
        elif kind == "message_start":
            found = data.get("message")
            message: dict[str, Any] = found if type(found) is dict else {}
            return ChatResponseUpdate(
                role="assistant",
                usage=usage_from(message.get("usage"), part="input"),
                response_id=message.get("id"),
                model_id=message.get("model"),
                raw_representation=event,
            )
        elif kind == "content_block_start":
            block = _block(data.get("content_block"))
            block_kind = block.get("type")
            if block_kind == "tool_use":
                block_id: Any = block.get("id")
                self._calls[data.get("index")] = block_id  # type: ignore[index]
                contents.append(FunctionCallContent(block_id, block.get("name"), ""))  # type: ignore[arg-type]
            elif block_kind == "text" and block.get("text"):
                contents.extend(self._text(block["text"]))
            elif block_kind == "thinking" and block.get("thinking"):
                contents.append(ReasoningContent(block["thinking"]))
        elif kind == "message_delta":
            if self._echo:
                contents.extend(self._text(self._echo.flush()))
            found = data.get("delta")
            delta = found if type(found) is dict else {}
            stop_details = delta.get("stop_details")
            refusal = refusal_of(JSONView(stop_details) if type(stop_details) is dict else stop_details)
            if refusal is not None:
                contents.append(refusal)
            return ChatResponseUpdate(
                contents,
                role="assistant",
                usage=usage_from(data.get("usage"), part="output"),
                finish_reason=finish_reason_from_wire(delta.get("stop_reason")),
                raw_representation=event,
            )
        elif kind == "message_stop":
            self.finished = True
        if not contents:
            return None
        return ChatResponseUpdate(contents, role="assistant", raw_representation=event)


def _json_of(event: Any) -> dict[str, Any]:
    """An SDK event object's JSON (`to_dict()`); {} for anything else (no event type to read)."""
    to_dict = getattr(event, "to_dict", None)
    data = to_dict() if callable(to_dict) else None
    return data if type(data) is dict else {}


def _block(value: Any) -> dict[str, Any]:
    """A block or delta object; anything else is an event of an unexpected shape."""
    if type(value) is not dict:
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    return value
