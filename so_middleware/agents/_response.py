"""`AgentResponse[T]` and `AgentResponseUpdate[T]`: primary output apart from secondary output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from ..core import (
    RETRIES_KEY,
    Attempt,
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ContinuationToken,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    UsageDetails,
    UserError,
)
from ..middleware.function_invocation import ACTIVITIES_KEY, APPROVALS_KEY, ApprovalRequest, ToolActivity

__all__ = ["AgentResponse", "AgentResponseUpdate", "SecondaryOutput"]

T = TypeVar("T")
U = TypeVar("U")

_SECONDARY = (ReasoningContent, FunctionCallContent, FunctionResultContent)


@dataclass
class SecondaryOutput:
    """What happened on the way to the answer: never part of `.text` or `.messages`.

    `attempts` are the structured-output attempts (re-asks included), `retries` the transient
    faults retried by a retry layer, `reasoning` and `tool_activity` what the model thought and
    which tools it called (the call and result contents of the final answer), `tool_runs` every
    tool the function-invocation layer ran in the run (name, arguments, result or error,
    duration, iteration), in order.
    """

    attempts: list[Attempt] = field(default_factory=list)
    retries: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[ReasoningContent] = field(default_factory=list)
    tool_activity: list[Content] = field(default_factory=list)
    tool_runs: list[ToolActivity] = field(default_factory=list)


def _split(messages: list[ChatMessage]) -> tuple[list[ChatMessage], list[Content]]:
    primary: list[ChatMessage] = []
    secondary: list[Content] = []
    for message in messages:
        kept = [c for c in message.contents if not isinstance(c, _SECONDARY)]
        secondary.extend(c for c in message.contents if isinstance(c, _SECONDARY))
        if kept and message.role == "assistant":
            primary.append(ChatMessage("assistant", kept, author_name=message.author_name))
    return primary, secondary


class AgentResponse(Generic[T]):
    """The result of an agent run.

    `.messages` is the primary output (the final answer), `.text` its text, `.value` the typed
    value when one was asked for; `.secondary` holds retries, attempts, reasoning and tool
    activity; `.usage` is summed over every model call; `.chat_response` is the underlying
    `ChatResponse`.
    """

    def __init__(self, chat_response: ChatResponse[T], *, agent_name: str | None = None) -> None:
        primary, secondary = _split(chat_response.messages)
        raw_messages = chat_response.messages[0].raw_representation if chat_response.messages else None
        if isinstance(raw_messages, list):  # the structured-output layer keeps the model's own messages here
            secondary.extend(_split([m for m in raw_messages if isinstance(m, ChatMessage)])[1])
        self.chat_response = chat_response
        self.agent_name = agent_name
        self.messages: list[ChatMessage] = primary
        self.secondary = SecondaryOutput(
            attempts=list(chat_response.attempts),
            retries=list(chat_response.additional_properties.get(RETRIES_KEY, [])),
            reasoning=[c for c in secondary if isinstance(c, ReasoningContent)],
            tool_activity=[c for c in secondary if not isinstance(c, ReasoningContent)],
            tool_runs=list(chat_response.additional_properties.get(ACTIVITIES_KEY, [])),
        )

    @property
    def text(self) -> str:
        """The final answer's text."""
        return self.messages[-1].text if self.messages else ""

    @property
    def value(self) -> T:
        """The typed value (raises like `ChatResponse.value`)."""
        return self.chat_response.value

    @property
    def usage(self) -> UsageDetails | None:
        """Tokens used by every model call of the run."""
        return self.chat_response.usage

    @property
    def finish_reason(self) -> FinishReason | None:
        """Why the model stopped."""
        return self.chat_response.finish_reason

    @property
    def response_id(self) -> str | None:
        """The provider's response id."""
        return self.chat_response.response_id

    @property
    def continuation_token(self) -> ContinuationToken | None:
        """While `finish_reason` is `LONG_RUNNING`, or while `approval_requests` wait: the token to
        continue the run with (`agent.run(continuation_token=...)`); None once it is done."""
        return self.chat_response.continuation_token

    @property
    def approval_requests(self) -> list[ApprovalRequest]:
        """The tool calls a paused run waits for a decision on (their arguments validated); empty
        when the run did not pause. Resume with `agent.run(continuation_token=..., approvals=...)`."""
        return list(self.chat_response.additional_properties.get(APPROVALS_KEY, []))

    @overload
    def parse(self, output_type: type[U]) -> U: ...

    @overload
    def parse(self, output_type: Any) -> Any: ...

    def parse(self, output_type: Any) -> Any:
        """Validate the answer as `output_type`, chosen after the run (typed like `ChatResponse.parse`)."""
        return self.chat_response.parse(output_type)

    @overload
    def try_parse(self, output_type: type[U]) -> U | None: ...

    @overload
    def try_parse(self, output_type: Any) -> Any: ...

    def try_parse(self, output_type: Any) -> Any:
        """Like `parse`, but None when the answer does not validate."""
        return self.chat_response.try_parse(output_type)

    def __repr__(self) -> str:
        value = f", value={self.chat_response.value!r}" if self.chat_response.has_value else ""
        return f"AgentResponse(text={self.text!r}{value})"


@dataclass
class AgentResponseUpdate(Generic[T]):
    """One streamed piece of an agent run: `.text` delta, `.partial_value`, `.attempt`."""

    update: ChatResponseUpdate[T]
    agent_name: str | None = None

    @property
    def text(self) -> str:
        """The text delta."""
        return self.update.text

    @property
    def partial_value(self) -> T | None:
        """The typed value so far (structured output only)."""
        return self.update.partial_value

    @property
    def completed_items(self) -> list[Any]:
        """List items that completed with this update (for `list[T]` outputs)."""
        return self.update.completed_items

    @property
    def attempt(self) -> int:
        """The model call this update belongs to."""
        return self.update.attempt

    @property
    def contents(self) -> list[Content]:
        """The raw content deltas."""
        return self.update.contents

    @property
    def continuation_token(self) -> ContinuationToken | None:
        """In a background run's stream: resume after this update (`run(continuation_token=..., stream=True)`)."""
        return self.update.continuation_token


def require_chat_response(value: Any) -> ChatResponse[Any]:
    """Guard for responses from custom clients."""
    if not isinstance(value, ChatResponse):
        raise UserError(f"a chat client returned {type(value).__name__}, not a ChatResponse")
    return value
