"""Streamed updates of one attempt: the answer's deltas with the partial value so far."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...core import ChatResponseUpdate, ModelBehaviorError, TextContent
from ...schema import OutputSchema
from ..strategies import AttemptRequest

__all__ = ["PartialReader"]


class PartialReader:
    """Turns one attempt's deltas into updates carrying `partial_value` and `completed_items`.

    An assistant prefill is part of the answer but was never streamed by the server: it is sent
    with the first update that arrives, so nothing reaches the caller before the server answered
    (a retry layer outside can still retry the first request).
    """

    def __init__(self, schema: OutputSchema, plan: AttemptRequest, attempt: int, text_so_far: bool = False) -> None:
        plain = schema.is_plain_text() or plan.strategy.name == "text"
        # a regex or grammar answer is text: its partial value is the text so far
        self._text: str | None = "" if text_so_far else None
        self._parser = None if plain else schema.partial_parser(lenient=plan.strategy.lenient)
        self._broken, self._attempt, self._prefill = False, attempt, plan.prefill

    @property
    def prefill_pending(self) -> bool:
        return bool(self._prefill)

    def update(self, delta: str, source: ChatResponseUpdate[Any], own: bool = False) -> ChatResponseUpdate[Any]:
        """The caller's update for `source` (the server's), whose answer delta is `delta`. With
        `own` (an adapter's fresh update, `streams_fresh_updates`), `source` itself is filled in when
        nothing of the server's would change: its one text content is the delta (or it has neither)
        and it has no additional properties."""
        delta, self._prefill = self._prefill + delta, ""
        completed: list[Any] = []
        if self._parser is not None and not self._broken and delta:
            try:
                self._parser.feed(delta)
                completed = self._parser.pop_completed()  # a fresh list each time
            except ModelBehaviorError:
                self._broken = True  # no partial values for the rest; the final check re-asks
        partial = self._parser.value if self._parser is not None and not self._broken else None
        if self._text is not None:
            self._text += delta
            partial = self._text or None
        given = source.contents
        reused = len(given) == 1 and type(given[0]) is TextContent and given[0].text is delta
        fields: dict[str, Any] = {"role": "assistant", "attempt": self._attempt, "partial_value": partial,
                                  "completed_items": completed}  # fmt: skip
        if own and (reused or not (given or delta)) and not source.additional_properties:
            source.__dict__.update(fields)  # the adapter's own object, nothing of the server's changed: filled in
            return source
        # the server's update (usage, finish reason, ids, its raw form, a continuation token) as ours;
        # its one text content kept when it is the delta (frozen: shared safely, not made again)
        fields["contents"] = [given[0]] if reused else [TextContent(delta)] if delta else []
        fields["additional_properties"] = {}
        if type(source) is not ChatResponseUpdate:  # a subclass may check its fields in __init__
            return dataclasses.replace(source, **fields)
        # on every update: a copy of the fields as they are (an update has no __post_init__), without
        # `dataclasses.replace`'s walk of the fields
        update: ChatResponseUpdate[Any] = object.__new__(ChatResponseUpdate)
        update.__dict__.update(source.__dict__)
        update.__dict__.update(fields)
        return update
