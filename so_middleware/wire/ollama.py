"""Ollama's native `/api/chat` wire translation: so_middleware types to the SDK's `chat` call, its answers back.

Pure functions and one small stream reader: no client, no I/O. Answers are read by attribute
(the SDK's `ChatResponse`) or by key (the same JSON), so this needs no SDK import.

Request mapping (`ollama`'s `AsyncClient.chat(model=, messages=, ...)`, docs.ollama.com/api/chat):

| so_middleware                           | Ollama                                                       |
|-----------------------------------------|--------------------------------------------------------------|
| `instructions` option + system messages | a leading `system` message (joined by a blank line)          |
| text contents                           | `content`                                                    |
| image data contents                     | `images` (base64)                                            |
| `FunctionCallContent`                   | `tool_calls: [{"function": {"name", "arguments"}}]`           |
| `FunctionResultContent`                 | a `tool` message with `tool_name` and `content`              |
| `ReasoningContent`                      | `thinking` on the assistant message                          |
| `max_tokens`, `stop`, `seed`            | `options.num_predict`, `options.stop`, `options.seed`        |
| `temperature`, `top_p`                  | `options.temperature`, `options.top_p`                       |
| `FunctionTool`                          | `tools: [{"type": "function", "function": {...}}]`            |
| `tool_choice`                           | none: Ollama has no tool choice (`none` sends no tools)      |
| `response_format` json_schema           | `format`: the schema object                                  |
| `response_format` json_object           | `format: "json"`                                             |
| `extra_body`                            | merged into the call (`keep_alive`, `think`, `options`, ...) |

Answer mapping: `message.content` is the answer, `message.thinking` is `ReasoningContent`, each
`tool_calls` entry a `FunctionCallContent` (an id is made: Ollama gives none); `done_reason`
`stop` → stop (tool calls → tool_calls), `length` → length; usage from `prompt_eval_count` and
`eval_count`.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from typing import Any

from ..core import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    HostedFileContent,
    ReasoningContent,
    RefusalContent,
    TextContent,
    UsageDetails,
    UserError,
)
from .common import chosen_model, function_fields, tools_to_wire

__all__ = ["DONE_REASONS", "OllamaStreamReader", "request_to_wire", "response_from_wire", "usage_from_wire"]

DONE_REASONS: Mapping[str, FinishReason] = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}
"""Ollama's `done_reason` read as ours (`load`, `unload` and others: no reason)."""

_OPTIONS = (("temperature", "temperature"), ("top_p", "top_p"), ("max_tokens", "num_predict"), ("seed", "seed"))


def request_to_wire(messages: list[ChatMessage], options: ChatOptions, *, model: str | None) -> dict[str, Any]:
    """The keyword arguments of `AsyncClient.chat` for this call (without `stream`)."""
    system = [options.instructions] if options.instructions else []
    turns: list[dict[str, Any]] = []
    names = {c.call_id: c.name for m in messages for c in m.contents if isinstance(c, FunctionCallContent)}
    for message in messages:
        if message.role == "system":
            system.append(message.text)
            continue
        turns.extend(_turns(message, names))
    if system:
        turns.insert(0, {"role": "system", "content": "\n\n".join(system)})
    request: dict[str, Any] = {"model": chosen_model(options, model), "messages": turns}
    sampling = {theirs: getattr(options, ours) for ours, theirs in _OPTIONS if getattr(options, ours) is not None}
    if options.stop:
        sampling["stop"] = list(options.stop)
    if sampling:
        request["options"] = sampling
    if options.tools and options.tool_choice != "none":
        request["tools"] = tools_to_wire(options.tools, _tool_to_wire)
    form = options.response_format
    if form is not None and form.type == "json_schema" and form.schema is not None:
        request["format"] = dict(form.schema)
    elif form is not None and form.type in ("json_object", "json_schema"):
        request["format"] = "json"
    extra = dict(options.extra_body or {})
    if isinstance(extra.get("options"), Mapping):  # the caller's model options join ours, theirs winning
        request["options"] = {**request.get("options", {}), **extra.pop("options")}
    request.update(extra)
    return request


def _turns(message: ChatMessage, names: Mapping[str, str]) -> list[dict[str, Any]]:
    role = "assistant" if message.role == "assistant" else "user"
    turn: dict[str, Any] = {"role": role, "content": ""}
    results: list[dict[str, Any]] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            turn["content"] += content.text
        elif isinstance(content, RefusalContent):
            turn["content"] += content.refusal
        elif isinstance(content, ReasoningContent) and role == "assistant":
            turn["thinking"] = turn.get("thinking", "") + content.text
        elif isinstance(content, FunctionCallContent):
            call = {"function": {"name": content.name, "arguments": content.parsed_arguments()}}
            turn.setdefault("tool_calls", []).append(call)
        elif isinstance(content, FunctionResultContent):
            name = names.get(content.call_id)
            if name is None:
                raise UserError(f"a function result for call {content.call_id!r} follows no call of that id")
            results.append({"role": "tool", "tool_name": name, "content": content.result_text})
        elif isinstance(content, DataContent):
            _add_data(turn, content)
        elif isinstance(content, HostedFileContent):
            raise UserError(f"Ollama cannot carry a file by id ({content.file_id}): send its data")
    has_body = turn["content"] or turn.get("tool_calls") or turn.get("images") or turn.get("thinking")
    return ([turn] if has_body else []) + results


def _add_data(turn: dict[str, Any], content: DataContent) -> None:
    data = content.data
    if content.media_type == "application/json" or content.media_type.startswith("text/"):
        turn["content"] += data if isinstance(data, str) else data.decode("utf-8", "replace")
        return
    if not content.media_type.startswith("image/"):
        raise UserError(f"Ollama's chat takes images, not {content.media_type} data")
    if isinstance(data, str) and data.startswith(("http://", "https://")):
        raise UserError("Ollama's chat takes an image's bytes, not its URL: download it and send the data")
    raw = data.encode() if isinstance(data, str) else data
    turn.setdefault("images", []).append(base64.b64encode(raw).decode())


def _tool_to_wire(tool: FunctionTool) -> dict[str, Any]:
    fields = function_fields(tool)
    fields.pop("strict", None)  # Ollama has no strict mode for tools
    return {"type": "function", "function": fields}


# ---------------------------------------------------------------- answers


def _get(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def usage_from_wire(answer: Any) -> UsageDetails | None:
    """Map `prompt_eval_count` (in) and `eval_count` (out); None when the answer has neither."""
    prompt, generated = _get(answer, "prompt_eval_count"), _get(answer, "eval_count")
    if prompt is None and generated is None:
        return None
    return UsageDetails(input_tokens=prompt, output_tokens=generated, total_tokens=(prompt or 0) + (generated or 0))


def _contents(message: Any) -> list[Content]:
    found: list[Content] = []
    thinking = _get(message, "thinking")
    if isinstance(thinking, str) and thinking:
        found.append(ReasoningContent(thinking))
    text = _get(message, "content")
    if isinstance(text, str) and text:
        found.append(TextContent(text))
    for call in _get(message, "tool_calls") or ():
        function = _get(call, "function")
        arguments = _get(function, "arguments")
        found.append(
            FunctionCallContent(
                f"call_{uuid.uuid4().hex[:24]}", str(_get(function, "name")), json.dumps(arguments or {})
            )
        )
    return found


def _finish(answer: Any, has_calls: bool) -> FinishReason | None:
    reason = _get(answer, "done_reason")
    found = DONE_REASONS.get(reason) if isinstance(reason, str) else None
    return FinishReason.TOOL_CALLS if found is FinishReason.STOP and has_calls else found


def response_from_wire(answer: Any) -> ChatResponse[Any]:
    """Map a whole `ChatResponse` of `/api/chat` (or its JSON) to ours."""
    contents = _contents(_get(answer, "message"))
    has_calls = any(isinstance(content, FunctionCallContent) for content in contents)
    return ChatResponse(
        ChatMessage("assistant", contents, raw_representation=answer),
        usage=usage_from_wire(answer),
        finish_reason=_finish(answer, has_calls),
        model_id=_get(answer, "model"),
        raw_representation=answer,
    )


class OllamaStreamReader:
    """Reads the chunks of a streamed `/api/chat`: deltas of text and thinking, calls whole, the last
    chunk (`done: true`) with the reason and the counts."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.finished = False
        self._calls = False

    def read(self, chunk: Any) -> ChatResponseUpdate[Any] | None:
        """The update for one chunk (None when it carries nothing)."""
        contents = _contents(_get(chunk, "message"))
        self.text.extend(content.text for content in contents if isinstance(content, TextContent))
        self._calls = self._calls or any(isinstance(content, FunctionCallContent) for content in contents)
        done = bool(_get(chunk, "done"))
        if not done and not contents:
            return None
        self.finished = self.finished or done
        return ChatResponseUpdate(
            contents=contents,
            role="assistant",
            usage=usage_from_wire(chunk) if done else None,
            finish_reason=_finish(chunk, self._calls) if done else None,
            model_id=_get(chunk, "model"),
            raw_representation=chunk,
        )
