"""Chat Completions, both directions: the request a client sends (`request_to_wire`), the answer
it reads (`response_from_wire`) and its streamed chunks (`ChunkReader`), and the answer a server
writes (`response_to_wire`). One table, `FINISH_REASONS`, reads and writes `finish_reason`.

Pure functions (and one small stateful reader for streams): no client, no I/O. Answers are read
by attribute, so an SDK object, a `JSONView` and any OpenAI-compatible server's answer (vLLM,
llama.cpp, Ollama) map the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

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
    flat_format,
)
from .common import (
    JSONView,
    WireError,
    chosen_model,
    data_uri,
    field_of,
    flat_format_to_wire,
    function_fields,
    tools_to_wire,
)
from .common import tool_choice_to_wire as _choice
from .prefill import EchoFilter, strip_echo

__all__ = [
    "FINISH_REASONS",
    "ChunkReader",
    "chat_format_to_responses",
    "finish_reason_from_wire",
    "finish_reason_to_wire",
    "part_to_wire",
    "request_from_wire",
    "request_to_wire",
    "responses_format_to_chat",
    "response_format_to_wire",
    "response_from_wire",
    "response_to_wire",
    "tool_choice_to_wire",
    "tool_to_wire",
    "update_from_wire",
    "usage_from",
    "usage_to_wire",
]


# ---------------------------------------------------------------- response_format
# The two OpenAI spellings of a format: a json_schema's fields flat beside `type` (Responses) or
# nested under `json_schema` (Chat Completions); every other type is spelled the same in both.


def response_format_to_wire(fmt: ResponseFormat) -> dict[str, Any] | None:
    """`response_format` for `fmt` (None: send nothing): the Responses spelling with a json_schema's
    fields nested under `json_schema`. A format forwarded as is (`raw`) keeps every key and its order.

    Example: `response_format_to_wire(ResponseFormat.json_object()) == {"type": "json_object"}`."""
    flat = flat_format_to_wire(fmt)
    return None if flat is None else _nested(flat)


def responses_format_to_chat(text_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Translate a Responses `text.format` into a Chat Completions `response_format`, as is.

    The one spelling difference is a json_schema's fields, nested under `json_schema`; every key,
    unknown ones included, keeps its value (a copy, the caller's own) and its order, and an unknown
    type is forwarded unchanged. `text` or no format gives None (send nothing); a format without a
    string `type` is a `UserError`. Example:
        responses_format_to_chat({"type": "json_schema", "name": "p", "schema": s, "strict": True})
        == {"type": "json_schema", "json_schema": {"name": "p", "schema": s, "strict": True}}
    """
    if text_format is None or _kind(text_format, "text.format") == "text":
        return None
    return _nested(copy_json(dict(text_format)))


def chat_format_to_responses(response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Translate a Chat Completions `response_format` into a Responses `text.format` (the inverse:
    a json_schema's fields lifted out of `json_schema`, every key and its order kept)."""
    if response_format is None or _kind(response_format, "response_format") == "text":
        return None
    return flat_format(copy_json(dict(response_format)), "response_format")


def _kind(value: Any, where: str) -> str:
    """A wire format's `type`; a value that is no dict with a string type is a `UserError`."""
    kind = value.get("type") if isinstance(value, Mapping) else None
    if not isinstance(kind, str):
        raise UserError(f"{where}.type must be a string ({where} an object), got {value!r:.200}")
    return kind


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The Chat Completions spelling of a Responses format (its values not copied)."""
    if flat.get("type") != "json_schema":
        return dict(flat)
    return {"type": "json_schema", "json_schema": {key: value for key, value in flat.items() if key != "type"}}


# ---------------------------------------------------------------- tools


def tool_to_wire(tool: FunctionTool) -> dict[str, Any]:
    """`{"type": "function", "function": {"name", "parameters", "description"?, "strict"?}}`."""
    return {"type": "function", "function": function_fields(tool)}


def tool_choice_to_wire(choice: str | ForcedTool) -> Any:
    """A forced tool as `{"type": "function", "function": {"name"}}`; the others as they are."""
    return _choice(choice, lambda name: {"type": "function", "function": {"name": name}})


def part_to_wire(content: Content) -> dict[str, Any]:
    """A user content part: text, an image (URL or data URI), a file (`file_data` or `file_id`).

    A text or JSON file goes as a text part holding the file's text: Chat Completions documents its
    `file` part for PDFs, and OpenAI-compatible servers (llama-server, vLLM) read text parts but
    refuse `file` ones. Bytes that are not UTF-8 cannot be that text unchanged, so they go as a file.
    Any other file is a `file` part whose `file_data` is a base64 data URL of the file's bytes.
    """
    if isinstance(content, TextContent):
        return {"type": "text", "text": content.text}
    if isinstance(content, HostedFileContent):
        return {"type": "file", "file": {"file_id": content.file_id}}
    if isinstance(content, DataContent):
        data = content.data
        if content.media_type.startswith("image/"):
            url = data if isinstance(data, str) and _is_url(data) else data_uri(content)
            return {"type": "image_url", "image_url": {"url": url}}
        if content.media_type == "application/json" or content.media_type.startswith("text/"):
            text = data if isinstance(data, str) else _utf8(data)
            if text is not None:
                return {"type": "text", "text": text}
        uri = data if isinstance(data, str) and data[:5].lower() == "data:" else data_uri(content)
        return {"type": "file", "file": {"file_data": uri, "filename": content.name or "file"}}
    raise UserError(f"Chat Completions cannot carry {type(content).__name__} ({getattr(content, 'media_type', '')})")


def _is_url(data: str) -> bool:
    return data[:5].lower() == "data:" or data[:7].lower() == "http://" or data[:8].lower() == "https://"


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def usage_from(usage: Any) -> UsageDetails | None:
    """A `CompletionUsage` (or None)."""
    if usage is None:
        return None
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return UsageDetails(
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        total_tokens=getattr(usage, "total_tokens", None),
        cached_input_tokens=getattr(prompt_details, "cached_tokens", None),
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None),
    )


# `finish_reason`, read and written: each wire value and the library's reason. `function_call`
# (the deprecated functions API) is read as a tool call and never written; a refusal is written `stop`.
FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}
_READ_ONLY_REASONS = {**FINISH_REASONS, "function_call": FinishReason.TOOL_CALLS}
_WRITTEN_REASONS = {**{reason: value for value, reason in FINISH_REASONS.items()}, FinishReason.REFUSAL: "stop"}


def usage_to_wire(usage: UsageDetails) -> dict[str, Any]:
    """A `CompletionUsage` as a server writes it (the counts it knows; details where known)."""
    wire: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens or 0,
        "completion_tokens": usage.output_tokens or 0,
        "total_tokens": usage.total_tokens
        if usage.total_tokens is not None
        else (usage.input_tokens or 0) + (usage.output_tokens or 0),
    }
    if usage.cached_input_tokens is not None:
        wire["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    if usage.reasoning_tokens is not None:
        wire["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return wire


def request_to_wire(
    messages: list[ChatMessage], options: ChatOptions, *, model: str | None, max_tokens_field: str
) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for this call (without `stream`): the
    request body, with the caller's `extra_body` under `extra_body` (the SDK merges it in). The model is
    the options' or else `model`; `max_tokens_field` is `max_completion_tokens` or `max_tokens`."""
    request: dict[str, Any] = {"model": chosen_model(options, model)}
    wire: list[dict[str, Any]] = []
    if options.instructions:
        wire.append({"role": "system", "content": options.instructions})
    for message in messages:
        wire.extend(_message_to_wire(message))
    request["messages"] = wire
    for name in ("temperature", "top_p", "seed"):
        value = getattr(options, name)
        if value is not None:
            request[name] = value
    if options.max_tokens is not None:
        request[max_tokens_field] = options.max_tokens
    if options.stop:
        request["stop"] = list(options.stop)
    if options.tools:
        request["tools"] = tools_to_wire(options.tools, tool_to_wire)
    if options.tool_choice is not None:
        request["tool_choice"] = tool_choice_to_wire(options.tool_choice)
    if options.response_format is not None:
        response_format = response_format_to_wire(options.response_format)
        if response_format is not None:
            request["response_format"] = response_format
    if options.extra_body:
        request["extra_body"] = dict(options.extra_body)
    return request


# The request fields `request_from_wire` reads into the options; any other goes to `extra_body`.
_READ_FIELDS = frozenset({
    "model", "messages", "temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "stop", "tools",
    "tool_choice", "response_format",
})  # fmt: skip


def request_from_wire(body: Mapping[str, Any]) -> tuple[list[ChatMessage], ChatOptions]:
    """A Chat Completions request body as a server reads it: its messages and its options (other
    fields in `extra_body`). The inverse of `request_to_wire` for text, tool calls and tool results;
    a content part other than text, or a field of the wrong type, is a `WireError` naming it.

    Example: `request_from_wire({"model": "m", "messages": [{"role": "user", "content": "Hi"}]})`
    gives `([ChatMessage("user", "Hi")], ChatOptions(model="m"))`."""
    wire = field_of(body, "messages", list)
    if not wire:
        raise WireError("messages must be a non-empty list of messages", "messages")
    messages = [_message_from_wire(message, f"messages[{i}]") for i, message in enumerate(wire)]
    options: dict[str, Any] = {"model": field_of(body, "model", str), "seed": field_of(body, "seed", int)}
    options["temperature"] = field_of(body, "temperature", (int, float))
    options["top_p"] = field_of(body, "top_p", (int, float))
    options["max_tokens"] = field_of(body, "max_completion_tokens", int) or field_of(body, "max_tokens", int)
    stop = field_of(body, "stop", (str, list))
    options["stop"] = [stop] if isinstance(stop, str) else stop
    tools = field_of(body, "tools", list)
    if tools:
        options["tools"] = [_tool_from_wire(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping):
        options["tool_choice"] = ForcedTool(str((choice.get("function") or {}).get("name")))
    elif choice is not None:
        options["tool_choice"] = choice
    if body.get("response_format") is not None:
        options["response_format"] = ResponseFormat.from_wire(body["response_format"])
    options["extra_body"] = {k: v for k, v in body.items() if k not in _READ_FIELDS} or None
    return messages, ChatOptions(**{k: v for k, v in options.items() if v is not None})


def _tool_from_wire(tool: Any, where: str) -> FunctionTool:
    function = tool.get("function") if isinstance(tool, Mapping) and tool.get("type") == "function" else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise WireError(f"{where} must be a function tool with a string name", f"{where}.function.name")
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    return FunctionTool(function["name"], parameters, function.get("description"), function.get("strict"))


def _message_from_wire(message: Any, where: str) -> ChatMessage:
    if not isinstance(message, Mapping) or message.get("role") not in (
        "system",
        "developer",
        "user",
        "assistant",
        "tool",
    ):
        raise WireError(f"{where} must be a message with a role", f"{where}.role")
    role, content = message["role"], message.get("content")
    if role == "tool":
        return ChatMessage("tool", [FunctionResultContent(str(message.get("tool_call_id")), content)])
    contents: list[Content] = []
    for i, part in enumerate([content] if isinstance(content, str) else content or ()):
        text = part if isinstance(part, str) else part.get("text") if isinstance(part, Mapping) else None
        if not isinstance(text, str) or not (isinstance(part, str) or part.get("type") == "text"):
            raise WireError(f"{where}.content[{i}]: only text parts are read", f"{where}.content[{i}].type")
        if text:
            contents.append(TextContent(text))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        contents.append(
            FunctionCallContent(call.get("id"), function.get("name") or "", function.get("arguments") or "")
        )
    author = message.get("name")
    return ChatMessage("system" if role == "developer" else role, contents, author_name=author)


def _message_to_wire(message: ChatMessage) -> list[dict[str, Any]]:
    results = [c for c in message.contents if isinstance(c, FunctionResultContent)]
    tool_messages = [
        {"role": "tool", "tool_call_id": r.call_id, "content": ("Error: " if r.is_error else "") + r.result_text}
        for r in results
    ]
    rest = [c for c in message.contents if not isinstance(c, (FunctionResultContent, ReasoningContent))]
    if message.role == "tool" or (results and not rest):
        return tool_messages
    entry: dict[str, Any] = {"role": message.role}
    if message.author_name:
        entry["name"] = message.author_name
    if message.role == "assistant":
        calls = [c for c in rest if isinstance(c, FunctionCallContent)]
        entry["content"] = message.text or None
        if calls:
            entry["tool_calls"] = [
                {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments or "{}"}}
                for c in calls
            ]
        elif entry["content"] is None:
            entry["content"] = message.refusal or ""
    elif any(isinstance(c, (DataContent, HostedFileContent)) for c in rest):
        entry["content"] = [part_to_wire(c) for c in rest]
    else:
        entry["content"] = message.text
    return [entry, *tool_messages]


def finish_reason_from_wire(value: str | None, *, refused: bool = False) -> FinishReason | None:
    """Map a Chat Completions finish reason (a refusal wins over `stop`)."""
    if refused:
        return FinishReason.REFUSAL
    return _READ_ONLY_REASONS.get(value) if value else None


def _reasoning_text(obj: Any) -> str | None:
    # Not in the OpenAI schema; llama.cpp, vLLM and DeepSeek send it as an extra field.
    extra = getattr(obj, "model_extra", None) or {}
    value = extra.get("reasoning_content") or extra.get("reasoning")
    return value if isinstance(value, str) and value else None


def response_from_wire(completion: Any, *, prefill: str = "") -> ChatResponse[Any]:
    """Map a `ChatCompletion` to a `ChatResponse` (the choice of index 0, wherever it is listed);
    an echoed `prefill` is removed. No choice of index 0 raises `ProviderResponseError`."""
    choice = next(_first_choices(completion.choices), None)
    if choice is None:
        raise ProviderResponseError(
            f"the server returned a chat completion without a choice of index 0 ({_count(completion.choices)})"
        )
    message = choice.message
    contents: list[Content] = []
    reasoning = _reasoning_text(message)
    if reasoning:
        contents.append(ReasoningContent(reasoning))
    if message.content:
        text = strip_echo(message.content, prefill)
        if text:
            contents.append(TextContent(text))
    refusal = getattr(message, "refusal", None)
    if refusal:
        contents.append(RefusalContent(refusal))
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is not None:
            contents.append(FunctionCallContent(call.id, function.name, function.arguments or ""))
    return ChatResponse(
        ChatMessage("assistant", contents, raw_representation=message),
        usage=usage_from(completion.usage),
        finish_reason=finish_reason_from_wire(choice.finish_reason, refused=bool(refusal)),
        response_id=completion.id,
        model_id=completion.model,
        raw_representation=completion,
    )


def finish_reason_to_wire(reason: FinishReason | None) -> str | None:
    """`finish_reason` as a server writes it (`FINISH_REASONS` read backwards; a refusal is `stop`)."""
    return _WRITTEN_REASONS.get(reason) if reason is not None else None


def response_to_wire(response: ChatResponse[Any]) -> dict[str, Any]:
    """A `ChatResponse` as the chat completion a server answers: one choice of index 0 whose message
    holds the text (`content`, null when there is none), the refusal, the reasoning (as
    `reasoning_content`, llama.cpp's and vLLM's field) and the tool calls; the finish reason from
    `FINISH_REASONS`; `usage` where known. What `response_from_wire` reads back."""
    contents = [c for m in response.messages for c in m.contents]
    message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
    reasoning = "".join(c.text for c in contents if isinstance(c, ReasoningContent))
    if reasoning:
        message["reasoning_content"] = reasoning
    if response.refusal:
        message["refusal"] = response.refusal
    calls = [c for c in contents if isinstance(c, FunctionCallContent)]
    if calls:
        message["tool_calls"] = [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    body: dict[str, Any] = {"id": response.response_id, "object": "chat.completion", "model": response.model_id}
    body["choices"] = [{"index": 0, "message": message, "finish_reason": finish_reason_to_wire(response.finish_reason)}]
    if response.usage is not None:
        body["usage"] = usage_to_wire(response.usage)
    return body


def _first_choices(choices: Any) -> Iterator[Any]:
    """The choices of index 0 (a server that sends no index counts as index 0)."""
    return (choice for choice in choices or () if (getattr(choice, "index", None) or 0) == 0)


def _count(choices: Any) -> str:
    return "choices: null" if choices is None else f"{len(choices)} other choices"


_TEXT_ONLY = frozenset(("role", "content"))  # what most chunks carry: a text piece, the first one a role too


def update_from_wire(chunk: JSONView, call_ids: dict[int, str]) -> ChatResponseUpdate[Any]:
    """Map a `ChatCompletionChunk` event (read as plain JSON: this runs once per streamed piece);
    `call_ids` tracks tool-call ids by index across chunks."""
    data, contents, finish, role = chunk.to_dict(), list[Content](), None, None
    for choice in data.get("choices") or ():
        if choice.get("index"):  # other choices (n > 1) are not this answer
            continue
        delta = choice.get("delta")
        role = delta.get("role")
        text = delta.get("content")
        if not text or not delta.keys() <= _TEXT_ONLY:  # more than a text piece: read every field
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")  # see _reasoning_text
            if reasoning and isinstance(reasoning, str):
                contents.append(ReasoningContent(reasoning))
            if text:
                contents.append(TextContent(text))
            refusal = delta.get("refusal")
            if refusal:
                contents.append(RefusalContent(refusal))
            for call in delta.get("tool_calls") or ():
                index = call.get("index")
                call_id = call.get("id") or call_ids.get(index) or f"call_{index}"
                call_ids[index] = call_id
                function = call.get("function") or {}
                contents.append(
                    FunctionCallContent(call_id, function.get("name") or "", function.get("arguments") or "")
                )
        else:
            contents.append(TextContent(text))
        reason = choice.get("finish_reason")
        finish = _READ_ONLY_REASONS.get(reason) if reason else None
    return ChatResponseUpdate(
        contents,
        role="assistant" if role or contents else None,
        usage=usage_from(chunk.usage) if data.get("usage") is not None else None,
        finish_reason=finish,
        response_id=data.get("id"),
        model_id=data.get("model"),
        raw_representation=chunk,
    )


@dataclass
class ChunkReader:
    """Reads a Chat Completions chunk stream for `SDKChatClient.read_events`.

    `read(chunk)` returns an update (None for what is not a chunk); `finished` turns True on the chunk with a finish reason. An
    echoed `prefill` is removed (text held back while it could be echo comes out with the
    finishing chunk), and a refusal turns a `stop` finish into `refusal`.
    """

    prefill: str = ""
    text: list[str] = field(default_factory=list)
    finished: bool = False
    _call_ids: dict[int, str] = field(default_factory=dict)
    _refused: bool = False
    _echo: EchoFilter = field(init=False)

    def __post_init__(self) -> None:
        self._echo = EchoFilter(self.prefill)

    def read(self, chunk: Any) -> ChatResponseUpdate[Any] | None:
        choices = chunk.to_dict().get("choices", "") if isinstance(chunk, JSONView) else ""
        if choices is not None and not isinstance(choices, list):  # not a chunk: skipped
            return None
        update = update_from_wire(chunk, self._call_ids)
        if self._echo.pending:
            update.contents = self._without_echo(update.contents)
        if update.finish_reason is not None:
            self.finished = True
            held = self._echo.flush()  # text held back as possible echo when the answer ended
            if held:
                update.contents.insert(0, TextContent(held))
                update.role = "assistant"
        for content in update.contents:  # a loop, not generators: this runs once per streamed piece
            if isinstance(content, TextContent):
                self.text.append(content.text)
            elif isinstance(content, RefusalContent):
                self._refused = True
        if self._refused and update.finish_reason == FinishReason.STOP:
            update.finish_reason = FinishReason.REFUSAL
        return update

    def _without_echo(self, contents: list[Content]) -> list[Content]:
        kept: list[Content] = []
        for content in contents:
            if isinstance(content, TextContent):
                content = TextContent(self._echo.feed(content.text))
                if not content.text:
                    continue
            kept.append(content)
        return kept
