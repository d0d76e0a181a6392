"""Gemini `generateContent` wire translation: so_middleware types to the SDK's call, its answers back.

Pure functions and one small stateful stream reader: no client, no I/O. The answer side reads the
SDK's `GenerateContentResponse` by attribute (and the same JSON by key), so it needs no SDK import.

Request mapping (`google-genai`'s `models.generate_content(model=, contents=, config=)`):

| so_middleware                           | Gemini                                                          |
|-----------------------------------------|-----------------------------------------------------------------|
| `instructions` option + system messages | `config.system_instruction` (joined by a blank line)            |
| user / assistant turns                  | `contents` with role `user` / `model`                           |
| text / data contents                    | `{"text"}` / `{"inline_data": {"mime_type", "data"}}` parts      |
| `FunctionCallContent`                   | `{"function_call": {"id", "name", "args"}}` in a model turn      |
| `FunctionResultContent`                 | `{"function_response": {"id", "name", "response"}}` in a user turn |
| `ReasoningContent`                      | not sent back (Gemini keeps no signed thoughts in history here)  |
| `max_tokens`, `stop`, `seed`            | `max_output_tokens`, `stop_sequences`, `seed`                   |
| `temperature`, `top_p`                  | the same names                                                  |
| `FunctionTool`                          | `tools[0].function_declarations[]` with `parameters_json_schema` |
| `tool_choice`                           | `tool_config.function_calling_config.mode` AUTO / ANY / NONE (+ `allowed_function_names`) |
| `response_format` json_schema           | `response_mime_type: application/json` + `response_json_schema` (or `response_schema`, OpenAPI form, when the format's schema is spelled that way) |
| `response_format` json_object           | `response_mime_type: application/json`                          |
| `extra_body`                            | merged into `config` (the caller's own fields win)              |

Answer mapping: `text` parts are the answer, `thought: true` parts are `ReasoningContent`,
`function_call` parts are `FunctionCallContent` (an id is made when the API gives none);
`finish_reason` STOP → stop, MAX_TOKENS → length, SAFETY and the other blocks → content filter,
a prompt blocked before any candidate (`prompt_feedback.block_reason`) → content filter with no
text. Usage: `prompt_token_count` (+ `tool_use_prompt_token_count`) in, `candidates_token_count`
+ `thoughts_token_count` out, `cached_content_token_count` cached, `thoughts_token_count` reasoning.
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
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    TextContent,
    UsageDetails,
    UserError,
)
from .common import chosen_model, function_fields, tool_choice_to_wire, tools_to_wire

__all__ = ["FINISH_REASONS", "GeminiStreamReader", "request_to_wire", "response_from_wire", "usage_from_wire"]

FINISH_REASONS: Mapping[str, FinishReason] = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "SPII": FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": FinishReason.CONTENT_FILTER,
    "IMAGE_PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "MODEL_ARMOR": FinishReason.CONTENT_FILTER,
    "LANGUAGE": FinishReason.CONTENT_FILTER,
}
"""Gemini's `finish_reason` names read as ours (any other name: no reason, the answer as it is)."""

_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
# The OpenAPI form's type names: a schema spelled with them goes as `response_schema`.
_OPENAPI_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"})


def request_to_wire(messages: list[ChatMessage], options: ChatOptions, *, model: str | None) -> dict[str, Any]:
    """The keyword arguments of `models.generate_content` for this call: `model`, `contents`, `config`."""
    system = [options.instructions] if options.instructions else []
    contents: list[dict[str, Any]] = []
    names = _call_names(messages)
    for message in messages:
        if message.role == "system":
            system.append(message.text)
            continue
        role = "model" if message.role == "assistant" else "user"
        parts = _parts(message, names)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    config: dict[str, Any] = {}
    if system:
        config["system_instruction"] = "\n\n".join(system)
    for ours, theirs in (
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("max_tokens", "max_output_tokens"),
        ("seed", "seed"),
    ):
        value = getattr(options, ours)
        if value is not None:
            config[theirs] = value
    if options.stop:
        config["stop_sequences"] = list(options.stop)
    if options.tools:
        config["tools"] = [{"function_declarations": tools_to_wire(options.tools, _tool_to_wire)}]
    if options.tool_choice is not None:
        choice = tool_choice_to_wire(
            options.tool_choice, lambda name: {"mode": "ANY", "allowed_function_names": [name]}
        )
        config["tool_config"] = {
            "function_calling_config": {"mode": _MODES[choice]} if isinstance(choice, str) else choice
        }
    config.update(_format(options))
    config.update(options.extra_body or {})
    return {"model": chosen_model(options, model), "contents": contents, "config": config}


def _format(options: ChatOptions) -> dict[str, Any]:
    form = options.response_format
    if form is None or form.type == "text":
        return {}
    if form.type == "json_object" or form.schema is None:
        return {"response_mime_type": "application/json"}
    schema = dict(form.schema)
    key = "response_schema" if schema.get("type") in _OPENAPI_TYPES else "response_json_schema"
    return {"response_mime_type": "application/json", key: schema}


def _call_names(messages: list[ChatMessage]) -> dict[str, str]:
    """Each call id's function name: a `function_response` must name its function."""
    return {
        content.call_id: content.name
        for message in messages
        for content in message.contents
        if isinstance(content, FunctionCallContent)
    }


def _parts(message: ChatMessage, names: Mapping[str, str]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            parts.append({"text": content.text})
        elif isinstance(content, RefusalContent):
            parts.append({"text": content.refusal})
        elif isinstance(content, FunctionCallContent):
            call = {"id": content.call_id, "name": content.name, "args": content.parsed_arguments()}
            parts.append({"function_call": call})
        elif isinstance(content, FunctionResultContent):
            name = names.get(content.call_id)
            if name is None:
                raise UserError(f"a function result for call {content.call_id!r} follows no call of that id")
            key = "error" if content.is_error else "output"
            response = {"id": content.call_id, "name": name, "response": {key: content.result_text}}
            parts.append({"function_response": response})
        elif isinstance(content, DataContent):
            parts.append(_data_part(content))
        elif isinstance(content, HostedFileContent):
            raise UserError(f"Gemini cannot carry a file by our id ({content.file_id}): send its data")
    return parts


def _data_part(content: DataContent) -> dict[str, Any]:
    data = content.data
    if content.media_type == "application/json" or content.media_type.startswith("text/"):
        return {"text": data if isinstance(data, str) else data.decode("utf-8", "replace")}
    if isinstance(data, str) and data.startswith(("http://", "https://", "gs://")):
        return {"file_data": {"file_uri": data, "mime_type": content.media_type}}
    raw = data.encode() if isinstance(data, str) else data
    return {"inline_data": {"mime_type": content.media_type, "data": raw}}


def _tool_to_wire(tool: FunctionTool) -> dict[str, Any]:
    fields = function_fields(tool, parameters="parameters_json_schema")
    fields.pop("strict", None)  # a function declaration has no strict mode: its schema is enforced as is
    return fields


# ---------------------------------------------------------------- answers


def _get(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _name(value: Any) -> str | None:
    """An enum member's name or a plain string (the SDK gives enums, JSON gives strings)."""
    if value is None:
        return None
    return str(getattr(value, "name", value))


def usage_from_wire(metadata: Any) -> UsageDetails | None:
    """Map `usage_metadata`; thoughts count as output (they are billed as output tokens)."""
    if metadata is None:
        return None
    prompt = _get(metadata, "prompt_token_count")
    tool_prompt = _get(metadata, "tool_use_prompt_token_count")
    answer = _get(metadata, "candidates_token_count")
    thoughts = _get(metadata, "thoughts_token_count")
    input_tokens = None if prompt is None and tool_prompt is None else (prompt or 0) + (tool_prompt or 0)
    output_tokens = None if answer is None and thoughts is None else (answer or 0) + (thoughts or 0)
    total = _get(metadata, "total_token_count")
    if total is None and (input_tokens is not None or output_tokens is not None):
        total = (input_tokens or 0) + (output_tokens or 0)
    return UsageDetails(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total,
        cached_input_tokens=_get(metadata, "cached_content_token_count"),
        reasoning_tokens=thoughts,
    )


def _candidate(response: Any) -> Any:
    candidates = _get(response, "candidates")
    if candidates is None:
        return None
    if not isinstance(candidates, list):
        raise ProviderResponseError("the server's answer could not be read: `candidates` is not a list")
    return candidates[0] if candidates else None


def _contents(candidate: Any, *, seen_calls: int = 0) -> list[Content]:
    found: list[Content] = []
    content = _get(candidate, "content")
    parts = _get(content, "parts") if content is not None else None
    for part in parts or ():
        text = _get(part, "text")
        call = _get(part, "function_call")
        if call is not None:
            call_id = _get(call, "id") or f"call_{uuid.uuid4().hex[:24]}"
            found.append(FunctionCallContent(call_id, str(_get(call, "name")), json.dumps(_get(call, "args") or {})))
            seen_calls += 1
        elif isinstance(text, str) and text:
            if _get(part, "thought"):
                signature = _get(part, "thought_signature")
                if isinstance(signature, bytes):
                    signature = base64.b64encode(signature).decode()
                found.append(ReasoningContent(text, signature))
            else:
                found.append(TextContent(text))
    return found


def _finish(candidate: Any, response: Any, has_calls: bool) -> FinishReason | None:
    feedback = _get(response, "prompt_feedback")
    if candidate is None and _get(feedback, "block_reason") is not None:
        return FinishReason.CONTENT_FILTER
    reason = _name(_get(candidate, "finish_reason")) if candidate is not None else None
    if reason == "STOP" and has_calls:
        return FinishReason.TOOL_CALLS
    return FINISH_REASONS.get(reason) if reason else None


def _blocked(response: Any, candidate: Any) -> list[Content]:
    """A refusal that says why a prompt or an answer was blocked (none for any other end)."""
    feedback = _get(response, "prompt_feedback")
    block = _name(_get(feedback, "block_reason"))
    if candidate is None and block is not None:
        message = _get(feedback, "block_reason_message")
        return [RefusalContent(f"the prompt was blocked ({block}){': ' + message if message else ''}")]
    return []


def response_from_wire(response: Any) -> ChatResponse[Any]:
    """Map a `GenerateContentResponse` (or its JSON) to a `ChatResponse` of the first candidate."""
    candidate = _candidate(response)
    contents = _contents(candidate) + _blocked(response, candidate)
    has_calls = any(isinstance(content, FunctionCallContent) for content in contents)
    return ChatResponse(
        ChatMessage("assistant", contents, raw_representation=response),
        usage=usage_from_wire(_get(response, "usage_metadata")),
        finish_reason=_finish(candidate, response, has_calls),
        response_id=_get(response, "response_id"),
        model_id=_get(response, "model_version"),
        raw_representation=response,
    )


class GeminiStreamReader:
    """Reads the chunks of `generate_content_stream`, each a partial `GenerateContentResponse`.

    Text and thoughts arrive as deltas, calls whole; `usage_metadata` is cumulative, so only the
    last one seen is reported, on the update that carries the finish reason.
    """

    def __init__(self) -> None:
        self.text: list[str] = []
        self.finished = False
        self._calls = 0
        self._usage: UsageDetails | None = None

    def read(self, chunk: Any) -> ChatResponseUpdate[Any] | None:
        """The update for one chunk (None when it carries nothing)."""
        candidate = _candidate(chunk)
        contents = _contents(candidate) + _blocked(chunk, candidate)
        self.text.extend(content.text for content in contents if isinstance(content, TextContent))
        self._calls += sum(isinstance(content, FunctionCallContent) for content in contents)
        usage = usage_from_wire(_get(chunk, "usage_metadata"))
        if usage is not None:
            self._usage = usage
        finish = _finish(candidate, chunk, self._calls > 0)
        if finish is None and not contents:
            return None
        self.finished = self.finished or finish is not None
        return ChatResponseUpdate(
            contents=contents,
            role="assistant",
            usage=self._usage if finish is not None else None,
            finish_reason=finish,
            response_id=_get(chunk, "response_id"),
            model_id=_get(chunk, "model_version"),
            raw_representation=chunk,
        )
