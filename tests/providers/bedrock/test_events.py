"""`EventPump`: a stream's events read on one worker thread and handed to the loop in order, with a
bounded read-ahead, the worker's errors raised on the loop, and the worker ended by a close."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from so_middleware.providers.bedrock._events import BUFFERED, EventPump

pytestmark = pytest.mark.anyio


class Events:
    """A synchronous event stream as botocore's `EventStream` is iterated: counts what was read."""

    def __init__(self, count: int, *, fail_at: int | None = None) -> None:
        self.count, self.fail_at = count, fail_at
        self.read = 0
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[dict[str, int]]:
        for index in range(self.count):
            if index == self.fail_at:
                raise OSError("connection reset")
            self.read += 1
            yield {"index": index}

    def close(self) -> None:
        self.closed.set()


async def test_every_event_comes_in_order_and_the_stream_is_closed() -> None:
    events = Events(3 * BUFFERED)
    pump = EventPump(lambda: events)
    await pump.opened()
    assert [event["index"] async for event in pump.events()] == list(range(3 * BUFFERED))
    assert events.closed.is_set()


async def test_the_worker_reads_at_most_the_buffer_ahead_of_the_loop() -> None:
    events = Events(10 * BUFFERED)
    pump = EventPump(lambda: events)
    await pump.opened()
    with anyio.fail_after(30):
        while events.read < BUFFERED:  # the worker fills the buffer and waits for room
            await anyio.sleep(0.01)
    await anyio.sleep(0.2)
    assert events.read == BUFFERED
    assert len([event async for event in pump.events()]) == 10 * BUFFERED


async def test_an_error_of_the_worker_is_raised_on_the_loop_after_the_events_before_it() -> None:
    events = Events(10, fail_at=4)
    pump = EventPump(lambda: events)
    await pump.opened()
    seen = []
    with pytest.raises(OSError, match="connection reset"):
        async for event in pump.events():
            seen.append(event["index"])
    assert seen == [0, 1, 2, 3]


async def test_an_error_opening_the_stream_is_raised_by_opened() -> None:
    def refused() -> Any:
        raise ConnectionRefusedError("refused")

    with pytest.raises(ConnectionRefusedError):
        await EventPump(refused).opened()


async def test_leaving_early_ends_the_worker_waiting_for_room() -> None:
    events = Events(10 * BUFFERED)
    pump = EventPump(lambda: events)
    await pump.opened()
    updates = pump.events()
    await anext(updates)
    await updates.aclose()
    assert await anyio.to_thread.run_sync(events.closed.wait, 30)
    assert events.read <= 2 * BUFFERED
