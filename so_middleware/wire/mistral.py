"""Mistral's chat completions (`POST /v1/chat/completions`), both directions: the keyword arguments
of `mistralai`'s `chat.complete` / `chat.stream` (`request_to_wire`), its answers and stream chunks
back (`response_from_wire`, `MistralStreamReader`), and the reverse directions a server would take.

The API is Chat Completions with a few differences, and only those are here (a folder of its own,
as each provider's own protocol may be); the rest is `so_middleware.wire.chat`'s. Pure functions and one small stream reader: no client, no I/O.
Answers are read by attribute (the SDK's pydantic models) or by key (the same JSON), so this
needs no SDK import. Source: docs.mistral.ai API reference (`chat_completion_v1_chat_completions_post`)
and the SDK's models (`ChatCompletionRequest`, `ChatCompletionResponse`, `CompletionChunk`).

| so_middleware                  | Mistral                                                               |
|--------------------------------|-----------------------------------------------------------------------|
| `seed`                         | `random_seed`                                                         |
| `tool_choice` required         | `any` (Mistral's name for it)                                         |
| image data contents            | `{"type": "image_url", "image_url": "<url or data URI>"}`             |
| a PDF by URL                   | `{"type": "document_url", "document_url": "<url>"}`                   |
| `FunctionResultContent`        | a `tool` message with `tool_call_id` and the function's `name`        |
| `response_format` json_schema  | `{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}` (as Chat Completions) |
| `extra_body`                   | keyword arguments of the call (`frequency_penalty`, `safe_prompt`, ...) |
| a trailing assistant message   | the same with `"prefix": true` (continued; the answer repeats it first) |
| a call id Mistral would refuse | a 9-character `[a-zA-Z0-9]` id of its own (`call_ids_to_wire`)         |

Answer mapping: `content` is a string or a list of chunks (`text`; `thinking` chunks are
`ReasoningContent`); tool call `arguments` are a JSON string or an object; `finish_reason` reads
through `FINISH_REASONS` (`model_length`: the context window was full, an incomplete answer), and
`error` is a `ProviderResponseError` keeping the text and usage so far.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
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
    HostedFileContent,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    TextContent,
    UsageDetails,
    UserError,
)
from . import chat
from .common import JSONView, chosen_model, data_uri, tools_to_wire, view_of
from .prefill import EchoFilter, prefill_of, strip_echo

__all__ = [
    "FINISH_REASONS",
    "MistralStreamReader",
    "call_ids_to_wire",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "usage_from_wire",
]

FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "model_length": FinishReason.LENGTH,  # the model's context window was full: cut off all the same
    "tool_calls": FinishReason.TOOL_CALLS,
}
"""Mistral's `finish_reason` read as ours; `error` is a `ProviderResponseError`, any other name no reason."""

_WRITTEN_REASONS = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool_calls",
    FinishReason.REFUSAL: "stop",  # Mistral has no refusal: its text is the answer
}


def request_to_wire(
    messages: list[ChatMessage],
    options: ChatOptions,
    *,
    model: str | None,
    call_ids: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of `chat.complete_async` / `chat.stream_async` for this call: the model,
    the messages, the options Mistral has, and `extra_body`'s fields beside them (the caller's win).
    Call ids go through `call_ids` (`call_ids_to_wire(messages)` when not given); a trailing
    assistant message is a prefix Mistral continues."""
    wire: list[dict[str, Any]] = []
    if options.instructions:
        wire.append({"role": "system", "content": options.instructions})
    names = _call_names(messages)
    ids = call_ids_to_wire(messages) if call_ids is None else call_ids
    for message in messages:
        wire.extend(_message_to_wire(message, names, ids))
    if messages and messages[-1].role == "assistant" and wire[-1]["role"] == "assistant" and prefill_of(messages):
        wire[-1]["prefix"] = True  # Mistral refuses a last assistant message that is not a prefix
    request: dict[str, Any] = {"model": chosen_model(options, model), "messages": wire}
    for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p"), ("max_tokens", "max_tokens")):
        value = getattr(options, ours)
        if value is not None:
            request[theirs] = value
    if options.seed is not None:
        request["random_seed"] = options.seed
    if options.stop:
        request["stop"] = list(options.stop)
    if options.tools:
        request["tools"] = tools_to_wire(options.tools, chat.tool_to_wire)
    if options.tool_choice is not None:
        choice = chat.tool_choice_to_wire(options.tool_choice)
        request["tool_choice"] = "any" if choice == "required" else choice
    if options.response_format is not None:
        response_format = chat.response_format_to_wire(options.response_format)
        if response_format is not None:
            request["response_format"] = response_format
    if options.extra_body:
        request.update(options.extra_body)
    return request


_WIRE_ID = re.compile(r"[a-zA-Z0-9]{9}")
_ID_ALPHABET = string.ascii_letters + string.digits


def call_ids_to_wire(messages: list[ChatMessage]) -> dict[str, str]:
    """Mistral's id for each call id in `messages` it would refuse (it takes only 9 characters of
    `[a-zA-Z0-9]`; other providers write `call_...` or `toolu_...`): the same for a call and its
    result, the same on every call for the same id, none taken twice in one request. Ids Mistral
    takes are kept, and are absent from the answer.

    Example: `call_ids_to_wire([ChatMessage("tool", [FunctionResultContent("call_1", "ok")])])`
    maps `"call_1"` to a 9-character id.
    """
    seen: dict[str, None] = {}
    for message in messages:
        for content in message.contents:
            if isinstance(content, (FunctionCallContent, FunctionResultContent)):
                seen[content.call_id] = None
    foreign = [call_id for call_id in seen if not _WIRE_ID.fullmatch(call_id)]
    if not foreign:
        return {}
    taken = {call_id for call_id in seen if _WIRE_ID.fullmatch(call_id)}
    mapped: dict[str, str] = {}
    for call_id in foreign:
        attempt = 0
        wire_id = _short_id(call_id)
        while wire_id in taken:  # another id of this request has it: the next one from the same id
            attempt += 1
            wire_id = _short_id(f"{call_id}\0{attempt}")
        taken.add(wire_id)
        mapped[call_id] = wire_id
    return mapped


def _short_id(text: str) -> str:
    """9 characters of `[a-zA-Z0-9]` from a hash of `text` (62**9 ids: a clash is rare, and handled)."""
    number = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    characters = []
    for _ in range(9):
        number, digit = divmod(number, len(_ID_ALPHABET))
        characters.append(_ID_ALPHABET[digit])
    return "".join(characters)


def _call_names(messages: list[ChatMessage]) -> dict[str, str]:
    """Each call id's function name: Mistral's tool message names its function."""
    return {
        content.call_id: content.name
        for message in messages
        for content in message.contents
        if isinstance(content, FunctionCallContent)
    }


def _message_to_wire(message: ChatMessage, names: Mapping[str, str], ids: Mapping[str, str]) -> list[dict[str, Any]]:
    tool_messages: list[dict[str, Any]] = []
    rest: list[Content] = []
    for content in message.contents:
        if isinstance(content, FunctionResultContent):
            text = ("Error: " if content.is_error else "") + content.result_text
            tool: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": ids.get(content.call_id, content.call_id),
                "content": text,
            }
            if content.call_id in names:
                tool["name"] = names[content.call_id]
            tool_messages.append(tool)
        elif not isinstance(content, ReasoningContent):
            rest.append(content)
    if message.role == "tool" or (tool_messages and not rest):
        return tool_messages
    entry: dict[str, Any] = {"role": message.role}
    if message.role == "assistant":
        calls = [c for c in rest if isinstance(c, FunctionCallContent)]
        entry["content"] = message.text or message.refusal or ""
        if calls:
            entry["tool_calls"] = [
                {
                    "id": ids.get(c.call_id, c.call_id),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or "{}"},
                }
                for c in calls
            ]
    elif any(isinstance(c, (DataContent, HostedFileContent)) for c in rest):
        entry["content"] = [_part_to_wire(c) for c in rest if not isinstance(c, FunctionCallContent)]
    else:
        entry["content"] = message.text
    return [entry, *tool_messages]


def _part_to_wire(content: Content) -> dict[str, Any]:
    if isinstance(content, TextContent):
        return {"type": "text", "text": content.text}
    if isinstance(content, RefusalContent):
        return {"type": "text", "text": content.refusal}
    if isinstance(content, DataContent):
        data = content.data
        url = data if isinstance(data, str) and data[:4].lower() in ("http", "data") else None
        if content.media_type.startswith("image/"):
            return {"type": "image_url", "image_url": url or data_uri(content)}
        if content.media_type == "application/json" or content.media_type.startswith("text/"):
            text = data if isinstance(data, str) else data.decode("utf-8", "replace")
            return {"type": "text", "text": text}
        if content.media_type == "application/pdf" and url is not None and url[:4].lower() == "http":
            return {"type": "document_url", "document_url": url}
        raise UserError(
            f"Mistral's chat cannot carry {content.media_type} data: send an image, text, or a PDF by its https URL"
        )
    if isinstance(content, HostedFileContent):
        raise UserError(f"Mistral's chat cannot carry a file by our id ({content.file_id}): send its data or URL")
    raise UserError(f"Mistral's chat cannot carry {type(content).__name__} in a user message")


# ---------------------------------------------------------------- answers


def _get(value: Any, name: str) -> Any:
    """A field by key or attribute; the SDK's `Unset` (a field the answer did not carry) reads as None."""
    if type(value) is JSONView:  # its JSON read directly, without a view for each object inside
        value = value.to_dict()
    # `dict`, not `Mapping`: an ABC check is slow on the SDK's models, whose classes it makes per call
    found = value.get(name) if isinstance(value, dict) else getattr(value, name, None)
    return None if found is not None and type(found).__name__ == "Unset" else found


def usage_from_wire(usage: Any) -> UsageDetails | None:
    """Map `usage` (`prompt_tokens`, `completion_tokens`, `total_tokens`; cached prompt tokens where given)."""
    if usage is None:
        return None
    details = _get(usage, "prompt_tokens_details")
    return UsageDetails(
        input_tokens=_get(usage, "prompt_tokens"),
        output_tokens=_get(usage, "completion_tokens"),
        total_tokens=_get(usage, "total_tokens"),
        cached_input_tokens=_get(details, "cached_tokens") if details is not None else None,
    )


def _contents(
    message: Any, call_ids: dict[int, str] | None = None, caller_ids: Mapping[str, str] | None = None
) -> list[Content]:
    """A message's or a delta's contents: text and thinking chunks, then tool calls (an id the
    request gave in place of the caller's is the caller's again)."""
    found: list[Content] = []
    content = _get(message, "content")
    if isinstance(content, str):
        if content:
            found.append(TextContent(content))
    else:
        for chunk in content or ():
            kind = _get(chunk, "type")
            if kind == "thinking":
                thought = "".join(_get(part, "text") or "" for part in _get(chunk, "thinking") or ())
                if thought:
                    found.append(ReasoningContent(thought, _get(chunk, "signature")))
            elif kind in ("text", None) and _get(chunk, "text"):
                found.append(TextContent(_get(chunk, "text")))
    for call in _get(message, "tool_calls") or ():
        function = _get(call, "function")
        arguments = _get(function, "arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        call_id = _get(call, "id")
        if call_ids is not None:  # a stream: a call's later pieces carry its index, not always its id
            index = _get(call, "index") or 0
            call_id = call_id if call_id and call_id != "null" else call_ids.get(index)
            call_id = call_ids.setdefault(index, call_id or f"call_{uuid.uuid4().hex[:9]}")
        elif not call_id or call_id == "null":  # the SDK's default for an id the answer did not carry
            call_id = f"call_{uuid.uuid4().hex[:9]}"
        if caller_ids:
            call_id = caller_ids.get(call_id, call_id)
        found.append(FunctionCallContent(call_id, str(_get(function, "name") or ""), arguments))
    return found


def _finish(reason: Any, contents: list[Content], usage: UsageDetails | None, partial: str = "") -> FinishReason | None:
    if reason == "error":
        text = partial + "".join(c.text for c in contents if isinstance(c, TextContent))
        error = ProviderResponseError(
            "Mistral ended the answer with finish_reason 'error'", reported=True, partial_text=partial
        )
        raise error.with_answer(text, usage)
    return FINISH_REASONS.get(reason) if isinstance(reason, str) else None


def _first_choice(answer: Any) -> Any:
    choices = _get(answer, "choices")
    if choices is not None and not isinstance(choices, list):
        raise ProviderResponseError("the server's answer could not be read: `choices` is not a list")
    return next((choice for choice in choices or () if not _get(choice, "index")), None)


def response_from_wire(
    answer: Any, *, prefill: str = "", caller_ids: Mapping[str, str] | None = None
) -> ChatResponse[Any]:
    """Map a `ChatCompletionResponse` (or its JSON) to a `ChatResponse` of the choice of index 0:
    the `prefill` Mistral repeats first is removed, and a call id in `caller_ids` (Mistral's id
    for the caller's) is the caller's. No such choice is a `ProviderResponseError`;
    `finish_reason: error` too, with the answer kept."""
    choice = _first_choice(answer)
    if choice is None:
        raise ProviderResponseError("the server returned a chat completion without a choice of index 0")
    message = _get(choice, "message")
    contents = _contents(message, None, caller_ids) if message is not None else []
    if prefill:
        contents = _without_echo(contents, EchoFilter(prefill), whole=True)
    usage = usage_from_wire(_get(answer, "usage"))
    shown = view_of(message) if type(answer) is JSONView else message  # read by attribute, as the answer
    return ChatResponse(
        ChatMessage("assistant", contents, raw_representation=shown),
        usage=usage,
        finish_reason=_finish(_get(choice, "finish_reason"), contents, usage),
        response_id=_get(answer, "id"),
        model_id=_get(answer, "model"),
        raw_representation=answer,
    )


def _without_echo(contents: list[Content], echo: EchoFilter, *, whole: bool = False) -> list[Content]:
    """`contents` with the text `echo` still waits for removed (`whole`: nothing follows)."""
    kept: list[Content] = []
    for content in contents:
        if isinstance(content, TextContent):
            text = strip_echo(content.text, echo.pending) if whole else echo.feed(content.text)
            echo.pending = "" if whole else echo.pending
            if not text:
                continue
            content = TextContent(text)
        kept.append(content)
    return kept


class MistralStreamReader:
    """Reads the chunks of `chat.stream_async` (each a `CompletionChunk`, or the SDK's event around it).

    Text arrives as deltas, tool calls whole (or in pieces by `index`); usage comes on the last chunk,
    the one with the finish reason, which sets `finished`. The `prefill` Mistral repeats first is
    removed (text held back while it could be that comes out with the last chunk); a call id in
    `caller_ids` is the caller's.
    """

    def __init__(self, *, prefill: str = "", caller_ids: Mapping[str, str] | None = None) -> None:
        self.text: list[str] = []
        self.finished = False
        self._call_ids: dict[int, str] = {}
        self._caller_ids = caller_ids
        self._echo = EchoFilter(prefill)

    def read(self, chunk: Any) -> ChatResponseUpdate[Any] | None:
        """The update for one chunk (None when it carries nothing)."""
        data = _get(chunk, "data")  # the SDK's `CompletionEvent` wraps the chunk
        chunk = data if data is not None and not isinstance(data, str) else chunk
        choice = _first_choice(chunk)
        delta = _get(choice, "delta") if choice is not None else None
        contents = _contents(delta, self._call_ids, self._caller_ids) if delta is not None else []
        if self._echo.pending:
            contents = _without_echo(contents, self._echo)
        usage = usage_from_wire(_get(chunk, "usage"))
        reason = _get(choice, "finish_reason") if choice is not None else None
        if reason is not None:
            held = self._echo.flush()  # held back as possible echo when the answer ended
            if held:
                contents.insert(0, TextContent(held))
        finish = _finish(reason, contents, usage, "".join(self.text))
        self.text.extend(c.text for c in contents if isinstance(c, TextContent))
        if finish is None and not contents and usage is None:
            return None
        self.finished = self.finished or finish is not None
        return ChatResponseUpdate(
            contents=contents,
            role="assistant",
            usage=usage,
            finish_reason=finish,
            response_id=_get(chunk, "id"),
            model_id=_get(chunk, "model"),
            raw_representation=chunk,
        )


# ---------------------------------------------------------------- the server's side


def request_from_wire(body: Mapping[str, Any]) -> tuple[list[ChatMessage], ChatOptions]:
    """A Mistral chat request body as a server reads it: Chat Completions' reading with
    `random_seed` as the seed and `any` as a required tool choice (other fields in `extra_body`)."""
    renamed = {key: value for key, value in body.items() if key not in ("random_seed", "tool_choice")}
    if body.get("random_seed") is not None:
        renamed["seed"] = body["random_seed"]
    choice = body.get("tool_choice")
    if choice is not None:
        renamed["tool_choice"] = "required" if choice == "any" else choice
    return chat.request_from_wire(renamed)


def response_to_wire(response: ChatResponse[Any]) -> dict[str, Any]:
    """A `ChatResponse` as the chat completion Mistral answers (what `response_from_wire` reads back):
    Chat Completions' body, with reasoning as a `thinking` chunk before the text."""
    body = chat.response_to_wire(response)
    message = body["choices"][0]["message"]
    reasoning = message.pop("reasoning_content", None)
    message.pop("refusal", None)  # Mistral has no refusal field: a refusal is the answer's text
    if response.refusal and not message["content"]:
        message["content"] = response.refusal
    if reasoning:
        thinking = {"type": "thinking", "thinking": [{"type": "text", "text": reasoning}]}
        text = [{"type": "text", "text": message["content"]}] if message["content"] else []
        message["content"] = [thinking, *text]
    reason = response.finish_reason
    body["choices"][0]["finish_reason"] = _WRITTEN_REASONS.get(reason) if reason is not None else None
    return body
