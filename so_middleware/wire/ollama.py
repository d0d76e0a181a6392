"""Ollama's native `/api/chat`, both directions: the request body a client sends
(`request_to_wire`), the answer it reads (`response_from_wire`) and its streamed chunks
(`OllamaStreamReader`); the request a server reads (`request_from_wire`) and the answer it writes
(`response_to_wire`). One table, `DONE_REASONS`, reads and writes `done_reason`.

Pure functions and one small stream reader: no client, no I/O. Answers are read by attribute
(the SDK's `ChatResponse`) or by key (the same JSON), so this needs no SDK import.

Request mapping (the `/api/chat` body, docs.ollama.com/api/chat):

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
| `extra_body`                            | merged into the call (`keep_alive`, `think`, `options`, ...); a model option at its top (`repeat_penalty`, `top_k`, ...) goes into `options` |

Answer mapping: `message.content` is the answer, `message.thinking` is `ReasoningContent`, each
`tool_calls` entry a `FunctionCallContent` (an id is made: Ollama gives none); `done_reason`
`stop` → stop (tool calls → tool_calls), `length` → length; usage from `prompt_eval_count` and
`eval_count`.

Read back by a server (`request_from_wire`): `options` other than the five above and every other
top-level field (`keep_alive`, `think`, ...) go to `extra_body`; a tool result is linked to the
latest call of its `tool_name` (Ollama gives calls no id); an image's media type is read from its
first bytes. Empty `content` is not written (the SDK never sent it either). A message's fields are
written in the order of the `ollama` SDK's `Message` (`role`, `content`, `thinking`, `images`,
`tool_name`, `tool_calls`), so the adapter's body is the bytes the SDK's `chat` sends.
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
    ResponseFormat,
    TextContent,
    UsageDetails,
    UserError,
)
from .common import WireError, chosen_model, field_of, function_fields, tools_to_wire

__all__ = ["DONE_REASONS", "MODEL_OPTIONS", "OllamaStreamReader", "done_reason_to_wire", "request_from_wire",
           "request_to_wire", "response_from_wire", "response_to_wire", "usage_from_wire"]  # fmt: skip

DONE_REASONS: Mapping[str, FinishReason] = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}
"""Ollama's `done_reason` read as ours (`load`, `unload` and others: no reason). Written back:
`length` for a cut answer, `stop` for any other end (Ollama has no name for the others)."""

_OPTIONS = (("temperature", "temperature"), ("top_p", "top_p"), ("max_tokens", "num_predict"), ("seed", "seed"))
# Model options (docs.ollama.com modelfile parameters) given at the top of `extra_body`: moved into `options`.
MODEL_OPTIONS = frozenset(
    {"repeat_penalty", "repeat_last_n", "presence_penalty", "frequency_penalty", "top_k", "min_p", "num_ctx",
     "typical_p", "mirostat", "mirostat_eta", "mirostat_tau", "tfs_z", "num_keep", "penalize_newline"}
)  # fmt: skip


def request_to_wire(messages: list[ChatMessage], options: ChatOptions, *, model: str | None) -> dict[str, Any]:
    """The `/api/chat` request body for this call (without `stream`, the adapter's)."""
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
    moved = {name: extra.pop(name) for name in list(extra) if name in MODEL_OPTIONS}
    given = extra.pop("options") if isinstance(extra.get("options"), Mapping) else {}
    if moved or given:  # the caller's model options join ours, theirs winning
        request["options"] = {**request.get("options", {}), **moved, **given}
    request.update(extra)
    return request


def _turns(message: ChatMessage, names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The message's turn (its fields in the order of the SDK's `Message`), then its tool results."""
    role = "assistant" if message.role == "assistant" else "user"
    turn: dict[str, Any] = {"content": ""}  # the fields found; written in order below
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
            results.append({"role": "tool", "content": content.result_text, "tool_name": name})
        elif isinstance(content, DataContent):
            _add_data(turn, content)
        elif isinstance(content, HostedFileContent):
            raise UserError(f"Ollama cannot carry a file by id ({content.file_id}): send its data")
    if not turn["content"]:
        del turn["content"]
    if not turn:
        return results
    written = {"role": role}
    for name in _MESSAGE_FIELDS:
        if name in turn:
            written[name] = turn[name]
    return [written, *results]


_MESSAGE_FIELDS = ("content", "thinking", "images", "tool_calls")  # the SDK's `Message` order, after `role`


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


# ---------------------------------------------------------------- requests, read by a server

# `options` read into ours (any other stays in `options`, under `extra_body`).
_OPTIONS_READ = {theirs: ours for ours, theirs in _OPTIONS}
_READ_FIELDS = frozenset({"model", "messages", "tools", "format"})
# The first bytes of the image types Ollama's vision models read.
_IMAGE_MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
                (b"RIFF", "image/webp"))  # fmt: skip


def request_from_wire(body: Mapping[str, Any]) -> tuple[list[ChatMessage], ChatOptions]:
    """An `/api/chat` request body as a server reads it: its messages and its options (other
    fields in `extra_body`). The inverse of `request_to_wire`; a message of another role, or a
    field of the wrong type, is a `WireError` naming it.

    Example: `request_from_wire({"model": "m", "messages": [{"role": "user", "content": "Hi"}]})`
    gives `([ChatMessage("user", "Hi")], ChatOptions(model="m"))`."""
    wire = field_of(body, "messages", list)
    if not wire:
        raise WireError("messages must be a non-empty list of messages", "messages")
    calls: list[FunctionCallContent] = []
    messages = [_message_from_wire(message, f"messages[{i}]", calls) for i, message in enumerate(wire)]
    options: dict[str, Any] = {"model": field_of(body, "model", str)}
    sampling = dict(field_of(body, "options", dict) or {})
    for theirs, ours in _OPTIONS_READ.items():
        options[ours] = field_of(sampling, theirs, (int, float) if ours in ("temperature", "top_p") else int)
        sampling.pop(theirs, None)
    options["stop"] = field_of(sampling, "stop", list)
    sampling.pop("stop", None)
    form = field_of(body, "format", (dict, str))
    if isinstance(form, dict):
        options["response_format"] = ResponseFormat.json_schema(form)
    elif form == "json":
        options["response_format"] = ResponseFormat.json_object()
    tools = field_of(body, "tools", list)
    if tools:
        options["tools"] = [_tool_from_wire(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    extra = {key: value for key, value in body.items() if key not in _READ_FIELDS and key != "options"}
    if sampling:
        extra["options"] = sampling
    if isinstance(form, str) and form != "json":
        extra["format"] = form
    options["extra_body"] = extra or None
    return messages, ChatOptions(**{k: v for k, v in options.items() if v is not None})


def _tool_from_wire(tool: Any, where: str) -> FunctionTool:
    function = tool.get("function") if isinstance(tool, Mapping) and tool.get("type") == "function" else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise WireError(f"{where} must be a function tool with a string name", f"{where}.function.name")
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    return FunctionTool(function["name"], parameters, function.get("description"))


def _message_from_wire(message: Any, where: str, calls: list[FunctionCallContent]) -> ChatMessage:
    """One message; `calls` (the calls read so far) links a tool result to its call."""
    role = message.get("role") if isinstance(message, Mapping) else None
    if role not in ("system", "user", "assistant", "tool"):
        raise WireError(f"{where} must be a message of role system, user, assistant or tool", f"{where}.role")
    text = field_of(message, "content", str) or ""
    if role == "tool":
        name = message.get("tool_name")
        call = next((c for c in reversed(calls) if name is None or c.name == name), None)
        if call is None:
            raise WireError(f"{where}: a tool result follows no call of its tool_name", f"{where}.tool_name")
        return ChatMessage("tool", [FunctionResultContent(call.call_id, text)])
    contents: list[Content] = []
    thinking = field_of(message, "thinking", str)
    if thinking:
        contents.append(ReasoningContent(thinking))
    if text:
        contents.append(TextContent(text))
    for i, image in enumerate(field_of(message, "images", list) or ()):
        if not isinstance(image, str):
            raise WireError(f"{where}.images[{i}] must be a base64 string", f"{where}.images[{i}]")
        data = base64.b64decode(image)
        contents.append(DataContent(data, next((t for magic, t in _IMAGE_MAGIC if data.startswith(magic)), "image/*")))
    for i, call in enumerate(field_of(message, "tool_calls", list) or ()):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise WireError(f"{where}.tool_calls[{i}] must name a function", f"{where}.tool_calls[{i}].function.name")
        made = FunctionCallContent(_made_id(), function["name"], json.dumps(function.get("arguments") or {}))
        calls.append(made)
        contents.append(made)
    return ChatMessage(role, contents)


def _made_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


# ---------------------------------------------------------------- answers


def _get(value: Any, name: str) -> Any:
    if type(value) is dict:  # the JSON as read: the adapter's own path, without an ABC check
        return value.get(name)
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def usage_from_wire(answer: Any) -> UsageDetails | None:
    """Map `prompt_eval_count` (in) and `eval_count` (out); None when the answer has neither."""
    prompt, generated = _get(answer, "prompt_eval_count"), _get(answer, "eval_count")
    if prompt is None and generated is None:
        return None
    return UsageDetails(input_tokens=prompt, output_tokens=generated, total_tokens=(prompt or 0) + (generated or 0))


def _contents(message: Any) -> list[Content]:
    found: list[Content] = []
    if type(message) is dict:
        thinking, text, calls = message.get("thinking"), message.get("content"), message.get("tool_calls")
    else:
        thinking, text, calls = _get(message, "thinking"), _get(message, "content"), _get(message, "tool_calls")
    if isinstance(thinking, str) and thinking:
        found.append(ReasoningContent(thinking))
    if isinstance(text, str) and text:
        found.append(TextContent(text))
    for call in calls or ():
        function = _get(call, "function")
        arguments = _get(function, "arguments")
        found.append(FunctionCallContent(_made_id(), str(_get(function, "name")), json.dumps(arguments or {})))
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


def done_reason_to_wire(reason: FinishReason | None) -> str | None:
    """`done_reason` as a server writes it (`DONE_REASONS` read backwards, `stop` for the others)."""
    if reason is None:
        return None
    return "length" if reason is FinishReason.LENGTH else "stop"


def response_to_wire(response: ChatResponse[Any]) -> dict[str, Any]:
    """A `ChatResponse` as the whole `/api/chat` answer a server writes: the message with its
    text, thinking and tool calls, `done`, `done_reason` and the counts where known. What
    `response_from_wire` reads back."""
    contents = [c for m in response.messages for c in m.contents]
    message: dict[str, Any] = {"role": "assistant", "content": response.text}
    thinking = "".join(c.text for c in contents if isinstance(c, ReasoningContent))
    if thinking:
        message["thinking"] = thinking
    calls = [c for c in contents if isinstance(c, FunctionCallContent)]
    if calls:
        message["tool_calls"] = [{"function": {"name": c.name, "arguments": c.parsed_arguments()}} for c in calls]
    body: dict[str, Any] = {"model": response.model_id, "message": message, "done": True}
    reason = done_reason_to_wire(response.finish_reason)
    if reason is not None:
        body["done_reason"] = reason
    if response.usage is not None and response.usage.input_tokens is not None:
        body["prompt_eval_count"] = response.usage.input_tokens
    if response.usage is not None and response.usage.output_tokens is not None:
        body["eval_count"] = response.usage.output_tokens
    return body


class OllamaStreamReader:
    """Reads the chunks of a streamed `/api/chat`: deltas of text and thinking, calls whole, the last
    chunk (`done: true`) with the reason and the counts."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.finished = False
        self._calls = False

    def read(self, chunk: Any) -> ChatResponseUpdate[Any] | None:
        """The update for one chunk (None when it carries nothing)."""
        if type(chunk) is dict:  # the JSON as read: the adapter's own path
            message, done, model = chunk.get("message"), chunk.get("done"), chunk.get("model")
        else:
            message, done, model = _get(chunk, "message"), _get(chunk, "done"), _get(chunk, "model")
        contents = _contents(message)
        for content in contents:  # a loop, not two generators: this runs once per chunk
            if type(content) is TextContent:
                self.text.append(content.text)
            elif type(content) is FunctionCallContent:
                self._calls = True
        done = bool(done)
        if not done and not contents:
            return None
        self.finished = self.finished or done
        return ChatResponseUpdate(
            contents=contents,
            role="assistant",
            usage=usage_from_wire(chunk) if done else None,
            finish_reason=_finish(chunk, self._calls) if done else None,
            model_id=model,
            raw_representation=chunk,
        )
