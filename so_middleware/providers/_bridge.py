"""Calling sync and async SDK clients from the async core, and streaming from either.

A sync SDK client (`OpenAI()`, `Anthropic()`) runs in a worker thread so the event loop is never
blocked; an async one is awaited. Whether a client is async is read from its type, not from
`inspect.iscoroutinefunction`, which is False for some async SDK methods.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.to_thread

from ..core import SOMiddlewareError, StreamInterruptedError

__all__ = ["call_sdk", "close_sdk_stream", "interrupted", "is_stream_break", "iterate_sdk_stream"]

_END: Any = object()


async def call_sdk(is_async: bool, function: Callable[..., Any], /, **kwargs: Any) -> Any:
    """Call an SDK method with keyword arguments, awaiting it or running it in a thread."""
    if is_async:
        return await function(**kwargs)
    return await anyio.to_thread.run_sync(lambda: function(**kwargs))


async def iterate_sdk_stream(is_async: bool, stream: Any) -> AsyncIterator[Any]:
    """Yield the events of an SDK stream (`AsyncStream` or `Stream`), one at a time."""
    if is_async:
        async for event in stream:
            yield event
        return
    iterator = iter(stream)
    while True:
        event = await anyio.to_thread.run_sync(next, iterator, _END)
        if event is _END:
            return
        yield event


async def close_sdk_stream(is_async: bool, stream: Any) -> None:
    """Close an SDK stream and its HTTP response (idempotent)."""
    if stream is None:
        return
    with anyio.CancelScope(shield=True):
        if is_async:
            await stream.close()
        else:
            await anyio.to_thread.run_sync(stream.close)


def interrupted(error: BaseException, partial_text: str, updates: int) -> StreamInterruptedError:
    """The typed error for a stream that broke mid-way, carrying the text received so far."""
    exc = StreamInterruptedError(
        f"the stream broke off after {updates} updates ({len(partial_text)} characters of text): "
        f"{type(error).__name__}: {error}",
        partial_text=partial_text,
        updates=updates,
    )
    exc.__cause__ = error
    return exc


_TRANSPORT_MODULES = ("httpx2", "httpx", "httpcore", "h11")


def is_stream_break(error: BaseException) -> bool:
    """True for errors that mean the event stream itself broke: a cut connection, malformed
    SSE or JSON, an error event from the server. False for our own errors and cancellation."""
    if isinstance(error, SOMiddlewareError) or not isinstance(error, Exception):
        return False
    if isinstance(error, (OSError, ValueError, EOFError)):
        return True
    names = {cls.__name__ for cls in type(error).__mro__}
    return "APIError" in names or type(error).__module__.split(".")[0] in _TRANSPORT_MODULES
