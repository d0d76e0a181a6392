"""boto3's blocking calls run off the event loop on the loop's own thread pool (`off_loop`)."""

from __future__ import annotations

import contextvars
import threading
import time

import anyio
import pytest

from so_middleware.providers.bedrock import _worker
from so_middleware.providers.bedrock._worker import off_loop

pytestmark = pytest.mark.anyio

_SPAN: contextvars.ContextVar[str] = contextvars.ContextVar("span", default="none")


async def test_the_call_runs_on_a_worker_thread_with_the_callers_context() -> None:
    _SPAN.set("request-1")
    loop_thread = threading.current_thread()
    seen = await off_loop(lambda: (threading.current_thread(), _SPAN.get()))
    assert seen[0] is not loop_thread and seen[0].name.startswith("bedrock-converse")
    assert seen[1] == "request-1"


async def test_the_calls_error_is_raised_to_the_caller() -> None:
    error = ValueError("throttled")

    def fail() -> None:
        raise error

    with pytest.raises(ValueError) as raised:
        await off_loop(fail)
    assert raised.value is error


async def test_a_cancelled_caller_stops_waiting_at_once_and_the_call_runs_on() -> None:
    release, finished = threading.Event(), threading.Event()

    def blocked() -> None:
        release.wait(10)
        finished.set()

    started = time.monotonic()
    with anyio.move_on_after(0.2):
        await off_loop(blocked)
    assert time.monotonic() - started < 2 and not finished.is_set()
    release.set()
    assert await anyio.to_thread.run_sync(finished.wait, 10)


async def test_at_most_workers_calls_run_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _worker.WORKERS == 40  # docs/integrations/bedrock.md: as anyio's default limit
    monkeypatch.setattr(_worker, "WORKERS", 2)  # this test's loop is new: its pool is made with 2
    running, most, lock, release = 0, 0, threading.Lock(), threading.Event()

    def call() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        release.wait(10)
        with lock:
            running -= 1

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(off_loop, call)
        with anyio.fail_after(10):
            while running < 2:
                await anyio.sleep(0.01)
        await anyio.sleep(0.2)
        assert (running, most) == (2, 2)  # the third waits for a free thread
        release.set()
    assert (running, most) == (0, 2)
