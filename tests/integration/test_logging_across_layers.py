"""Scenarios through `with_logging` and the other layers together (split from test_logging.py):
what each layer's record of a call becomes in the log."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import (
    Capabilities,
    ModelBehaviorError,
    with_cache,
    with_fallback,
    with_logging,
    with_retries,
    with_structured_output,
)
from so_middleware.local import LocalModelServer, chat_client
from so_middleware.testing import FakeChatClient, StatusError, final_response

pytestmark = pytest.mark.anyio

LOGGER = "test.so_middleware.logging"


class Person(BaseModel):
    name: str
    age: int


async def no_wait(seconds: float) -> None:
    return None


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
async def test_retries_recorded_by_the_retry_layer_are_logged(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeChatClient([StatusError(503), StatusError(429), "ok"])
    await final_response(with_logging(with_retries(fake, sleep=no_wait), logger=LOGGER), "hi", stream=stream)
    retries = only(caplog, "retry")
    assert [(r["attempt"], r["status_code"]) for r in retries] == [(1, 503), (2, 429)]
    assert all(level == logging.WARNING for name, level, _ in events(caplog) if name == "retry")


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_reasks_are_logged_without_the_output(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeChatClient(['{"name": "SECRET-NAME"}', '{"name": "Ada", "age": 36}'])
    await final_response(
        with_logging(with_structured_output(fake), logger=LOGGER), "Ada, 36", stream=stream, output_type=Person
    )
    (reask,) = only(caplog, "reask")
    assert (reask["attempt"], reask["strategy"], reask["next_strategy"], reask["error"]) == (
        0,
        "native",
        "native",
        "ModelBehaviorError",
    )
    (chat,) = only(caplog, "chat")
    assert (chat["strategy"], chat["attempts"]) == ("native", 2)
    assert "SECRET-NAME" not in caplog.text


@pytest.mark.parametrize("stream", [False, True])
async def test_a_strategy_fallback_is_logged(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    capabilities = Capabilities(native_json_schema=True, json_object=True)  # native, json_object, prompted
    fake = FakeChatClient(["I ignore formats.", '{"name": "Ada", "age": 36}'], capabilities=capabilities)
    await final_response(
        with_logging(with_structured_output(fake), logger=LOGGER), "Ada", stream=stream, output_type=Person
    )
    (fallback,) = only(caplog, "strategy fallback")
    assert (fallback["strategy"], fallback["next_strategy"]) == ("native", "json_object")
    assert only(caplog, "chat")[0]["strategy"] == "json_object"


@pytest.mark.parametrize("stream", [False, True])
async def test_an_output_error_logs_its_attempts_and_not_its_output(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeChatClient('{"name": "SECRET"}')
    client = with_logging(with_structured_output(fake, max_retries=1), logger=LOGGER)
    with pytest.raises(ModelBehaviorError):
        await final_response(client, "Ada", stream=stream, output_type=Person)
    assert len(only(caplog, "reask")) == 1
    (failed,) = only(caplog, "chat failed")
    assert failed["error"] == "ModelBehaviorError"
    assert [level for name, level, _ in events(caplog) if name == "chat failed"] == [logging.ERROR]
    assert "SECRET" not in caplog.text


@pytest.mark.parametrize("stream", [False, True])
async def test_failovers_are_logged(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    primary, backup = FakeChatClient(StatusError(503), model="p"), FakeChatClient("ok", model="b")
    await final_response(with_logging(with_fallback(primary, backup), logger=LOGGER), "hi", stream=stream)
    (failover,) = only(caplog, "failover")
    assert (failover["client"], failover["failed_model"], failover["answered_by"]) == (0, "p", 1)
    assert failover["error"].startswith("StatusError")
    (chat,) = only(caplog, "chat")
    assert (chat["model"], chat["response_model"]) == ("p", "b")  # asked of the primary, answered by the backup


@pytest.mark.parametrize("stream", [False, True])
async def test_when_every_client_fails_each_failure_is_logged(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    client = with_logging(with_fallback(FakeChatClient(StatusError(503)), FakeChatClient(StatusError(502))))
    with pytest.raises(StatusError):
        await final_response(client, "hi", stream=stream)
    assert [(f["error"], f["status"]) for f in only(caplog, "failover")] == [("StatusError", 503)]
    assert only(caplog, "chat failed")[0]["status"] == 502


@pytest.mark.parametrize("stream", [False, True])
async def test_a_cache_hit_is_logged(stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    client = with_logging(with_cache(FakeChatClient("ok")), logger=LOGGER)
    await final_response(client, "hi", stream=stream)
    await final_response(client, "hi", stream=stream)
    assert [c.get("cache") for c in only(caplog, "chat")] == [None, "hit"]


@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True])
async def test_a_structured_call_on_the_real_server(
    local_server: LocalModelServer, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = chat_client(local_server, "chat")
    try:
        client = with_logging(with_retries(with_structured_output(adapter)), logger=LOGGER)
        options = {"max_tokens": 60, "temperature": 0}
        response = await final_response(
            client, "John Smith is 35 years old.", stream=stream, output_type=Person, options=options
        )
        assert isinstance(response.value, Person)
        (chat,) = only(caplog, "chat")
        assert chat["model"] == local_server.model and chat["strategy"] == "native" and chat["output_tokens"] > 0
        assert chat["server"].rstrip("/") == local_server.base_url.rstrip("/")
        assert "John Smith" not in caplog.text
    finally:
        await adapter.sdk_client.close()


PROMPT = "my secret diagnosis is 42"


def quoting(status: int) -> StatusError:
    """A provider error whose message quotes the request back, as validating gateways do."""
    return StatusError(status, message=f"Invalid request: '{PROMPT}' is not allowed")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("case", ["failed", "failover", "every-client-failed", "reask"])
async def test_without_content_no_record_quotes_an_error_message(
    stream: bool, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    if case == "failed":
        client: Any = with_logging(FakeChatClient(quoting(400)), logger=LOGGER)
    elif case == "failover":
        client = with_logging(with_fallback(FakeChatClient(quoting(503)), FakeChatClient("ok")), logger=LOGGER)
    elif case == "every-client-failed":
        client = with_logging(with_fallback(FakeChatClient(quoting(503)), FakeChatClient(quoting(502))))
    else:
        fake = FakeChatClient([PROMPT, '{"name": "Ada", "age": 36}'])  # the first answer quotes the prompt
        client = with_logging(with_structured_output(fake), logger=LOGGER)
    try:
        await final_response(client, PROMPT, stream=stream, output_type=Person if case == "reask" else None)
    except StatusError:
        assert case in ("failed", "every-client-failed")
    recorded = events(caplog)
    assert recorded and all("secret diagnosis" not in repr(fields) for _, _, fields in recorded)
    assert "secret diagnosis" not in caplog.text
    failures = [f for name, _, f in recorded if name in ("chat failed", "failover", "reask", "strategy fallback")]
    assert failures and all(f["error"] in ("StatusError", "ModelBehaviorError") for f in failures)
    assert all(f.get("status") in (400, 502, 503) for f in failures if f["error"] == "StatusError")
