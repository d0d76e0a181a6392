"""Chat messages, contents, usage, finish reasons, responses and updates.

Provider-neutral: every adapter maps its SDK's objects onto these, and every middleware works on
these alone. No SDK is imported here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, Union, cast

from ._exceptions import ModelBehaviorError, OutputError, UserError

if TYPE_CHECKING:
    from ._formats import ResponseFormat

__all__ = [
    "Attempt",
    "ChatMessage",
    "ChatResponse",
    "ChatResponseUpdate",
    "Content",
    "DataContent",
    "FinishReason",
    "FunctionCallContent",
    "FunctionResultContent",
    "MessageInput",
    "ReasoningContent",
    "RefusalContent",
    "Role",
    "TextContent",
    "UsageDetails",
    "as_messages",
]

T = TypeVar("T")
U = TypeVar("U")

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = ("system", "user", "assistant", "tool")


# ---------------------------------------------------------------- contents


@dataclass(frozen=True)
class TextContent:
    """Plain text; the final answer of an assistant message is made of these."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class DataContent:
    """Binary or JSON data with a media type (an image, a document, a JSON value).

    Example: `DataContent(b"...", "image/png")` or `DataContent.from_json({"a": 1})`.
    """

    data: bytes | str
    media_type: str
    type: Literal["data"] = "data"

    @classmethod
    def from_json(cls, value: Any) -> DataContent:
        """A JSON value as `application/json` data."""
        return cls(json.dumps(value), "application/json")

    def json(self) -> Any:
        """The data parsed as JSON (for `application/json` contents)."""
        return json.loads(self.data)


@dataclass(frozen=True)
class FunctionCallContent:
    """A tool (function) call the model asked for; `arguments` is the raw JSON text."""

    call_id: str
    name: str
    arguments: str = ""
    type: Literal["function_call"] = "function_call"

    def parsed_arguments(self) -> Any:
        """The arguments parsed as JSON (`{}` when empty)."""
        return json.loads(self.arguments) if self.arguments else {}


@dataclass(frozen=True)
class FunctionResultContent:
    """The result of a tool call, sent back to the model; `is_error` flags a failed call."""

    call_id: str
    result: Any
    is_error: bool = False
    name: str | None = None
    type: Literal["function_result"] = "function_result"

    @property
    def result_text(self) -> str:
        """The result as the text the wire carries."""
        return self.result if isinstance(self.result, str) else json.dumps(self.result)


@dataclass(frozen=True)
class ReasoningContent:
    """Model reasoning ("thinking"): secondary output, never part of `.text`."""

    text: str
    signature: str | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True)
class RefusalContent:
    """The model's refusal to answer."""

    refusal: str
    type: Literal["refusal"] = "refusal"


Content = Union[TextContent, DataContent, FunctionCallContent, FunctionResultContent, ReasoningContent, RefusalContent]


# ---------------------------------------------------------------- messages


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
        elif isinstance(contents, Sequence):
            self.contents = [c for c in contents if not isinstance(c, str)]
            if len(self.contents) != len(contents):
                raise UserError("message contents must be content objects; pass a plain str for text")
        else:
            self.contents = [contents]
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


MessageInput = Union[str, ChatMessage, Sequence[str | ChatMessage]]


def as_messages(messages: MessageInput | None) -> list[ChatMessage]:
    """Normalise a string, a message or a sequence of either into a new list of messages.

    Strings become user messages. The caller's message objects are reused, never changed.
    """
    if messages is None:
        return []
    if isinstance(messages, (str, ChatMessage)):
        messages = [messages]
    if not isinstance(messages, Iterable):
        raise UserError(f"messages must be a str, a ChatMessage or a sequence of them, not {type(messages).__name__}")
    result: list[ChatMessage] = []
    for item in messages:
        if isinstance(item, str):
            result.append(ChatMessage("user", item))
        elif isinstance(item, ChatMessage):
            result.append(item)
        else:
            raise UserError(f"a message must be a str or a ChatMessage, not {type(item).__name__}")
    return result


# ---------------------------------------------------------------- usage and finish


@dataclass(frozen=True)
class UsageDetails:
    """Token counts; they add up: `usage_a + usage_b`.

    `None` means "not reported", which adds as zero but stays `None` when both sides are `None`.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __add__(self, other: UsageDetails | None) -> UsageDetails:
        if other is None:
            return self
        return UsageDetails(
            *(
                _add_counts(getattr(self, name), getattr(other, name))
                for name in ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens")
            )
        )

    def __radd__(self, other: object) -> UsageDetails:
        if other == 0 or other is None:  # lets sum() start from 0
            return self
        return NotImplemented

    @staticmethod
    def total(usages: Iterable[UsageDetails | None]) -> UsageDetails | None:
        """The sum of several usages (`None` when none was reported)."""
        result: UsageDetails | None = None
        for usage in usages:
            if usage is not None:
                result = usage if result is None else result + usage
        return result


def _add_counts(a: int | None, b: int | None) -> int | None:
    if a is None and b is None:
        return None
    return (a or 0) + (b or 0)


class FinishReason(str, Enum):
    """Why the model stopped; compares equal to its string value (`FinishReason.STOP == "stop"`)."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    REFUSAL = "refusal"

    def __str__(self) -> str:
        return self.value


# ---------------------------------------------------------------- attempts


@dataclass(frozen=True)
class Attempt:
    """One model call made for a structured-output run (secondary output).

    `text` is the raw text the model produced, `error` why it was rejected (None when accepted),
    `strategy` how the type was asked for (`native`, `tool`, `json_object`, `prompted`, `text`),
    `strict` whether the schema was sent with `strict: true`.
    """

    index: int
    text: str
    error: BaseException | None = None
    usage: UsageDetails | None = None
    strategy: str | None = None
    finish_reason: FinishReason | None = None
    strict: bool | None = None


# ---------------------------------------------------------------- responses

_UNSET: Any = object()


class ChatResponse(Generic[T]):
    """A complete model response.

    `.text` is the final answer only (text of the last assistant message); `.value` is the typed
    structured value when one was asked for; `.parse(T)` / `.try_parse(T)` read the text as any
    type chosen later. `.usage` is summed over `.attempts` when there were several.

    Example:
        response = await client.get_response("Name three primes", output_type=list[int])
        response.value      # [2, 3, 5]
        response.attempts   # one Attempt per model call
    """

    def __init__(
        self,
        messages: ChatMessage | Sequence[ChatMessage] = (),
        *,
        usage: UsageDetails | None = None,
        finish_reason: FinishReason | None = None,
        response_id: str | None = None,
        model_id: str | None = None,
        raw_representation: Any = None,
        additional_properties: dict[str, Any] | None = None,
        attempts: Sequence[Attempt] = (),
        value: Any = _UNSET,
        value_error: OutputError | None = None,
        response_format: ResponseFormat | None = None,
    ) -> None:
        self.messages: list[ChatMessage] = [messages] if isinstance(messages, ChatMessage) else list(messages)
        self.usage = usage
        self.finish_reason = finish_reason
        self.response_id = response_id
        self.model_id = model_id
        self.raw_representation = raw_representation
        self.additional_properties: dict[str, Any] = dict(additional_properties or {})
        self.attempts: list[Attempt] = list(attempts)
        self.response_format = response_format
        self._value: Any = value
        self._value_error = value_error

    @property
    def text(self) -> str:
        """The final answer: the text of the last assistant message (no reasoning, no tool calls)."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.text
        return ""

    @property
    def refusal(self) -> str | None:
        """The refusal text of the last assistant message, if the model refused."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.refusal
        return None

    @property
    def has_value(self) -> bool:
        """True when a structured value was produced and validated."""
        return self._value is not _UNSET

    @property
    def value(self) -> T:
        """The typed structured value.

        Raises the `OutputError` that stopped it (with every attempt), or `UserError` when no
        structured output was requested for this response (use `.parse(T)` then).
        """
        if self._value is not _UNSET:
            return cast(T, self._value)
        if self._value_error is not None:
            raise self._value_error
        raise UserError(
            "this response has no structured value: no output type was requested; "
            "pass output_type=... or use response.parse(T)"
        )

    def parse(self, output_type: type[U] | Any) -> U:
        """Validate this response's text as `output_type` (wrapped types are unwrapped).

        Raises `ModelBehaviorError` carrying the raw text when it does not validate. Text is
        read leniently (code fences, prose around the JSON); a cut-off response (finish reason
        `length`) counts only through a complete JSON value in it.
        """
        from .schema import OutputSchema  # schema sits above core; imported on use only

        schema = OutputSchema(output_type, strict=False)  # strictness is a request concern, not a parsing one
        try:
            if self.finish_reason == FinishReason.LENGTH:  # cut off: never a value repaired from the tail
                return cast(U, schema.validate_complete_json(self.text))
            return cast(U, schema.validate_json(self.text, lenient=True))
        except ModelBehaviorError as error:
            raise error.with_attempts(self.attempts or _single_attempt(self), self.usage) from None

    def try_parse(self, output_type: type[U] | Any) -> U | None:
        """Like `parse`, but returns None when the text does not validate."""
        try:
            value: U = self.parse(output_type)
        except ModelBehaviorError:
            return None
        return value

    def __repr__(self) -> str:
        value = f", value={self._value!r}" if self._value is not _UNSET else ""
        return f"ChatResponse(text={self.text!r}{value}, finish_reason={self.finish_reason}, usage={self.usage})"

    @classmethod
    def from_updates(cls, updates: Sequence[ChatResponseUpdate[Any]]) -> ChatResponse[Any]:
        """Fold streamed updates into one response (text deltas joined, tool-call deltas merged)."""
        return _fold_updates(updates)


def _single_attempt(response: ChatResponse[Any]) -> list[Attempt]:
    return [Attempt(0, response.text, usage=response.usage, finish_reason=response.finish_reason)]


@dataclass
class ChatResponseUpdate(Generic[T]):
    """One streamed piece of a response.

    `contents` holds deltas (text pieces, tool-call argument pieces, reasoning pieces);
    `partial_value` the typed value so far when structured output was requested (a live view
    that keeps growing with later updates, so the stream stays linear: copy it to keep a
    snapshot); `completed_items` the list items that closed with this update (for `list[T]`);
    `attempt` the index of the model call it belongs to, so updates of two attempts are never
    merged.
    """

    contents: list[Content] = field(default_factory=list)
    role: Role | None = None
    usage: UsageDetails | None = None
    finish_reason: FinishReason | None = None
    response_id: str | None = None
    model_id: str | None = None
    raw_representation: Any = field(default=None, repr=False)
    attempt: int = 0
    partial_value: T | None = None
    completed_items: list[Any] = field(default_factory=list)
    additional_properties: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The text delta this update carries."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))


def _fold_updates(updates: Sequence[ChatResponseUpdate[Any]]) -> ChatResponse[Any]:
    text: list[str] = []
    reasoning: list[str] = []
    refusal: list[str] = []
    calls: dict[str, list[Any]] = {}  # call_id -> [name, argument pieces]
    other: list[Content] = []
    usage: UsageDetails | None = None
    finish: FinishReason | None = None
    response_id = model_id = None
    raw: list[Any] = []
    for update in updates:
        for content in update.contents:
            if isinstance(content, TextContent):
                text.append(content.text)
            elif isinstance(content, ReasoningContent):
                reasoning.append(content.text)
            elif isinstance(content, RefusalContent):
                refusal.append(content.refusal)
            elif isinstance(content, FunctionCallContent):
                entry = calls.setdefault(content.call_id, [content.name, []])
                entry[0] = entry[0] or content.name
                entry[1].append(content.arguments)
            else:
                other.append(content)
        usage = UsageDetails.total([usage, update.usage])
        finish = update.finish_reason or finish
        response_id = update.response_id or response_id
        model_id = update.model_id or model_id
        if update.raw_representation is not None:
            raw.append(update.raw_representation)
    contents: list[Content] = []
    if reasoning:
        contents.append(ReasoningContent("".join(reasoning)))
    if text:
        contents.append(TextContent("".join(text)))
    if refusal:
        contents.append(RefusalContent("".join(refusal)))
    contents.extend(FunctionCallContent(cid, name, "".join(parts)) for cid, (name, parts) in calls.items())
    contents.extend(other)
    return ChatResponse(
        ChatMessage("assistant", contents),
        usage=usage,
        finish_reason=finish,
        response_id=response_id,
        model_id=model_id,
        raw_representation=raw,
    )
