"""Chat messages (a role and typed contents) and `as_messages`, which normalises message input."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ._contents import Content, FunctionCallContent, RefusalContent, TextContent
from ._exceptions import UserError

__all__ = ["ChatMessage", "MessageInput", "Role", "as_messages"]

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = ("system", "user", "assistant", "tool")
_CONTENT_TYPES: tuple[type[Content], ...] = get_args(Content)


@dataclass
class ChatMessage:
    """One chat message: a role and a list of typed contents.

    Example: `ChatMessage("user", "Who is John?")` or
    `ChatMessage("assistant", [TextContent("Hi"), FunctionCallContent("c1", "lookup", "{}")])`.
    """

    role: Role
    contents: list[Content] = field(default_factory=list)
    author_name: str | None = None
    raw_representation: Any = field(default=None, repr=False, compare=False)

    def __init__(
        self,
        role: Role,
        contents: str | Content | Sequence[Content] | None = None,
        *,
        author_name: str | None = None,
        raw_representation: Any = None,
    ) -> None:
        if role not in _ROLES:
            raise UserError(f"unknown message role {role!r}; expected one of {', '.join(_ROLES)}")
        self.role = role
        if contents is None:
            self.contents = []
        elif isinstance(contents, str):
            self.contents = [TextContent(contents)]
        elif isinstance(contents, _CONTENT_TYPES):
            self.contents = [contents]
        elif type(contents) is list or isinstance(contents, Sequence):  # a list: no ABC check
            self.contents = [*contents]  # each item is checked just below
            for item in self.contents:
                if not isinstance(item, _CONTENT_TYPES):
                    raise UserError(
                        f"message contents must be content objects (TextContent, DataContent, ...), "
                        f"not {type(item).__name__}; pass a plain str for text"
                    )
        else:
            raise UserError(
                f"message contents must be a str, a content object or a list of them, not {type(contents).__name__}"
            )
        self.author_name = author_name
        self.raw_representation = raw_representation

    @property
    def text(self) -> str:
        """The concatenated text contents (no reasoning, tool calls or refusals)."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))

    @property
    def refusal(self) -> str | None:
        """The refusal text, when the message holds one."""
        parts = [c.refusal for c in self.contents if isinstance(c, RefusalContent)]
        return "".join(parts) if parts else None

    @property
    def function_calls(self) -> list[FunctionCallContent]:
        """The tool calls in this message."""
        return [c for c in self.contents if isinstance(c, FunctionCallContent)]


MessageInput = str | ChatMessage | Mapping[str, Any] | Sequence[str | ChatMessage | Mapping[str, Any]]


def as_messages(messages: MessageInput | None) -> list[ChatMessage]:
    """Normalise a string, a message, an OpenAI-style `{"role": ..., "content": "..."}` dict or
    a sequence of them into a new list of messages.

    Strings become user messages. The caller's message objects are reused, never changed.
    """
    if messages is None:
        return []
    if type(messages) is str:  # the common inputs, a prompt or a list, pass no ABC check (a Python call each)
        messages = [messages]
    elif type(messages) is not list:
        if isinstance(messages, (str, ChatMessage, Mapping)):
            messages = [messages]
        if isinstance(messages, AbstractSet):  # a conversation has an order; a set would send any
            raise UserError(f"messages must be in order: a list or tuple of messages, not a {type(messages).__name__}")
        if not isinstance(messages, Iterable):
            raise UserError(
                f"messages must be a str, a ChatMessage or a sequence of them, not {type(messages).__name__}"
            )
    result: list[ChatMessage] = []
    for item in messages:
        if isinstance(item, str):
            result.append(ChatMessage("user", item))
        elif isinstance(item, ChatMessage):
            result.append(item)
        elif isinstance(item, Mapping):
            result.append(_from_dict(item))
        else:
            raise UserError(f"a message must be a str, a ChatMessage or a role/content dict, not {type(item).__name__}")
    return result


def _from_dict(message: Mapping[str, Any]) -> ChatMessage:
    extra = sorted(set(message) - {"role", "content", "name"})
    content = message.get("content")
    if extra or "role" not in message or not isinstance(content, (str, type(None))):
        raise UserError(
            "a message dict must be {'role': ..., 'content': '<text>'} (optionally 'name'), "
            f"got keys {sorted(message)!r}; build a ChatMessage for anything else"
        )
    name = message.get("name")
    return ChatMessage(message["role"], content, author_name=name if isinstance(name, str) else None)
