"""ConverseStream's events read by one worker thread for the whole stream and handed to the event
loop in batches: a `to_thread` hop per event cost more CPU than botocore's parsing of it.

The worker opens the stream (`converse_stream`), then reads at most `BUFFERED` events ahead of the
loop (a bounded buffer: backpressure); the loop takes every event ready at once and is woken only
when it waits on an empty buffer. Closing the reader (the end, a cancel, an idle timeout) stops the
worker: it is woken if it waits for room, and a read it is blocked in is cut by shutting the
socket (urllib3's `HTTPResponse.shutdown`), so no thread is left reading a stream nobody reads.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Any

__all__ = ["BUFFERED", "EventPump", "THREAD_NAME"]

BUFFERED = 64
"""How many events the worker reads ahead of the loop at most."""

THREAD_NAME = "bedrock-converse-stream"

_END = object()


class EventPump:
    """The events of the stream `open_stream()` returns, read on a thread of their own.

    Example:
        pump = EventPump(lambda: sdk.converse_stream(**request)["stream"])
        await pump.opened()
        async for event in pump.events(): ...
    """

    def __init__(self, open_stream: Callable[[], Any]) -> None:
        self._open_stream = open_stream
        self._loop = asyncio.get_running_loop()
        self._lock = threading.Lock()
        self._room = threading.Event()  # cleared while the buffer is full
        self._full = False
        self._buffer: collections.deque[Any] = collections.deque()
        self._outcome: Any = None  # _END or the exception that ended the worker
        self._waiter: asyncio.Future[None] | None = None
        self._stream: Any = None
        self._opened = False
        self._closed = False
        # the caller's context goes with the reads, as with `to_thread`: a tracer's current span
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._read,), name=THREAD_NAME, daemon=True)
        self._thread.start()

    async def opened(self) -> None:
        """Return once the stream is open (its HTTP answer came); raise what opening it raised."""
        while True:
            with self._lock:
                if self._opened or self._outcome is not None:
                    break
                waiter = self._waiter = self._loop.create_future()
            await waiter
        if not self._opened and isinstance(self._outcome, BaseException):
            raise self._outcome

    async def events(self) -> AsyncGenerator[Any, None]:
        """Each event in order; the worker stopped on any exit."""
        try:
            while True:
                waiter = None
                with self._lock:
                    batch = list(self._buffer)
                    self._buffer.clear()
                    outcome = self._outcome
                    if not batch and outcome is None:
                        waiter = self._waiter = self._loop.create_future()
                    full, self._full = self._full, False
                if full:
                    self._room.set()
                if waiter is not None:
                    await waiter
                elif batch:
                    for event in batch:
                        yield event
                elif isinstance(outcome, BaseException):
                    raise outcome
                else:
                    return
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker: no more reads; a read under way is cut (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            stream = self._stream if self._outcome is None else None
        self._room.set()  # a worker waiting for room wakes and sees the close
        if stream is not None:
            _cut(stream)

    def _read(self) -> None:
        stream = None
        try:
            stream = self._open_stream()
            with self._lock:
                self._stream, self._opened = stream, True
                closed = self._closed
                waiter, self._waiter = self._waiter, None
            self._wake(waiter)
            if not closed:
                for event in stream:
                    with self._lock:
                        self._buffer.append(event)
                        if len(self._buffer) >= BUFFERED:
                            self._full = True
                            self._room.clear()
                        full = self._full
                        waiter, self._waiter = self._waiter, None
                    self._wake(waiter)
                    if full:
                        self._room.wait()
                    if self._closed:
                        break
            outcome: Any = _END
        except BaseException as error:  # handed to the loop, raised there inside the error boundary
            outcome = error
        finally:
            if stream is not None:
                stream.close()
        with self._lock:
            self._outcome = outcome
            waiter, self._waiter = self._waiter, None
        self._wake(waiter)

    def _wake(self, waiter: asyncio.Future[None] | None) -> None:
        """Wake the loop if it waits (called on the worker)."""
        if waiter is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                self._loop.call_soon_threadsafe(_release, waiter)


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _cut(stream: Any) -> None:
    """Unblock a worker's read of `stream` from another thread: closing the body would wait for the
    read's lock (up to botocore's read timeout); shutting the socket's read side ends the read."""
    body: Any = getattr(stream, "_raw_stream", None)  # botocore's EventStream over urllib3's HTTPResponse
    with contextlib.suppress(AttributeError, ValueError, RuntimeError, OSError):
        body.shutdown()
