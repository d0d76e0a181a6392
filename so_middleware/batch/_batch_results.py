"""A provider batch's results, read one line at a time: each becomes the HTTP answer of the
request its `custom_id` names, and a line that cannot be read never costs the others theirs.

A line that is not JSON (cut off), not an object (`null`) or lacks what its provider documents
(`custom_id`, `response.status_code` and `body`; `result.type` and its fields) is a 502 answer
of type `batch_unreadable_line` for the request it names, its text kept in the error body's
`raw_lines`. A cut-off line still names its request when its `custom_id` can be read. A line
that names no request of the batch (no `custom_id` at all) cannot be given to an item: it is
kept in `unattributed` (the run's `summary.unattributed_lines`: once, not on each error), and
every request the batch left without a readable answer gets a 502 saying how many there were.
A request with no line at all, and none unattributed, ended with the batch: a 408 naming why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "BatchAnswers", "anthropic_line", "not_run", "openai_line"]

Answer = tuple[int, Any]  # HTTP status and JSON body
UNREADABLE = "batch_unreadable_line"
_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"')  # the form of the ids we send


class _Unreadable(ValueError):
    """A line that cannot be used; `key` is the request it names, when it names one."""

    def __init__(self, reason: str, key: str | None = None) -> None:
        super().__init__(reason)
        self.key = key


def not_run(why: str, anthropic: bool) -> Answer:
    """The answer to a request the batch ended without running (expired, cancelled)."""
    message = f"the batch ended ({why}) before this request ran"
    if anthropic:
        return 408, {"type": "error", "error": {"type": f"batch_{why}", "message": message}}
    return 408, {"error": {"message": message, "type": f"batch_{why}", "param": None, "code": None}}


def _error(message: str, raw_lines: list[str] | None, anthropic: bool) -> Answer:
    kept = {} if raw_lines is None else {"raw_lines": raw_lines}
    if anthropic:
        return 502, {"type": "error", "error": {"type": UNREADABLE, "message": message, **kept}}
    return 502, {"error": {"message": message, "type": UNREADABLE, "param": None, "code": UNREADABLE, **kept}}


def _custom_id(record: Any) -> str:
    if not isinstance(record, dict):
        raise _Unreadable(f"a {type(record).__name__}, not an object")
    key = record.get("custom_id")
    if not isinstance(key, str):
        raise _Unreadable("no custom_id")
    return key


def openai_line(record: Any) -> tuple[str, Answer]:
    """The request a line of an OpenAI batch's output or error file names, and its answer."""
    key = _custom_id(record)
    response, error = record.get("response"), record.get("error")
    if response is not None:
        status = response.get("status_code") if isinstance(response, dict) else None
        if not isinstance(status, int) or not 100 <= status <= 599 or not isinstance(response.get("body"), dict):
            raise _Unreadable("its response has no status_code and body", key)
        return key, (status, response["body"])
    if error is not None and not isinstance(error, dict):
        raise _Unreadable("its error is not an object", key)
    error = error or {}
    code = error.get("code")  # not run (batch_expired, batch_cancelled), or failed without a response
    return key, (408 if code in ("batch_expired", "batch_cancelled") else 500, {"error": {**error, "type": code}})


def anthropic_line(record: Any) -> tuple[str, Answer]:
    """The request a line of an Anthropic message batch's results names, and its answer."""
    key = _custom_id(record)
    result = record.get("result")
    kind = result.get("type") if isinstance(result, dict) else None
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        return key, (200, result["message"])
    if kind == "errored" and isinstance(result.get("error"), dict):
        error = result["error"]
        inner = error.get("error")
        transient = isinstance(inner, dict) and inner.get("type") in ("api_error", "overloaded_error")
        return key, (500 if transient else 400, error)
    if kind in ("canceled", "expired"):
        return key, not_run(kind, anthropic=True)
    raise _Unreadable("its result is not succeeded, errored, canceled or expired with their fields", key)


@dataclass
class BatchAnswers:
    """The answers read from a batch's results so far, and the lines that named no request."""

    held: Collection[str]  # the custom_ids of the requests in the batch
    anthropic: bool
    why: str  # how the batch ended, for the requests it did not run
    answers: dict[str, Answer] = field(default_factory=dict)
    unreadable: dict[str, Answer] = field(default_factory=dict)
    unattributed: list[str] = field(default_factory=list)

    def read(self, data: bytes, line_answer: Callable[[Any], tuple[str, Answer]], where: str) -> None:
        """Read every line of `data` (JSONL) with `line_answer`; `where` names the file in errors."""
        for number, raw in enumerate(data.split(b"\n"), 1):  # not splitlines: U+2028 may be inside a string
            if not raw.strip():
                continue
            text = raw.decode("utf-8", "replace")
            try:
                try:
                    record = json.loads(raw)
                except ValueError as error:
                    found = _CUSTOM_ID.search(raw)  # a cut-off line still names its request
                    raise _Unreadable(f"not JSON: {error}", found.group(1).decode() if found else None) from None
                key, answer = line_answer(record)
                if key not in self.held:
                    raise _Unreadable(f"its custom_id {key!r} is not a request of this batch")
            except _Unreadable as bad:
                if bad.key is not None and bad.key in self.held:
                    message = f"line {number} of {where} cannot be read ({bad}); it is kept in raw_lines"
                    self.unreadable[bad.key] = _error(message, [text], self.anthropic)
                else:
                    self.unattributed.append(text)
                continue
            self.answers[key] = answer

    def finish(self) -> dict[str, Answer]:
        """An answer for every request: its line's, its unreadable line's, else why it has none."""
        missing = not_run(self.why, self.anthropic)
        if self.unattributed:
            count = len(self.unattributed)
            message = (
                f"the batch's results hold no readable line for this request, and {count} line(s) that name "
                "no request (one may be this one's): they are kept in the run's summary.unattributed_lines"
            )
            missing = _error(message, None, self.anthropic)
        return {key: self.answers.get(key) or self.unreadable.get(key) or missing for key in self.held}
