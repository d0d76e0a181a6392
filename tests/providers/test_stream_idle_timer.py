"""The idle timeout of a stream: one timer per stream, not one per chunk read, same endings.

The stream here is a stand-in for an `EventStream` (a body read chunk by chunk, one event per
chunk that is not a keep-alive): only a stand-in can count what the reads cost and pause exactly
where a test needs it; the sockets and the SDKs are covered by tests/providers/test_adapter_hangs.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from so_middleware.providers._bridge import IdleTimeout, iterate_sdk_stream

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Body:
    def __init__(self, chunks: list[bytes], stall_after: int | None = None) -> None:
        self.chunks, self.stall_after = chunks, stall_after

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for number, chunk in enumerate(self.chunks):
            if number == self.stall_after:
                await asyncio.sleep(3600)
            await asyncio.sleep(0)  # each chunk is a read that waits, as on a socket
            yield chunk


class _Stream:
    """An event per chunk, except `b":"` (an SSE comment: bytes that complete no event)."""

    def __init__(self, body: _Body) -> None:
        self.response = body

    def feed(self, chunk: bytes) -> list[bytes]:
        return [] if chunk == b":" else [chunk]

    def finish(self) -> list[bytes]:
        return []

    def sdk_error(self, error: BaseException) -> BaseException:
        return error


async def _events(stream: _Stream, idle: float | None, pause: float = 0.0) -> list[bytes]:
    seen = []
    async for event in iterate_sdk_stream(True, stream, idle):
        seen.append(event)
        await asyncio.sleep(pause)
    return seen


async def test_a_long_stream_sets_one_timer_not_one_per_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, each read ran inside `anyio.fail_after`: a timer made and cancelled per chunk (200 here)."""
    loop = asyncio.get_running_loop()
    timers = 0
    call_at = loop.call_at

    def counting(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        nonlocal timers
        timers += 1
        return call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting)
    events = await _events(_Stream(_Body([b"x%d" % i for i in range(200)])), idle=30.0)
    assert len(events) == 200
    assert timers <= 2


async def test_a_stream_that_stalls_mid_way_ends_in_idle_timeout() -> None:
    stream = _Stream(_Body([b"a", b"b", b"c", b"d"], stall_after=2))
    seen: list[bytes] = []
    with pytest.raises(IdleTimeout, match=r"no event from the server for 0\.2 s"):
        async for event in iterate_sdk_stream(True, stream, 0.2):
            seen.append(event)
    assert seen == [b"a", b"b"]
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]  # the timer's cancel is taken back


async def test_keep_alive_bytes_do_not_hold_off_the_idle_timeout() -> None:
    class Trickle(_Body):
        async def aiter_bytes(self) -> AsyncIterator[bytes]:
            yield b"a"
            while True:
                await asyncio.sleep(0.05)
                yield b":"

    with pytest.raises(IdleTimeout):
        await _events(_Stream(Trickle([])), idle=0.3)


async def test_time_spent_by_the_reader_between_events_is_not_idle_time() -> None:
    """Only waiting for the server counts: a consumer slower than the timeout still gets every event."""
    events = await _events(_Stream(_Body([b"a", b"b", b"c"])), idle=0.1, pause=0.25)
    assert events == [b"a", b"b", b"c"]


async def test_each_stream_has_its_own_timeout() -> None:
    """Two streams in one task: the stalled one times out; the other, read after, is unaffected."""
    with pytest.raises(IdleTimeout):
        await _events(_Stream(_Body([b"a", b"b"], stall_after=1)), idle=0.2)
    assert await _events(_Stream(_Body([b"c", b"d"])), idle=0.2) == [b"c", b"d"]


async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    task = asyncio.ensure_future(_events(_Stream(_Body([b"a", b"b"], stall_after=1)), idle=30.0))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
