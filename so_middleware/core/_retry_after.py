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

    None when absent, unparsable, negative or not finite. Example:
    `retry_after_seconds({"retry-after": "2"}) == 2.0`.
    """
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        seconds: float | None
        try:
            seconds = float(value) / scale
        except (TypeError, ValueError):
            seconds = _seconds_until_http_date(str(value), time.time() if now is None else now)
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _seconds_until_http_date(value: str, now: float) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - now
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
