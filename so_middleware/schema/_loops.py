"""Degenerate repetition: an answer that repeats one piece of text over and over until its token limit.

A grammar-constrained small model can loop (a list that never closes, a string that repeats)
until the token limit. A loop is an answer that does not end: only an answer cut off at its token
limit is judged (a complete answer, however repetitive, is judged by its schema alone: real data
repeats, a table's identical rows, a padded field, a separator line). Its tail is then periodic:
`loop_in(text)` finds the shortest period `p` (1 to `MAX_PERIOD` characters) such that each of the
last `span` characters equals the one `p` before it, with `span >= max(MIN_CUT_SPAN, MIN_REPEATS *
p)`: at least `MIN_CUT_SPAN` characters and `MIN_REPEATS` more copies of the unit after its first.
So 64 spaces, or one 40-character list item written six times in a row, is a loop; a long answer
with varied content, or a list whose items differ (even by one digit each), is not.

A stream is read to its end (or to its limit). On a backend whose profile says it loops
(`Capabilities.prone_to_loops`, a small local model), `LoopWatch` closes a stream whose tail repeats
once no token is left to close its JSON document.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BOUND_IT", "MAX_PERIOD", "MIN_CUT_SPAN", "MIN_REPEATS", "Loop", "LoopWatch", "Nesting", "loop_in"]

MAX_PERIOD = 400  # the longest repeated unit looked for, in characters (a table row may be long)
MIN_CUT_SPAN = 64  # the fewest repeated characters that make a loop (after the unit's first copy)
MIN_REPEATS = 5  # ... and the fewest copies of the unit after its first
BOUND_IT = "bound it with max_length on the field (Annotated[list[T], Field(max_length=...)], which a grammar enforces)"
_KEY_CHARS = 80  # the most characters of a string kept as a possible key (keys are short; values may not be)


@dataclass(frozen=True)
class Loop:
    """A periodic tail: `unit` repeated `repeats` times (whole copies) at the end of `length` characters."""

    unit: str
    repeats: int
    length: int

    def describe(self) -> str:
        shown = self.unit if len(self.unit) <= 40 else f"{self.unit[:40]}…"
        return f"{shown!r} repeated {self.repeats} times at the end of its {self.length} characters"


def loop_in(text: str, *, min_span: int = MIN_CUT_SPAN) -> Loop | None:
    """The loop at the end of `text`, or None (see the module's thresholds)."""
    size = len(text)
    for period in range(1, MAX_PERIOD + 1):
        span = max(min_span, MIN_REPEATS * period)
        if span + period > size:
            return None  # longer periods need still more text
        if text[size - span : size] != text[size - span - period : size - period]:
            continue
        while span + period < size and text[size - span - 1] == text[size - span - 1 - period]:
            span += 1  # how far back the repetition goes
        return Loop(text[size - period :], (span + period) // period, size)
    return None


@dataclass
class _Open:
    array: bool
    key: str | None  # its key in the object around it
    items: int = 0  # items begun (arrays)
    fresh: bool = True  # the next character begins an item (arrays)
    pending: str | None = None  # the key just read (objects)


class Nesting:
    """The JSON containers and string still open at the end of a growing text, read incrementally
    (text before the first `{` or `[` counts too: it is the answer's, and a prefill may be prose)."""

    def __init__(self, text: str = "") -> None:
        self._open: list[_Open] = []
        self._in_string = self._escaped = False
        self._chars: list[str] = []  # the string being read, up to `_KEY_CHARS`
        self._last: str | None = None  # the string read last, a key if a `:` follows
        self.feed(text)

    def feed(self, text: str) -> None:
        for char in text:
            if self._in_string:  # a string's characters only end it or are kept as a key
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._in_string, self._last = False, "".join(self._chars)
                elif len(self._chars) < _KEY_CHARS:
                    self._chars.append(char)
                continue
            if char in " \t\r\n":
                continue
            top = self._open[-1] if self._open else None
            if top is not None and top.array and top.fresh and char not in ",]":
                top.items, top.fresh = top.items + 1, False
            if char == '"':
                self._in_string, self._chars = True, []
            elif char in "[{":
                key = top.pending if top is not None and not top.array else None
                self._open.append(_Open(char == "[", key))
            elif char in "]}" and self._open:
                self._open.pop()
            elif char == ":" and top is not None and not top.array:
                top.pending = self._last
            elif char == "," and top is not None and top.array:
                top.fresh = True

    @property
    def closers(self) -> int:
        """The characters it takes to close the document (each open string and container)."""
        return len(self._open) + self._in_string

    def growing(self) -> str | None:
        """The open array with the most items begun (at least 2), described ("the list 'tags' was
        still growing at 57 items"), or None."""
        top = max((o for o in self._open if o.array and o.items >= 2), key=lambda o: o.items, default=None)
        name = "the list" if top is None or top.key is None else f"the list {top.key!r}"
        return None if top is None else f"{name} was still growing at {top.items} items"


class LoopWatch:
    """Watches a streamed answer on a backend prone to loops: `add` returns the loop to stop at once
    the pieces received (each at least one token) reach `budget` while the tail repeats and the JSON
    document is still open. No token is left to close it then (a single token may close it, `"]}`,
    so no earlier point is certain), and a server that streams past the limit is not waited for.
    With no `budget` (None), it never stops a stream."""

    def __init__(self, budget: int | None, prefill: str = "") -> None:
        self._budget = budget
        self._text = prefill  # the answer so far: a prefill is part of it, not a token received
        self._received = 0
        self._nesting: Nesting | None = None

    def add(self, delta: str) -> Loop | None:
        """Add a streamed piece of the answer; the loop to stop at, or None."""
        if self._budget is None or not delta:
            return None
        self._text += delta
        self._received += 1
        if self._received < self._budget:
            return None  # tokens are left: the document may still close
        nesting = self._nesting = self._nesting or Nesting(self._text[: -len(delta)])  # parsed from here on
        nesting.feed(delta)
        return loop_in(self._text) if nesting.closers else None
