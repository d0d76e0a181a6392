"""What a run makes of one answer: valid, invalid (re-ask), ignored (next strategy) or stopped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import ContentFilterError, IncompleteOutputError, ModelBehaviorError, OutputError, RefusalError
from .strategies import Answer

__all__ = ["Ignored", "Invalid", "Stopped", "Valid", "Verdict", "outcome_of"]


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


Verdict = Valid | Invalid | Ignored | Stopped


def outcome_of(error: OutputError) -> str:
    """The `outcome` a run that ended with `error` reports."""
    if isinstance(error, RefusalError):
        return "refusal"
    if isinstance(error, IncompleteOutputError):
        return "incomplete"
    if isinstance(error, ContentFilterError):
        return "content_filter"
    return "invalid"
