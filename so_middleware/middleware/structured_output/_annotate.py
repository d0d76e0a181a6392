"""What an error that ends a structured-output run carries: the attempts the run made."""

from __future__ import annotations

from collections.abc import Sequence

from ...core import Attempt, OutputError, UsageDetails, carry

__all__ = ["keep_attempts"]


def keep_attempts(error: Exception, attempts: Sequence[Attempt]) -> None:
    """An error that ends the run (an SDK error, a broken stream, an unusable answer) keeps the
    attempts made so far: its type is left alone; `.attempts` and `.usage` are added, and a note
    says so. An `OutputError` has them already."""
    if isinstance(error, OutputError):
        return
    notes = []
    if attempts:
        strategies = ", ".join(str(a.strategy) for a in attempts)
        notes.append(
            f"structured output: the run ended with {len(attempts)} attempt(s) ({strategies}); "
            "their raw text and usage are on this error's .attempts and .usage"
        )
    carry(error, notes=notes, attempts=list(attempts), usage=UsageDetails.total(a.usage for a in attempts))
