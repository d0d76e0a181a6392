"""Degenerate repetition: an answer whose tail repeats one piece of text over and over.

A grammar-constrained small model can loop (a list that never closes, a string that repeats)
until the token limit. A loop is not a long answer: its tail is periodic. `loop_in(text)` finds
the shortest period `p` (1 to `MAX_PERIOD` characters) such that each of the last `span`
characters equals the one `p` before it, with `span >= max(MIN_SPAN, MIN_REPEATS * p)`: at least
`MIN_SPAN` characters and `MIN_REPEATS` more copies of the unit after its first. So 200 spaces,
or one 40-character list item written six times in a row, is a loop; a long answer with varied
content, or a list whose items differ (even by one digit each), is not. An answer already cut off
at its token limit is judged with `MIN_CUT_SPAN` in place of `MIN_SPAN`: being cut off is evidence
of its own, and a dense repeat (`, 12345` twenty times) may fill a small limit in fewer characters.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHECK_EVERY", "MAX_PERIOD", "MIN_CUT_SPAN", "MIN_REPEATS", "MIN_SPAN", "Loop", "LoopWatch", "loop_in"]

MAX_PERIOD = 120  # the longest repeated unit looked for, in characters
MIN_SPAN = 200  # the fewest repeated characters that make a loop (after the unit's first copy)
MIN_CUT_SPAN = 64  # the same for an answer cut off at its token limit
MIN_REPEATS = 5  # ... and the fewest copies of the unit after its first
CHECK_EVERY = 64  # a stream is checked each time this many more characters arrived


@dataclass(frozen=True)
class Loop:
    """A periodic tail: `unit` repeated `repeats` times (whole copies) at the end of `length` characters."""

    unit: str
    repeats: int
    length: int

    def describe(self) -> str:
        shown = self.unit if len(self.unit) <= 40 else f"{self.unit[:40]}…"
        return f"{shown!r} repeated {self.repeats} times at the end of its {self.length} characters"


def loop_in(text: str, *, min_span: int = MIN_SPAN) -> Loop | None:
    """The loop at the end of `text`, or None (see the module's thresholds)."""
    size = len(text)
    for period in range(1, MAX_PERIOD + 1):
        span = max(min_span, MIN_REPEATS * period)
        if span + period > size:
            return None  # longer periods need still more text
        if text[size - span :] != text[size - span - period : size - period]:
            continue
        while span + period < size and text[size - span - 1] == text[size - span - 1 - period]:
            span += 1  # how far back the repetition goes
        return Loop(text[size - period :], (span + period) // period, size)
    return None


class LoopWatch:
    """Checks a growing answer for a loop every `CHECK_EVERY` characters (a check is a few slice
    comparisons per period, so a stream is not slowed by it)."""

    def __init__(self) -> None:
        self.text = ""
        self._checked = 0

    def add(self, delta: str) -> Loop | None:
        """Add a streamed piece of the answer; the loop its tail now ends in, or None."""
        self.text += delta
        if len(self.text) - self._checked < CHECK_EVERY:
            return None
        self._checked = len(self.text)
        return loop_in(self.text)
