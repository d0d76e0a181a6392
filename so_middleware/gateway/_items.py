"""Responses input and output items as the library's chat messages (one message per item)."""

from __future__ import annotations

import json
import mimetypes
from typing import Any

from so_middleware import (
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    TextContent,
)

from ._errors import BadRequest

__all__ = ["as_listed_item", "to_message", "to_messages"]

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def to_messages(items: list[dict[str, Any]]) -> list[ChatMessage]:
    """The chat messages for a list of (already checked) input and output items. Calls that follow
    an assistant message join it: parallel calls are one assistant turn on Chat Completions."""
    messages: list[ChatMessage] = []
    for item in items:
        message = to_message(item, "input")
        if message is None:
            continue
        last = messages[-1] if messages else None
        if last is not None and last.role == "assistant" and _only_calls(message):
            messages[-1] = ChatMessage("assistant", [*last.contents, *message.contents])
        else:
            messages.append(message)
    return messages


def _only_calls(message: ChatMessage) -> bool:
    return message.role == "assistant" and all(isinstance(c, FunctionCallContent) for c in message.contents)


def to_message(item: dict[str, Any], where: str) -> ChatMessage | None:
    """One Responses item as a chat message (None for items with no chat equivalent, like reasoning)."""
    kind = item.get("type", "message")
    if kind == "message":
        role = _ROLES.get(item["role"]) if isinstance(item.get("role"), str) else None
        if role is None:
            raise BadRequest(f"{where}.role must be one of {', '.join(_ROLES)}", f"{where}.role")
        content = item.get("content")
        if isinstance(content, str):
            return ChatMessage(role, content)  # type: ignore[arg-type]
        if not isinstance(content, list):
            raise BadRequest(f"{where}.content must be a string or a list of content parts", f"{where}.content")
        return ChatMessage(role, [_part(p, f"{where}.content[{i}]") for i, p in enumerate(content)])  # type: ignore[arg-type]
    if kind == "function_call":
        call_id, name = item.get("call_id"), item.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise BadRequest(f"{where} needs string call_id and name", f"{where}.call_id")
        return ChatMessage("assistant", [FunctionCallContent(call_id, name, str(item.get("arguments") or ""))])
    if kind == "custom_tool_call":  # a custom tool is a function of one string parameter, `input`
        call_id, name, text = item.get("call_id"), item.get("name"), item.get("input")
        if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(text, str):
            raise BadRequest(f"{where} needs string call_id, name and input", f"{where}.call_id")
        return ChatMessage("assistant", [FunctionCallContent(call_id, name, json.dumps({"input": text}))])
    if kind in ("function_call_output", "custom_tool_call_output"):
        call_id, output = item.get("call_id"), item.get("output")
        if not isinstance(call_id, str) or output is None:
            raise BadRequest(f"{where} needs a string call_id and an output", f"{where}.call_id")
        return ChatMessage("tool", [FunctionResultContent(call_id, output)])
    if kind == "reasoning":
        return None
    raise BadRequest(f"{where}.type {kind!r} cannot be served by a Chat Completions backend", f"{where}.type")


def _part(part: Any, where: str) -> TextContent | DataContent | HostedFileContent:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
        return TextContent(part["text"])
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return TextContent(part["refusal"])
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        url = part["image_url"]
        media = url[5 : url.index(";")] if url.startswith("data:") and ";" in url else "image/*"
        return DataContent(url, media)
    if kind == "input_file":
        return _file(part, where)
    raise BadRequest(f"{where} is not a supported content part (input_text, output_text, input_image, input_file)",
                     where)  # fmt: skip


def _file(part: dict[str, Any], where: str) -> DataContent | HostedFileContent:
    """An `input_file` part: Chat Completions' `file` part takes `file_data` or `file_id` (a backend
    that reads no files says so itself); it has no place for a URL."""
    name = part.get("filename") if isinstance(part.get("filename"), str) else None
    if isinstance(part.get("file_id"), str):
        return HostedFileContent(part["file_id"], name=name)
    data = part.get("file_data")
    if not isinstance(data, str):
        raise BadRequest(f"{where} needs file_data or file_id (a Chat Completions backend takes no file_url)", where)
    if data.startswith("data:") and ";" in data:
        media = data[5 : data.index(";")]
    else:
        media = mimetypes.guess_type(name or "")[0] or "application/octet-stream"
    return DataContent(data, media, name=name)


def as_listed_item(item: dict[str, Any], item_id: str) -> dict[str, Any]:
    """An input item as `GET /v1/responses/{id}/input_items` lists it: `type`, an `id` of its own
    (`item_id` unless it came with one), a `status`, and a message's content as a list of parts."""
    listed: dict[str, Any] = {"id": item_id, "type": "message", **item}
    if listed["type"] in ("message", "function_call", "function_call_output", "custom_tool_call",
                          "custom_tool_call_output"):  # fmt: skip
        listed.setdefault("status", "completed")
    if listed["type"] == "message" and isinstance(listed.get("content"), str):
        kind = "output_text" if listed.get("role") == "assistant" else "input_text"
        part: dict[str, Any] = {"type": kind, "text": listed["content"]}
        listed["content"] = [{**part, "annotations": []} if kind == "output_text" else part]
    return listed
