"""Complete responses (`ChatResponse`) and streamed pieces of them (`ChatResponseUpdate`).

Provider-neutral: every adapter maps its SDK's objects onto these, and every middleware works on
these alone. No SDK is imported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, overload

from ._attempts import Attempt
from ._contents import Content, FunctionCallContent, ReasoningContent, RefusalContent, TextContent
from ._continuation import ContinuationToken
from ._exceptions import ModelBehaviorError, OutputError, UserError
from ._formats import ResponseFormat, copy_json
from ._messages import ChatMessage, Role
from ._text_reading import read_text
from ._usage import FinishReason, UsageDetails

__all__ = ["ChatResponse", "ChatResponseUpdate"]

T = TypeVar("T")
U = TypeVar("U")


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
        continuation_token: ContinuationToken | None = None,
    ) -> None:
        self.messages: list[ChatMessage] = [messages] if isinstance(messages, ChatMessage) else list(messages)
        self.usage = usage
        self.finish_reason = finish_reason
        self.response_id = response_id
        self.model_id = model_id
        self.raw_representation = raw_representation
        self.additional_properties: dict[str, Any] = dict(additional_properties or {})
        self.attempts: list[Attempt] = list(attempts)
        self._response_format = response_format
        self._format_shared = False  # `_response_format` is a shared one, copied when first read
        self.continuation_token = continuation_token  # set while finish_reason is LONG_RUNNING
        self._value: Any = value
        self._value_error = value_error

    @property
    def response_format(self) -> ResponseFormat | None:
        """The response format the answer was asked in (None when none was sent)."""
        if self._format_shared:  # a copy of its own, made only for a caller who reads it
            fmt = self._response_format
            if fmt is not None and fmt.schema is not None:
                fmt = dataclasses.replace(fmt, schema=copy_json(dict(fmt.schema)))
            self._response_format, self._format_shared = fmt, False
        return self._response_format

    @response_format.setter
    def response_format(self, fmt: ResponseFormat | None) -> None:
        self._response_format, self._format_shared = fmt, False

    def share_format(self, fmt: ResponseFormat | None) -> None:
        """Set `response_format` to `fmt`, whose schema is shared (a cache's): its schema is copied
        when the property is first read, so that a caller who changes it changes only its own."""
        self._response_format, self._format_shared = fmt, True

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
        if self.finish_reason == FinishReason.LONG_RUNNING:
            raise UserError(
                "this background run is still going (finish_reason LONG_RUNNING): poll it with "
                "get_response(continuation_token=response.continuation_token, output_type=...)"
            )
        raise UserError(
            "this response has no structured value: no output type was requested; "
            "pass output_type=... or use response.parse(T)"
        )

    @overload
    def parse(self, output_type: type[U]) -> U: ...

    @overload
    def parse(self, output_type: Any) -> Any: ...

    def parse(self, output_type: Any) -> Any:
        """Validate this response's text as `output_type` (wrapped types are unwrapped).

        Raises `ModelBehaviorError` carrying the raw text when it does not validate. Text is
        read leniently (code fences, prose around the JSON); a cut-off response (finish reason
        `length`) counts only through a complete JSON value in it. A class gives its type to the
        type checker (`response.parse(Person)` is a `Person`); other type forms (`Person | None`,
        `Annotated[...]`) give `Any`.
        """
        try:  # cut off: never a value repaired from the tail
            return read_text(self.text, output_type, complete=self.finish_reason == FinishReason.LENGTH)
        except ModelBehaviorError as error:
            raise error.with_attempts(self.attempts or _single_attempt(self), self.usage) from None

    @overload
    def try_parse(self, output_type: type[U]) -> U | None: ...

    @overload
    def try_parse(self, output_type: Any) -> Any: ...

    def try_parse(self, output_type: Any) -> Any:
        """Like `parse`, but returns None when the text does not validate."""
        try:
            return self.parse(output_type)
        except ModelBehaviorError:
            return None

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
    snapshot; typed `T | None`, but fields not streamed yet hold None whatever their type); `completed_items` the list items that closed with this update (for `list[T]`);
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
    continuation_token: ContinuationToken | None = None  # a background stream: resume after this update

    @property
    def text(self) -> str:
        """The text delta this update carries."""
        contents = self.contents
        if len(contents) == 1 and type(contents[0]) is TextContent:  # most updates: read on every one
            return contents[0].text
        return "".join(c.text for c in contents if isinstance(c, TextContent))


def _fold_updates(updates: Sequence[ChatResponseUpdate[Any]]) -> ChatResponse[Any]:
    text: list[str] = []
    reasoning: list[str] = []
    signed: list[ReasoningContent] = []  # thinking blocks closed by their signature
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
                if content.signature:  # a signature closes a thinking block (Anthropic's signature_delta)
                    signed.append(ReasoningContent("".join(reasoning), content.signature))
                    reasoning = []
            elif isinstance(content, RefusalContent):
                refusal.append(content.refusal)
            elif isinstance(content, FunctionCallContent):
                entry = calls.setdefault(content.call_id, [content.name, []])
                entry[0] = entry[0] or content.name
                entry[1].append(content.arguments)
            else:
                other.append(content)
        if update.usage is not None:  # most updates carry none
            usage = UsageDetails.total([usage, update.usage])
        finish = update.finish_reason or finish
        response_id = update.response_id or response_id
        model_id = update.model_id or model_id
        if update.raw_representation is not None:
            raw.append(update.raw_representation)
    contents: list[Content] = list(signed)
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
