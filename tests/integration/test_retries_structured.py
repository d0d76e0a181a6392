"""Retries and structured output stacked in both orders: a transient fault retries the HTTP call
that failed, never the run, and every attempt and every token of usage stays on `.attempts`/`.usage`.

Over the real openai SDK and a loopback `FaultServer` (a scripted 503 is the fault: no recording
of a healthy server holds one), plus `FakeChatClient` for the prompted (prefill) path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from so_middleware import (
    Capabilities,
    ChatResponse,
    StreamInterruptedError,
    StructuredOutput,
    with_retries,
    with_structured_output,
    with_telemetry,
)
from so_middleware.middleware.cache import with_cache
from so_middleware.middleware.retries import _policy as _retry_policy
from so_middleware.openai import OpenAIChatClient
from so_middleware.testing import FakeChatClient, Reply, StatusError
from so_middleware.testing._faults import Fault, FaultServer, completion, stall, status, stream

pytestmark = pytest.mark.anyio

ORDERS = pytest.mark.parametrize("order", ["retries-outside", "retries-inside"])
STREAM = pytest.mark.parametrize("streaming", [False, True], ids=["respond", "stream"])
NATIVE = Capabilities(name="native", native_json_schema=True)
PREFILL = Capabilities(name="prefill", assistant_prefill=True)
HALF = '{"name": "Ada"}'  # valid JSON, invalid Person: a re-ask follows
WHOLE = '{"name": "Ada", "age": 36}'


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
async def adapter_for() -> AsyncIterator[Callable[[FaultServer], OpenAIChatClient]]:
    sdks: list[openai.AsyncOpenAI] = []

    def make(server: FaultServer) -> OpenAIChatClient:
        sdks.append(openai.AsyncOpenAI(base_url=server.base_url, api_key="test"))
        return OpenAIChatClient(sdks[-1], model="m", capabilities=NATIVE, discover=False)

    yield make
    for sdk in sdks:
        await sdk.close()


async def no_sleep(seconds: float) -> None:
    return None


def stack(order: str, adapter: Any, **retry_settings: Any) -> Any:
    if order == "retries-outside":
        return with_retries(with_structured_output(adapter, mode="native"), sleep=no_sleep, **retry_settings)
    return with_structured_output(with_retries(adapter, sleep=no_sleep, **retry_settings), mode="native")


async def run(client: Any, streaming: bool) -> tuple[ChatResponse[Any], list[Any]]:
    if not streaming:
        return await client.get_response("Ada is 36.", output_type=Person), []
    response_stream = client.get_response("Ada is 36.", output_type=Person, stream=True)
    updates = [update async for update in response_stream]
    return await response_stream.get_final_response(), updates


def answer(streaming: bool, text: str) -> Fault:
    return stream(text) if streaming else completion(text)


@ORDERS
@STREAM
async def test_a_fault_during_a_reask_retries_that_call_only(
    order: str, streaming: bool, serve: Any, adapter_for: Any
) -> None:
    server = serve([answer(streaming, HALF), status(503), answer(streaming, WHOLE)])

    response, updates = await run(stack(order, adapter_for(server)), streaming)

    assert response.value == Person(name="Ada", age=36)
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 3 and bodies[2] == bodies[1] != bodies[0]  # the re-ask was sent again as it was
    assert [(a.index, a.text, a.error is None) for a in response.attempts] == [(0, HALF, False), (1, WHOLE, True)]
    assert [a.usage.total_tokens for a in response.attempts if a.usage] == [15, 15]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (20, 10, 30)
    retries = response.additional_properties["so_middleware.retries"]
    assert [(r["attempt"], r["status_code"]) for r in retries] == [(1, 503)]
    if streaming:  # the caller saw each attempt once, the first one's text included
        assert "".join(u.text for u in updates if u.attempt == 0) == HALF
        assert "".join(u.text for u in updates if u.attempt == 1) == WHOLE


@ORDERS
@STREAM
async def test_retries_running_out_during_a_reask_keep_the_earlier_attempt(
    order: str, streaming: bool, serve: Any, adapter_for: Any
) -> None:
    server = serve([answer(streaming, HALF), status(503)])

    with pytest.raises(openai.InternalServerError) as caught:
        await run(stack(order, adapter_for(server), max_attempts=2), streaming)

    assert len(server.requests) == 3  # one first answer, two tries of the re-ask; the run is never restarted
    error: Any = caught.value
    assert [(a.index, a.text) for a in error.attempts] == [(0, HALF)]
    assert error.usage.total_tokens == 15


@ORDERS
@STREAM
async def test_a_prompted_runs_first_call_is_retried(order: str, streaming: bool) -> None:
    fake = FakeChatClient([StatusError(503), Reply('Ada", "age": 36}', chunk_size=4)], capabilities=PREFILL)
    client = (
        with_retries(with_structured_output(fake), sleep=no_sleep)
        if order == "retries-outside"
        else with_structured_output(with_retries(fake, sleep=no_sleep))
    )

    response, updates = await run(client, streaming)

    assert response.value == Person(name="Ada", age=36) and len(fake.calls) == 2
    assert [a.text for a in response.attempts] == [WHOLE]
    if streaming:
        assert "".join(u.text for u in updates) == response.attempts[0].text


@STREAM
async def test_the_first_try_runs_outside_the_retry_loop(streaming: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_loop(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the retry loop was entered on the happy path")

    monkeypatch.setattr(_retry_policy, "AsyncRetrying", no_loop)
    fake = FakeChatClient([WHOLE, WHOLE])
    for client in (with_structured_output(with_retries(fake)), with_retries(with_structured_output(fake))):
        response, _ = await run(client, streaming)
        assert response.value == Person(name="Ada", age=36)
        assert "so_middleware.retries" not in response.additional_properties
    assert len(fake.calls) == 2


async def test_a_feature_run_below_retries_its_calls_and_the_adapter_never_sees_the_retries() -> None:
    fake = FakeChatClient([HALF, WHOLE])
    feature = StructuredOutput(Person)
    await with_retries(with_structured_output(fake)).get_response("x", options={"features": [feature]})
    assert [c.options.features for c in fake.calls] == [(), ()]
    assert feature.response is not None and len(feature.response.attempts) == 2


@STREAM
async def test_a_plain_call_through_the_structured_layer_is_retried_there(streaming: bool) -> None:
    """No structured output asked: the layer below still applies the retries handed to it (the
    retry layer above retries nothing itself), and the adapter never sees them."""
    fake = FakeChatClient([StatusError(503), "hello"])
    client = with_retries(with_structured_output(fake), sleep=no_sleep)
    if streaming:
        response = await client.get_response("x", stream=True).get_final_response()
    else:
        response = await client.get_response("x")
    assert response.text == "hello" and len(fake.calls) == 2
    assert [r["status_code"] for r in response.additional_properties["so_middleware.retries"]] == [503]
    assert [c.options.features for c in fake.calls] == [(), ()]


@ORDERS
@STREAM
async def test_faults_on_the_first_call_and_the_reask_are_all_reported(
    order: str, streaming: bool, serve: Any, adapter_for: Any
) -> None:
    server = serve([status(503), answer(streaming, HALF), status(429), answer(streaming, WHOLE)])

    response, _ = await run(stack(order, adapter_for(server)), streaming)

    assert len(server.requests) == 4 and [a.text for a in response.attempts] == [HALF, WHOLE]
    assert response.usage is not None and response.usage.total_tokens == 30
    retries = response.additional_properties["so_middleware.retries"]
    assert [(r["attempt"], r["status_code"]) for r in retries] == [(1, 503), (1, 429)]


class Clock:
    """A fake monotonic clock that the injected sleep advances."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(("order", "calls"), [("retries-outside", 3), ("retries-inside", 4)])
async def test_the_deadline_bounds_the_run_outside_and_each_call_inside(order: str, calls: int) -> None:
    wait = {"retry-after": "4"}
    fake = FakeChatClient([StatusError(503, wait), HALF, StatusError(503, wait), WHOLE])
    clock = Clock()
    settings = {"deadline": 6.0, "sleep": clock.sleep, "clock": clock}
    if order == "retries-outside":  # 4 s waited, a second wait of 4 s would end past 6 s: the run stops
        with pytest.raises(StatusError) as caught:
            await with_retries(with_structured_output(fake), **settings).get_response("x", output_type=Person)
        assert [a.text for a in caught.value.attempts] == [HALF]  # type: ignore[attr-defined]
    else:  # each call has its own 6 s
        response = await with_structured_output(with_retries(fake, **settings)).get_response("x", output_type=Person)
        assert response.value == Person(name="Ada", age=36)
    assert len(fake.calls) == calls


@ORDERS
async def test_a_stream_broken_mid_reask_is_an_attempt_on_the_error(order: str, serve: Any, adapter_for: Any) -> None:
    stalled = stall(stream(WHOLE, chunk_size=4).events[:3], hold=5.0)  # three chunks, then silence
    server = serve([stream(HALF), stalled])
    adapter = adapter_for(server)
    adapter.idle_timeout = 0.3

    with pytest.raises(StreamInterruptedError) as caught:
        await run(stack(order, adapter), streaming=True)

    assert len(server.requests) == 2  # content had reached the caller: not retried, in either order
    error: Any = caught.value
    assert [(a.index, a.text) for a in error.attempts] == [(0, HALF), (1, WHOLE[:12])]
    assert error.attempts[1].error is error and error.partial_text == WHOLE[:12]
    assert error.usage.total_tokens == 15  # the broken stream had not reported its usage yet


@STREAM
async def test_telemetry_between_retries_and_the_run_is_one_span_holding_the_retry(
    streaming: bool, exporter: InMemorySpanExporter, tracer_provider: TracerProvider
) -> None:
    fake = FakeChatClient([HALF, StatusError(503), WHOLE])
    client = with_retries(with_telemetry(with_structured_output(fake), tracer_provider=tracer_provider), sleep=no_sleep)

    response, _ = await run(client, streaming)

    assert response.value == Person(name="Ada", age=36) and len(fake.calls) == 3
    [span] = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert [e.attributes["status_code"] for e in span.events if e.name == "so_middleware.retry"] == [503]


async def test_the_retries_a_retry_layer_hands_down_leave_cache_keys_alone() -> None:
    fake = FakeChatClient([WHOLE, "other"])
    client = with_retries(with_cache(with_structured_output(fake)))
    first = await client.get_response("Ada is 36.", output_type=Person)
    second = await client.get_response("Ada is 36.", output_type=Person)
    assert first.value == second.value == Person(name="Ada", age=36) and len(fake.calls) == 1
    assert second.additional_properties["so_middleware.cache_hit"] is True
