"""Gemini `generateContent`, both directions: the call a client makes (`request_to_wire`, the SDK's
keyword arguments), the answer it reads (`response_from_wire`) and its streamed chunks
(`GeminiStreamReader`); the request body a server reads (`request_from_wire`) and the answer it
writes (`response_to_wire`). One table, `FINISH_REASONS`, reads and writes `finishReason`.

Pure functions and one small stateful stream reader: no client, no I/O. The answer side reads the
SDK's `GenerateContentResponse` by attribute (and the REST JSON by key, in either spelling the API
reads: `usageMetadata` or `usage_metadata`), so it needs no SDK import.

Request mapping (`google-genai`'s `models.generate_content(model=, contents=, config=)`):

| so_middleware                           | Gemini                                                          |
|-----------------------------------------|-----------------------------------------------------------------|
| `instructions` option + system messages | `config.system_instruction` (joined by a blank line)            |
| user / assistant turns                  | `contents` with role `user` / `model`                           |
| text / data contents                    | `{"text"}` / `{"inline_data": {"mime_type", "data"}}` parts      |
| `FunctionCallContent`                   | `{"function_call": {"id", "name", "args"}}` in a model turn, its `thought_signature` beside it |
| `FunctionResultContent`                 | `{"function_response": {"id", "name", "response"}}` in a user turn |
| `ReasoningContent`                      | a signed thought sent back as it came (`text`, `thought`, `thought_signature`); an unsigned one not |
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

Read back by a server (`request_from_wire`, the REST body ai.google.dev/api/generate-content
documents): `generationConfig` fields and top-level fields this table does not name
(`safetySettings`, `topK`, `thinkingConfig`, ...) go to `extra_body`, which the SDK takes in its
config and sends where they came from. A call id the API did not give (one this module made, to
link a result to its call) is not written back. A function declaration's `parameters` (the
OpenAPI form) is read as its schema and written back as `parametersJsonSchema`.
"""

from __future__ import annotations

import base64
import json
import re
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
)
from .common import WireError, chosen_model, field_of, function_fields, tool_choice_to_wire, tools_to_wire

__all__ = ["FINISH_REASONS", "GeminiStreamReader", "finish_reason_to_wire", "request_from_wire", "request_to_wire",
           "response_from_wire", "response_to_wire", "usage_from_wire", "usage_to_wire"]  # fmt: skip

FINISH_REASONS: Mapping[str, FinishReason] = {
    "STOP": FinishReason.STOP, "MAX_TOKENS": FinishReason.LENGTH,
    **dict.fromkeys(("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                     "IMAGE_PROHIBITED_CONTENT", "MODEL_ARMOR", "LANGUAGE"), FinishReason.CONTENT_FILTER),
}  # fmt: skip
"""Gemini's `finish_reason` names read as ours (any other name: no reason, the answer as it is).
Written back: the first name of each reason (`SAFETY` for a content filter), `STOP` for tool calls."""

# Gemini ends a turn of calls with STOP and has no refusal: a safety stop is the nearest
_WRITTEN_REASONS: Mapping[FinishReason, str] = {**{reason: name for name, reason in reversed(list(FINISH_REASONS.items()))},
                                                FinishReason.TOOL_CALLS: "STOP", FinishReason.REFUSAL: "SAFETY"}  # fmt: skip

_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
_MODES_READ = {mode: choice for choice, mode in _MODES.items()}
# The ids this module makes for calls the API gave none: never written back as the API's.
_MADE_ID = re.compile(r"call_[0-9a-f]{24}")
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
        # As a Content, not a string: the SDK would add `role: user` to a string's
        config["system_instruction"] = {"parts": [{"text": "\n\n".join(system)}]}
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
        elif isinstance(content, ReasoningContent):
            if content.signature and message.role == "assistant":  # the API only reads back thoughts it signed
                parts.append({"text": content.text, "thought": True, "thought_signature": content.signature})
        elif isinstance(content, FunctionCallContent):
            call = {**_id(content.call_id), "name": content.name, "args": content.parsed_arguments()}
            parts.append({"function_call": call, **_signed(content.signature, "thought_signature")})
        elif isinstance(content, FunctionResultContent):
            name = names.get(content.call_id)
            if name is None:
                raise UserError(f"a function result for call {content.call_id!r} follows no call of that id")
            response = {**_id(content.call_id), "name": name, "response": _result_to_wire(content)}
            parts.append({"function_response": response})
        elif isinstance(content, DataContent):
            parts.append(_data_part(content))
        elif isinstance(content, HostedFileContent):
            raise UserError(f"Gemini cannot carry a file by our id ({content.file_id}): send its data")
    return parts


def _id(call_id: str) -> dict[str, str]:
    """`{"id": call_id}`, or nothing for an id this module made (the API gave none)."""
    return {} if _MADE_ID.fullmatch(call_id) else {"id": call_id}


def _result_to_wire(content: FunctionResultContent) -> Any:
    """A function response's `response` (a JSON object): an object result as it is, any other
    under `output` (`error` for a failed call)."""
    value = content.result if isinstance(content.result, str) else json.loads(content.result_text)
    if content.is_error:
        return {"error": value}
    return dict(value) if isinstance(value, Mapping) else {"output": value}


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


# ---------------------------------------------------------------- requests, read by a server

# The `generationConfig` fields read into the options (any other goes to `extra_body`).
_CONFIG_READ = {"temperature": "temperature", "top_p": "top_p", "max_output_tokens": "max_tokens", "seed": "seed"}
_READ_CONFIG = frozenset({*_CONFIG_READ, "stop_sequences", "response_mime_type", "response_json_schema",
                          "response_schema"})  # fmt: skip
_READ_FIELDS = frozenset({"contents", "system_instruction", "generation_config", "tools", "tool_config", "model"})


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _fields(body: Any, where: str) -> dict[str, Any]:
    """A JSON object with its keys in the SDK's spelling (the API reads `topP` and `top_p` alike)."""
    if body is None:
        return {}
    if not isinstance(body, Mapping):
        raise WireError(f"{where} must be an object, got {type(body).__name__}", where)
    return {_snake(key): value for key, value in body.items()}


def request_from_wire(body: Mapping[str, Any], *, model: str | None = None) -> tuple[list[ChatMessage], ChatOptions]:
    """A `generateContent` request body as a server reads it (the model is in the URL: pass it):
    its contents as messages and its options, other fields in `extra_body` in the body's own
    spelling (the SDK's config takes them back). The inverse of `request_to_wire` for text, data,
    thoughts, calls and results; a part or tool of another kind, or a field of the wrong type, is a
    `WireError` naming it.

    Example: `request_from_wire({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}, model="m")`
    gives `([ChatMessage("user", "Hi")], ChatOptions(model="m"))`."""
    fields = _fields(body, "body")
    wire = field_of(fields, "contents", list)
    if not wire:
        raise WireError("contents must be a non-empty list of contents", "contents")
    calls: list[FunctionCallContent] = []
    messages = [_content_from_wire(content, f"contents[{i}]", calls) for i, content in enumerate(wire)]
    options: dict[str, Any] = {"model": field_of(fields, "model", str) or model}
    system = _fields(fields.get("system_instruction"), "systemInstruction")
    if system:
        texts = [part.get("text") for part in system.get("parts") or () if isinstance(part, Mapping)]
        options["instructions"] = "".join(text for text in texts if isinstance(text, str)) or None
    config = _fields(fields.get("generation_config"), "generationConfig")
    for theirs, ours in _CONFIG_READ.items():
        options[ours] = field_of(config, theirs, (int, float) if ours in ("temperature", "top_p") else int)
    options["stop"] = field_of(config, "stop_sequences", list)
    options["response_format"] = _format_from_wire(config)
    tools = field_of(fields, "tools", list)
    if tools:
        options["tools"] = [_tool_from_wire(d, f"tools[{i}]") for i, tool in enumerate(tools) for d in _decls(tool, i)]
    options["tool_choice"] = _choice_from_wire(_fields(fields.get("tool_config"), "toolConfig"))
    extra = {key: value for key, value in body.items() if _snake(key) not in _READ_FIELDS}
    config_body = body.get("generationConfig", body.get("generation_config")) or {}
    extra.update({key: value for key, value in config_body.items() if _snake(key) not in _READ_CONFIG})
    if options["response_format"] is None:  # a MIME type other than JSON (an enum, plain text) goes as it came
        extra.update({key: value for key, value in config_body.items() if _snake(key).startswith("response_")})
    options["extra_body"] = extra or None
    return messages, ChatOptions(**{k: v for k, v in options.items() if v is not None})


def _format_from_wire(config: Mapping[str, Any]) -> ResponseFormat | None:
    if config.get("response_mime_type") != "application/json":
        return None
    schema = config.get("response_json_schema") or config.get("response_schema")
    if schema is None:
        return ResponseFormat.json_object()
    if not isinstance(schema, Mapping):
        raise WireError("generationConfig.responseJsonSchema must be an object", "generationConfig.responseJsonSchema")
    return ResponseFormat.json_schema(schema)


def _decls(tool: Any, index: int) -> list[Any]:
    fields = _fields(tool, f"tools[{index}]")
    if set(fields) != {"function_declarations"} or not isinstance(fields["function_declarations"], list):
        raise WireError(f"tools[{index}]: only function declarations are read", f"tools[{index}]")
    return list(fields["function_declarations"])


def _tool_from_wire(declaration: Any, where: str) -> FunctionTool:
    fields = _fields(declaration, f"{where}.functionDeclarations")
    if not isinstance(fields.get("name"), str):
        raise WireError(f"{where}: a function declaration needs a string name", f"{where}.functionDeclarations.name")
    schema = fields.get("parameters_json_schema") or fields.get("parameters") or {"type": "object", "properties": {}}
    return FunctionTool(fields["name"], schema, fields.get("description"))


def _choice_from_wire(tool_config: Mapping[str, Any]) -> str | ForcedTool | None:
    calling = _fields(tool_config.get("function_calling_config"), "toolConfig.functionCallingConfig")
    if not calling:
        return None
    mode, names = calling.get("mode"), calling.get("allowed_function_names")
    if mode == "ANY" and isinstance(names, list) and len(names) == 1 and isinstance(names[0], str):
        return ForcedTool(names[0])
    if mode not in _MODES_READ or names:
        param = "toolConfig.functionCallingConfig"
        raise WireError(f"{param}: the mode must be AUTO, ANY or NONE (ANY with at most one allowed name)", param)
    return _MODES_READ[mode]


def _content_from_wire(content: Any, where: str, calls: list[FunctionCallContent]) -> ChatMessage:
    """One `Content` as a message; `calls` (the calls read so far) links a result without an id."""
    fields = _fields(content, where)
    role = fields.get("role") or "user"
    if role not in ("user", "model") or not isinstance(fields.get("parts"), list):
        raise WireError(f"{where} must be a content of role user or model with a list of parts", f"{where}.role")
    contents: list[Content] = []
    for i, part in enumerate(fields["parts"]):
        contents.append(_part_from_wire(_fields(part, f"{where}.parts[{i}]"), f"{where}.parts[{i}]", calls))
    return ChatMessage("assistant" if role == "model" else "user", contents)


def _part_from_wire(part: Mapping[str, Any], where: str, calls: list[FunctionCallContent]) -> Content:
    if isinstance(part.get("text"), str):
        if part.get("thought"):
            return ReasoningContent(part["text"], part.get("thought_signature"))
        return TextContent(part["text"])
    if isinstance(part.get("function_call"), Mapping):
        call = _fields(part["function_call"], f"{where}.functionCall")
        made = FunctionCallContent(
            call.get("id") or _made_id(),
            str(call.get("name")),
            json.dumps(call.get("args") or {}),
            signature=_signature(part),
        )
        calls.append(made)
        return made
    if isinstance(part.get("function_response"), Mapping):
        result = _fields(part["function_response"], f"{where}.functionResponse")
        call_id = result.get("id") or next((c.call_id for c in reversed(calls) if c.name == result.get("name")), None)
        if call_id is None:
            raise WireError(f"{where}: a function response follows no call of its name", f"{where}.functionResponse")
        return _result_from_wire(call_id, result.get("response"))
    if isinstance(part.get("inline_data"), Mapping):
        data = _fields(part["inline_data"], f"{where}.inlineData")
        # The API reads bytes in either base64 alphabet; the SDK writes the URL-safe one
        return DataContent(base64.b64decode(data.get("data") or "", altchars=b"-_"), str(data.get("mime_type")))
    if isinstance(part.get("file_data"), Mapping):
        data = _fields(part["file_data"], f"{where}.fileData")
        return DataContent(str(data.get("file_uri")), str(data.get("mime_type")))
    raise WireError(f"{where}: only text, data, call and response parts are read", where)


def _result_from_wire(call_id: str, response: Any) -> FunctionResultContent:
    """The inverse of `_result_to_wire`: `output`/`error` alone unwrapped, any other object as it is."""
    if isinstance(response, Mapping) and response.keys() == {"error"}:
        return FunctionResultContent(call_id, response["error"], is_error=True)
    if isinstance(response, Mapping) and response.keys() == {"output"} and not isinstance(response["output"], Mapping):
        return FunctionResultContent(call_id, response["output"])
    return FunctionResultContent(call_id, response)


def _made_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


# ---------------------------------------------------------------- answers


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


_CAMEL: dict[str, str] = {}  # snake name -> the REST JSON's camelCase (made once per name)


_MAPPINGS: dict[type, bool] = {dict: True}  # whether a type is a Mapping: an ABC check once per type, not per field


def _get(value: Any, name: str) -> Any:
    """A field by its SDK (snake_case) name: an attribute, or a JSON key in either spelling."""
    kind = type(value)
    is_mapping = _MAPPINGS.get(kind)
    if is_mapping is None:
        is_mapping = _MAPPINGS.setdefault(kind, isinstance(value, Mapping))
    if is_mapping:
        found = value.get(name)
        if found is None:
            camel = _CAMEL.get(name) or _CAMEL.setdefault(name, _camel(name))
            found = value.get(camel)
        return found
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
            call_id = _get(call, "id") or _made_id()
            arguments = json.dumps(_get(call, "args") or {})
            found.append(FunctionCallContent(call_id, str(_get(call, "name")), arguments, signature=_signature(part)))
            seen_calls += 1
        elif isinstance(text, str) and text:
            if _get(part, "thought"):
                found.append(ReasoningContent(text, _signature(part)))
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


def finish_reason_to_wire(reason: FinishReason | None) -> str | None:
    """`finishReason` as a server writes it (`FINISH_REASONS` read backwards)."""
    return _WRITTEN_REASONS.get(reason) if reason is not None else None


def usage_to_wire(usage: UsageDetails) -> dict[str, Any]:
    """`usageMetadata` as a server writes it (the inverse of `usage_from_wire`: thoughts apart)."""
    answer = None if usage.output_tokens is None else usage.output_tokens - (usage.reasoning_tokens or 0)
    counts = (("promptTokenCount", usage.input_tokens), ("candidatesTokenCount", answer),
              ("totalTokenCount", usage.total_tokens), ("cachedContentTokenCount", usage.cached_input_tokens),
              ("thoughtsTokenCount", usage.reasoning_tokens))  # fmt: skip
    wire = {name: count for name, count in counts if count is not None}
    return wire


def _part_to_wire(content: Content) -> dict[str, Any] | None:
    if isinstance(content, ReasoningContent):
        signature = {"thoughtSignature": content.signature} if content.signature else {}
        return {"text": content.text, "thought": True, **signature}
    if isinstance(content, TextContent):
        return {"text": content.text}
    if isinstance(content, FunctionCallContent):
        call = {**_id(content.call_id), "name": content.name, "args": content.parsed_arguments()}
        return {"functionCall": call, **_signed(content.signature, "thoughtSignature")}
    return None


def _signature(part: Any) -> str | None:
    """A part's thought signature as text (the SDK's objects hold bytes, JSON holds base64)."""
    signature = _get(part, "thought_signature")
    if isinstance(signature, bytes):
        return base64.b64encode(signature).decode()
    return signature if isinstance(signature, str) else None


def _signed(signature: str | None, key: str) -> dict[str, str]:
    return {key: signature} if signature else {}


def response_to_wire(response: ChatResponse[Any]) -> dict[str, Any]:
    """A `ChatResponse` as the `GenerateContentResponse` a server answers (REST JSON): one
    candidate with the thoughts, text and calls in the answer's order and the finish reason;
    `usageMetadata`, `modelVersion`, `responseId` where known. What `response_from_wire` reads
    back. An answer that is only a refusal is a prompt blocked before any candidate (`OTHER`, the
    refusal as its message)."""
    contents = [c for m in response.messages for c in m.contents]
    parts = [part for part in map(_part_to_wire, contents) if part is not None]
    body: dict[str, Any] = {}
    if parts or not response.refusal:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        reason = finish_reason_to_wire(response.finish_reason)
        if reason is not None:
            candidate["finishReason"] = reason
        body["candidates"] = [candidate]
    else:
        body["promptFeedback"] = {"blockReason": "OTHER", "blockReasonMessage": response.refusal}
    if response.usage is not None:
        body["usageMetadata"] = usage_to_wire(response.usage)
    if response.model_id is not None:
        body["modelVersion"] = response.model_id
    if response.response_id is not None:
        body["responseId"] = response.response_id
    return body


class GeminiStreamReader:
    """Reads the chunks of `generate_content_stream`, each a partial `GenerateContentResponse`.

    Text and thoughts arrive as deltas, calls whole; `usage_metadata` is cumulative within a
    request, so only the last one seen is reported, on the update that carries the finish reason
    (with the counts of the requests before it, `next_hop`).
    """

    def __init__(self) -> None:
        self.text: list[str] = []
        self.finished = False
        self._calls = 0
        self._usage: UsageDetails | None = None
        self._before: UsageDetails | None = None

    def next_hop(self) -> None:
        """The chunks that follow come from a new request that continues this answer: its counts
        start again, and the counts seen so far are added to them."""
        self._before = self._usage

    def read(self, chunk: Any) -> ChatResponseUpdate[Any] | None:
        """The update for one chunk (None when it carries nothing)."""
        candidate = _candidate(chunk)
        contents = _contents(candidate) + _blocked(chunk, candidate)
        for content in contents:  # a loop, not two generators: this runs once per chunk
            if type(content) is TextContent:
                self.text.append(content.text)
            elif type(content) is FunctionCallContent:
                self._calls += 1
        usage = usage_from_wire(_get(chunk, "usage_metadata"))
        if usage is not None:
            self._usage = usage if self._before is None else self._before + usage
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
