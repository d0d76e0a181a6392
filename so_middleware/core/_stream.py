"""`ResponseStream`: a streamed response you iterate once and can still ask for the whole of."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

import anyio

from ._exceptions import StreamConsumedError

__all__ = ["ResponseStream"]

TUpdate = TypeVar("TUpdate", covariant=True)
TFinal = TypeVar("TFinal", covariant=True)
U = TypeVar("U")
F = TypeVar("F")

Finalizer = Callable[[Sequence[Any]], Any]

_PENDING: Any = object()


class ResponseStream(Generic[TUpdate, TFinal]):
    """A stream of updates with access to the final, aggregated response.

    It is returned at once; the model call starts when iteration starts. A stream is consumed
    once: a second `async for` over it raises `StreamConsumedError` (`aiter(stream)` is its one
    iterator, which may be read on with `anext` and `async for` alike). `get_final_response()` consumes
    what is left and returns the final response. `aclose()`, leaving `async with`, or cancelling
    the task that iterates closes the underlying HTTP stream.

    Example:
        stream = client.get_response("Tell me a story", stream=True)
        async with stream:
            async for update in stream:
                print(update.text, end="")
        final = await stream.get_final_response()
    """

    def __init__(self, source: AsyncIterator[Any], finalizer: Finalizer) -> None:
        """`source` yields the updates (an async generator is ideal: nothing runs before the
        first update is asked for); `finalizer(updates)` builds the final response, and may be
        a coroutine function."""
        self._source = source
        self._finalizer = finalizer
        self._updates: list[Any] = []
        self._iterating = False
        self._done = False
        self._error: BaseException | None = None
        self._final: Any = _PENDING

    # ------------------------------------------------------------ iteration

    def __aiter__(self) -> AsyncIterator[TUpdate]:
        # One iterator per stream, whose own `__aiter__` is itself: `it = aiter(stream)`, then
        # `async for update in it` goes on where `anext(it)` left off.
        if self._iterating:
            raise StreamConsumedError(
                "this ResponseStream was already iterated; a stream can be consumed once "
                "(use await stream.get_final_response() for the whole response)"
            )
        self._iterating = True
        return _Updates(self)

    async def __anext__(self) -> TUpdate:
        if self._done:
            raise StopAsyncIteration
        try:
            update: TUpdate = await self._source.__anext__()  # typed here: no `cast` call per update
        except StopAsyncIteration:
            self._done = True
            raise
        except BaseException as error:
            self._done = True
            if not isinstance(error, anyio.get_cancelled_exc_class()):  # cancelled = closed, not failed
                self._error = error
            raise
        self._updates.append(update)
        return update

    @property
    def updates(self) -> list[Any]:
        """The updates received so far."""
        return list(self._updates)

    @property
    def is_complete(self) -> bool:
        """True once the source has ended (normally or with an error) or was closed."""
        return self._done

    async def get_final_response(self) -> TFinal:
        """Consume what is left of the stream and return the final response.

        Raises the error that ended the stream, if one did.
        """
        if self._final is not _PENDING:
            return cast(TFinal, self._final)
        self._iterating = True
        while not self._done:
            try:
                await self.__anext__()
            except StopAsyncIteration:
                break
        if self._error is not None:
            raise self._error
        final = self._finalizer(self._updates)
        if inspect.isawaitable(final):
            final = await final
        self._final = final
        return cast(TFinal, final)

    def map(self, update: Callable[[TUpdate], U], final: Callable[[TFinal], F]) -> ResponseStream[U, F]:
        """A stream of `update(u)` for each of this stream's updates, whose final response is
        `final(...)` of this one's; closing it closes this one. What a layer returns when it
        rewrites a stream.

        Example: `stream.map(lambda u: u, lambda response: response)` is the same stream, rewrapped.
        """
        return ResponseStream(_mapped(self, update), _MappedFinal(self, final))

    # ------------------------------------------------------------ closing

    async def aclose(self) -> None:
        """Stop the stream and close the underlying connection. Safe to call twice."""
        self._done = True
        self._iterating = True
        close = getattr(self._source, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> ResponseStream[TUpdate, TFinal]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "complete" if self._done else "open"
        return f"<ResponseStream {state}, {len(self._updates)} updates>"


async def _mapped(stream: ResponseStream[Any, Any], update: Callable[[Any], Any]) -> AsyncIterator[Any]:
    try:
        async for item in stream:
            yield update(item)
    finally:  # closed early (or failed): the inner stream's connection goes too
        await stream.aclose()


class _MappedFinal:
    """The finalizer of a mapped stream: `final` of the inner stream's final response."""

    def __init__(self, stream: ResponseStream[Any, Any], final: Callable[[Any], Any]) -> None:
        self._stream, self._final = stream, final

    async def __call__(self, _updates: Sequence[Any]) -> Any:
        return self._final(await self._stream.get_final_response())


class _Updates(AsyncIterator[TUpdate]):
    """The iterator of one `ResponseStream`: its updates, read through the stream (which keeps them)."""

    def __init__(self, stream: ResponseStream[TUpdate, Any]) -> None:
        self._stream = stream

    def __aiter__(self) -> _Updates[TUpdate]:
        return self

    def __anext__(self) -> Awaitable[TUpdate]:
        return self._stream.__anext__()  # its awaitable as it is: no coroutine of its own per update

    async def aclose(self) -> None:
        """Close the stream (as `ResponseStream.aclose`), for `contextlib.aclosing(aiter(stream))`."""
        await self._stream.aclose()
