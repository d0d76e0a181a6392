"""`RetriedStream`: one streamed call, retried until its first update, then forwarded as is.

After the first update a transient failure raises `StreamInterruptedError` carrying
`partial_text`, chained from the original error: what reached the caller cannot be taken back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio

from ..core import ChatResponse, ChatStream, StreamInterruptedError
from ._retry_policy import RetryPolicy, with_retry_records

__all__ = ["RetriedStream"]

_END: Any = object()


class RetriedStream:
    """One streamed call: retried until its first update, then forwarded as is."""

    def __init__(self, call: Callable[..., Any], policy: RetryPolicy) -> None:
        self._call = call
        self._policy = policy
        self._retries: list[dict[str, Any]] = []
        self._inner: ChatStream | None = None

    async def _open(self) -> tuple[ChatStream, Any]:
        stream: ChatStream = self._call(stream=True)
        try:
            return stream, await aiter(stream).__anext__()
        except StopAsyncIteration:
            return stream, _END
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise

    async def updates(self) -> AsyncIterator[Any]:
        opened: tuple[ChatStream, Any] = await self._policy.retrying(self._retries)(self._open)
        stream, update = opened
        self._inner = stream
        texts: list[str] = []
        try:
            while update is not _END:
                texts.append(update.text)
                yield update
                try:
                    update = await stream.__anext__()
                except StopAsyncIteration:
                    update = _END
        except Exception as error:
            if isinstance(error, StreamInterruptedError) or not self._policy.retry_if(error):
                raise
            raise StreamInterruptedError(
                f"the stream broke after {len(texts)} updates had reached the caller, so it was not retried: "
                f"{type(error).__name__}: {error}",
                partial_text="".join(texts),
                updates=len(texts),
            ) from error
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def final_response(self, updates: Sequence[Any]) -> ChatResponse[Any]:
        if self._inner is None:
            raise RuntimeError("the stream has not been opened")
        return with_retry_records(await self._inner.get_final_response(), self._retries)
