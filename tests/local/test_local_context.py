"""The local server's context: sized so a default extraction with its re-asks fits, and a request
that does not fit raises `ContextSizeError` naming both sizes, on every route, plain and streamed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from small_server import LONG_TEXT, small_server_running

from so_middleware import (
    IncompleteOutputError,
)
from so_middleware.local import (
    ROUTES,
    ContextSizeError,
    LocalModelServer,
    chat_client,
    with_context_size_errors,
)
from so_middleware.testing import FakeChatClient

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def small_server() -> Iterator[LocalModelServer]:
    yield from small_server_running()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("route", ROUTES)
async def test_overflow_is_a_context_size_error(small_server: LocalModelServer, route: str, stream: bool) -> None:
    client = chat_client(small_server, route, max_retries=0)  # type: ignore[arg-type]
    options = {"max_tokens": 8, "temperature": 0}
    with pytest.raises(ContextSizeError) as caught:
        if stream:
            await client.get_response(LONG_TEXT, options=options, stream=True).get_final_response()
        else:
            await client.get_response(LONG_TEXT, options=options)
    await client.sdk_client.close()
    error = caught.value
    assert error.context_tokens == 512 and error.prompt_tokens is not None and error.prompt_tokens > 512
    assert str(error).startswith(
        f"the request needs {error.prompt_tokens} tokens but the local server's context per request is 512 tokens "
        "(context_size=512 shared by parallel=1 slots); send less text"
    )
    assert isinstance(error, IncompleteOutputError) and type(error.__cause__).__name__ == "BadRequestError"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_other_errors_pass_through_untouched(stream: bool) -> None:
    class BadRequest(Exception):
        status_code = 400
        body: ClassVar[dict[str, Any]] = {"code": 400, "message": "bad", "type": "invalid_request_error"}

    original = BadRequest("bad")
    client = with_context_size_errors(FakeChatClient([original]))
    with pytest.raises(BadRequest) as caught:
        if stream:
            await client.get_response("hi", stream=True).get_final_response()
        else:
            await client.get_response("hi")
    assert caught.value is original and caught.value.__cause__ is None


async def test_a_fitting_stream_keeps_the_inner_final_response() -> None:
    client = with_context_size_errors(FakeChatClient(["Hello there"]))
    stream = client.get_response("hi", stream=True)
    texts = [update.text async for update in stream]
    final = await stream.get_final_response()
    assert "".join(texts) == final.text == "Hello there" and final.usage is not None
