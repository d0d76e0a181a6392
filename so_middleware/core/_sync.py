"""Blocking entry points over the async core: `run_sync`, `SyncResponseStream` and, for the
command line, `run_interruptibly`; `warn_at_callers_line` for a warning about the caller's call,
async or blocking.

Every blocking call runs on one event loop that an anyio blocking portal keeps in a daemon thread
for the life of the process, so async SDK clients (and their connection pools) stay bound to a
single loop across calls, which `asyncio.run` per call would break.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import os
import signal
import threading
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import Future, wait
from contextlib import AbstractContextManager
from contextvars import ContextVar
from types import FrameType, TracebackType
from typing import Any, Generic, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from ._exceptions import StreamConsumedError, UserError
from ._stream import ResponseStream

__all__ = ["SyncResponseStream", "run_interruptibly", "run_sync", "sync_stream", "warn_at_callers_line"]

T = TypeVar("T")
TUpdate = TypeVar("TUpdate", covariant=True)
TFinal = TypeVar("TFinal", covariant=True)

_lock = threading.Lock()
# The live portal of each process, by pid. A forked child starts its own (the loop thread does not
# survive a fork) and keeps the parent's entry: collecting its manager would wait on that dead loop.
_portals: dict[int, tuple[AbstractContextManager[BlockingPortal], BlockingPortal]] = {}


def _portal() -> BlockingPortal:
    with _lock:
        pid = os.getpid()
        if pid not in _portals:
            manager = start_blocking_portal(name="so-middleware-sync")
            _portals[pid] = (manager, manager.__enter__())  # the manager is kept: collecting it stops the loop
        return _portals[pid][1]


@atexit.register
def _stop_portal() -> None:
    with _lock:
        if os.getpid() in _portals:
            portal = _portals[os.getpid()][1]
            with contextlib.suppress(RuntimeError):  # already stopped
                portal.call(portal.stop, True)  # cancel whatever is left, then let the loop end


def _new_lock_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork


os.register_at_fork(after_in_child=_new_lock_in_child)


_PACKAGE = __name__.partition(".")[0]

# Where the caller's blocking call is (file, line, module globals), for a warning raised on the loop's thread.
_Line = tuple[str, int, dict[str, Any]]
_blocking_caller: ContextVar[_Line | None] = ContextVar("so_middleware_blocking_caller", default=None)


def _outside(frame: FrameType | None) -> tuple[FrameType | None, int]:
    """The first frame from `frame` outwards whose module is not so_middleware's, and how many were passed."""
    passed = 0
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == _PACKAGE:
        frame, passed = frame.f_back, passed + 1
    return frame, passed


def _callers_line() -> _Line | None:
    here = inspect.currentframe()
    frame, _ = _outside(here.f_back if here is not None else None)
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno, frame.f_globals)


def warn_at_callers_line(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the line of the caller's code that made the call, however many layers and adapters
    are in between: the first frame outside so_middleware, or, on a blocking call
    (`get_response_sync`, which runs on the loop's thread), the line of that call.

    Example: `warn_at_callers_line("the json_schema response format is not enforced ...")`.
    """
    line = _blocking_caller.get()
    if line is None:
        frame, passed = _outside(inspect.currentframe())
        warnings.warn(message, category, stacklevel=passed + 1 if frame is not None else 2)
        return
    filename, lineno, module_globals = line
    warnings.warn_explicit(
        message,
        category,
        filename,
        lineno,
        module=str(module_globals.get("__name__", "<unknown>")),
        registry=module_globals.setdefault("__warningregistry__", {}),
        module_globals=module_globals,
    )


def _require_no_running_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UserError(
        "a *_sync method was called inside a running event loop; await the async method instead "
        "(e.g. await client.get_response(...))"
    )


def run_sync(make_awaitable: Callable[[], Awaitable[T]]) -> T:
    """Run the awaitable made by `make_awaitable()` to completion and return its result.

    Raises `UserError` when called from inside a running event loop (use `await` there).
    Ctrl-C cancels the call on the loop before it propagates.

    Example: `response = run_sync(lambda: client.get_response("Hello"))`.
    """
    _require_no_running_loop()
    line = _callers_line()

    async def runner() -> T:
        _blocking_caller.set(line)  # this task's context only: its warnings name the caller's line
        return await make_awaitable()

    future = _portal().start_task_soon(runner)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


def sync_stream(make_stream: Callable[[], ResponseStream[TUpdate, TFinal]]) -> SyncResponseStream[TUpdate, TFinal]:
    """A `SyncResponseStream` over the stream `make_stream()` returns (made in the calling thread,
    so bad input raises at once). Raises `UserError` inside a running event loop."""
    _require_no_running_loop()
    return SyncResponseStream(make_stream())


class SyncResponseStream(Generic[TUpdate, TFinal]):
    """A `ResponseStream` for blocking code: `for update in stream`, then `get_final_response()`.

    The async stream runs in one task on the shared background loop and hands each update over as
    it arrives. Leaving the `for` loop early (`break`, an exception) closes the HTTP stream, as do
    `close()` and leaving `with`. A stream is iterated once.

    Example:
        with client.get_response_sync("Tell me a story", stream=True) as stream:
            for update in stream:
                print(update.text, end="")
        final = stream.get_final_response()
    """

    def __init__(self, stream: ResponseStream[TUpdate, TFinal]) -> None:
        self._stream = stream
        self._portal = _portal()
        self._send, self._receive = anyio.create_memory_object_stream[Any](0)  # one update in flight
        self._scope: anyio.CancelScope | None = None  # made on the loop, by the reading task
        self._stopping = False
        self._task: Future[None] | None = None  # the task that reads the stream, once iteration starts
        self._closed = False
        self._caller = _callers_line()  # the line of the blocking call that made it, for warnings

    def __iter__(self) -> Iterator[TUpdate]:
        if self._task is not None or self._closed:
            raise StreamConsumedError("this stream was already iterated; a stream can be consumed once")
        self._task = self._portal.start_task_soon(self._pump)
        return self._updates()

    def _updates(self) -> Iterator[TUpdate]:
        try:
            while True:
                try:
                    yield self._portal.call(self._receive.receive)
                except (anyio.EndOfStream, anyio.ClosedResourceError):  # the end, or closed meanwhile
                    break
            if self._task is not None:
                self._task.result()  # the error that ended the stream, if one did
        finally:
            self.close()  # left early (break, error, Ctrl-C): stop the task, close the HTTP stream

    async def _pump(self) -> None:
        _blocking_caller.set(self._caller)
        self._scope = anyio.CancelScope()
        if self._stopping:
            self._scope.cancel()
        async with self._send:
            with self._scope:
                try:
                    async for update in self._stream:
                        await self._send.send(update)
                except anyio.BrokenResourceError:
                    pass  # the reader left
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stream.aclose()

    def _stop(self) -> None:  # on the loop: a pending send fails, a pending read is cancelled
        self._stopping = True
        self._receive.close()
        if self._scope is not None:
            self._scope.cancel()

    def close(self) -> None:
        """Stop the stream and close the HTTP response. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._task is None:
            self._receive.close()
            self._portal.call(self._stream.aclose)
            return
        try:
            self._portal.call(self._stop)
        except RuntimeError:  # on the loop's own thread (garbage collected there) or at exit: cancel, don't wait
            self._task.cancel()
            return
        wait([self._task])  # the error, if any, is the iteration's to raise; closing only waits for the end

    def get_final_response(self) -> TFinal:
        """Consume what is left and return the final response.

        Raises the error that ended the stream. After an early `break` (or `close()`) the response
        holds what arrived before it.
        """
        if self._task is None and not self._closed:
            for _ in self:
                pass
        elif not self._closed:
            while True:  # an iteration still under way: read the rest
                try:
                    self._portal.call(self._receive.receive)
                except anyio.EndOfStream:
                    break
            self.close()
        return self._portal.call(self._stream.get_final_response)

    @property
    def updates(self) -> list[Any]:
        """The updates received so far."""
        return self._stream.updates

    def __enter__(self) -> SyncResponseStream[TUpdate, TFinal]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SyncResponseStream {state}, {len(self._stream.updates)} updates>"


def run_interruptibly(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on a new event loop, as `asyncio.run` does, where SIGINT and SIGTERM cancel it.

    The signal cancels the task (its `finally` blocks run, its task groups close, a shielded
    clean-up finishes) and `KeyboardInterrupt` is raised once it has unwound. A handler that raises
    `KeyboardInterrupt` from inside the loop instead could land in the middle of a task switch or a
    cancel scope's exit, and leave the run half-closed. The process's own handlers are back in place
    afterwards. Off the main thread, where signals cannot be caught, or on a loop that cannot
    catch them, it is `asyncio.run`.
    """
    return asyncio.run(_cancelled_by_signals(main))


async def _cancelled_by_signals(main: Coroutine[Any, Any, T]) -> T:
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    installed: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(number)
            try:
                loop.add_signal_handler(number, interrupt)
            except NotImplementedError:  # a loop without signal support (Windows): the process's handlers stay
                break
            installed[number] = previous
    try:
        return await main
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        for number, previous in installed.items():
            loop.remove_signal_handler(number)
            signal.signal(number, previous)
