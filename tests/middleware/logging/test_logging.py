"""with_logging over FakeChatClient and the real local server: the records, what they never hold."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from so_middleware import (
    BaseChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    LoggingChatClient,
    UserError,
    with_logging,
)
from so_middleware.middleware.logging import redact
from so_middleware.testing import FakeChatClient, Reply, StatusError, final_response

pytestmark = pytest.mark.anyio

LOGGER = "test.so_middleware.logging"


class Hanging(BaseChatClient):
    """A client that never answers: only cancellation ends its calls."""

    model = "hanging"

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        await anyio.sleep_forever()
        yield ChatResponseUpdate()


def events(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, dict[str, Any]]]:
    """(event, level, fields) of each record the layer wrote."""
    return [
        (r.so_middleware["event"], r.levelno, r.so_middleware)  # type: ignore[attr-defined]
        for r in caplog.records
        if hasattr(r, "so_middleware")
    ]


def only(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    return [fields for name, _, fields in events(caplog) if name == event]


@pytest.fixture
def caplog(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    caplog.set_level(logging.DEBUG, logger="so_middleware")
    return caplog


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_is_one_record_with_model_duration_usage_and_finish(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeChatClient("the secret answer", model="m1")
    await final_response(with_logging(fake, logger=LOGGER), "the secret question", stream=stream)
    (chat,) = only(caplog, "chat")
    assert (chat["model"], chat["stream"], chat["finish"], chat["input_tokens"], chat["output_tokens"]) == (
        "m1",
        stream,
        "stop",
        10,
        5,
    )
    assert chat["duration"] >= 0
    assert ("first_chunk" in chat) is stream
    levels = {name: level for name, level, _ in events(caplog)}
    assert levels == {"chat start": logging.DEBUG, "chat": logging.INFO}
    assert "secret" not in caplog.text  # no content unless asked
    assert caplog.records[-1].getMessage().startswith("chat model=m1 stream=")


@pytest.mark.parametrize("stream", [False, True])
async def test_content_is_logged_only_when_asked(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeChatClient("the answer")
    await final_response(with_logging(fake, logger=LOGGER, include_content=True), "the question", stream=stream)
    (start,) = only(caplog, "chat start")
    assert start["messages"] == ["user: the question"]
    assert only(caplog, "chat")[0]["text"] == "'the answer'"
    assert {level for name, level, _ in events(caplog)} == {logging.INFO}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("content", [False, True])
async def test_a_transport_error_is_logged_with_its_status(
    stream: bool, content: bool, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeChatClient(StatusError(400, message="bad request: max_tokens too large"))
    client = with_logging(fake, logger=LOGGER, include_content=content)
    with pytest.raises(StatusError):
        await final_response(client, "hi", stream=stream)
    (failed,) = only(caplog, "chat failed")
    message = "StatusError: bad request: max_tokens too large"
    assert failed["status"] == 400 and failed["error"] == (message if content else "StatusError")


@pytest.mark.parametrize("stream", [False, True])
async def test_credentials_are_never_logged(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeChatClient(
        ConnectionError(
            "cannot reach https://alice:hunter2@proxy.local:8080/v1?api_key=k-123&x=1 "
            "with Authorization: Bearer tok.abc123 and key sk-ant-abcdefghijkl"
        )
    )
    fake.base_url = "https://bob:s3cret@llm.example/v1?token=t-999"
    with pytest.raises(ConnectionError):
        await final_response(with_logging(fake, logger=LOGGER, include_content=True), "hi", stream=stream)
    for secret in ("alice", "hunter2", "k-123", "tok.abc123", "abcdefghijkl", "bob", "s3cret", "t-999"):
        assert secret not in caplog.text
        assert all(secret not in repr(fields) for _, _, fields in events(caplog))
    (failed,) = only(caplog, "chat failed")
    assert "https://***@proxy.local:8080/v1?api_key=***&x=1" in failed["error"]
    assert failed["server"] == "https://***@llm.example/v1?token=***"


def test_redact() -> None:
    assert redact("https://user:pw@host/v1?api_key=abc") == "https://***@host/v1?api_key=***"
    assert redact("Bearer abc.def") == "Bearer ***"
    assert redact("sk-proj-1234567890") == "sk-***"
    assert redact("http://127.0.0.1:8080/v1 is fine") == "http://127.0.0.1:8080/v1 is fine"


async def test_a_stream_closed_early_is_logged_as_closed(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeChatClient(Reply("a long answer", chunk_size=2))
    stream = with_logging(fake, logger=LOGGER).get_response("hi", stream=True)
    async with stream:
        async for _ in stream:
            break
    (closed,) = only(caplog, "chat closed")
    assert closed["updates"] == 1 and fake.closed_streams == 1
    assert not only(caplog, "chat") and not only(caplog, "chat failed")


@pytest.mark.parametrize("stream", [False, True])
async def test_a_cancelled_call_is_logged_as_cancelled(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    client = with_logging(Hanging(), logger=LOGGER)
    with anyio.move_on_after(0.05):
        await final_response(client, "hi", stream=stream)
    (cancelled,) = only(caplog, "chat cancelled")
    assert cancelled["model"] == "hanging"
    assert not only(caplog, "chat failed")


@pytest.mark.parametrize("stream", [False, True])
async def test_level_and_logger_are_chosen_by_the_caller(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    await final_response(
        with_logging(FakeChatClient("ok"), logger=logging.getLogger(LOGGER), level="debug"), "x", stream=stream
    )
    await final_response(with_logging(FakeChatClient("ok"), level=logging.WARNING), "x", stream=stream)
    chats = [(r.name, r.levelno) for r in caplog.records if getattr(r, "so_middleware", {}).get("event") == "chat"]
    assert chats == [(LOGGER, logging.DEBUG), ("so_middleware", logging.WARNING)]


def test_a_bad_level_is_a_user_error() -> None:
    with pytest.raises(UserError, match="level must be a logging level"):
        LoggingChatClient(FakeChatClient("x"), level="LOUD")


async def test_nothing_is_formatted_when_the_logger_is_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL, logger=LOGGER)
    response = await with_logging(FakeChatClient("ok"), logger=LOGGER).get_response("x")
    assert response.text == "ok" and not events(caplog)


async def test_a_stream_never_iterated_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeChatClient("ok")
    with_logging(fake, logger=LOGGER).get_response("hi", stream=True)
    assert not events(caplog) and not fake.calls
