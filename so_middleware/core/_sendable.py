"""`check_sendable`: what a conversation must be before it is sent (and paid for).

A blank user message (`""`, `"   "`) makes the model invent an answer to nothing; a lone UTF-16
surrogate (`"\\ud83d"`, half of an emoji cut in two) cannot be encoded as UTF-8, so the SDK would
fail while writing the request body, or the server reject it. Both are the caller's mistakes and
are refused with a `UserError` naming the message, before any HTTP request.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from ._contents import TextContent
from ._exceptions import UserError
from ._messages import ChatMessage
from ._options import ChatOptions
from ._surrogates import describe_surrogate, lone_surrogate_at, mend_text

__all__ = ["check_sendable", "lone_surrogate_in", "mend_surrogates"]

_SENT_OPTIONS = ("instructions", "tools", "stop", "extra_body")
_MAX_DEPTH = 64  # deeper values (a tool result) are the encoder's to refuse


def check_sendable(messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> None:
    """Raise `UserError` for no messages (unless `options` continue a run: that needs none), a
    blank user message, or a lone surrogate in a message the caller wrote (any role but
    `assistant`: text, tool calls and results, names) or in the options sent with them
    (instructions, tools, stop sequences, `extra_body`). An assistant message is a model's answer
    sent back (a conversation's history): its lone surrogates are the model's, and
    `mend_surrogates` replaces them instead.

    Example: `check_sendable([ChatMessage("user", "  ")])` raises `UserError`.
    """
    options = options or ChatOptions()
    for name in _SENT_OPTIONS:
        value = getattr(options, name)
        found = None if value is None else lone_surrogate_in(value)
        if found is not None:
            raise UserError(
                _surrogate_message(f"option {name!r}" if name != "instructions" else "the instructions", found)
            )
    blank = [_is_blank(message) for message in messages]  # each message looked at once
    if options.continuation_token is None and all(blank):
        shown = f"{len(messages)} blank message(s)" if messages else "none"
        raise UserError(f"no messages to send ({shown}): pass a str or a list of messages")
    for index, message in enumerate(messages):
        if message.role == "user" and blank[index]:
            where = f"message {index} ({message.role})"
            raise UserError(f"{where} is blank: there is nothing to answer; send a message with text or data")
        if message.role == "assistant":  # a model's answer sent back: mended (`mend_surrogates`), not refused
            continue
        found = _lone_surrogate_in_message(message)
        if found is not None:
            raise UserError(_surrogate_message(f"message {index} ({message.role})", found))


def _lone_surrogate_in_message(message: ChatMessage) -> str | None:
    """`lone_surrogate_in` of a message's name and contents, a text content read in place (most
    messages are one text: no call per content on every call)."""
    name = message.author_name
    if type(name) is str and not name.isascii() and lone_surrogate_at(name) is not None:
        return name
    for content in message.contents:
        text = content.text if type(content) is TextContent else None
        if type(text) is str:
            if not text.isascii() and lone_surrogate_at(text) is not None:
                return text
            continue
        found = lone_surrogate_in(content, 1)
        if found is not None:
            return found
    return None


@functools.cache
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind))


def lone_surrogate_in(value: Any, depth: int = 0) -> str | None:
    """The first str in `value` (a str, or one inside lists, dicts and dataclasses) that holds a
    lone surrogate; None when there is none."""
    if isinstance(value, str):
        return None if lone_surrogate_at(value) is None else value
    if value is None or depth > _MAX_DEPTH:
        return None
    if isinstance(value, (dict, Mapping)):  # a dict is matched before the ABC is asked
        items: Any = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple)):
        items = value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [getattr(value, name) for name in _field_names(type(value))]
    else:
        return None
    for item in items:
        if type(item) is str:  # most items: no call of their own
            if not item.isascii() and lone_surrogate_at(item) is not None:
                return item
            continue
        found = lone_surrogate_in(item, depth + 1)
        if found is not None:
            return found
    return None


def mend_surrogates(messages: Sequence[ChatMessage], *, roles: tuple[str, ...] | None = None) -> list[ChatMessage]:
    """`messages` with every lone surrogate replaced by U+FFFD, for text the library sends back
    itself (a model's answer in a re-ask): the model wrote it, the caller cannot fix it. Messages
    that change are new ones; the given ones are never changed. `roles` limits it to messages of
    those roles (the adapters mend `("assistant",)`: a conversation's history of answers).

    Example: `mend_surrogates([ChatMessage("assistant", "a\ud83d")])[0].text == "a\ufffd"`.
    """
    return [
        _mended(m) if (roles is None or m.role in roles) and lone_surrogate_in([m.author_name, *m.contents]) else m
        for m in messages
    ]


def _mended(message: ChatMessage) -> ChatMessage:
    contents = [_mend(content, 0) for content in message.contents]
    name = _mend(message.author_name, 0)
    return ChatMessage(message.role, contents, author_name=name, raw_representation=message.raw_representation)


def _mend(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return mend_text(value)
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        return {_mend(key, depth + 1): _mend(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_mend(item, depth + 1) for item in value) if type(value) in (list, tuple) else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _mend(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    return value


def _is_blank(message: ChatMessage) -> bool:
    for content in message.contents:  # noqa: SIM110 - a loop, not all(...): no generator on every message of every call
        if not isinstance(content, TextContent) or content.text.strip():
            return False
    return True


def _surrogate_message(where: str, text: str) -> str:
    return (
        f"{where} holds a lone UTF-16 surrogate {describe_surrogate(text)}, which is not "
        "valid Unicode text (often half of an emoji cut in two); fix or drop it before sending"
    )
