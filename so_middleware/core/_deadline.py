"""The time left to the current call, set by a layer that bounds it (`with_retries(deadline=...)`).

An adapter caps its HTTP timeouts with it, so a request cancelled at the deadline does not go on
in a worker thread or hold its socket. A leaf module.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["call_deadline", "seconds_left"]

_deadline: ContextVar[float | None] = ContextVar("so_middleware_call_deadline", default=None)


@contextlib.contextmanager
def call_deadline(seconds: float | None) -> Iterator[None]:
    """Within the block, the current call must end `seconds` from now (None: no new bound).

    An outer, earlier deadline still holds. Use it around an awaited call, never across a `yield`.
    """
    if seconds is None:
        yield
        return
    at = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(at if outer is None else min(at, outer))
    try:
        yield
    finally:
        _deadline.reset(token)


def seconds_left() -> float | None:
    """Seconds until the current call's deadline (never negative), or None when there is none."""
    at = _deadline.get()
    return None if at is None else max(0.0, at - time.monotonic())
