"""`RetriedStream`: one streamed call, retried until its first content delta, then forwarded as is.

The updates before the first content delta (Anthropic's `message_start`, the Responses
`response.created`) are held back until it comes, so a failure before it is retried with nothing
of the failed attempt shown. After it a transient failure raises `StreamInterruptedError`
carrying `partial_text`, chained from the original error: what reached the caller cannot be taken
back. The deadline bounds every wait, and a stream still running when it passes raises
`DeadlineExceededError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio

from ...core import ChatResponse, ChatStream, DeadlineExceededError, StreamInterruptedError
from ._policy import RetryPolicy

__all__ = ["RetriedStream"]

_END: Any = object()
_EXPIRED: Any = object()


class RetriedStream:
    """One streamed call: retried until its first content delta, then forwarded as is.

    `start()` starts (or reads) the deadline when the stream is first iterated; each retry is
    appended to `retries`; `retry_if` says which failures are retried.
    """

    def __init__(
        self,
        call: Callable[..., Any],
        policy: RetryPolicy,
        retries: list[dict[str, Any]],
        start: Callable[[], float | None],
        retry_if: Callable[[BaseException], bool],
    ) -> None:
        self._call = call
        self._policy = policy
        self._retries = retries
        self._start = start
        self._retry_if = retry_if
        self._inner: ChatStream | None = None
        self._deadline_at: float | None = None

    async def _open(self) -> tuple[ChatStream, list[Any]]:
        """Open the stream and read up to its first content delta (or its end), within the deadline."""
        stream: ChatStream = self._call(stream=True)
        held: list[Any] = []
        try:
            with anyio.move_on_after(self._policy.time_left(self._deadline_at)):
                while not held or (held[-1] is not _END and not held[-1].contents):
                    held.append(await anext(stream, _END))
                return stream, held
            raise self._policy.expired()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise

    async def updates(self) -> AsyncIterator[Any]:
        self._deadline_at = self._start()
        opened = await self._policy.run(self._open, self._retries, self._deadline_at, self._retry_if)
        stream, held = opened
        self._inner = stream
        sent: list[Any] = []  # their text is joined only if the stream breaks
        try:
            for update in held:
                if update is _END:
                    return
                sent.append(update)
                yield update
            while True:
                if self._deadline_at is None:  # nothing to bound: no cancel scope per update
                    update = await anext(stream, _END)
                else:
                    update = _EXPIRED
                    with anyio.move_on_after(self._policy.time_left(self._deadline_at)):
                        update = await anext(stream, _END)
                if update is _EXPIRED:
                    raise self._policy.expired(_text_of(sent))
                if update is _END:
                    return
                sent.append(update)
                yield update
        except Exception as error:
            if isinstance(error, (StreamInterruptedError, DeadlineExceededError)) or not self._retry_if(error):
                raise
            raise StreamInterruptedError(
                f"the stream broke after {len(sent)} updates had reached the caller, so it was not retried: "
                f"{type(error).__name__}",
                partial_text=_text_of(sent),
                updates=len(sent),
            ) from error
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def final_response(self, updates: Sequence[Any]) -> ChatResponse[Any]:
        if self._inner is None:
            raise RuntimeError("the stream has not been opened")
        return await self._inner.get_final_response()


def _text_of(updates: list[Any]) -> str:
    return "".join(update.text for update in updates)
