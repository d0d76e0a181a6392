"""ResponseStream: single consumption, final response, closing and cancelling close the source."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import pytest

from so_middleware import ChatResponse, ChatResponseUpdate, ResponseStream, StreamConsumedError, TextContent

pytestmark = pytest.mark.anyio


class Source:
    def __init__(self, pieces: list[str], *, hang_after: int | None = None, fail_after: int | None = None) -> None:
        self.pieces = pieces
        self.hang_after = hang_after
        self.fail_after = fail_after
        self.started = False
        self.closed = False

    async def run(self) -> AsyncIterator[ChatResponseUpdate[None]]:
        self.started = True
        try:
            for index, piece in enumerate(self.pieces):
                if index == self.hang_after:
                    await anyio.sleep_forever()
                if index == self.fail_after:
                    raise ConnectionResetError("cut")
                yield ChatResponseUpdate([TextContent(piece)], role="assistant")
        finally:
            self.closed = True


def make(source: Source) -> ResponseStream[ChatResponseUpdate[None], ChatResponse[None]]:
    return ResponseStream(source.run(), ChatResponse.from_updates)


async def test_nothing_runs_before_iteration_and_final_joins_updates() -> None:
    source = Source(["a", "b", "c"])
    stream = make(source)
    assert not source.started
    seen = [update.text async for update in stream]
    assert seen == ["a", "b", "c"]
    final = await stream.get_final_response()
    assert final.text == "abc"
    assert await stream.get_final_response() is final


async def test_second_iteration_raises() -> None:
    stream = make(Source(["a"]))
    async for _ in stream:
        pass
    with pytest.raises(StreamConsumedError, match="consumed once"):
        async for _ in stream:
            pass


async def test_its_iterator_is_one_iterator_read_on_by_anext_and_async_for() -> None:
    stream = make(Source(["a", "b", "c"]))
    iterator = aiter(stream)
    assert aiter(iterator) is iterator
    first = await anext(iterator)
    rest = [update.text async for update in iterator]
    assert [first.text, *rest] == ["a", "b", "c"]
    assert (await stream.get_final_response()).text == "abc"
    with pytest.raises(StreamConsumedError, match="consumed once"):
        async for _ in stream:
            pass


async def test_its_iterator_closes_the_stream() -> None:
    source = Source(["a", "b", "c"])
    stream = make(source)
    async with contextlib.aclosing(aiter(stream)) as iterator:
        assert (await anext(iterator)).text == "a"
    assert stream.is_complete and source.closed
    assert (await stream.get_final_response()).text == "a"


async def test_final_response_consumes_the_rest() -> None:
    stream = make(Source(["a", "b", "c"]))
    async for update in stream:
        assert update.text == "a"
        break
    assert (await stream.get_final_response()).text == "abc"


async def test_aclose_closes_the_source() -> None:
    source = Source(["a", "b", "c"])
    stream = make(source)
    async with stream:
        async for _ in stream:
            break
    assert source.closed and stream.is_complete


async def test_cancelling_the_consumer_closes_the_source() -> None:
    source = Source(["a", "b"], hang_after=1)
    stream = make(source)
    with anyio.move_on_after(0.2):
        async for _ in stream:
            pass
    assert source.closed


async def test_error_is_raised_again_by_final_response() -> None:
    stream = make(Source(["a", "b"], fail_after=1))
    with pytest.raises(ConnectionResetError):
        async for _ in stream:
            pass
    with pytest.raises(ConnectionResetError):
        await stream.get_final_response()


async def test_async_finalizer() -> None:
    async def finalize(updates: object) -> str:
        return "done"

    stream: ResponseStream[ChatResponseUpdate[None], str] = ResponseStream(Source(["x"]).run(), finalize)
    assert await stream.get_final_response() == "done"
