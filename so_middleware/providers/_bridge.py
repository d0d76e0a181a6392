"""Calling sync and async SDK clients from the async core, and streaming from either.

A sync SDK client (`OpenAI()`, `Anthropic()`) runs in a worker thread so the event loop is never
blocked; an async one is awaited. Whether a client is async is read from its type, not from
`inspect.iscoroutinefunction`, which is False for some async SDK methods.

Every wait ends: a worker thread is abandoned when its caller is cancelled (the call returns at
once), and whatever it still produces is closed when it arrives; a sync stream's socket is shut
down so a thread blocked reading it wakes up. The idle timeout bounds each wait for the next event
(the first one included), and is also each socket read's timeout, so no abandoned thread lives on.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import warnings
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.to_thread
import httpx2

from ..core import MAX_RAW_TEXT, ProviderResponseError, SOMiddlewareError, StreamInterruptedError, UsageDetails
from ._idle import Watchdog

__all__ = [
    "IdleTimeout",
    "call_sdk",
    "close_sdk_stream",
    "failure_from_body",
    "interrupted",
    "is_stream_break",
    "iterate_sdk_stream",
    "reported_failure",
    "capped_timeout",
    "kept_body",
    "kept_head",
    "kept_usage",
    "unreadable",
]

_END: Any = object()

# What the SDKs raise when a body cannot be read: not JSON, not UTF-8, nested too deeply.
UNREADABLE = (ValueError, RecursionError)


class IdleTimeout(TimeoutError):
    """No event arrived from the server within the idle timeout."""


async def call_sdk(is_async: bool, function: Callable[..., Any], /, **kwargs: Any) -> Any:
    """Call an SDK method with keyword arguments, awaiting it or running it in a thread.

    A sync call abandoned by cancellation returns at once; a stream it opens later is closed.
    """
    if is_async:
        return await function(**kwargs)
    return await _in_thread(lambda: function(**kwargs), cleanup=_close_quietly)


async def _in_thread(work: Callable[[], Any], *, cleanup: Callable[[Any], None] | None = None) -> Any:
    """Run `work()` in a worker thread that the caller may abandon; an abandoned result goes to
    `cleanup` (exactly once, whichever side finishes last)."""
    lock = threading.Lock()
    state: dict[str, Any] = {}

    def run() -> Any:
        result = work()
        with lock:
            state["result"] = result
            orphaned = "abandoned" in state
        if orphaned and cleanup is not None:
            cleanup(result)
        return result

    try:
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    except BaseException:
        with lock:
            state["abandoned"] = True
            finished = "result" in state
        if finished and cleanup is not None:
            cleanup(state["result"])
        raise


def _close_quietly(result: Any) -> None:
    close = getattr(result, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()


def capped_timeout(sdk_client: Any, seconds: float | None) -> httpx2.Timeout | None:
    """The SDK client's timeouts, each capped just past `seconds` (None: keep the client's), so
    every socket operation ends, and with it every worker thread; the caller's own bound (the
    idle timeout, a deadline) fires first, unless the SDK client's own timeout is shorter: the
    smaller bound wins, read timeout included."""
    if seconds is None:
        return None
    configured = getattr(sdk_client, "timeout", None)
    base = configured if isinstance(configured, httpx2.Timeout) else httpx2.Timeout(configured)
    cap = seconds + _READ_SLACK

    def capped(value: float | None) -> float:
        return cap if value is None else min(value, cap)

    return httpx2.Timeout(
        connect=capped(base.connect), read=capped(base.read), write=capped(base.write), pool=capped(base.pool)
    )


_READ_SLACK = 1.0


async def iterate_sdk_stream(is_async: bool, stream: Any, idle_timeout: float | None = None) -> AsyncIterator[Any]:
    """Yield the events of an `EventStream`, one at a time.

    Waiting longer than `idle_timeout` seconds for the next event (bytes that complete none, such
    as keep-alive comments, do not count) raises `IdleTimeout`. Only reading the body waits: the
    events of a chunk already read come out at once.
    """
    chunks = aiter(stream.response.aiter_bytes()) if is_async else iter(stream.response.iter_bytes())
    watchdog = None if idle_timeout is None else Watchdog(idle_timeout)
    try:
        while True:
            if watchdog is not None:
                watchdog.reading = True
                watchdog.arm()
            try:
                if is_async:
                    chunk = await anext(chunks, _END)
                else:
                    chunk = await _in_thread(lambda: next(chunks, _END))
            except BaseException as error:
                _wake_reader(is_async, stream)
                if watchdog is not None and watchdog.expired(error):
                    raise IdleTimeout(f"no event from the server for {idle_timeout:g} s") from error
                raised = stream.sdk_error(error)
                if raised is not error:
                    raise raised from error
                raise
            if watchdog is not None:
                watchdog.reading = False
            events = stream.finish() if chunk is _END else stream.feed(chunk)
            fresh = False
            for event in events:
                fresh = True
                yield event
            if fresh and watchdog is not None:  # the wait for the next event starts when it is asked for
                watchdog.deadline = watchdog.loop.time() + watchdog.seconds
            if chunk is _END:
                return
    finally:
        if watchdog is not None:
            watchdog.disarm()


def _wake_reader(is_async: bool, stream: Any) -> None:
    """Shut down a sync stream's socket, so a worker thread blocked reading it returns now."""
    if is_async:
        return
    network = getattr(getattr(stream, "response", None), "extensions", {}).get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


async def close_sdk_stream(is_async: bool, stream: Any) -> None:
    """Close an SDK stream and its HTTP response (idempotent). A failure to close a connection
    that already broke is ignored: it must not replace the error that ended the stream."""
    if stream is None:
        return
    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
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


def unreadable(what: str, error: BaseException | None = None) -> ProviderResponseError:
    """The typed error for an answer that cannot be read (`what` says which and why)."""
    reason = f": {type(error).__name__}" if error is not None else ""
    exc = ProviderResponseError(f"the server's answer could not be read: {what}{reason}")
    exc.__cause__ = error
    return exc


def kept_body(value: Any) -> str:
    """The text of an answer that could not be used, for its error to keep (at most
    `MAX_RAW_TEXT` characters): the document a JSON or UTF-8 decoding error holds, a body the SDK
    returned as text, or an SDK object as the JSON it was read from."""
    if isinstance(value, str):
        return value[:MAX_RAW_TEXT]
    if isinstance(value, UnicodeDecodeError):
        return bytes(value.object[: MAX_RAW_TEXT * 4]).decode("utf-8", "replace")[:MAX_RAW_TEXT]
    if isinstance(value, ValueError) and isinstance(getattr(value, "doc", None), str):  # JSONDecodeError
        return str(getattr(value, "doc", ""))[:MAX_RAW_TEXT]
    dump = getattr(value, "model_dump_json", None)
    if not callable(dump):
        return ""
    with warnings.catch_warnings(), contextlib.suppress(Exception):  # a shape the model does not expect
        warnings.simplefilter("ignore")
        return str(dump(exclude_unset=True))[:MAX_RAW_TEXT]
    return ""


async def kept_head(is_async: bool, stream: Any, *, within: float) -> str:
    """The start of an unread SDK stream's body (at most `MAX_RAW_TEXT` bytes, read for at most
    `within` seconds), as text for an error to keep; "" when it cannot be read."""
    response: Any = getattr(stream, "response", None)
    chunks = bytearray()

    def read_sync() -> None:
        for chunk in response.iter_bytes():
            chunks.extend(chunk)
            if len(chunks) >= MAX_RAW_TEXT:
                return

    with anyio.move_on_after(within), contextlib.suppress(Exception):
        if not is_async:
            await _in_thread(read_sync)  # an abandoned read ends when the stream is closed
        else:
            async for chunk in response.aiter_bytes():
                chunks.extend(chunk)
                if len(chunks) >= MAX_RAW_TEXT:
                    break
    return bytes(chunks[:MAX_RAW_TEXT]).decode("utf-8", "replace")


def kept_usage(result: Any) -> UsageDetails | None:
    """The token counts an unusable answer reported, when it has readable ones (any SDK's names)."""
    usage = getattr(result, "usage", None)

    def count(*names: str) -> int | None:
        values = (getattr(usage, name, None) for name in names)
        return next((v for v in values if isinstance(v, int) and not isinstance(v, bool)), None)

    used = count("input_tokens", "prompt_tokens"), count("output_tokens", "completion_tokens")
    return None if used == (None, None) else UsageDetails(*used, count("total_tokens"))


def reported_failure(error: BaseException) -> ProviderResponseError | None:
    """An SDK error raised for an error event inside a stream, as a `ProviderResponseError`
    carrying the provider's error type (None for any other error)."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if "APIError" not in names or names & _SDK_BREAKS:
        return None
    exc = failure_from_body(getattr(error, "body", None))
    exc.__cause__ = error
    return exc


def failure_from_body(body: Any) -> ProviderResponseError:
    """The typed error for an error event inside a stream, from its body (the error object, or
    an object that nests it under `error`), carrying the provider's error type."""
    nested = body.get("error") if isinstance(body, dict) else None
    details = nested if isinstance(nested, dict) else body if isinstance(body, dict) else {}
    code = details.get("type") or details.get("code")
    return ProviderResponseError(
        f"the server reported an error inside the stream: {code or 'no error type given'}",
        code=code if isinstance(code, str) else None,
        reported=True,
    )


_TRANSPORT_MODULES = ("httpx2", "httpx", "httpcore", "httpcore2", "h11")
_SDK_BREAKS = {"APIConnectionError", "APITimeoutError"}


def is_stream_break(error: BaseException) -> bool:
    """True for errors that mean the event stream itself broke off: a cut connection, a read
    timeout, the idle timeout. False for our own errors and cancellation."""
    if isinstance(error, SOMiddlewareError) or not isinstance(error, Exception):
        return False
    if isinstance(error, (OSError, EOFError)):
        return True
    names = {cls.__name__ for cls in type(error).__mro__}  # the SDKs wrap a cut connection in these
    return bool(names & _SDK_BREAKS) or type(error).__module__.split(".")[0] in _TRANSPORT_MODULES
