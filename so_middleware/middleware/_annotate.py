"""What an error that ends a structured-output run carries: the attempts the run made."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from ..core import Attempt, OutputError, UsageDetails

__all__ = ["keep_attempts"]


def keep_attempts(error: Exception, attempts: Sequence[Attempt]) -> None:
    """An error that ends the run (an SDK error, a broken stream, an unusable answer) keeps the
    attempts made so far: its type is left alone; `.attempts` and `.usage` are added, and a note
    says so. An `OutputError` has them already."""
    if isinstance(error, OutputError):
        return
    with contextlib.suppress(AttributeError, TypeError):
        error.attempts = list(attempts)  # type: ignore[attr-defined]
        error.usage = UsageDetails.total(a.usage for a in attempts)  # type: ignore[attr-defined]
    if attempts:
        strategies = ", ".join(str(a.strategy) for a in attempts)
        note = (
            f"structured output: the run ended with {len(attempts)} attempt(s) ({strategies}); "
            "their raw text and usage are on this error's .attempts and .usage"
        )
        notes = getattr(error, "__notes__", None)  # `add_note` (3.11+) appends here
        with contextlib.suppress(AttributeError, TypeError):
            setattr(error, "__notes__", [*(notes or []), note])  # noqa: B010
