"""The Converse request read by a server: `converse`'s keyword arguments as our messages and
options, the inverse of `request_to_wire`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core import (
    ChatMessage,
    ChatOptions,
    Content,
    DataContent,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ReasoningContent,
    ResponseFormat,
    Role,
    TextContent,
)
from ..common import WireError, field_of

__all__ = ["request_from_wire"]

_READ_FIELDS = frozenset({"modelId", "messages", "system", "inferenceConfig", "toolConfig", "outputConfig"})
_INFERENCE = (("maxTokens", "max_tokens", int), ("temperature", "temperature", (int, float)),
              ("topP", "top_p", (int, float)))  # fmt: skip
_MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


def request_from_wire(body: Mapping[str, Any]) -> tuple[list[ChatMessage], ChatOptions]:
    """`converse`'s keyword arguments (a `ConverseRequest`) as a server reads them: the system
    blocks and turns as messages, the configs as options (other fields in `extra_body`). The
    inverse of `request_to_wire`; a field it cannot read is a `WireError` naming it.

    Example: `request_from_wire({"modelId": "m", "messages": [{"role": "user", "content": [{"text": "Hi"}]}]})`
    gives `([ChatMessage("user", "Hi")], ChatOptions(model="m"))`."""
    turns = field_of(body, "messages", list)
    if not turns:
        raise WireError("messages must be a non-empty list of turns", "messages")
    extra = {key: value for key, value in body.items() if key not in _READ_FIELDS}
    messages: list[ChatMessage] = []
    system = field_of(body, "system", list) or []
    if all(isinstance(block, Mapping) and block.keys() == {"text"} for block in system):
        messages.extend(ChatMessage("system", block["text"]) for block in system)
    else:  # cache points, guard content: sent back as they came
        extra["system"] = system
    for i, turn in enumerate(turns):
        messages.extend(_turn_from_wire(turn, f"messages[{i}]"))
    options: dict[str, Any] = {"model": field_of(body, "modelId", str)}
    inference = dict(field_of(body, "inferenceConfig", dict) or {})
    for theirs, ours, kinds in _INFERENCE:
        options[ours] = field_of(inference, theirs, kinds)
    options["stop"] = field_of(inference, "stopSequences", list)
    if inference.keys() - {"maxTokens", "temperature", "topP", "stopSequences"}:
        raise WireError("inferenceConfig takes maxTokens, temperature, topP and stopSequences", "inferenceConfig")
    tool_config = field_of(body, "toolConfig", dict)
    if tool_config is not None:
        tools = field_of(tool_config, "tools", list) or []
        options["tools"] = [_tool_from_wire(tool, f"toolConfig.tools[{i}]") for i, tool in enumerate(tools)]
        options["tool_choice"] = _choice_from_wire(tool_config.get("toolChoice"))
    output = field_of(body, "outputConfig", dict)
    if output is not None:
        text_format = field_of(output, "textFormat", dict)
        if output.keys() == {"textFormat"} and text_format is not None and text_format.get("type") == "json_schema":
            options["response_format"] = _format_from_wire(text_format)
        else:
            extra["outputConfig"] = output
    options["extra_body"] = extra or None
    return messages, ChatOptions(**{k: v for k, v in options.items() if v is not None})


def _turn_from_wire(turn: Any, where: str) -> list[ChatMessage]:
    """One turn; a user turn's tool results are a tool message of their own (`request_to_wire`
    joins them back into one user turn)."""
    role: Role | None = turn.get("role") if isinstance(turn, Mapping) else None
    if role != "user" and role != "assistant":
        raise WireError(f"{where} must be a turn of role user or assistant", f"{where}.role")
    blocks = field_of(turn, "content", list) or []
    messages: list[ChatMessage] = []
    for i, block in enumerate(blocks):
        content = _block_from_wire(block, f"{where}.content[{i}]")
        speaker: Role = "tool" if isinstance(content, FunctionResultContent) else role
        if messages and messages[-1].role == speaker:
            messages[-1].contents.append(content)
        else:
            messages.append(ChatMessage(speaker, [content]))
    return messages


def _block_from_wire(block: Any, where: str) -> Content:
    kind = next(iter(block), None) if isinstance(block, Mapping) and len(block) == 1 else None
    value = block[kind] if kind is not None else None
    if kind == "text" and isinstance(value, str):
        return TextContent(value)
    if kind == "toolUse" and isinstance(value, Mapping):
        return FunctionCallContent(
            str(value.get("toolUseId")), str(value.get("name")), json.dumps(value.get("input") or {})
        )
    if kind == "toolResult" and isinstance(value, Mapping):
        parts = value.get("content") or []
        if not all(isinstance(part, Mapping) and isinstance(part.get("text"), str) for part in parts):
            raise WireError(f"{where}.toolResult.content must be text blocks", f"{where}.toolResult.content")
        text = "".join(part["text"] for part in parts)
        return FunctionResultContent(str(value.get("toolUseId")), text, is_error=value.get("status") == "error")
    if kind == "reasoningContent" and isinstance(value, Mapping) and isinstance(value.get("reasoningText"), Mapping):
        reasoning = value["reasoningText"]
        return ReasoningContent(str(reasoning.get("text", "")), reasoning.get("signature"))
    if kind in ("image", "document") and isinstance(value, Mapping):
        return _data_from_wire(kind, value, where)
    raise WireError(f"{where} must be a text, image, document, toolUse, toolResult or reasoningContent block", where)


def _data_from_wire(kind: str, value: Mapping[str, Any], where: str) -> DataContent:
    source = value.get("source")
    media_type = _MEDIA_TYPES.get(value.get("format", "")) if kind == "image" else None
    if kind == "document" and value.get("format") == "pdf":
        media_type = "application/pdf"
    if media_type is None:
        raise WireError(f"{where}.{kind}.format must be png, jpeg, gif, webp or pdf", f"{where}.{kind}.format")
    if isinstance(source, Mapping) and isinstance(source.get("bytes"), bytes):
        return DataContent(source["bytes"], media_type)
    location = source.get("s3Location") if isinstance(source, Mapping) else None
    if isinstance(location, Mapping) and isinstance(location.get("uri"), str):
        return DataContent(location["uri"], media_type)
    raise WireError(f"{where}.{kind}.source must hold bytes or an s3Location", f"{where}.{kind}.source")


def _tool_from_wire(tool: Any, where: str) -> FunctionTool:
    spec = tool.get("toolSpec") if isinstance(tool, Mapping) else None
    schema = spec.get("inputSchema") if isinstance(spec, Mapping) else None
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str) or not isinstance(schema, Mapping):
        raise WireError(f"{where} must be a toolSpec with a name and an inputSchema", f"{where}.toolSpec")
    return FunctionTool(spec["name"], schema.get("json") or {}, spec.get("description"), spec.get("strict"))


def _choice_from_wire(choice: Any) -> Any:
    if choice is None:
        return None
    if isinstance(choice, Mapping) and "auto" in choice:
        return "auto"
    if isinstance(choice, Mapping) and "any" in choice:
        return "required"
    if (
        isinstance(choice, Mapping)
        and isinstance(choice.get("tool"), Mapping)
        and isinstance(choice["tool"].get("name"), str)
    ):
        return ForcedTool(choice["tool"]["name"])
    raise WireError("toolConfig.toolChoice must be auto, any or tool", "toolConfig.toolChoice")


def _format_from_wire(text_format: Mapping[str, Any]) -> ResponseFormat:
    definition = (text_format.get("structure") or {}).get("jsonSchema")
    schema = definition.get("schema") if isinstance(definition, Mapping) else None
    try:
        parsed = json.loads(schema) if isinstance(schema, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not isinstance(definition, Mapping):
        where = "outputConfig.textFormat.structure.jsonSchema.schema"
        raise WireError(f"{where} must be a JSON schema in a string", where)
    return ResponseFormat.json_schema(
        parsed, name=definition.get("name") or "response", description=definition.get("description")
    )
