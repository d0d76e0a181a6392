"""Reading an SDK's async iterator of answer chunks into updates, for the adapters whose SDK hands
out parsed chunks rather than an event stream (google-genai, ollama): each chunk within the idle
timeout, the iterator closed on any exit, a stream that ends without its last chunk interrupted."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Any

from ..core import ChatResponseUpdate, StreamInterruptedError
from ._idle import Watchdog
from ._sdk_client import EventReader

__all__ = ["read_chunks"]


async def read_chunks(
    chunks: Any,
    reader: EventReader,
    *,
    idle: float | None,
    source: str,
    boundary: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
) -> AsyncGenerator[ChatResponseUpdate[Any], None]:
    """The updates `reader` makes of `chunks`; `StreamInterruptedError` (with the text so far) when
    no chunk comes within `idle` seconds or the chunks end before `reader` saw the last one.

    `chunks` may also be a function that opens them (awaited on the first read), and `boundary` the
    adapter's error boundary, entered for the whole stream: an adapter's `_stream` may then return
    this generator as it is, with no generator of its own handing each update on.

    One timer for the stream (`Watchdog`), its deadline moved on at each read: a cancel scope per
    read cost a fifth of a streamed call's CPU."""
    with boundary():
        if callable(chunks):
            opened: Any = chunks
            chunks = await opened()
        watchdog = None if idle is None else Watchdog(idle)
        try:
            async with contextlib.aclosing(chunks):
                while True:
                    if watchdog is not None:
                        watchdog.deadline = watchdog.loop.time() + watchdog.seconds
                        watchdog.reading = True
                        watchdog.arm()
                    try:
                        chunk = await anext(chunks)
                    except StopAsyncIteration:
                        break
                    except asyncio.CancelledError as error:
                        if watchdog is not None and watchdog.expired(error):
                            text = "".join(reader.text)
                            raise StreamInterruptedError(
                                f"no chunk from {source} within {idle} s", partial_text=text
                            ) from None
                        raise
                    if watchdog is not None:
                        watchdog.reading = False
                    update = reader.read(chunk)
                    if update is not None:
                        yield update
        finally:
            if watchdog is not None:
                watchdog.disarm()
        if not reader.finished:
            text = "".join(reader.text)
            raise StreamInterruptedError(f"{source}'s stream ended before its last chunk", partial_text=text)
