"""`retry_after_seconds`: the wait a response asks for, from its Retry-After headers."""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["retry_after_seconds"]


def retry_after_seconds(headers: Mapping[str, Any], *, now: float | None = None) -> float | None:
    """The wait a response asks for: `retry-after-ms`, else `retry-after` (seconds or HTTP date).

    A header sent twice comes joined by commas (`"5, 7"`, as httpx joins repeated headers), or as a
    list (a mapping of your own); its largest valid value is the wait, which honours every one of them. None when absent, or when
    no value is valid (unparsable, negative or not finite). Example:
    `retry_after_seconds({"retry-after": "2"}) == 2.0`; `retry_after_seconds({"retry-after": "5, 7"}) == 7.0`.
    """
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        text = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)  # a multi-dict's list
        waits = [s / scale for s in _values(text, time.time() if now is None else now)]
        valid = [s for s in waits if math.isfinite(s) and s >= 0]
        if valid:
            return max(valid)
    return None


def _values(text: str, now: float) -> list[float]:
    """Each value of a comma-joined header: a number, or an HTTP date as seconds from `now` (a date's
    own comma, after its weekday, kept)."""
    parts = [part.strip() for part in text.split(",")]
    found: list[float] = []
    index = 0
    while index < len(parts):
        seconds = _number(parts[index])
        if seconds is None and index + 1 < len(parts):  # `Wed, 21 Oct 2015 07:28:00 GMT`
            seconds = _seconds_until_http_date(f"{parts[index]}, {parts[index + 1]}", now)
            index += seconds is not None
        if seconds is None:
            seconds = _seconds_until_http_date(parts[index], now)
        if seconds is not None:
            found.append(seconds)
        index += 1
    return found


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _seconds_until_http_date(value: str, now: float) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - now
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
