"""Watching both ends while a run goes on: a client that hangs up stops the backend call, and a
server that is stopping ends each open stream with a terminal event instead of cutting it.

uvicorn tells an application nothing when it starts a graceful shutdown; sse-starlette notices the
signal (its `shutdown_event`) and, after `SHUTDOWN_GRACE` seconds, cancels the stream. In that
time a run gets `FINISH_WINDOW` seconds to finish on its own, then `Run.shut_down()` ends it with
`response.failed` (an `error` event for a background run, which ends `cancelled`), well inside
the server's `timeout_graceful_shutdown` of 5 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from sse_starlette import EventSourceResponse
from starlette.types import Receive

from ._runs import Run

__all__ = ["FINISH_WINDOW", "SHUTDOWN_GRACE", "event_stream", "unless_disconnected"]

FINISH_WINDOW = 3.0  # seconds an open stream may still finish normally once the server stops
SHUTDOWN_GRACE = 4.0  # seconds sse-starlette waits for the stream's last event before cutting it


async def unless_disconnected(work: Awaitable[None], receive: Receive) -> bool:
    """Await `work` in a task of its own; when the client disconnects first, cancel it (closing the
    backend stream) and return False. `receive` must be past the request body."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnect(receive))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if task.cancelled():
        return False
    task.result()  # the backend's refusal, raised for the error handler
    return True


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def event_stream(
    run: Run | None, batches: AsyncIterator[list[dict[str, Any]]], on_close: Callable[[], Awaitable[None]] | None = None
) -> EventSourceResponse:
    """The SSE response for a run's event batches (`run` None: one running on another process, whose
    stream is cut when this server stops); `on_close` runs when the stream ends for any reason."""
    shutdown = anyio.Event()

    async def frames() -> AsyncIterator[bytes]:
        ender = asyncio.ensure_future(_end_on_shutdown(run, shutdown) if run else shutdown.wait())
        try:
            async for batch in batches:
                yield "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in batch).encode()
        finally:  # a client gone mid-stream: the run stops and the backend stream is closed now
            ender.cancel()
            if on_close is not None:
                await on_close()

    return EventSourceResponse(frames(), shutdown_event=shutdown, shutdown_grace_period=SHUTDOWN_GRACE)


async def _end_on_shutdown(run: Run, shutdown: anyio.Event) -> None:
    await shutdown.wait()
    with anyio.move_on_after(FINISH_WINDOW):
        while not run.finished:
            await asyncio.sleep(0.1)
    await run.shut_down()
