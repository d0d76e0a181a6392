"""with_fallback over FakeChatClient and the real local server: when it fails over, what it records."""

from __future__ import annotations

import copy
import socket
from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import (
    DelegatingChatClient,
    FallbackChatClient,
    Feature,
    LayerCall,
    ModelBehaviorError,
    UserError,
    with_fallback,
    with_retries,
    with_structured_output,
)
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient
from so_middleware.testing import FakeChatClient, Reply, StatusError, final_response

pytestmark = pytest.mark.anyio

FALLBACK = "so_middleware.fallback"


class Tagging(Feature):
    """A feature no layer knows: every client must receive the very object."""


class Person(BaseModel):
    name: str
    age: int


@pytest.mark.parametrize("stream", [False, True])
async def test_the_primary_answers_when_it_can(stream: bool) -> None:
    primary, backup = FakeChatClient("from primary", model="p"), FakeChatClient("from backup", model="b")
    response = await final_response(with_fallback(primary, backup), "hi", stream=stream)
    assert response.text == "from primary" and not backup.calls
    assert response.additional_properties[FALLBACK] == {"index": 0, "model": "p", "provider": "fake", "failed": []}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "error",
    [
        StatusError(503),
        StatusError(502),
        StatusError(429),
        StatusError(408),
        StatusError(409),
        ConnectionError("refused"),
        TimeoutError(),
    ],
)
async def test_transient_errors_fail_over_to_the_next_client(stream: bool, error: Exception) -> None:
    primary, backup = FakeChatClient(error, model="p"), FakeChatClient("from backup", model="b")
    feature = Tagging()
    options = {"features": [feature], "temperature": 0}
    response = await final_response(with_fallback(primary, backup), "hi", stream=stream, options=options)
    assert response.text == "from backup"
    record = response.additional_properties[FALLBACK]
    assert (record["index"], record["model"]) == (1, "b")
    assert [(f["index"], f["model"]) for f in record["failed"]] == [(0, "p")]
    assert record["failed"][0]["error"].startswith(type(error).__name__)
    for fake in (primary, backup):  # both got the same request, features as the same objects
        assert fake.calls[0].options.features[0] is feature and fake.calls[0].options.temperature == 0
    assert options == {"features": [feature], "temperature": 0}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("status", [400, 401, 404, 422])
async def test_other_errors_are_raised_at_once(stream: bool, status: int) -> None:
    primary, backup = FakeChatClient(StatusError(status)), FakeChatClient("from backup")
    with pytest.raises(StatusError) as raised:
        await final_response(with_fallback(primary, backup), "hi", stream=stream)
    assert raised.value.status_code == status and not backup.calls
    assert not hasattr(raised.value, "fallback_errors")


@pytest.mark.parametrize("stream", [False, True])
async def test_a_user_error_never_fails_over_whatever_on_says(stream: bool) -> None:
    primary, backup = FakeChatClient(UserError("bad input")), FakeChatClient("from backup")
    with pytest.raises(UserError, match="bad input"):
        await final_response(with_fallback(primary, backup, on=(Exception,)), "hi", stream=stream)
    assert not backup.calls


@pytest.mark.parametrize("stream", [False, True])
async def test_when_every_client_fails_the_last_error_carries_the_others(stream: bool) -> None:
    first, second, third = StatusError(503), ConnectionError("refused"), StatusError(529)
    clients = [FakeChatClient(first, model="a"), FakeChatClient(second, model="b"), FakeChatClient(third, model="c")]
    with pytest.raises(StatusError) as raised:
        await final_response(with_fallback(*clients), "hi", stream=stream)
    assert raised.value is third
    assert raised.value.fallback_errors == [first, second]  # type: ignore[attr-defined]
    notes = raised.value.__notes__
    assert "client 0 (a) failed first: StatusError: status 503" in notes[0]
    assert "client 1 (b) failed first: ConnectionError: refused" in notes[1]


@pytest.mark.parametrize("stream", [False, True])
async def test_the_third_client_answers_after_two_failures(stream: bool) -> None:
    clients = [FakeChatClient(StatusError(500), model="a"), FakeChatClient(TimeoutError(), model="b")]
    response = await final_response(with_fallback(*clients, FakeChatClient("third", model="c")), "hi", stream=stream)
    record = response.additional_properties[FALLBACK]
    assert response.text == "third" and record["index"] == 2
    assert [f["model"] for f in record["failed"]] == ["a", "b"]


@pytest.mark.parametrize("stream", [False, True])
async def test_on_names_the_errors_as_types_or_a_predicate(stream: bool) -> None:
    class QuotaError(Exception):
        pass

    primary, backup = FakeChatClient(QuotaError("out of quota")), FakeChatClient("from backup")
    assert (
        await final_response(with_fallback(primary, backup, on=QuotaError), "x", stream=stream)
    ).text == "from backup"
    primary, backup = FakeChatClient(StatusError(503)), FakeChatClient("from backup")
    with pytest.raises(StatusError):  # 503 is not named any more
        await final_response(with_fallback(primary, backup, on=(QuotaError,)), "x", stream=stream)
    primary, backup = FakeChatClient(StatusError(404)), FakeChatClient("from backup")
    on_404 = with_fallback(primary, backup, on=lambda error: getattr(error, "status_code", None) == 404)
    assert (await final_response(on_404, "x", stream=stream)).text == "from backup"


@pytest.mark.parametrize("on", [(), ("ValueError",), 42], ids=["empty", "strings", "number"])
def test_bad_on_is_a_user_error(on: Any) -> None:
    with pytest.raises(UserError, match="exception types or a predicate"):
        with_fallback(FakeChatClient("x"), FakeChatClient("y"), on=on)


def test_a_bad_fallback_client_is_refused_when_built() -> None:
    with pytest.raises(UserError, match="expected a ChatClient"):
        with_fallback(FakeChatClient("x"), {"not": "a client"})


async def test_a_stream_fails_over_before_its_first_update_and_closes_the_failed_stream() -> None:
    primary = FakeChatClient(Reply("never seen", error=StatusError(503), fail_after=0))
    backup = FakeChatClient(Reply("backup answer", chunk_size=3))
    stream = with_fallback(primary, backup).get_response("hi", stream=True)
    texts = [update.text async for update in stream]
    assert "".join(texts) == "backup answer"
    assert primary.closed_streams == 1
    assert (await stream.get_final_response()).additional_properties[FALLBACK]["index"] == 1


async def test_a_stream_never_fails_over_after_its_first_update() -> None:
    primary = FakeChatClient(Reply("part of an answer", error=StatusError(503), fail_after=1))
    backup = FakeChatClient("backup answer")
    stream = with_fallback(primary, backup).get_response("hi", stream=True)
    seen: list[str] = []
    with pytest.raises(StatusError):
        async for update in stream:
            seen.append(update.text)
    assert seen == ["part"] and not backup.calls


async def test_closing_a_stream_early_closes_the_answering_stream() -> None:
    primary = FakeChatClient(StatusError(503))
    backup = FakeChatClient(Reply("a long backup answer", chunk_size=2))
    stream = with_fallback(primary, backup).get_response("hi", stream=True)
    async with stream:
        async for _ in stream:
            break
    assert backup.closed_streams == 1


async def test_nothing_is_called_before_a_stream_is_iterated() -> None:
    primary, backup = FakeChatClient("x"), FakeChatClient("y")
    with_fallback(primary, backup).get_response("hi", stream=True)
    assert not primary.calls and not backup.calls


@pytest.mark.parametrize("stream", [False, True])
async def test_retries_of_the_primary_come_first(stream: bool) -> None:
    async def no_wait(seconds: float) -> None:
        return None

    primary = FakeChatClient(StatusError(503), model="p")
    client = with_fallback(with_retries(primary, max_attempts=3, sleep=no_wait), FakeChatClient("backup"))
    response = await final_response(client, "hi", stream=stream)
    assert len(primary.calls) == 3 and response.text == "backup"


async def test_invalid_structured_output_can_fail_over_to_a_stronger_model() -> None:
    weak = with_structured_output(FakeChatClient("not json", model="weak"), max_retries=1)
    strong = with_structured_output(FakeChatClient('{"name": "Ada", "age": 36}', model="strong"))
    client = with_fallback(weak, strong, on=ModelBehaviorError)
    response = await client.get_response("Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert response.additional_properties[FALLBACK]["failed"][0]["model"] == "weak"


async def test_a_structured_stream_that_already_streamed_invalid_text_does_not_fail_over() -> None:
    """The weak model's text reached the caller before validation failed: too late to switch."""
    weak = with_structured_output(FakeChatClient("not json", model="weak"), max_retries=0)
    strong = FakeChatClient('{"name": "Ada", "age": 36}', model="strong")
    stream = with_fallback(weak, with_structured_output(strong), on=ModelBehaviorError).get_response(
        "Ada, 36", output_type=Person, stream=True
    )
    with pytest.raises(ModelBehaviorError):
        await stream.get_final_response()
    assert not strong.calls


def test_the_layer_passes_attributes_through_to_the_primary() -> None:
    primary = FakeChatClient("x", model="primary-model")
    client = FallbackChatClient(primary, FakeChatClient("y", model="other"))
    assert client.model == "primary-model" and client.get_service(FakeChatClient) is primary


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True])
async def test_a_dead_server_fails_over_to_the_real_one(local_server: LocalModelServer, stream: bool) -> None:
    """The primary points at a closed loopback port (a real connection error); the local model answers."""
    import openai

    dead_sdk = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{_closed_port()}/v1", api_key="x", max_retries=0)
    live_sdk = openai.AsyncOpenAI(base_url=local_server.base_url, api_key="local")
    try:
        dead = OpenAIChatClient(dead_sdk, "dead-model", capabilities=LLAMA_SERVER)
        live = OpenAIChatClient(live_sdk, local_server.model, capabilities=LLAMA_SERVER)
        response = await final_response(with_fallback(dead, live), "Say hi.", stream=stream, options={"max_tokens": 8})
        record = response.additional_properties[FALLBACK]
        assert response.text and record["index"] == 1 and record["model"] == local_server.model
        assert record["failed"][0]["model"] == "dead-model"
        assert record["failed"][0]["error"].startswith("APIConnectionError")
    finally:
        await dead_sdk.close()
        await live_sdk.close()


async def test_a_copy_of_the_layer_calls_its_own_copy_of_the_primary() -> None:
    layer = with_fallback(FakeChatClient("x", model="original"), FakeChatClient("y", model="backup"))
    clone = copy.copy(layer)
    clone.__wrapped__.model = "copied"  # the clone's own primary, not the original
    response = await clone.get_response("hi")
    assert response.additional_properties[FALLBACK]["model"] == "copied"
    assert [c.model for c in clone.clients] == ["copied", "backup"]
    assert [c.model for c in layer.clients] == ["original", "backup"]


@pytest.mark.parametrize("stream", [False, True])
async def test_status_error_reads_like_an_sdk_error(stream: bool) -> None:
    from so_middleware.middleware.retries import is_transient, retry_after_seconds

    assert is_transient(StatusError(503)) and not is_transient(StatusError(400))
    assert retry_after_seconds(StatusError(429, {"retry-after": "2"}).response.headers) == 2.0
    assert str(StatusError(500, message="boom")) == "boom"
    assert (await final_response(FakeChatClient("hello"), "hi", stream=stream)).text == "hello"


@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True])
async def test_real_503s_after_retries_fail_over_to_the_local_model(
    local_server: LocalModelServer, stream: bool
) -> None:
    """The primary is the OpenAI SDK on a loopback server answering 503 twice (its retries spent)."""
    import openai

    from so_middleware.testing._faults import FaultServer, status

    async def no_wait(seconds: float) -> None:
        return None

    with FaultServer([status(503)]) as faults:
        failing_sdk = openai.AsyncOpenAI(base_url=faults.base_url, api_key="x")
        live_sdk = openai.AsyncOpenAI(base_url=local_server.base_url, api_key="local")
        try:
            primary = with_retries(
                OpenAIChatClient(failing_sdk, "busy-model", discover=False), max_attempts=2, sleep=no_wait
            )
            backup = OpenAIChatClient(live_sdk, local_server.model, capabilities=LLAMA_SERVER)
            client = with_fallback(primary, backup)
            response = await final_response(client, "Say hi.", stream=stream, options={"max_tokens": 8})
        finally:
            await failing_sdk.close()
            await live_sdk.close()
    assert len(faults.requests) == 2 and response.text
    record = response.additional_properties[FALLBACK]
    assert (record["index"], record["failed"][0]["model"]) == (1, "busy-model")
    assert record["failed"][0]["error"].startswith("InternalServerError")


class RefusingAtOnce(DelegatingChatClient):
    """A layer that fails while the call is made, before any awaitable or stream exists."""

    def respond(self, call: LayerCall) -> Any:
        raise ConnectionError("no route to host")

    def stream(self, call: LayerCall) -> Any:
        raise ConnectionError("no route to host")


@pytest.mark.parametrize("stream", [False, True])
async def test_an_error_raised_while_the_call_is_made_fails_over_too(stream: bool) -> None:
    response = await final_response(
        with_fallback(RefusingAtOnce(FakeChatClient("x")), FakeChatClient("backup")), "hi", stream=stream
    )
    assert response.text == "backup"
