"""`RetryScope`: the retries of one call, handed down as a feature so a run below can take them.

A retry layer makes one scope per call and sends it down in the options' features. A
structured-output run that finds it takes it (`take`): it then retries each of its own model
calls with it, so a transient fault during a re-ask retries that HTTP call only and the attempts
already made stay; the layer above no longer retries the run as a whole. Without such a run below,
the layer retries its call with the same scope. Either way the scope holds the one deadline and
the one list of retry records of the call.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ...core import ChatResponse, ChatStream, Feature, ResponseStream, call_deadline
from ._policy import RetryPolicy, with_retry_records
from ._stream import RetriedStream

__all__ = ["RetryScope"]


class RetryScope(Feature):
    """The retry policy, deadline and retry records of one call through a retry layer.

    Example (inside a run): `response = await scope.respond(functools.partial(inner.get_response, messages))`.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self._deadline_at: float | None = None
        self._started = False
        self._taken = False
        self._records: list[dict[str, Any]] = []  # private state: a cache key describes public attributes

    def __repr__(self) -> str:
        return f"RetryScope(taken={self._taken}, retries={len(self._records)})"

    @property
    def taken(self) -> bool:
        """True once a run below retries its model calls itself."""
        return self._taken

    @property
    def records(self) -> list[dict[str, Any]]:
        """The retries made under this scope, one dict each (see `so_middleware.retries`)."""
        return self._records

    def take(self) -> RetryScope:
        """Claim the retries for a run below: its calls are retried one by one, not the run again."""
        self._taken = True
        return self

    def retry_if(self, error: BaseException) -> bool:
        """Whether the layer itself retries: not once a run below retried its calls."""
        return not self._taken and self._policy.retry_if(error)

    def start(self) -> float | None:
        """Start the deadline at the first call (later calls share it); returns when it ends."""
        if not self._started:
            self._deadline_at, self._started = self._policy.deadline_at(), True
        return self._deadline_at

    async def respond(
        self,
        call: Callable[..., Any],
        retry_if: Callable[[BaseException], bool] | None = None,
        *,
        with_records: bool = False,
    ) -> ChatResponse[Any]:
        """`call(stream=False)`, retried while it fails transiently, within the deadline; with
        `with_records`, this scope's retry records are added to the response."""
        policy, deadline_at = self._policy, self.start()
        if deadline_at is None:  # the common path: a plain first try, the retry loop only after a failure
            try:
                response: ChatResponse[Any] = await call(stream=False)
            except Exception as error:
                if not (retry_if or policy.retry_if)(error):
                    raise
                failure = error
            else:
                return with_retry_records(response, self._records) if with_records else response
            again = functools.partial(call, stream=False)
            response = await policy.run_after(failure, again, self._records, None, retry_if)
        else:
            response = await policy.run(self._bounded(call, deadline_at), self._records, deadline_at, retry_if)
        return with_retry_records(response, self._records) if with_records else response

    def _bounded(self, call: Callable[..., Any], deadline_at: float) -> Callable[[], Awaitable[ChatResponse[Any]]]:
        """An attempt of `call(stream=False)` cancelled when `deadline_at` passes."""
        policy = self._policy

        async def attempt() -> ChatResponse[Any]:
            left = policy.time_left(deadline_at)
            with anyio.move_on_after(left), call_deadline(left):  # the adapter caps its HTTP timeouts
                return await call(stream=False)  # type: ignore[no-any-return]
            raise policy.expired()

        return attempt

    def stream(self, call: Callable[..., Any]) -> ChatStream:
        """`call(stream=True)`, retried until its first content delta, within the deadline."""
        retried = self.retried_stream(call)
        return ResponseStream(retried.updates(), retried.final_response)

    def retried_stream(
        self, call: Callable[..., Any], retry_if: Callable[[BaseException], bool] | None = None
    ) -> RetriedStream:
        """The `RetriedStream` of `call` under this scope (its updates, then its final response)."""
        return RetriedStream(call, self._policy, self._records, self.start, retry_if or self._policy.retry_if)
