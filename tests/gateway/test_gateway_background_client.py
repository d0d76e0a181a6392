"""Background runs end to end: this library's `OpenAIResponsesClient` (and the layers over it)
against the real gateway in front of the real local model, on loopback sockets.

The gateway is wrapped in a small ASGI recorder, so each test can count what reached it: a
structured-output run makes exactly one create request (`POST /v1/responses`), however many polls
or resumes follow.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from so_middleware import (
    ContinuationToken,
    FinishReason,
    ProviderResponseError,
    cancel_run,
    wait_for_response,
    with_retries,
    with_structured_output,
)
from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer
from so_middleware.local import LocalModelServer
from so_middleware.openai import OpenAIResponsesClient

pytestmark = [pytest.mark.local_server, pytest.mark.anyio]

MODEL = "smollm2"
COUNT = "Count from 1 to 30, separated by commas."


class Person(BaseModel):
    name: str
    age: int


class RecordingApp:
    """An ASGI app that notes every HTTP request's method and path, then hands it on."""

    def __init__(self, app: Any) -> None:
        self.app, self.seen = app, []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)

    def creates(self) -> int:
        return self.seen.count(("POST", "/v1/responses"))


@pytest.fixture(scope="module")
def recorded_gateway(local_server: LocalModelServer) -> Iterator[tuple[RecordingApp, AppServer]]:
    app = RecordingApp(create_app(GatewayConfig(backend_url=local_server.base_url)))
    with AppServer(app) as server:
        yield app, server


@pytest.fixture
async def adapter(recorded_gateway: tuple[RecordingApp, AppServer]) -> AsyncIterator[OpenAIResponsesClient]:
    recorded_gateway[0].seen.clear()
    sdk = openai.AsyncOpenAI(base_url=recorded_gateway[1].base_url, api_key="none", timeout=120)
    yield OpenAIResponsesClient(sdk, MODEL)
    await sdk.close()


async def test_background_create_poll_typed_value_with_one_create(
    adapter: OpenAIResponsesClient, recorded_gateway: tuple[RecordingApp, AppServer]
) -> None:
    client = with_retries(with_structured_output(adapter))
    options = {"max_tokens": 60, "temperature": 0, "background": True}
    prompt = "John Smith is a 35-year-old engineer. Extract the person."
    started = await client.get_response(prompt, output_type=Person, options=options)
    assert started.finish_reason == FinishReason.LONG_RUNNING and started.continuation_token is not None
    done = await wait_for_response(client, str(started.continuation_token), output_type=Person, first_delay=0.1)
    assert isinstance(done.value, Person) and done.value.age == 35
    assert len(done.attempts) == 1 and done.usage is not None and done.usage.output_tokens
    app = recorded_gateway[0]
    assert app.creates() == 1 and app.seen.count(("GET", f"/v1/responses/{started.response_id}")) >= 1


async def test_an_interrupted_background_stream_resumes_without_loss_or_repeat(
    adapter: OpenAIResponsesClient, recorded_gateway: tuple[RecordingApp, AppServer]
) -> None:
    options = {"max_tokens": 60, "temperature": 0}
    uninterrupted = await adapter.get_response(COUNT, options=options, stream=True).get_final_response()
    recorded_gateway[0].seen.clear()
    stream = adapter.get_response(COUNT, options={**options, "background": True}, stream=True)
    first: list[str] = []
    token: ContinuationToken | None = None
    async for update in stream:
        if update.text:
            first.append(update.text)
            token = update.continuation_token
        if len(first) == 6:
            break
    await stream.aclose()  # the connection is closed after 6 deltas
    assert token is not None and token.sequence_number is not None
    resumed = adapter.get_response(continuation_token=str(token), stream=True)
    rest = [update.text async for update in resumed if update.text]
    whole = await resumed.get_final_response()
    assert "".join(first + rest) == uninterrupted.text == whole.text
    assert whole.finish_reason in (FinishReason.STOP, FinishReason.LENGTH)
    assert recorded_gateway[0].creates() == 1


async def test_structured_output_over_a_resumed_stream(
    adapter: OpenAIResponsesClient, recorded_gateway: tuple[RecordingApp, AppServer]
) -> None:
    client = with_structured_output(adapter)
    options = {"max_tokens": 60, "temperature": 0, "background": True}
    prompt = "Ada Lovelace is 36 years old. Extract the person."
    stream = client.get_response(prompt, output_type=Person, options=options, stream=True)
    token = None
    async for update in stream:
        token = update.continuation_token or token
        if update.text:
            break
    await stream.aclose()
    assert token is not None
    final = await client.get_response(continuation_token=token, output_type=Person, stream=True).get_final_response()
    assert isinstance(final.value, Person) and len(final.attempts) == 1
    assert recorded_gateway[0].creates() == 1


async def test_cancel_gives_cancelled_then_a_typed_error_on_poll(adapter: OpenAIResponsesClient) -> None:
    options = {"max_tokens": 2000, "background": True}
    started = await adapter.get_response("Count from 1 to 1000, one number a line.", options=options)
    assert started.continuation_token is not None
    assert await cancel_run(with_structured_output(adapter), started.continuation_token) == "cancelled"
    with pytest.raises(ProviderResponseError, match="cancelled") as caught:
        await wait_for_response(adapter, started.continuation_token, first_delay=0.1)
    assert caught.value.code == "cancelled"


async def test_following_a_run_that_is_cancelled_ends_with_the_typed_error(adapter: OpenAIResponsesClient) -> None:
    options = {"max_tokens": 2000, "background": True}
    stream = adapter.get_response("Count from 1 to 1000, one number a line.", options=options, stream=True)
    with pytest.raises(ProviderResponseError, match="cancelled") as caught:
        async for update in stream:
            if update.text and update.continuation_token is not None:
                await adapter.cancel(update.continuation_token)
    assert caught.value.code == "cancelled"
