"""Chat Completions wire translation: so_middleware types to request kwargs, SDK objects back.

Pure functions: no client, no I/O. The SDK objects are read by attribute, so any
OpenAI-compatible response (vLLM, llama.cpp, Ollama) maps the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
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
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    TextContent,
)
from ...wire.chat import part_to_wire, tool_choice_to_wire, tool_to_wire, usage_from
from ...wire.common import chosen_model, tools_to_wire
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
        response_format = options.response_format.to_chat_completions()
        if response_format is not None:
            request["response_format"] = response_format
    if options.extra_body:
        request["extra_body"] = dict(options.extra_body)
    return request


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


def finish_reason(value: str | None, *, refused: bool = False) -> FinishReason | None:
    """Map a Chat Completions finish reason (a refusal wins over `stop`)."""
    if refused:
        return FinishReason.REFUSAL
    return _FINISH_REASONS.get(value) if value else None


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


_TEXT_ONLY = frozenset(("role", "content"))  # what most chunks carry: a text piece, the first one a role too


def chunk_to_update(chunk: JSONView, call_ids: dict[int, str]) -> ChatResponseUpdate[Any]:
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
        finish = _FINISH_REASONS.get(reason) if reason else None
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
        update = chunk_to_update(chunk, self._call_ids)
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
