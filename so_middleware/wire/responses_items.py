"""Responses API items, both directions: the library's messages as the input items a client sends,
input and output items as a server reads them back into messages, output items as a client reads
them, and the listing form of `GET /v1/responses/{id}/input_items`.

| library                   | Responses item                                                  |
|---------------------------|-----------------------------------------------------------------|
| user / assistant text     | `{"type": "message", "role", "content"}` (string or parts)      |
| `DataContent`             | `input_image` / `input_text` / `input_file` parts               |
| `HostedFileContent`       | an `input_file` part with `file_id`                             |
| `FunctionCallContent`     | `function_call` (or `custom_tool_call`: arguments `{"input": text}`) |
| `FunctionResultContent`   | `function_call_output` (or `custom_tool_call_output`)           |
| user text (read only)     | an output with a `name` and no `call_id`, answering no call     |
| `ReasoningContent`        | `reasoning`: read from output; sent nowhere (it needs server ids) |
"""

from __future__ import annotations

import base64
import json
import mimetypes
import re
import urllib.parse
from typing import Any

from ..core import (
    ChatMessage,
    Content,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    ReasoningContent,
    RefusalContent,
    TextContent,
    UserError,
)
from .common import WireError, data_uri

__all__ = [
    "as_listed_item",
    "call_item",
    "custom_input",
    "is_reference",
    "item_to_message",
    "items_from_wire",
    "items_to_messages",
    "message_item",
    "message_to_items",
    "output_contents",
    "reasoning_item",
    "text_part",
]

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_STATUS_KINDS = ("message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output")


# ---------------------------------------------------------------- what a client sends


def message_to_items(message: ChatMessage) -> list[dict[str, Any]]:
    """A (non-system) message as input items: its calls and results as items of their own, its
    other contents as one message item around them."""
    items: list[dict[str, Any]] = []
    parts: list[Content] = []

    def flush() -> None:
        if parts:
            items.append(_message_item(message.role, list(parts)))
            parts.clear()

    for content in message.contents:
        if isinstance(content, FunctionCallContent):
            flush()
            items.append({"type": "function_call", "call_id": content.call_id, "name": content.name,
                          "arguments": content.arguments or "{}"})  # fmt: skip
        elif isinstance(content, FunctionResultContent):
            flush()
            output = ("Error: " if content.is_error else "") + content.result_text
            items.append({"type": "function_call_output", "call_id": content.call_id, "output": output})
        elif not isinstance(content, ReasoningContent):  # reasoning needs server ids to go back
            parts.append(content)
    flush()
    return items


def _message_item(role: str, parts: list[Content]) -> dict[str, Any]:
    role = "user" if role == "tool" else role
    if all(isinstance(p, (TextContent, RefusalContent)) for p in parts):
        text = "".join(p.text if isinstance(p, TextContent) else p.refusal for p in parts)  # type: ignore[union-attr]
        # "type" is optional for the API but llama-server needs it to tell a message from other items.
        return {"type": "message", "role": role, "content": text}
    if role == "assistant":
        raise UserError("an assistant message on the Responses API can carry text only, not data")
    return {"type": "message", "role": role, "content": [_part_to_wire(p) for p in parts]}


def _part_to_wire(content: Content) -> dict[str, Any]:
    if isinstance(content, TextContent):
        return {"type": "input_text", "text": content.text}
    if isinstance(content, HostedFileContent):
        return {"type": "input_file", "file_id": content.file_id}
    if isinstance(content, DataContent):
        if content.media_type.startswith("image/"):
            data = content.data
            url = data if isinstance(data, str) and data.startswith(("http", "data:")) else data_uri(content)
            return {"type": "input_image", "image_url": url, "detail": "auto"}
        if content.media_type == "application/json" or content.media_type.startswith("text/"):
            text = content.data if isinstance(content.data, str) else content.data.decode("utf-8", "replace")
            return {"type": "input_text", "text": text}
        if content.media_type == "application/pdf":
            return {"type": "input_file", "filename": content.name or "document.pdf", "file_data": data_uri(content)}
    raise UserError(f"the Responses API cannot carry {type(content).__name__} ({getattr(content, 'media_type', '')})")


# ---------------------------------------------------------------- what a server reads


def items_to_messages(items: list[dict[str, Any]]) -> list[ChatMessage]:
    """The chat messages for a list of input and output items. Calls that follow an assistant
    message join it: parallel calls are one assistant turn on Chat Completions. An output with no
    `call_id` answers the one unanswered call of its name, else becomes a user message placed
    after the results of the calls still open (see `_uncalled_output`)."""
    messages: list[ChatMessage] = []
    unanswered: dict[str, tuple[Any, Any]] = {}  # call_id -> (name, namespace), of the last assistant turn
    held: list[ChatMessage] = []  # uncalled outputs, waiting for the results of the calls still open
    for item in items:
        if _is_output(item) and item.get("call_id") is None:
            item = {**item, "call_id": _answered_call(item, unanswered)}
        message = item_to_message(item, "input")
        if message is None:
            continue
        last = messages[-1] if messages else None
        if last is not None and last.role == "assistant" and _only_calls(message):
            messages[-1] = ChatMessage("assistant", [*last.contents, *message.contents])
        elif _is_output(item) and item["call_id"] is None and unanswered:
            held.append(message)  # a user message between a call and its result breaks the turn
        else:
            if message.role != "tool":  # a new turn: the calls left open are answered by nothing later
                unanswered.clear()
                messages.extend(held)
                held.clear()
            messages.append(message)
        call_id = item.get("call_id")
        if not isinstance(call_id, str):  # an output held as a user message, or no call at all
            pass
        elif item.get("type") in ("function_call", "custom_tool_call"):
            unanswered[call_id] = (item["name"], item.get("namespace"))
        elif _is_output(item):
            unanswered.pop(call_id, None)
        if held and not unanswered:
            messages.extend(held)
            held.clear()
    return messages + held


def _is_output(item: dict[str, Any]) -> bool:
    return item.get("type") in ("function_call_output", "custom_tool_call_output")


def _answered_call(output: dict[str, Any], unanswered: dict[str, tuple[Any, Any]]) -> str | None:
    """The id of the one unanswered call of the output's name (and namespace, when it has one)."""
    name, namespace = output.get("name"), output.get("namespace")
    matches = [call_id for call_id, call in unanswered.items() if call[0] == name and namespace in (None, call[1])]
    return matches[0] if len(matches) == 1 else None


def _only_calls(message: ChatMessage) -> bool:
    return message.role == "assistant" and all(isinstance(c, FunctionCallContent) for c in message.contents)


_PHASES = (None, "commentary", "final_answer")  # an assistant message's `phase`: unset, or one of the spec's two


def items_from_wire(value: Any) -> list[dict[str, Any]]:
    """A request's `input` as a server reads it: its items, each checked (a string is one user
    message; an `item_reference` is left for the server to resolve, its `id` checked). A value that
    cannot be read raises `WireError` naming it (`input`, `input[2].role`).

    Example: `items_from_wire("Hi") == [{"type": "message", "role": "user", "content": "Hi"}]`."""
    if value is None:
        raise WireError("input is required", "input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise WireError("input must be a string or a list of input items", "input")
    for index, item in enumerate(value):
        if not is_reference(item):
            item_to_message(item, f"input[{index}]")  # checked now: a bad item is refused before any call
        elif not isinstance(item.get("id"), str):
            raise WireError(f"input[{index}].id must be a string", f"input[{index}].id")
    return list(value)


def is_reference(item: dict[str, Any]) -> bool:
    """An `item_reference` (its `type` may be left out or null, the spec says: then an id and no role)."""
    kind = item.get("type")
    return kind == "item_reference" or (kind is None and "id" in item and "role" not in item)


def item_to_message(item: dict[str, Any], where: str) -> ChatMessage | None:
    """One item as a chat message (None for a reasoning item: a chat backend has no place for it);
    an item that cannot be read raises `WireError` naming the field (`where` is its path)."""
    kind = item.get("type", "message")
    if kind == "message":
        role = _ROLES.get(item["role"]) if isinstance(item.get("role"), str) else None
        if role is None:
            raise WireError(f"{where}.role must be one of {', '.join(_ROLES)}", f"{where}.role")
        if item.get("phase") not in _PHASES:  # a label a Chat Completions backend has no place for: checked, not sent
            raise WireError(f"{where}.phase must be one of {', '.join(map(str, _PHASES[1:]))}", f"{where}.phase")
        content = item.get("content")
        if isinstance(content, str):
            return ChatMessage(role, content)  # type: ignore[arg-type]
        if not isinstance(content, list):
            raise WireError(f"{where}.content must be a string or a list of content parts", f"{where}.content")
        return ChatMessage(role, [_part(p, f"{where}.content[{i}]") for i, p in enumerate(content)])  # type: ignore[arg-type]
    if kind == "function_call":
        call_id, name = item.get("call_id"), item.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise WireError(f"{where} needs string call_id and name", f"{where}.call_id")
        return ChatMessage("assistant", [FunctionCallContent(call_id, name, str(item.get("arguments") or ""))])
    if kind == "custom_tool_call":  # a custom tool is a function of one string parameter, `input`
        call_id, name, text = item.get("call_id"), item.get("name"), item.get("input")
        if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(text, str):
            raise WireError(f"{where} needs string call_id, name and input", f"{where}.call_id")
        return ChatMessage("assistant", [FunctionCallContent(call_id, name, json.dumps({"input": text}))])
    if kind in ("function_call_output", "custom_tool_call_output"):
        call_id, output = item.get("call_id"), item.get("output")
        if call_id is None and isinstance(item.get("name"), str) and output is not None:
            return _uncalled_output(item, where)
        if not isinstance(call_id, str) or output is None:
            raise WireError(f"{where} needs a string call_id and an output", f"{where}.call_id")
        for index, part in enumerate(output if isinstance(output, list) else []):
            if isinstance(part, dict) and (part.get("type") == "input_file" or part.get("file_url") is not None):
                _file(part, f"{where}.output[{index}]")
        return ChatMessage("tool", [FunctionResultContent(call_id, output)])
    if kind == "reasoning":
        return None
    raise WireError(f"{where}.type {kind!r} cannot be served by a Chat Completions backend", f"{where}.type")


def _uncalled_output(item: dict[str, Any], where: str) -> ChatMessage:
    """An output item with a `name` and no `call_id`, as Codex CLI sends its goal's objective
    (`{"type": "function_call_output", "name": "goal_objective", "namespace": "agent", "output": ...}`)
    after the result of its `create_goal` call. The Open Responses spec requires `call_id` of an
    output and lets an implementor extend a schema with fields of its own; a Chat Completions tool
    message must answer a call of the assistant message before it, so an output that answers none
    is read as what it is, text from the client for the model: a user message, its name first."""
    label = ".".join(str(item[key]) for key in ("namespace", "name") if isinstance(item.get(key), str))
    output = item["output"]
    if isinstance(output, str):
        return ChatMessage("user", f"{label}: {output}")
    if not isinstance(output, list):
        raise WireError(f"{where}.output must be a string or a list of content parts", f"{where}.output")
    parts = [_part(p, f"{where}.output[{i}]") for i, p in enumerate(output)]
    return ChatMessage("user", [TextContent(f"{label}:"), *parts])


def _part(part: Any, where: str) -> TextContent | DataContent | HostedFileContent:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
        return TextContent(part["text"])
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return TextContent(part["refusal"])
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        url = part["image_url"]
        if _is_data_url(url):
            data, media = _decoded(url, f"{where}.image_url")
            if media is not None and not media.startswith("image/"):  # else it would go on as another kind of part
                raise WireError(f"{where}.image_url is a data URL of {media}, not of an image", f"{where}.image_url")
            return DataContent(data, media or "image/*")
        if url[:7].lower() != "http://" and url[:8].lower() != "https://":  # file:, ftp:, a bare path...
            raise WireError(f"{where}.image_url must be an http(s) URL or a data URL", f"{where}.image_url")
        return DataContent(url, "image/*")  # a URL the backend fetches, if it fetches any
    if kind == "input_file":
        return _file(part, where)
    raise WireError(f"{where} is not a supported content part (input_text, output_text, input_image, input_file)",
                    where)  # fmt: skip


def _file(part: dict[str, Any], where: str) -> DataContent | HostedFileContent:
    """An `input_file` part: Chat Completions' `file` part takes `file_data` or `file_id` (a backend
    that reads no files says so itself). A `file_url` is refused wherever it is: the gateway fetches
    no URL for a client, and the backend has no place for one.

    `file_data` is decoded here, once, into the file's bytes (a data URL, any case of its scheme,
    base64 or percent-encoded, or bare base64): the Chat Completions side encodes those bytes once
    more in the one form it sends, so the backend gets the client's file byte for byte."""
    if part.get("file_url") is not None:  # null is what an SDK writes for a field left unset
        raise WireError(f"{where}.file_url: the gateway fetches no URL for a client; send the file as file_data "
                        "or file_id", f"{where}.file_url")  # fmt: skip
    name = part.get("filename") if isinstance(part.get("filename"), str) else None
    if isinstance(part.get("file_id"), str):
        return HostedFileContent(part["file_id"], name=name)
    text = part.get("file_data")
    if not isinstance(text, str):
        raise WireError(f"{where} needs file_data or file_id", where)
    data, media = _decoded(text, f"{where}.file_data")
    if media is None:  # no type given: the file name's, else RFC 2397's default for a data URL
        bare = "application/octet-stream" if not _is_data_url(text) else "text/plain"
        media = mimetypes.guess_type(name or "")[0] or bare
    return DataContent(data, media, name=name)


_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")  # RFC 6838's names


def _is_data_url(text: str) -> bool:
    return text[:5].lower() == "data:"  # a URL's scheme is case-insensitive (RFC 3986)


def _decoded(text: str, where: str) -> tuple[bytes, str | None]:
    """The bytes of a data URL (RFC 2397) or of bare base64, and the media type the URL names (None
    when it names none); text that is neither is a `WireError` naming `where`."""
    media: str | None = None
    payload, is_base64 = text, True
    if _is_data_url(text):
        header, comma, payload = text[5:].partition(",")
        if not comma:
            raise WireError(f"{where} is not a data URL: no ',' before the data", where)
        params = [p.strip() for p in header.split(";")]
        is_base64 = len(params) > 1 and params[-1].lower() == "base64"
        media = params[0].lower() or None
        if media is not None and not _MEDIA_TYPE.fullmatch(media):  # it is written into the data URL sent on
            raise WireError(f"{where} names no media type ({params[0][:40]!r}): type/subtype is expected", where)
    if not is_base64:
        return urllib.parse.unquote_to_bytes(payload), media
    try:  # strict: another alphabet or a stray character is refused, not skipped; line breaks are allowed
        return base64.b64decode(re.sub(r"[\t\n\r ]", "", payload), validate=True), media
    except ValueError:
        raise WireError(f"{where} is not valid base64", where) from None


def as_listed_item(item: dict[str, Any], item_id: str) -> dict[str, Any]:
    """An input item as `GET /v1/responses/{id}/input_items` lists it: `type`, an `id` of its own
    (`item_id` unless it came with one), a `status`, a message's content as a list of parts, and the
    fields a listed part or item always has (an image's `detail`, a text's `annotations`, a reasoning
    item's `summary`) where the request left them out."""
    listed: dict[str, Any] = {"id": item_id, "type": "message", **item}
    if listed["type"] in _STATUS_KINDS:
        listed.setdefault("status", "completed")
    if listed["type"] == "reasoning":
        listed.setdefault("summary", [])
    if listed["type"] == "message" and isinstance(listed.get("content"), str):
        kind = "output_text" if listed.get("role") == "assistant" else "input_text"
        listed["content"] = [{"type": kind, "text": listed["content"]}]
    if listed["type"] == "message" and isinstance(listed.get("content"), list):
        listed["content"] = [_listed_part(part) for part in listed["content"]]
    return listed


def _listed_part(part: Any) -> Any:
    if isinstance(part, dict) and part.get("type") == "input_image":
        return {**part, "detail": part.get("detail") or "auto"}
    if isinstance(part, dict) and part.get("type") == "output_text":
        return {**part, "annotations": part.get("annotations") or []}
    return part


# ---------------------------------------------------------------- output, as a server writes it


def message_item(item_id: str) -> dict[str, Any]:
    """An assistant message output item, open (`in_progress`), its parts to come."""
    return {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}


def text_part(kind: str) -> dict[str, Any]:
    """An empty `output_text` or `refusal` part of a message item."""
    return {"type": kind, "text": "", "annotations": []} if kind == "output_text" else {"type": kind, "refusal": ""}


def reasoning_item(item_id: str) -> dict[str, Any]:
    """A reasoning output item, its text to come in one `reasoning_text` part."""
    return {"id": item_id, "type": "reasoning", "status": "in_progress", "summary": [],
            "content": [{"type": "reasoning_text", "text": ""}]}  # fmt: skip


def call_item(item_id: str, call_id: str, name: str, *, custom: bool) -> dict[str, Any]:
    """A `function_call` item (arguments to come), or a `custom_tool_call` one (its `input`)."""
    kind, body = ("custom_tool_call", "input") if custom else ("function_call", "arguments")
    return {"id": item_id, "type": kind, "status": "in_progress", "call_id": call_id, "name": name, body: ""}


# ---------------------------------------------------------------- output, as a client reads it


def output_contents(output: Any) -> list[Content]:
    """The contents of a response's `output` items, in order."""
    contents: list[Content] = []
    for item in output or []:
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "output_text" and part.text:
                    contents.append(TextContent(part.text))
                elif getattr(part, "type", None) == "refusal":
                    contents.append(RefusalContent(part.refusal))
        elif kind == "function_call":
            contents.append(FunctionCallContent(item.call_id, item.name, item.arguments or ""))
        elif kind == "custom_tool_call":
            contents.append(FunctionCallContent(item.call_id, item.name, json.dumps({"input": item.input})))
        elif kind == "reasoning":
            text = "".join(getattr(s, "text", "") for s in (getattr(item, "summary", None) or []))
            text = text or "".join(getattr(c, "text", "") for c in (getattr(item, "content", None) or []))
            if text:
                contents.append(ReasoningContent(text))
    return contents


def custom_input(arguments: str) -> str:
    """A custom tool's text from the arguments of the function that stands for it (`{"input": ...}`);
    arguments that are not that object are the text themselves (a backend that ignored the schema)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return value["input"] if isinstance(value, dict) and isinstance(value.get("input"), str) else arguments
