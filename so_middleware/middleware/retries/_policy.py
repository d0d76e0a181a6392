"""`RetryPolicy`: the validated settings of a retry layer and the tenacity loop they make.

Waits are full-jitter exponential backoff, a random time in `[0, min(max_delay, base_delay *
2**(n-1))]` after attempt n; a Retry-After header replaces it, capped at `max_retry_after`. The
deadline stops the loop before a wait that would end past it, and bounds each attempt
(`time_left`, `expired`). Each retry is recorded as a dict
and as an event on the current OpenTelemetry span (when opentelemetry-api is installed).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState
from tenacity.wait import wait_random_exponential

from ...core import (
    RETRIES_KEY,
    RETRY_EVENT,
    ChatResponse,
    DeadlineExceededError,
    TransportError,
    UserError,
    failure_of,
)

try:
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - telemetry is an optional extra
    otel_trace = None  # type: ignore[assignment]

__all__ = ["RetryPolicy", "Sleep", "with_retry_records"]

Sleep = Callable[[float], Awaitable[Any]]
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Retry settings, checked when built (`UserError` names a bad one)."""

    max_attempts: int
    deadline: float | None
    base_delay: float
    max_delay: float
    max_retry_after: float
    retry_if: Callable[[BaseException], bool]
    sleep: Sleep
    clock: Callable[[], float]

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise UserError(f"max_attempts must be an int of at least 1, not {self.max_attempts!r}")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            if not _is_number(getattr(self, name)) or not getattr(self, name) >= 0:
                raise UserError(f"{name} must be a number of seconds >= 0, not {getattr(self, name)!r}")
        if self.deadline is not None and (not _is_number(self.deadline) or not self.deadline > 0):
            raise UserError(f"deadline must be None or a number of seconds > 0, not {self.deadline!r}")
        for name in ("retry_if", "sleep", "clock"):
            if not callable(getattr(self, name)):
                raise UserError(f"{name} must be a callable, not {getattr(self, name)!r:.60}")

    def deadline_at(self) -> float | None:
        """When a call starting now must end (on `clock`), or None without a deadline."""
        return None if self.deadline is None else self.clock() + self.deadline

    def time_left(self, deadline_at: float | None) -> float | None:
        """Seconds until `deadline_at` (never negative), or None without a deadline."""
        return None if deadline_at is None else max(0.0, deadline_at - self.clock())

    def expired(self, partial_text: str = "") -> DeadlineExceededError:
        """The error for an attempt still running when the deadline passed."""
        return DeadlineExceededError(
            f"the deadline of {self.deadline:g} s passed while an attempt was running; it was cancelled",
            deadline=float(self.deadline or 0),
            partial_text=partial_text,
        )

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        retries: list[dict[str, Any]],
        deadline_at: float | None,
        retry_if: Callable[[BaseException], bool] | None = None,
    ) -> T:
        """`attempt()`, retried while it fails transiently. The first try runs as a plain call: the
        tenacity loop starts only after a first failure, which it then sees as its attempt 1."""
        should_retry = retry_if or self.retry_if
        try:
            return await attempt()
        except Exception as error:
            if not should_retry(error):
                raise
            failure = error
        return await self.run_after(failure, attempt, retries, deadline_at, retry_if)

    async def run_after(
        self,
        first_failure: Exception,
        attempt: Callable[[], Awaitable[T]],
        retries: list[dict[str, Any]],
        deadline_at: float | None,
        retry_if: Callable[[BaseException], bool] | None = None,
    ) -> T:
        """The tenacity loop after a first try of `attempt()` failed with `first_failure` (a
        transient one): the loop sees it as its attempt 1, then tries again while it may."""
        should_retry = retry_if or self.retry_if
        failure: Exception | None = first_failure

        async def again() -> T:
            nonlocal failure
            if failure is not None:
                error, failure = failure, None
                raise error
            return await attempt()

        return await self.retrying(retries, deadline_at, should_retry)(again)

    def retrying(
        self,
        retries: list[dict[str, Any]],
        deadline_at: float | None,
        retry_if: Callable[[BaseException], bool] | None = None,
    ) -> AsyncRetrying:
        """A tenacity loop for one call ending by `deadline_at`; each retry is appended to `retries`."""
        should_retry = retry_if or self.retry_if
        backoff = wait_random_exponential(multiplier=self.base_delay, max=self.max_delay)

        def wait(state: RetryCallState) -> float:
            error = _failure(state)
            hinted = error.retry_after if isinstance(error, TransportError) else None  # the server's word
            return backoff(state) if hinted is None else min(hinted, self.max_retry_after)

        def stop(state: RetryCallState) -> bool:
            out_of_attempts = state.attempt_number >= self.max_attempts
            return out_of_attempts or (deadline_at is not None and self.clock() + state.upcoming_sleep > deadline_at)

        def record(state: RetryCallState) -> None:
            error = _failure(state)
            retry = {
                "attempt": state.attempt_number,
                "error": type(error).__name__,  # a provider's message may quote the request
                "status_code": failure_of(error).status,
                "wait": state.upcoming_sleep,
            }
            retries.append(retry)
            if otel_trace is not None:
                attributes: dict[str, Any] = {key: value for key, value in retry.items() if value is not None}
                otel_trace.get_current_span().add_event(RETRY_EVENT, attributes)

        return AsyncRetrying(
            sleep=self.sleep,
            stop=stop,
            wait=wait,
            before_sleep=record,
            reraise=True,
            retry=lambda state: state.outcome is not None and state.outcome.failed and should_retry(_failure(state)),
        )


def _failure(state: RetryCallState) -> BaseException:
    error = state.outcome.exception() if state.outcome is not None else None
    return error if error is not None else RuntimeError("no failure recorded")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def with_retry_records(response: ChatResponse[Any], retries: Sequence[dict[str, Any]]) -> ChatResponse[Any]:
    """`response` with `retries` appended to its `so_middleware.retries` record."""
    if retries:
        earlier = response.additional_properties.get(RETRIES_KEY) or []
        response.additional_properties[RETRIES_KEY] = [*earlier, *retries]
    return response
