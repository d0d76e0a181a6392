"""The one boundary: every transport failure of a real SDK client over a real loopback socket
leaves the adapter as our `TransportError` kind, also of the SDK's own type, `from` the SDK's error.

`FaultServer` (a real HTTP server on loopback) answers with the documented error bodies: OpenAI's
`{"error": {"message", "type", "param", "code"}}` (platform.openai.com/docs/guides/error-codes)
and Anthropic's `{"type": "error", "error": {"type", "message"}}` (docs.anthropic.com/en/api/errors),
a 429 with `retry-after`, a server that never answers (the SDK's timeout), a connection reset;
a closed loopback port refuses the connection.
"""

from __future__ import annotations

import pickle
import socket
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest

from so_middleware import (
    ProviderConnectionError,
    ProviderStatusError,
    ProviderTimeoutError,
    SOMiddlewareError,
    TransportError,
    TransportFailure,
)
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.openai import OpenAIChatClient
from so_middleware.testing._faults import Fault, FaultServer, reset, stall, status

pytestmark = pytest.mark.anyio
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])

ANTHROPIC_RATE_LIMIT = {
    "type": "error",
    "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your rate limit"},
}
SECRET = "hunter2-secret"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def closed_port() -> int:
    """A loopback port nothing listens on: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def openai_client(base_url: str, timeout: float = 30.0) -> OpenAIChatClient:
    sdk = openai.AsyncOpenAI(api_key="x", base_url=base_url, max_retries=0, timeout=timeout)
    return OpenAIChatClient(sdk, "m", discover=False)


def anthropic_client(base_url: str, timeout: float = 30.0) -> AnthropicChatClient:
    sdk = anthropic.AsyncAnthropic(api_key="x", base_url=base_url, max_retries=0, timeout=timeout)
    return AnthropicChatClient(sdk, "claude-haiku-4-5", discover=False)


MakeClient = Callable[..., Any]
PROVIDERS = pytest.mark.parametrize(
    ("make_client", "sdk"), [(openai_client, openai), (anthropic_client, anthropic)], ids=["openai", "anthropic"]
)


async def failed_call(client: Any, stream: bool) -> BaseException:
    """The error one call ends with; the SDK client closed after it (its connections belong to this loop)."""
    try:
        if stream:
            await client.get_response("hi", stream=True).get_final_response()
        else:
            await client.get_response("hi")
    except Exception as error:
        return error
    finally:
        await client.sdk_client.close()
    raise AssertionError("the call did not fail")


def with_password(base_url: str) -> str:
    return base_url.replace("http://", f"http://user:{SECRET}@", 1)


@STREAM
@PROVIDERS
async def test_a_closed_port_is_a_connection_error_naming_the_address_without_its_password(
    stream: bool, make_client: MakeClient, sdk: Any
) -> None:
    port = closed_port()
    error = await failed_call(make_client(with_password(f"http://127.0.0.1:{port}/v1")), stream)

    assert isinstance(error, ProviderConnectionError) and isinstance(error, sdk.APIConnectionError)
    assert not isinstance(error, sdk.APITimeoutError)
    assert isinstance(error.__cause__, sdk.APIConnectionError) and not isinstance(error.__cause__, TransportError)
    assert error.url is not None and error.url.startswith("http://") and f"127.0.0.1:{port}/v1/" in error.url
    assert SECRET not in error.url and SECRET not in str(error)
    assert str(error).startswith("Connection error: cannot reach http://") and f"127.0.0.1:{port}" in str(error)
    assert error.failure == TransportFailure("connection", transient=True)
    assert (error.status_code, error.retry_after, error.transient) == (None, None, True)


@STREAM
@PROVIDERS
async def test_a_server_that_never_answers_is_a_timeout_error(stream: bool, make_client: MakeClient, sdk: Any) -> None:
    with FaultServer(stall(before_headers=True, hold=10.0)) as server:
        error = await failed_call(make_client(server.base_url, timeout=0.3), stream)

    assert isinstance(error, ProviderTimeoutError) and isinstance(error, sdk.APITimeoutError)
    assert isinstance(error.__cause__, sdk.APITimeoutError)
    assert error.failure == TransportFailure("timeout", transient=True)
    assert error.url is not None and error.url.startswith(server.base_url)


@STREAM
@PROVIDERS
async def test_a_connection_reset_is_a_connection_error(stream: bool, make_client: MakeClient, sdk: Any) -> None:
    with FaultServer(reset()) as server:
        error = await failed_call(make_client(server.base_url), stream)

    assert isinstance(error, ProviderConnectionError) and isinstance(error, sdk.APIConnectionError)
    assert error.transient


@STREAM
@pytest.mark.parametrize(
    ("make_client", "fault", "sdk_type", "code"),
    [
        (
            openai_client,
            status(429, headers={"retry-after": "2"}, error_type="requests", message="Rate limit reached"),
            openai.RateLimitError,
            "requests",
        ),
        (anthropic_client, Fault("status", 429, {"retry-after": "2"}, ANTHROPIC_RATE_LIMIT), anthropic.RateLimitError,
         "rate_limit_error"),
    ],
    ids=["openai", "anthropic"],
)  # fmt: skip
async def test_a_429_with_retry_after_is_a_status_error_of_both_types(
    stream: bool, make_client: MakeClient, fault: Fault, sdk_type: type[Exception], code: str
) -> None:
    with FaultServer(fault) as server:
        error = await failed_call(make_client(with_password(server.base_url)), stream)

    assert isinstance(error, ProviderStatusError) and isinstance(error, sdk_type)
    assert type(error).__name__ == "RateLimitError" and type(error).__module__ == sdk_type.__module__
    assert isinstance(error.__cause__, sdk_type) and not isinstance(error.__cause__, TransportError)
    assert (error.status_code, error.retry_after, error.transient) == (429, 2.0, True)
    assert error.failure == TransportFailure("status", transient=True, status=429, retry_after=2.0, code=code)
    assert error.body == error.__cause__.body  # type: ignore[attr-defined]
    assert error.url is not None and SECRET not in error.url and "***" in error.url


@PROVIDERS
async def test_except_the_sdks_api_error_and_except_transport_error_both_catch_it(
    make_client: MakeClient, sdk: Any
) -> None:
    with FaultServer([status(503)] * 2) as server:
        client = make_client(server.base_url)
        with pytest.raises(sdk.APIError) as by_sdk:
            await client.get_response("hi")
        with pytest.raises(TransportError) as by_ours:
            await client.get_response("hi")
        await client.sdk_client.close()

    assert isinstance(by_sdk.value, ProviderStatusError) and isinstance(by_ours.value, sdk.InternalServerError)
    assert isinstance(by_sdk.value, SOMiddlewareError) and by_sdk.value.status_code == 503


async def test_an_error_of_both_types_pickles_as_both() -> None:
    with FaultServer(status(429, headers={"retry-after": "2"})) as server:
        error = await failed_call(openai_client(server.base_url), False)
    assert isinstance(error, TransportError)
    state = {name: value for name, value in vars(error).items() if name not in ("response", "request")}
    error.__dict__.clear()
    error.__dict__.update(state)  # httpx's request and response do not pickle (nor do the SDK's own errors)

    copied = pickle.loads(pickle.dumps(error))

    assert type(copied) is type(error) and isinstance(copied, openai.RateLimitError)
    assert (str(copied), copied.failure, copied.url) == (str(error), error.failure, error.url)


async def test_the_discovery_probe_goes_through_the_boundary() -> None:
    port = closed_port()
    client = OpenAIChatClient(openai.AsyncOpenAI(api_key="x", base_url=f"http://127.0.0.1:{port}/v1"), "m")

    with pytest.raises(ProviderConnectionError) as caught:
        await client._probe("/v1/models")
    await client.sdk_client.close()

    assert isinstance(caught.value, openai.APIConnectionError) and f"127.0.0.1:{port}" in str(caught.value)
