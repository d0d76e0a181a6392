"""Watching both ends while a run goes on: a client that hangs up stops the backend call, and a
server that is stopping ends each open stream with a terminal event instead of cutting it.

An event stream is written as SSE bytes straight to the ASGI `send`, one write per batch of
events, each encoded once (orjson); one task per stream waits for the client to hang up. uvicorn
tells an application nothing when it starts a graceful shutdown: one poller per event loop reads
the flag of the server that handles SIGTERM (every `POLL` seconds, while streams are open), then
gives each open run `FINISH_WINDOW` seconds to finish on its own, ends it with `Run.shut_down()`
(`response.failed`; an `error` event for a background run, which ends `cancelled`), and cuts a
stream still open `SHUTDOWN_GRACE` seconds after the signal, well inside the server's
`timeout_graceful_shutdown` of 5 s. The same poller sends a comment line (`: ping`) on a stream
that has sent nothing for `PING_INTERVAL` seconds, so proxies keep it open.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..wire.common import dumps
from ._errors import BadRequest
from ._runs import SHUTTING_DOWN, ResponseRun

__all__ = ["FINISH_WINDOW", "SHUTDOWN_GRACE", "event_stream", "frames", "server_stopping", "unless_disconnected"]

FINISH_WINDOW = 3.0  # seconds an open stream may still finish normally once the server stops
SHUTDOWN_GRACE = 4.0  # seconds after the signal a stream still open is cut
PING_INTERVAL = 15.0  # seconds without a byte before a keep-alive comment
POLL = 0.5  # seconds between two looks at the server's shutdown flag
_HEADERS = {"cache-control": "no-store", "connection": "keep-alive", "x-accel-buffering": "no"}


async def unless_disconnected(work: Awaitable[None], receive: Receive) -> bool:
    """Await `work` in this task; when the client disconnects first, cancel it (closing the backend
    call) and return False. When the server stops meanwhile, `work` gets `FINISH_WINDOW` seconds,
    then is cancelled and the answer is a 503 (uvicorn would cancel it with a traceback at its own
    timeout). `receive` must be past the request body. Two tasks watch; the work itself stays in the
    caller's task (and in its context)."""
    current = asyncio.current_task()
    assert current is not None
    why: list[str] = []  # the first watcher to end says why `work` was cancelled

    async def watch(until: Awaitable[None], reason: str) -> None:
        await until
        if not why:
            why.append(reason)
            current.cancel()  # delivered in `work`: this runs only while the caller waits on it

    watchers = [asyncio.ensure_future(watch(_disconnect(receive), "gone")),
                asyncio.ensure_future(watch(_shutdown_window(), "stopping"))]  # fmt: skip
    try:
        await work
    except asyncio.CancelledError:
        if not why:
            raise
        uncancel = getattr(current, "uncancel", None)  # Python 3.11+: the task counts cancellations
        if uncancel is not None:
            uncancel()
        if why[0] == "stopping":
            raise BadRequest(SHUTTING_DOWN, None, 503, "server_shutting_down") from None
        return False
    finally:
        for watcher in watchers:
            watcher.cancel()
    return True


async def _shutdown_window() -> None:
    """Returns `FINISH_WINDOW` seconds after the server started to stop."""
    while not server_stopping():
        await asyncio.sleep(POLL)
    await asyncio.sleep(FINISH_WINDOW)


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def frames(batch: list[dict[str, Any]]) -> bytes:
    """The SSE bytes of a batch of events: `event: TYPE`, `data: JSON`, a blank line, per event."""
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), dumps(e)) for e in batch)


def event_stream(
    run: ResponseRun | None,
    batches: AsyncIterator[list[dict[str, Any]]],
    on_close: Callable[[], Awaitable[None]] | None = None,
) -> Response:
    """The SSE response for a run's event batches (`run` None: one running on another process, whose
    stream is cut when this server stops); `on_close` runs when the stream ends for any reason."""
    return _EventStream(run, batches, on_close)


class _EventStream(Response):
    media_type = "text/event-stream"

    def __init__(
        self,
        run: ResponseRun | None,
        batches: AsyncIterator[list[dict[str, Any]]],
        on_close: Callable[[], Awaitable[None]] | None,
    ) -> None:
        # as StreamingResponse: no `body`, so no content-length
        self.status_code, self.background = 200, None
        self.init_headers(_HEADERS)
        self.run, self.batches, self.on_close = run, batches, on_close
        self.sender: asyncio.Task[Any] | None = None
        self.cut = False  # the sender was cancelled here: the client is gone, or the server stops
        self.sending = False
        self.idle_since = 0.0
        self.send: Send | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        self.sender, self.send, self.idle_since = asyncio.current_task(), send, loop.time()
        watcher = asyncio.ensure_future(self._watch(receive))
        _poller_for(loop).add(self)
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for batch in self.batches:
                await self._write(frames(batch))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not self.cut:
                raise
            uncancel = getattr(self.sender, "uncancel", None)  # Python 3.11+: the task counts cancellations
            if uncancel is not None:
                uncancel()
        finally:  # a client gone mid-stream: the run stops and the backend stream is closed now
            _poller_for(loop).streams.discard(self)
            watcher.cancel()
            await self.batches.aclose()  # type: ignore[attr-defined]
            if self.on_close is not None:
                await self.on_close()

    async def _write(self, body: bytes) -> None:
        assert self.send is not None
        self.sending = True
        try:
            await self.send({"type": "http.response.body", "body": body, "more_body": True})
        finally:
            self.sending = False
            self.idle_since = asyncio.get_running_loop().time()

    async def _watch(self, receive: Receive) -> None:
        await _disconnect(receive)
        self.stop()

    def stop(self) -> None:
        """Cut the stream now (its `finally` closes the run's stream)."""
        if self.sender is not None and not self.cut:
            self.cut = True
            self.sender.cancel()

    async def ping(self) -> None:
        """A keep-alive comment, unless an event is being written."""
        if not self.sending and not self.cut:
            with contextlib.suppress(Exception):
                await self._write(b": ping\n\n")

    async def end_on_shutdown(self) -> None:
        """The server stops: the run may finish within `FINISH_WINDOW`, then it is ended; the
        stream is cut if still open `SHUTDOWN_GRACE` seconds after."""
        loop = asyncio.get_running_loop()
        cut_at = loop.time() + SHUTDOWN_GRACE
        if self.run is not None:  # a run of this process ends here; another process's run goes on there
            with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                await asyncio.wait_for(self._finished(), FINISH_WINDOW)
            await self.run.shut_down()
        while self.sender is not None and not self.sender.done() and loop.time() < cut_at:
            await asyncio.sleep(0.1)
        self.stop()

    async def _finished(self) -> None:
        while self.run is not None and not self.run.finished:
            await asyncio.sleep(0.1)


class _Poller:
    """The open streams of one event loop, the server's shutdown flag and the keep-alive pings."""

    def __init__(self) -> None:
        self.streams: set[_EventStream] = set()
        self.task: asyncio.Task[None] | None = None
        self.ending: set[asyncio.Task[None]] = set()

    def add(self, stream: _EventStream) -> None:
        self.streams.add(stream)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._poll())

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        while self.streams:
            await asyncio.sleep(POLL)
            if server_stopping():
                for stream in list(self.streams):
                    self._spawn(stream.end_on_shutdown())
                self.streams.clear()
                return
            now = loop.time()
            for stream in list(self.streams):
                if now - stream.idle_since >= PING_INTERVAL:
                    stream.idle_since = now
                    self._spawn(stream.ping())

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self.ending.add(task)  # kept until done (the loop holds tasks weakly)
        task.add_done_callback(self.ending.discard)


_pollers: dict[asyncio.AbstractEventLoop, _Poller] = {}


def _poller_for(loop: asyncio.AbstractEventLoop) -> _Poller:
    poller = _pollers.get(loop)
    if poller is None:
        for old in [old for old in _pollers if old.is_closed()]:
            del _pollers[old]
        poller = _pollers[loop] = _Poller()
    return poller


def server_stopping() -> bool:
    """True once the uvicorn server handling SIGTERM in this process has been told to stop (its
    handler is a method of the server; a server in another thread handles no signal)."""
    with contextlib.suppress(Exception):
        return bool(getattr(getattr(signal.getsignal(signal.SIGTERM), "__self__", None), "should_exit", False))
    return False
