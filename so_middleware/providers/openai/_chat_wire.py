"""Chat Completions wire translation: so_middleware types to request kwargs, SDK objects back.

Pure functions: no client, no I/O. The SDK objects are read by attribute, so any
OpenAI-compatible response (vLLM, llama.cpp, Ollama) maps the same way.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core import (
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
    TextContent,
    UsageDetails,
    UserError,
)
from .._prefill import EchoFilter, strip_echo
from .._sse import JSONView

__all__ = ["ChunkReader", "build_request", "chunk_to_update", "completion_to_response", "finish_reason", "usage_from"]

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}


def build_request(
    messages: list[ChatMessage], options: ChatOptions, *, model: str | None, max_tokens_field: str
) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for this call (without `stream`)."""
    chosen_model = options.model or model
    if not chosen_model:
        raise UserError("no model given: pass model=... to the adapter or options={'model': ...}")
    wire: list[dict[str, Any]] = []
    if options.instructions:
        wire.append({"role": "system", "content": options.instructions})
    for message in messages:
        wire.extend(_message_to_wire(message))
    request: dict[str, Any] = {"model": chosen_model, "messages": wire}
    for name in ("temperature", "top_p", "seed"):
        value = getattr(options, name)
        if value is not None:
            request[name] = value
    if options.max_tokens is not None:
        request[max_tokens_field] = options.max_tokens
    if options.stop:
        request["stop"] = list(options.stop)
    if options.tools:
        request["tools"] = [_tool_to_wire(tool) for tool in options.tools]
    if options.tool_choice is not None:
        request["tool_choice"] = (
            {"type": "function", "function": {"name": options.tool_choice.name}}
            if isinstance(options.tool_choice, ForcedTool)
            else options.tool_choice
        )
    if options.response_format is not None:
        response_format = options.response_format.to_chat_completions()
        if response_format is not None:
            request["response_format"] = response_format
    if options.extra_body:
        request["extra_body"] = dict(options.extra_body)
    return request


def _tool_to_wire(tool: FunctionTool | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(tool, Mapping):
        return dict(tool)
    function: dict[str, Any] = {"name": tool.name, "parameters": dict(tool.parameters)}
    if tool.description:
        function["description"] = tool.description
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


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
        entry["content"] = [_part_to_wire(c) for c in rest]
    else:
        entry["content"] = message.text
    return [entry, *tool_messages]


def _part_to_wire(content: Content) -> dict[str, Any]:
    if isinstance(content, TextContent):
        return {"type": "text", "text": content.text}
    if isinstance(content, DataContent):
        if content.media_type.startswith("image/"):
            data = content.data
            url = data if isinstance(data, str) and data.startswith(("http", "data:")) else _data_uri(content)
            return {"type": "image_url", "image_url": {"url": url}}
        if content.media_type == "application/json" or content.media_type.startswith("text/"):
            text = content.data if isinstance(content.data, str) else content.data.decode("utf-8", "replace")
            return {"type": "text", "text": text}
        data = content.data
        uri = data if isinstance(data, str) and data.startswith("data:") else _data_uri(content)
        return {"type": "file", "file": {"file_data": uri, "filename": content.name or "file"}}
    if isinstance(content, HostedFileContent):
        return {"type": "file", "file": {"file_id": content.file_id}}
    raise UserError(f"Chat Completions cannot carry {type(content).__name__} ({getattr(content, 'media_type', '')})")


def _data_uri(content: DataContent) -> str:
    raw = content.data.encode() if isinstance(content.data, str) else content.data
    return f"data:{content.media_type};base64,{base64.b64encode(raw).decode()}"


def finish_reason(value: str | None, *, refused: bool = False) -> FinishReason | None:
    """Map a Chat Completions finish reason (a refusal wins over `stop`)."""
    if refused:
        return FinishReason.REFUSAL
    return _FINISH_REASONS.get(value) if value else None


def usage_from(usage: Any) -> UsageDetails | None:
    """Map a `CompletionUsage` (or None)."""
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


def _reasoning_text(obj: Any) -> str | None:
    # Not in the OpenAI schema; llama.cpp, vLLM and DeepSeek send it as an extra field.
    extra = getattr(obj, "model_extra", None) or {}
    value = extra.get("reasoning_content") or extra.get("reasoning")
    return value if isinstance(value, str) and value else None


def completion_to_response(completion: Any, *, prefill: str = "") -> ChatResponse[Any]:
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
        finish_reason=finish_reason(choice.finish_reason, refused=bool(refusal)),
        response_id=completion.id,
        model_id=completion.model,
        raw_representation=completion,
    )


def _first_choices(choices: Any) -> Iterator[Any]:
    """The choices of index 0 (a server that sends no index counts as index 0)."""
    return (choice for choice in choices or () if (getattr(choice, "index", None) or 0) == 0)


def _count(choices: Any) -> str:
    return "choices: null" if choices is None else f"{len(choices)} other choices"


def chunk_to_update(chunk: JSONView, call_ids: dict[int, str]) -> ChatResponseUpdate[Any]:
    """Map a `ChatCompletionChunk` event (read as plain JSON: this runs once per streamed piece);
    `call_ids` tracks tool-call ids by index across chunks."""
    data, contents, finish, role = chunk.to_dict(), list[Content](), None, None
    for choice in data.get("choices") or ():
        if (choice.get("index") or 0) != 0:  # other choices (n > 1) are not this answer
            continue
        delta = choice.get("delta")
        role = delta.get("role")
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")  # see _reasoning_text
        if reasoning and isinstance(reasoning, str):
            contents.append(ReasoningContent(reasoning))
        text = delta.get("content")
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
            contents.append(FunctionCallContent(call_id, function.get("name") or "", function.get("arguments") or ""))
        finish = finish_reason(choice.get("finish_reason"))
    return ChatResponseUpdate(
        contents,
        role="assistant" if role or contents else None,
        usage=usage_from(chunk.usage),
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
        update = chunk_to_update(chunk, self._call_ids)
        if self._echo.pending:
            update.contents = self._without_echo(update.contents)
        self._refused = self._refused or any(isinstance(c, RefusalContent) for c in update.contents)
        if update.finish_reason is not None:
            self.finished = True
            held = self._echo.flush()  # text held back as possible echo when the answer ended
            if held:
                update.contents.insert(0, TextContent(held))
                update.role = "assistant"
            if self._refused and update.finish_reason == FinishReason.STOP:
                update.finish_reason = FinishReason.REFUSAL
        self.text.extend(c.text for c in update.contents if isinstance(c, TextContent))
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
