"""Blocking entry points over the async core.

Every blocking call runs on one event loop kept in a daemon thread, so async SDK clients (and
their connection pools) stay bound to a single loop across calls, which `asyncio.run` per call
would break.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ._exceptions import UserError

__all__ = ["run_sync"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="so-middleware-sync", daemon=True).start()
            _loop = loop
        return _loop


def run_sync(make_awaitable: Callable[[], Awaitable[T]]) -> T:
    """Run the awaitable made by `make_awaitable()` to completion and return its result.

    Raises `UserError` when called from inside a running event loop (use `await` there).
    Ctrl-C cancels the call on the loop before it propagates.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError(
            "a *_sync method was called inside a running event loop; await the async method instead "
            "(e.g. await client.get_response(...))"
        )

    async def runner() -> T:
        return await make_awaitable()

    future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(runner(), _background_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise
