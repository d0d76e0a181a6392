"""`CallRetries`, the retries of one call, and `RetriesEachCall`, the layers that apply them below.

A layer that makes several model calls for one call (the structured-output layer: a run, its
re-asks) declares it by inheriting `RetriesEachCall`. A retry layer over such a layer (found with
`get_service(RetriesEachCall)` when the retry layer is built) retries nothing itself: it hands the
call's `CallRetries` down as a feature, and that layer retries each of its own model calls with it,
so a transient fault during a re-ask retries that HTTP call only and the attempts already made stay.
Over any other client the retry layer retries its call with its own `CallRetries`. Either way one
object holds the call's one deadline and its one list of retry records.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ...core import ChatResponse, ChatStream, Feature, ResponseStream, call_deadline
from ._policy import RetryPolicy, with_retry_records
from ._stream import RetriedStream

__all__ = ["CallRetries", "RetriesEachCall"]


class RetriesEachCall:
    """Marks a layer that, given a `CallRetries` feature, retries each of its model calls with it
    and sends the feature no further (a retry layer above then leaves the retrying to it)."""


class CallRetries(Feature):
    """The retry policy, deadline and retry records of one call through a retry layer.

    Example (in a `RetriesEachCall` layer): `await retries.respond(functools.partial(inner.get_response, messages))`.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self._deadline_at: float | None = None
        self._started = False
        self._records: list[dict[str, Any]] = []  # private state: a cache key describes public attributes

    def __repr__(self) -> str:
        return f"CallRetries(retries={len(self._records)})"

    @property
    def records(self) -> list[dict[str, Any]]:
        """The retries made for this call, one dict each (see `so_middleware.retries`)."""
        return self._records

    def start(self) -> float | None:
        """Start the deadline at the first model call (later calls share it); returns when it ends."""
        if not self._started:
            self._deadline_at, self._started = self._policy.deadline_at(), True
        return self._deadline_at

    async def respond(self, call: Callable[..., Any], *, with_records: bool = False) -> ChatResponse[Any]:
        """`call(stream=False)`, retried while it fails transiently, within the deadline; with
        `with_records`, the retry records are added to the response."""
        policy = self._policy
        deadline_at = self.start() if policy.deadline is not None else None  # no deadline: none to start
        if deadline_at is not None:
            response: ChatResponse[Any] = await policy.run(self._bounded(call, deadline_at), self._records, deadline_at)
        else:
            try:  # the common path: a plain first try, the retry loop only after a failure
                response = await call(stream=False)
            except Exception as error:
                if not policy.retry_if(error):
                    raise
                again = functools.partial(call, stream=False)
                response = await policy.run_after(error, again, self._records, None)
        return with_retry_records(response, self._records) if with_records and self._records else response

    def _bounded(self, call: Callable[..., Any], deadline_at: float) -> Callable[[], Awaitable[ChatResponse[Any]]]:
        """An attempt of `call(stream=False)` cancelled when `deadline_at` passes."""
        policy = self._policy

        async def attempt() -> ChatResponse[Any]:
            left = policy.time_left(deadline_at)
            with anyio.move_on_after(left), call_deadline(left):  # the adapter caps its HTTP timeouts
                return await call(stream=False)  # type: ignore[no-any-return]
            raise policy.expired()

        return attempt

    def stream(self, call: Callable[..., Any], *, with_records: bool = False) -> ChatStream:
        """`call(stream=True)`, retried until its first content delta, within the deadline; with
        `with_records`, the retry records are added to its final response."""
        retried = RetriedStream(call, self._policy, self._records, self.start, self._policy.retry_if)
        if not with_records:
            return ResponseStream(retried.updates(), retried.final_response)
        return ResponseStream(retried.updates(), lambda updates: self.recorded(retried.final_response(updates)))

    async def recorded(self, response: Awaitable[ChatResponse[Any]]) -> ChatResponse[Any]:
        """`response`, awaited, with this call's retry records added."""
        answered = await response
        return with_retry_records(answered, self._records) if self._records else answered
