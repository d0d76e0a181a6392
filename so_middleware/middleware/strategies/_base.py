"""What every strategy is: the request it shapes, how it reads the answer, how it is re-asked.

A strategy is one object; the run loop (`_run.py`) only asks it questions. The base class holds
the behaviour most strategies share (the answer is the text, a re-ask is a user message), so a
new strategy overrides only what differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from ...core import (
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    TextContent,
    UserError,
)
from ...schema import OutputSchema

__all__ = ["Answer", "AttemptRequest", "Strategy", "Target"]


@dataclass(frozen=True)
class Target:
    """What a run asks for, the same for every attempt: the schema, where it goes, and how."""

    schema: OutputSchema
    capabilities: Capabilities
    description: str | None = None
    text_type: Any = None  # for plain text: the type the text is validated as (`str`, `Annotated[str, ...]`)

    @property
    def profile(self) -> Any:
        return self.capabilities.schema_profile


@dataclass(frozen=True)
class AttemptRequest:
    """One attempt's request: what to send, and what a reader of the answer needs to know."""

    strategy: Strategy
    messages: list[ChatMessage]
    options: ChatOptions
    prefill: str = ""  # the assistant prefill the answer continues
    tool_name: str | None = None  # the function tool whose arguments are the answer
    strict: bool = False  # the schema was sent with `strict: true`


@dataclass(frozen=True)
class Answer:
    """The raw text of an answer, and the tool call it came from with its whole assistant turn
    (thinking, text, other calls: a re-ask sends the turn back as it was; tool strategy)."""

    text: str
    call: FunctionCallContent | None = None
    turn: ChatMessage | None = None


class Strategy:
    """How a type reaches a model. Subclasses set `name` and override what differs."""

    name: ClassVar[str] = ""
    lenient: ClassVar[bool] = False  # read the answer leniently (output not constrained)
    cut_off_is_final: ClassVar[bool] = True  # a cut-off answer is `IncompleteOutputError`, never re-asked

    def unavailable(self, target: Target) -> str | None:
        """Why this strategy cannot work for `target` (its profile or its type), or None."""
        return None

    def in_auto(self, capabilities: Capabilities) -> bool:
        """Whether `mode="auto"` tries this strategy on a backend with `capabilities`."""
        return True

    def turned_off(self, capabilities: Capabilities) -> Capabilities:
        """`capabilities` as learned once the backend was seen to ignore this strategy."""
        return capabilities

    def plan(self, target: Target, messages: list[ChatMessage], options: ChatOptions) -> AttemptRequest:
        """The request of one attempt (the caller's messages and options are not changed)."""
        raise NotImplementedError

    def delta(self, plan: AttemptRequest, update: ChatResponseUpdate[Any]) -> str:
        """The part of the answer a streamed update carries."""
        return update.text

    def answer(self, plan: AttemptRequest, response: ChatResponse[Any]) -> Answer:
        """The raw answer of a response."""
        return Answer(plan.prefill + response.text)

    def validate(self, target: Target, answer: Answer) -> Any:
        """The typed value of an answer; raises `ModelBehaviorError` (a message the model can read)."""
        return target.schema.validate_json(answer.text, lenient=self.lenient)

    def ignored(self, plan: AttemptRequest, answer: Answer) -> bool:
        """True when the answer shows the backend ignored this strategy (asking again would not help)."""
        return False

    def reask(self, plan: AttemptRequest, answer: Answer, error: Exception) -> list[ChatMessage]:
        """The conversation of the next attempt: the failed answer, then what was wrong with it."""
        return [
            *history_of(plan),
            ChatMessage("assistant", [TextContent(answer.text or "(no answer)")]),
            ChatMessage("user", feedback(error)),
        ]

    def __repr__(self) -> str:
        return f"<strategy {self.name}>"


def history_of(plan: AttemptRequest) -> list[ChatMessage]:
    """The plan's messages without its prefill (a re-ask starts a new assistant turn)."""
    return [m for m in plan.messages if not (plan.prefill and m is plan.messages[-1])]


def feedback(error: Exception) -> str:
    return f"That answer is not valid: {error}\nReply again with only the corrected JSON, following the schema exactly."


_FENCE = re.compile(r"\s*```[A-Za-z]*\s*")


def starts_like_json(answer: Answer) -> bool:
    """The constrained-output test: an enforced format starts its answer with `{` or `[`, or
    with a code fence around one (llama-server's grammar lets a model open one: a cut-off
    "```j" is on its way to JSON)."""
    fence = _FENCE.match(answer.text)
    if fence is None:
        return answer.text.lstrip().startswith(("{", "["))
    rest = answer.text[fence.end() :]
    return not rest or rest.startswith(("{", "["))


def schema_problem(target: Target) -> str | None:
    """Why the type has no schema in the target's profile (a `UserError` message), or None."""
    try:
        target.schema.check_profile(target.profile)
    except UserError as error:
        return str(error)
    return None
