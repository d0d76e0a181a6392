"""with_retries (and with_telemetry outside it) through the real openai SDK against a loopback server
that fails on purpose (the testing layer's FaultServer)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from so_middleware import ChatResponse, Feature, StreamInterruptedError
from so_middleware.middleware.retries import with_retries
from so_middleware.middleware.telemetry import with_telemetry
from so_middleware.openai import OpenAIChatClient
from so_middleware.testing._faults import Fault, FaultServer, completion, reset, status, stream

pytestmark = pytest.mark.anyio


STREAM = pytest.mark.parametrize("streaming", [False, True], ids=["respond", "stream"])


class Waits:
    """An injected sleep that records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(float(seconds))


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
async def async_sdk() -> AsyncIterator[Callable[[FaultServer], openai.AsyncOpenAI]]:
    clients: list[openai.AsyncOpenAI] = []

    def make(server: FaultServer) -> openai.AsyncOpenAI:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()  # with_options copies share this HTTP client


async def call(client: Any, streaming: bool, **kwargs: Any) -> ChatResponse[Any]:
    if streaming:
        response_stream = client.get_response("hi", stream=True, **kwargs)
        async for _ in response_stream:
            pass
        return await response_stream.get_final_response()  # type: ignore[no-any-return]
    return await client.get_response("hi", **kwargs)  # type: ignore[no-any-return]


def answer(streaming: bool, text: str = "Hello world") -> Fault:
    return stream(text) if streaming else completion(text)


class Tagging(Feature):
    """A feature no layer knows."""


@STREAM
async def test_rate_limit_server_errors_and_a_reset_are_retried(
    streaming: bool, serve: Any, async_sdk: Any, waits: Waits
) -> None:
    server = serve([status(429, headers={"retry-after": "2"}), status(500), reset(), answer(streaming)])
    client = with_retries(
        OpenAIChatClient(async_sdk(server), model="m", discover=False), max_attempts=4, base_delay=0.1, sleep=waits
    )

    response = await call(client, streaming)

    assert response.text == "Hello world"
    assert len(server.requests) == 4
    assert waits.seconds[0] == 2.0  # retry-after
    assert all(0 <= wait <= cap for wait, cap in zip(waits.seconds[1:], [0.2, 0.4], strict=True))
    retries = response.additional_properties["so_middleware.retries"]
    assert [(r["attempt"], r["status_code"]) for r in retries] == [(1, 429), (2, 500), (3, None)]
    assert retries[2]["error"].startswith("APIConnectionError")


@STREAM
async def test_sdk_retries_are_off_the_server_sees_exactly_max_attempts(
    streaming: bool, serve: Any, async_sdk: Any, waits: Waits
) -> None:
    server = serve([status(503)])
    client = with_retries(OpenAIChatClient(async_sdk(server), model="m", discover=False), max_attempts=3, sleep=waits)

    with pytest.raises(openai.InternalServerError):
        await call(client, streaming)

    assert len(server.requests) == 3  # with the SDK's own max_retries=2 it would be 9
    assert [request.headers.get("x-stainless-retry-count") for request in server.requests] == ["0", "0", "0"]
    assert len(waits.seconds) == 2


async def test_the_retry_layer_leaves_the_callers_adapter_and_sdk_client_unchanged(
    serve: Any, async_sdk: Any, waits: Waits
) -> None:
    """Building and using `with_retries` changes nothing the caller holds: the same adapter and
    SDK client, called directly, still retry by themselves (a layer never mutates what it wraps)."""
    server = serve([status(503, headers={"retry-after-ms": "1"})])
    sdk = async_sdk(server)
    adapter = OpenAIChatClient(sdk, model="m", discover=False)
    client = with_retries(adapter, max_attempts=2, sleep=waits)
    assert adapter.sdk_client is sdk and sdk.max_retries == 2

    with pytest.raises(openai.InternalServerError):
        await client.get_response("hi")
    assert len(server.requests) == 2  # max_attempts requests, none hidden by the SDK
    assert adapter.sdk_client is sdk and sdk.max_retries == 2

    with pytest.raises(openai.InternalServerError):
        await adapter.get_response("hi")  # the caller's own adapter, no layer
    assert len(server.requests) == 2 + 3  # 1 + the SDK's max_retries=2, as before the layer existed
    retry_counts = [request.headers.get("x-stainless-retry-count") for request in server.requests]
    assert retry_counts == ["0", "0", "0", "1", "2"]


async def test_control_without_the_retry_layer_the_sdk_retries_by_itself(serve: Any, async_sdk: Any) -> None:
    server = serve([status(503, headers={"retry-after-ms": "1"})])  # the SDK honours it: a 1 ms wait
    client = OpenAIChatClient(async_sdk(server), model="m", discover=False)

    with pytest.raises(openai.InternalServerError):
        await client.get_response("hi")

    assert len(server.requests) == 3  # 1 + the SDK's max_retries=2
    assert [request.headers.get("x-stainless-retry-count") for request in server.requests] == ["0", "1", "2"]


@STREAM
@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
async def test_client_errors_fail_fast(streaming: bool, code: int, serve: Any, async_sdk: Any, waits: Waits) -> None:
    server = serve([status(code, error_type="invalid_request_error"), answer(streaming)])
    client = with_retries(OpenAIChatClient(async_sdk(server), model="m", discover=False), sleep=waits)

    with pytest.raises(openai.APIStatusError) as raised:
        await call(client, streaming)

    assert raised.value.status_code == code
    assert len(server.requests) == 1
    assert waits.seconds == []


@STREAM
async def test_retry_after_ms_is_read_and_deadline_refuses_a_long_wait(
    streaming: bool, serve: Any, async_sdk: Any, waits: Waits
) -> None:
    server = serve(
        [status(429, headers={"retry-after-ms": "1500"}), status(429, headers={"retry-after": "30"}), answer(streaming)]
    )
    client = with_retries(
        OpenAIChatClient(async_sdk(server), model="m", discover=False), max_attempts=5, deadline=10, sleep=waits
    )

    with pytest.raises(openai.RateLimitError):
        await call(client, streaming)

    assert waits.seconds == [1.5]  # the 30 s wait would pass the 10 s deadline: not started
    assert len(server.requests) == 2


async def test_stream_cut_before_the_first_chunk_is_retried(serve: Any, async_sdk: Any, waits: Waits) -> None:
    server = serve([stream(cut_after=0), stream("Hello world")])
    client = with_retries(OpenAIChatClient(async_sdk(server), model="m", discover=False), sleep=waits)

    response_stream = client.get_response("hi", stream=True)
    texts = [update.text async for update in response_stream]
    final = await response_stream.get_final_response()

    assert "".join(texts) == final.text == "Hello world"
    assert len(server.requests) == 2
    assert len(final.additional_properties["so_middleware.retries"]) == 1


async def test_stream_cut_mid_way_is_not_retried_and_keeps_the_partial_text(
    serve: Any, async_sdk: Any, waits: Waits
) -> None:
    server = serve([stream("Hello world", chunk_size=4, cut_after=2), stream("never")])
    client = with_retries(OpenAIChatClient(async_sdk(server), model="m", discover=False), sleep=waits)

    received: list[str] = []
    with pytest.raises(StreamInterruptedError) as raised:
        async for update in client.get_response("hi", stream=True):
            received.append(update.text)

    assert "".join(received) == "Hello wo"
    assert raised.value.partial_text == "Hello wo"
    assert raised.value.__cause__ is not None
    assert len(server.requests) == 1
    assert waits.seconds == []


@STREAM
async def test_sync_openai_client_is_retried_too(streaming: bool, serve: Any, waits: Waits) -> None:
    server = serve([status(429, headers={"retry-after": "1"}), reset(), answer(streaming, "sync ok")])
    sdk = openai.OpenAI(base_url=server.base_url, api_key="test")
    try:
        client = with_retries(OpenAIChatClient(sdk, model="m", discover=False), max_attempts=3, sleep=waits)
        response = await call(client, streaming)
    finally:
        sdk.close()

    assert response.text == "sync ok"
    assert len(server.requests) == 3
    assert waits.seconds[0] == 1.0


@STREAM
async def test_telemetry_outside_retries_over_the_real_sdk(
    streaming: bool, serve: Any, async_sdk: Any, waits: Waits
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server = serve([status(503), answer(streaming)])
    client = with_telemetry(
        with_retries(OpenAIChatClient(async_sdk(server), model="m", discover=False), sleep=waits),
        tracer_provider=provider,
    )

    response = await call(client, streaming, options={"features": [Tagging()], "temperature": 0})

    (span,) = exporter.get_finished_spans()
    assert response.text == "Hello world"
    assert span.name == "chat m"
    assert span.attributes is not None
    assert (span.attributes["gen_ai.provider.name"], span.attributes["server.address"]) == ("openai", "127.0.0.1")
    assert span.attributes["server.port"] == server.port
    assert [(event.attributes or {}).get("status_code") for event in span.events] == [503]
    assert "test" not in {str(value) for value in span.attributes.values()}  # the API key never
    provider.shutdown()
