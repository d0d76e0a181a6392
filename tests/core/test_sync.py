"""Blocking entry points: `get_response_sync` (with and without `stream=True`) and `run_sync`.

Real SDK clients, sync and async, on the real local server; the fake client where only the
control flow matters.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from typing import Any

import httpx2
import pytest

from so_middleware import (
    ChatResponseUpdate,
    StreamConsumedError,
    StreamInterruptedError,
    UserError,
    run_sync,
)
from so_middleware.core import SyncResponseStream
from so_middleware.local import ROUTES, LocalModelServer, chat_client
from so_middleware.testing import FakeChatClient, HttpRecorder, Reply

KINDS = [(route, sync) for route in ROUTES for sync in (True, False)]


def _close(client: Any) -> None:
    result = client.sdk_client.close()
    if hasattr(result, "__await__"):
        run_sync(lambda: result)  # an async SDK client closes its pool on the loop that used it


@pytest.mark.local_server
@pytest.mark.parametrize(("route", "sync"), KINDS, ids=[f"{r}-{'sync' if s else 'async'}" for r, s in KINDS])
def test_sync_streaming_yields_updates_then_the_final_response(
    local_server: LocalModelServer, route: str, sync: bool
) -> None:
    client = chat_client(local_server, route, sync=sync)  # type: ignore[arg-type]
    options = {"max_tokens": 12, "temperature": 0}
    texts: list[str] = []
    with client.get_response_sync("Count from 1 to 5.", options=options, stream=True) as stream:
        assert isinstance(stream, SyncResponseStream)
        for update in stream:
            assert isinstance(update, ChatResponseUpdate)
            texts.append(update.text)
    final = stream.get_final_response()
    # the same client again: an async SDK client keeps its pool on the one shared loop
    again = client.get_response_sync("Count from 1 to 5.", options=options)
    _close(client)
    assert len(texts) > 1 and "".join(texts).strip()
    assert final.text == "".join(texts)
    assert final.finish_reason is not None and final.usage is not None and final.usage.output_tokens
    assert again.text == final.text  # greedy: the same answer streamed or not


@pytest.mark.local_server
@pytest.mark.parametrize(("route", "sync"), KINDS, ids=[f"{r}-{'sync' if s else 'async'}" for r, s in KINDS])
def test_breaking_out_of_a_sync_stream_closes_the_http_stream(
    local_server: LocalModelServer, route: str, sync: bool
) -> None:
    recorder = HttpRecorder()
    http: Any = (httpx2.Client if sync else httpx2.AsyncClient)(event_hooks=recorder.hooks(is_async=not sync))
    client = chat_client(local_server, route, sync=sync, http_client=http)  # type: ignore[arg-type]
    stream = client.get_response_sync("Count from 1 to 200.", options={"max_tokens": 400}, stream=True)
    started = time.monotonic()
    for update in stream:
        if update.text:
            break  # the model would go on for 400 tokens
    elapsed = time.monotonic() - started
    closed = recorder.responses and recorder.responses[0].is_closed
    partial = stream.get_final_response()
    _close(client)
    assert closed, "leaving the loop must close the HTTP response at once"
    assert partial.finish_reason is None and partial.text  # what arrived before the break
    assert elapsed < 60


def test_an_error_mid_stream_reaches_the_for_loop() -> None:
    boom = StreamInterruptedError("cut", partial_text="ab")
    client = FakeChatClient(Reply("abcdef", chunk_size=2, error=boom, fail_after=1))
    seen: list[str] = []
    with pytest.raises(StreamInterruptedError, match="cut"):
        for update in client.get_response_sync("x", stream=True):
            seen.append(update.text)
    assert seen == ["ab"]


def test_get_final_response_without_iterating_consumes_the_stream() -> None:
    stream = FakeChatClient(Reply("hello world", chunk_size=3)).get_response_sync("x", stream=True)
    assert stream.get_final_response().text == "hello world"
    assert [u.text for u in stream.updates if u.text] == ["hel", "lo ", "wor", "ld"]
    with pytest.raises(StreamConsumedError):
        iter(stream)


def test_get_final_response_mid_iteration_reads_the_rest() -> None:
    stream = FakeChatClient(Reply("abcdef", chunk_size=2)).get_response_sync("x", stream=True)
    updates = iter(stream)  # held: the iteration is still under way
    assert next(updates).text == "ab"
    assert stream.get_final_response().text == "abcdef"
    assert list(updates) == []


def test_a_stream_is_iterated_once() -> None:
    stream = FakeChatClient("abc").get_response_sync("x", stream=True)
    assert "".join(u.text for u in stream) == "abc"
    with pytest.raises(StreamConsumedError):
        list(stream)


def test_bad_input_raises_at_once_not_on_iteration() -> None:
    with pytest.raises(UserError, match="structured-output layer"):
        FakeChatClient("x").get_response_sync("x", stream=True, output_type=int)


@pytest.mark.anyio
async def test_sync_entry_points_refuse_a_running_loop() -> None:
    client = FakeChatClient("x")
    with pytest.raises(UserError, match="running event loop"):
        client.get_response_sync("x", stream=True)
    with pytest.raises(UserError, match="running event loop"):
        client.get_response_sync("x")


def test_every_sync_call_runs_on_one_long_lived_loop() -> None:
    loops: list[Any] = []
    threads: list[threading.Thread] = []

    async def where() -> None:
        import asyncio

        loops.append(asyncio.get_running_loop())
        threads.append(threading.current_thread())

    for _ in range(3):
        run_sync(where)
    assert len(set(map(id, loops))) == 1 and threads[0] is not threading.main_thread()
    assert threads[0].daemon


def test_ctrl_c_while_waiting_cancels_the_call_on_the_loop() -> None:
    """A KeyboardInterrupt raised while the caller waits cancels the task on the loop."""
    started, cancelled = threading.Event(), threading.Event()

    async def slow() -> None:
        import anyio

        started.set()
        try:
            await anyio.sleep(30)
        except BaseException:
            cancelled.set()
            raise

    def press_ctrl_c() -> None:
        # Once the call runs, and to the main thread, as a terminal's Ctrl-C reaches it: a signal
        # sent to the process may be taken by another thread, leaving the main one asleep.
        if started.wait(30):
            time.sleep(0.2)  # the caller is waiting by now
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    # Python's own Ctrl-C handling, whatever this process inherited: a shell starts a background
    # job with SIGINT ignored, and then Python installs no KeyboardInterrupt handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=press_ctrl_c, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_sync(slow)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert cancelled.wait(5)


def test_a_fork_after_sync_calls_neither_hangs_nor_breaks_them() -> None:
    """A forked child (a subprocess with a pre-exec hook, or a plain fork) must not wait on the
    parent's loop thread, which the fork did not copy; the child gets a loop of its own."""
    code = (
        "import os, subprocess, sys\n"
        "from so_middleware import run_sync\n"
        "async def pid():\n    return os.getpid()\n"
        "assert run_sync(pid) == os.getpid()\n"
        "subprocess.run([sys.executable, '-c', 'pass'], preexec_fn=lambda: None, check=True, timeout=30)\n"
        "child = os.fork()\n"
        "if child == 0:\n    os._exit(0 if run_sync(pid) == os.getpid() else 1)\n"
        "_, status = os.waitpid(child, 0)\n"
        "print('ok', os.waitstatus_to_exitcode(status), run_sync(pid) == os.getpid())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", "0", "True"]
