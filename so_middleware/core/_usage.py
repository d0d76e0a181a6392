"""What a model call consumed (`UsageDetails`) and why it stopped (`FinishReason`). A leaf module."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

__all__ = ["FinishReason", "UsageDetails"]


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
    cache_creation_input_tokens: int | None = None  # input tokens written to the provider's prompt cache

    def __add__(self, other: UsageDetails | None) -> UsageDetails:
        if other is None:
            return self
        return UsageDetails(
            *(
                _add_counts(getattr(self, name), getattr(other, name))
                for name in (
                    "input_tokens",
                    "output_tokens",
                    "total_tokens",
                    "cached_input_tokens",
                    "reasoning_tokens",
                    "cache_creation_input_tokens",
                )
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
    LONG_RUNNING = "long_running"  # a background run still going: poll or resume with its continuation_token

    def __str__(self) -> str:
        return self.value
