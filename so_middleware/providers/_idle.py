"""The idle timeout of one stream: one timer per stream, not one per chunk read."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["Watchdog"]


class Watchdog:
    """The idle timeout of one stream: one timer, moved forward by a float per event.

    A cancel scope around every read (`anyio.fail_after`) made and dropped a timer per chunk, a
    fifth of a streamed request's CPU. Here the timer, when it fires, looks at the deadline: not
    reached, it waits again until then; reached while a read is pending, it cancels the reading
    task, and `expired` turns that cancellation into the timeout.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.loop = asyncio.get_running_loop()
        self.deadline = self.loop.time() + seconds  # the first event is waited for too
        self.reading = False
        self.fired = False
        self._task: asyncio.Task[Any] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        """A read starts: make sure the timer will look at it."""
        # given the loop, `current_task` makes no `get_running_loop` call (a getpid system call on 3.11)
        self._task = asyncio.current_task(self.loop)
        if self._timer is None:
            self._timer = self.loop.call_at(self.deadline, self._check)

    def disarm(self) -> None:
        """The stream is done: the timer goes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        if not self.reading:  # the next read arms it again
            return
        if self.loop.time() < self.deadline:
            self._timer = self.loop.call_at(self.deadline, self._check)
        elif self._task is not None and not self.fired:
            self.fired = True
            self._task.cancel()

    def expired(self, error: BaseException) -> bool:
        """True when `error` is this timer's cancellation (then taken back: the caller raises the timeout)."""
        if not (self.fired and isinstance(error, asyncio.CancelledError)):
            return False
        uncancel = getattr(self._task, "uncancel", None)  # Python 3.11+: the task counts cancellations
        if uncancel is not None:
            uncancel()
        return True
