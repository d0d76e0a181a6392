"""The boundary where an adapter calls its SDK client: each SDK error leaving it carries its
`TransportFailure` (`so_middleware.core.failure_of`), read once here for every layer above.

And two ways an SDK client fails its caller with a message that says nothing useful, caught
here: an async SDK client used on a second event loop ("... is bound to a different event
loop", "Event loop is closed"), and a server that cannot be reached ("Connection error.",
without saying which server)."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

from ..core import UserError, classified, redact_url

__all__ = ["sdk_boundary"]

# The event loop each async SDK client was last used on: its connection pool belongs to that loop.
_loops: weakref.WeakKeyDictionary[Any, weakref.ref[asyncio.AbstractEventLoop]] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def sdk_boundary(sdk_client: Any, is_async: bool) -> Iterator[None]:
    """Around one SDK call: refuse an async SDK client already used on another event loop (before
    any request), name the server in a connection error (the SDK's own type, its URL added), and
    record each error's `TransportFailure` on it (`classified`)."""
    if is_async:
        _check_loop(sdk_client)
    try:
        yield
    except Exception as error:
        named = _naming_the_server(error)
        if named is None:
            classified(error)
            raise
        raise classified(named) from error


def _check_loop(sdk_client: Any) -> None:
    loop = asyncio.get_running_loop()
    try:
        earlier = _loops[sdk_client]()
    except KeyError:
        earlier = None
    except TypeError:  # an SDK client that cannot be weakly referenced: nothing to check against
        return
    if earlier is not None and earlier is not loop:
        state = "closed now" if earlier.is_closed() else "another one"
        raise UserError(
            f"this {type(sdk_client).__name__} was first used on another event loop ({state}), and its "
            "connections belong to that loop. get_response_sync() and run_sync() run on so_middleware's own "
            "loop, and each asyncio.run() makes a new one, so one async SDK client cannot serve both: make "
            "the async client inside the coroutine asyncio.run() runs (one per event loop), or give the "
            "*_sync calls a sync client (OpenAI(), Anthropic())"
        )
    _loops[sdk_client] = weakref.ref(loop)


def _naming_the_server(error: Exception) -> Exception | None:
    """The SDK's `APIConnectionError` again, with the address it could not reach: scheme, host,
    port and path (a password in it hidden, a query string, which may hold a key, left out)."""
    if type(error).__name__ != "APIConnectionError":  # APITimeoutError, a subclass, has a message of its own
        return None
    request = getattr(error, "request", None)
    url = getattr(request, "url", None)
    if url is None:
        return None
    cause = error.__cause__ or error.__context__
    reason = f": {type(cause).__name__}: {cause}" if cause is not None and str(cause) else ""
    address = redact_url(str(url).split("?", 1)[0].split("#", 1)[0])
    message = f"Connection error: cannot reach {address}{reason}"
    try:
        return type(error)(message=message, request=request)  # type: ignore[call-arg]
    except TypeError:  # another signature: keep the SDK's own error
        return None
