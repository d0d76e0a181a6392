"""What a run makes of one answer: valid, invalid (re-ask), ignored (next strategy), looped
(re-ask once, sampled to break the loop) or stopped."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...core import (
    ChatResponse,
    ContentFilterError,
    FunctionCallContent,
    FunctionTool,
    IncompleteOutputError,
    ModelBehaviorError,
    OutputError,
    RefusalError,
    UsageDetails,
)
from ...schema import BOUND_IT, Loop, Nesting, loop_in
from ..strategies import Answer, AttemptRequest, Strategy, Target
from ._resample import loop_error

__all__ = [
    "Ignored",
    "Invalid",
    "Looped",
    "Stopped",
    "Valid",
    "Verdict",
    "brief",
    "calls_callers_tools",
    "cut_off",
    "outcome_of",
    "used_up",
]


@dataclass(frozen=True)
class Valid:
    answer: Answer
    value: Any


@dataclass(frozen=True)
class Invalid:
    """Not valid; a re-ask with `error` may fix it."""

    answer: Answer
    error: ModelBehaviorError


@dataclass(frozen=True)
class Ignored:
    """The backend ignored the strategy: the next strategy is tried, without spending a re-ask."""

    answer: Answer
    error: ModelBehaviorError


@dataclass(frozen=True)
class Stopped:
    """Refused, filtered or cut off: asking again would not help."""

    answer: Answer
    error: OutputError


@dataclass(frozen=True)
class Looped:
    """Cut off in a loop (`_loops`): the same request would loop again; another sampling may not."""

    answer: Answer
    error: IncompleteOutputError
    loop: Loop


Verdict = Valid | Invalid | Ignored | Looped | Stopped


def outcome_of(error: OutputError) -> str:
    """The `outcome` a run that ended with `error` reports."""
    if isinstance(error, RefusalError):
        return "refusal"
    if isinstance(error, IncompleteOutputError):
        return "incomplete"
    if isinstance(error, ContentFilterError):
        return "content_filter"
    return "invalid"


def cut_off(strategy: Strategy, target: Target, answer: Answer, sent: Sequence[tuple[str, Any]]) -> Verdict:
    """A cut-off answer (`sent`: the loop-breaking fields it was asked with). Constrained output
    (native, tool) and plain text were on their way: the token limit is the problem, unless the
    answer loops, or its document is whole (its last allowed token closed it). Unconstrained output often holds a complete JSON value followed by rambling:
    that value counts (and when it is invalid, a re-ask with its errors may fix it: it fitted)."""
    plain = target.schema.is_plain_text() or strategy.name == "text"
    if not strategy.cut_off_is_final:
        try:
            return Valid(answer, target.schema.validate_complete_json(answer.text))
        except ModelBehaviorError as error:
            if not any(isinstance(e, dict) and e.get("type") == "cut_off" for e in error.errors):
                return Invalid(answer, error)
    elif not plain:  # closed by its last allowed token: complete, whatever the finish reason says
        with contextlib.suppress(ModelBehaviorError):
            return Valid(answer, target.schema.validate_json(answer.text))
    growing = None if plain else Nesting(answer.text).growing()  # more tokens would only let it run on
    loop = loop_in(answer.text)
    if loop is not None:  # a loop, not a long answer: another sampling may end it
        return Looped(answer, loop_error(loop, sent, growing), loop)
    unfinished = "" if strategy.cut_off_is_final else " before it held a complete JSON value"
    cut = f"the answer was cut off at the token limit after {len(answer.text)} characters{unfinished}"
    message = f"{cut}; raise max_tokens" if growing is None else f"{growing} when {cut}: {BOUND_IT} or raise max_tokens"
    return Stopped(answer, IncompleteOutputError(message))


def used_up(max_tokens: int | None, usage: UsageDetails | None) -> bool:
    """Every allowed output token was used: the answer was cut off, whatever the finish reason says."""
    return max_tokens is not None and usage is not None and (usage.output_tokens or 0) >= max_tokens


def brief(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters]"


def calls_callers_tools(response: ChatResponse[Any], plan: AttemptRequest) -> bool:
    """Whether the answer calls a tool the caller declared (not the strategy's own answer tool):
    then it is a step of the caller's tool loop, returned unjudged, not an answer to validate."""
    declared: set[str | None] = {item.name for item in plan.options.tools or () if isinstance(item, FunctionTool)}
    declared |= {_dict_tool_name(item) for item in plan.options.tools or () if isinstance(item, dict)}
    declared.discard(plan.tool_name)
    return any(
        isinstance(content, FunctionCallContent) and content.name in declared
        for message in response.messages
        for content in message.contents
    )


def _dict_tool_name(item: dict[str, Any]) -> str | None:
    inner = item.get("function")
    return inner.get("name") if isinstance(inner, dict) else item.get("name")
