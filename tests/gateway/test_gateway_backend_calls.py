"""How the gateway calls its backend: Chat Completions sent on the SDK client's HTTP client without
the SDK's request and answer models, raising what the SDK raises. Against the recording fake Chat
Completions backend on loopback (its replies follow the documented wire format)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from fakes import FakeChatBackend, sdk
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from so_middleware import ChatOptions, ProviderResponseError
from so_middleware.gateway import GatewayConfig
from so_middleware.gateway._app import backend_client
from so_middleware.gateway._server import AppServer, free_port

KEY = "sk-backend-secret-1234"
MODEL = ChatOptions(model="m")


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the SDK's own request path was used")


def test_backend_calls_skip_the_sdks_request_and_answer_models(
    fake_gateway: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai.AsyncOpenAI, "post", _refuse)
    monkeypatch.setattr(openai.AsyncOpenAI, "request", _refuse)
    backend, server = fake_gateway(backend_api_key=KEY)
    client = sdk(server)
    assert client.responses.create(model="m", input="hi").output_text == backend.text
    with client.responses.stream(model="m", input="hi") as events:
        assert events.get_final_response().output_text == backend.text
    plain, streamed = backend.bodies[-2:]
    assert plain["model"] == "m" and plain["messages"] == [{"role": "user", "content": "hi"}]
    assert "stream" not in plain and streamed["stream"] is True
    assert streamed["stream_options"] == {"include_usage": True}
    assert backend.authorizations[-2:] == [f"Bearer {KEY}"] * 2


def test_backend_calls_carry_the_sdk_clients_headers_but_its_platform_report(fake_gateway: Callable[..., Any]) -> None:
    backend, server = fake_gateway(backend_api_key=KEY)
    client = sdk(server)
    client.responses.create(model="m", input="hi")
    list(client.responses.create(model="m", input="hi", stream=True))
    for headers in backend.headers[-2:]:
        assert headers["authorization"] == f"Bearer {KEY}"
        assert headers["user-agent"].startswith("AsyncOpenAI/Python")
        assert headers["content-type"] == "application/json"
        assert [name for name in headers if name.startswith("x-stainless")] == []


@contextlib.asynccontextmanager
async def _chain(backend_url: str, **config: Any) -> AsyncIterator[Any]:
    """The gateway's backend chain (its SDK client closed after)."""
    client, chain = backend_client(GatewayConfig(backend_url=backend_url, backend_api_key=KEY, **config))
    try:
        yield chain
    finally:
        await client.close()


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_a_backend_error_is_the_sdks_typed_error_with_the_key_masked(
    fake_backend: tuple[FakeChatBackend, AppServer], stream: bool
) -> None:
    backend, server = fake_backend
    backend.error = (401, {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "auth"}})
    async with _chain(server.base_url, max_attempts=1) as chain:
        with pytest.raises(openai.AuthenticationError) as raised:
            if stream:
                async for _ in chain.get_response("hi", stream=True, options=MODEL):
                    pass
            else:
                await chain.get_response("hi", options=MODEL)
    assert raised.value.status_code == 401
    assert KEY not in str(raised.value) and KEY not in str(raised.value.body)


@pytest.mark.anyio
async def test_an_unreachable_backend_is_a_connection_error_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    async with _chain(url, max_attempts=1) as chain:
        with pytest.raises(openai.APIConnectionError, match=f"cannot reach {url}/chat/completions"):
            await chain.get_response("hi", options=MODEL)


@pytest.mark.anyio
async def test_a_backend_slower_than_the_timeout_is_the_sdks_timeout_error() -> None:
    async def slow(request: Any) -> Any:
        await asyncio.sleep(2)
        return JSONResponse({})

    app = Starlette(routes=[Route("/v1/chat/completions", slow, methods=["POST"])])
    with AppServer(app) as server:
        async with _chain(server.base_url, max_attempts=1, backend_timeout=0.5) as chain:
            with pytest.raises(openai.APITimeoutError):
                await chain.get_response("hi", options=MODEL)


@pytest.mark.anyio
async def test_a_page_answered_to_a_plain_call_is_unreadable_with_its_text(
    fake_backend: tuple[FakeChatBackend, AppServer],
) -> None:
    backend, server = fake_backend
    backend.html = True
    async with _chain(server.base_url, max_attempts=1) as chain:
        with pytest.raises(ProviderResponseError, match="could not be read") as raised:
            await chain.get_response("hi", options=MODEL)
    assert "Welcome to nginx" in (raised.value.raw_text or "")


@pytest.mark.anyio
async def test_a_call_that_asks_the_sdk_to_retry_goes_through_the_sdk(
    fake_backend: tuple[FakeChatBackend, AppServer],
) -> None:
    backend, server = fake_backend
    backend.error = (503, {"error": {"message": "overloaded"}})
    async with _chain(server.base_url, max_attempts=1) as chain:
        with pytest.raises(openai.InternalServerError):
            await chain.get_response("hi", options=ChatOptions(model="m", sdk_max_retries=1))
    assert len(backend.raw_bodies) == 2  # the SDK's own retry


@pytest.mark.anyio
async def test_an_instrumented_create_still_sees_every_backend_call(
    fake_backend: tuple[FakeChatBackend, AppServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openai.resources.chat.completions import AsyncCompletions

    seen: list[bool] = []
    original = AsyncCompletions.create

    @functools.wraps(original)
    async def instrumented(self: Any, **request: Any) -> Any:  # what an OpenAI instrumentation puts in place
        seen.append(bool(request.get("stream")))
        return await original(self, **request)

    monkeypatch.setattr(AsyncCompletions, "create", instrumented)
    backend, server = fake_backend
    async with _chain(server.base_url, max_attempts=1) as chain:
        assert (await chain.get_response("hi", options=MODEL)).text == backend.text
        assert "".join([u.text async for u in chain.get_response("hi", stream=True, options=MODEL)]) == backend.text
    assert seen == [False, True]
