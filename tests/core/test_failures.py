"""`TransportError` and `failure_of`: the one reading of a failed call (status, retry-after, transient, provider code).

A rate limit, an overload, a refused request and a dropped connection cannot be had from a real
server on demand, so `httpx2.MockTransport` answers the real SDK clients with the documented error
bodies and headers: OpenAI's `{"error": {"message", "type", "param", "code"}}` with `retry-after-ms`
and `x-should-retry` (platform.openai.com/docs/guides/error-codes, the SDK's retry headers),
Anthropic's `{"type": "error", "error": {"type", "message"}}` with `retry-after`
(docs.anthropic.com/en/api/errors, /en/api/rate-limits). The adapters raise our `TransportError`
kinds, each also of the SDK's own exception type, `from` the SDK's error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from so_middleware import (
    DeadlineExceededError,
    ModelBehaviorError,
    ProviderConnectionError,
    ProviderResponseError,
    ProviderStatusError,
    ProviderTimeoutError,
    StreamInterruptedError,
    TransportError,
    TransportFailure,
    failure_of,
)
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.core import is_transient, retry_after_seconds
from so_middleware.gateway._errors import to_error_response
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient
from so_middleware.providers import transport_error
from so_middleware.testing import StatusError

pytestmark = pytest.mark.anyio
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])

Answer = Callable[[httpx2.Request], httpx2.Response]

OPENAI_RATE_LIMIT = {"error": {"message": "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3",
                               "type": "requests", "param": None, "code": "rate_limit_exceeded"}}  # fmt: skip
OPENAI_BAD_REQUEST = {"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error",
                                "param": "temperature", "code": None}}  # fmt: skip
OPENAI_SERVER_ERROR = {"error": {"message": "The server had an error while processing your request.",
                                 "type": "server_error", "param": None, "code": None}}  # fmt: skip
ANTHROPIC_OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
ANTHROPIC_RATE_LIMIT = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens"
                        " has exceeded your per-minute rate limit"}}  # fmt: skip
ANTHROPIC_INVALID = {
    "type": "error",
    "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _http(answer: Answer) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.MockTransport(answer))


def openai_chat(answer: Answer) -> OpenAIChatClient:
    sdk = openai.AsyncOpenAI(
        api_key="x", base_url="https://api.openai.com/v1", http_client=_http(answer), max_retries=0
    )
    return OpenAIChatClient(sdk, "gpt-4o-mini")


def openai_responses(answer: Answer) -> OpenAIResponsesClient:
    sdk = openai.AsyncOpenAI(
        api_key="x", base_url="https://api.openai.com/v1", http_client=_http(answer), max_retries=0
    )
    return OpenAIResponsesClient(sdk, "gpt-4o-mini")


def anthropic_messages(answer: Answer) -> AnthropicChatClient:
    sdk = anthropic.AsyncAnthropic(
        api_key="x", base_url="https://api.anthropic.com", http_client=_http(answer), max_retries=0
    )
    return AnthropicChatClient(sdk, "claude-haiku-4-5")


def replying(status: int, body: Any, headers: dict[str, str] | None = None) -> Answer:
    return lambda request: httpx2.Response(status, json=body, headers=headers)


def raising(error: type[Exception]) -> Answer:
    def answer(request: httpx2.Request) -> httpx2.Response:
        raise error("scripted transport failure", request=request)  # type: ignore[call-arg]

    return answer


async def failed_call(client: Any, stream: bool) -> BaseException:
    try:
        if stream:
            await client.get_response("hi", stream=True).get_final_response()
        else:
            await client.get_response("hi")
    except Exception as error:
        return error
    raise AssertionError("the call did not fail")


CASES = [
    pytest.param(
        openai_chat,
        replying(429, OPENAI_RATE_LIMIT, {"retry-after-ms": "1500", "x-ratelimit-remaining-requests": "0"}),
        openai.RateLimitError,
        ProviderStatusError,
        TransportFailure("status", transient=True, status=429, retry_after=1.5, code="rate_limit_exceeded"),
        id="openai-429-retry-after-ms",
    ),
    pytest.param(
        openai_responses,
        replying(400, OPENAI_BAD_REQUEST),
        openai.BadRequestError,
        ProviderStatusError,
        TransportFailure("status", transient=False, status=400, code="invalid_request_error"),
        id="openai-responses-400",
    ),
    pytest.param(
        openai_chat,
        replying(503, OPENAI_SERVER_ERROR, {"x-should-retry": "false"}),
        openai.InternalServerError,
        ProviderStatusError,
        TransportFailure("status", transient=False, status=503, code="server_error"),
        id="openai-503-should-not-retry",
    ),
    pytest.param(
        openai_chat,
        raising(httpx2.ReadTimeout),
        openai.APITimeoutError,
        ProviderTimeoutError,
        TransportFailure("timeout", transient=True),
        id="openai-timeout",
    ),
    pytest.param(
        openai_chat,
        raising(httpx2.ConnectError),
        openai.APIConnectionError,
        ProviderConnectionError,
        TransportFailure("connection", transient=True),
        id="openai-unreachable",
    ),
    pytest.param(
        anthropic_messages,
        replying(529, ANTHROPIC_OVERLOADED, {"request-id": "req_1"}),
        anthropic.APIStatusError,
        ProviderStatusError,
        TransportFailure("status", transient=True, status=529, code="overloaded_error"),
        id="anthropic-529",
    ),
    pytest.param(
        anthropic_messages,
        replying(429, ANTHROPIC_RATE_LIMIT, {"retry-after": "7", "anthropic-ratelimit-requests-remaining": "0"}),
        anthropic.RateLimitError,
        ProviderStatusError,
        TransportFailure("status", transient=True, status=429, retry_after=7.0, code="rate_limit_error"),
        id="anthropic-429-retry-after",
    ),
    pytest.param(
        anthropic_messages,
        replying(400, ANTHROPIC_INVALID),
        anthropic.BadRequestError,
        ProviderStatusError,
        TransportFailure("status", transient=False, status=400, code="invalid_request_error"),
        id="anthropic-400",
    ),
    pytest.param(
        anthropic_messages,
        raising(httpx2.ReadTimeout),
        anthropic.APITimeoutError,
        ProviderTimeoutError,
        TransportFailure("timeout", transient=True),
        id="anthropic-timeout",
    ),
    pytest.param(
        anthropic_messages,
        raising(httpx2.ConnectError),
        anthropic.APIConnectionError,
        ProviderConnectionError,
        TransportFailure("connection", transient=True),
        id="anthropic-unreachable",
    ),
]


@STREAM
@pytest.mark.parametrize(("make_client", "answer", "sdk_type", "our_type", "expected"), CASES)
async def test_an_adapter_raises_our_transport_error_also_of_the_sdks_type(
    stream: bool,
    make_client: Any,
    answer: Answer,
    sdk_type: type[Exception],
    our_type: type[TransportError],
    expected: TransportFailure,
) -> None:
    error = await failed_call(make_client(answer), stream)

    assert isinstance(error, our_type) and isinstance(error, sdk_type)  # `except openai.APIError` still catches it
    cause = error.__cause__  # the SDK's own error, as it raised it
    assert isinstance(cause, sdk_type) and not isinstance(cause, TransportError)
    assert type(error).__name__ == type(cause).__name__  # what logs and telemetry name
    assert failure_of(error) == expected == error.failure
    assert (error.status_code, error.retry_after, error.transient) == (
        expected.status,
        expected.retry_after,
        expected.transient,
    )
    assert error.url is not None and error.url.startswith("https://api.")
    assert is_transient(error) is expected.transient


@STREAM
async def test_the_record_keeps_the_error_body_the_server_sent(stream: bool) -> None:
    error = await failed_call(openai_chat(replying(400, OPENAI_BAD_REQUEST)), stream)

    assert failure_of(error).body == OPENAI_BAD_REQUEST["error"]  # the SDK's body: the error object


def _request() -> httpx2.Request:
    return httpx2.Request("POST", "https://api.example.com/v1/chat/completions")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ConnectionResetError("reset"), TransportFailure("connection", transient=True)),
        (TimeoutError(), TransportFailure("timeout", transient=True)),
        (StatusError(429, {"retry-after": "2"}), TransportFailure("status", transient=True, status=429, retry_after=2)),
        (StreamInterruptedError("cut"), TransportFailure("interrupted", transient=True)),
        (
            ProviderResponseError("event", code="server_error", reported=True),
            TransportFailure("reported", transient=True, code="server_error"),
        ),
        (ProviderResponseError("not JSON"), TransportFailure("reported", transient=False)),
        (DeadlineExceededError("late", deadline=1.0), TransportFailure("other", transient=False)),
        (ModelBehaviorError("bad"), TransportFailure("other", transient=False)),
        (ValueError("bug"), TransportFailure("other", transient=False)),
        (asyncio.CancelledError(), TransportFailure("other", transient=False)),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else "",
)
def test_an_error_from_outside_the_adapters_is_read_by_its_type(
    error: BaseException, expected: TransportFailure
) -> None:
    assert failure_of(error) == expected


def test_a_failure_is_read_once_where_the_error_is_made() -> None:
    error = StatusError(503)
    recorded = failure_of(error)
    error.status_code = 400  # changed afterwards: the record is what was read when it was made

    assert failure_of(error) is recorded and recorded.status == 503 and recorded.transient


@pytest.mark.parametrize(
    "error",
    [
        openai.APITimeoutError(request=_request()),
        anthropic.APIConnectionError(request=_request()),
        httpx2.ConnectError("refused", request=_request()),
        httpx2.HTTPStatusError("bad gateway", request=_request(), response=httpx2.Response(502)),
    ],
    ids=["openai-timeout", "anthropic-unreachable", "httpx-unreachable", "httpx-502"],
)
def test_an_sdk_error_that_never_crossed_the_boundary_is_not_guessed_at(error: Exception) -> None:
    assert failure_of(error) == TransportFailure("other", transient=False)


@pytest.mark.parametrize(
    ("error", "our_type", "expected"),
    [
        (httpx2.ReadTimeout("slow", request=_request()), ProviderTimeoutError, TransportFailure("timeout", True)),
        (
            httpx2.ConnectError("refused", request=_request()),
            ProviderConnectionError,
            TransportFailure("connection", True),
        ),
        (
            httpx2.RemoteProtocolError("peer closed", request=_request()),
            ProviderConnectionError,
            TransportFailure("connection", True),
        ),
        (
            httpx2.HTTPStatusError(
                "bad gateway", request=_request(), response=httpx2.Response(502, headers={"retry-after": "3"})
            ),
            ProviderStatusError,
            TransportFailure("status", transient=True, status=502, retry_after=3.0),
        ),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else "",
)
def test_the_boundary_reads_httpxs_own_errors_by_their_types(
    error: Exception, our_type: type[TransportError], expected: TransportFailure
) -> None:
    ours = transport_error(error)

    assert isinstance(ours, our_type) and isinstance(ours, type(error))
    assert ours.failure == expected and ours.url == "https://api.example.com/v1/chat/completions"


@pytest.mark.parametrize(
    "error", [httpx2.UnsupportedProtocol("ftp", request=_request()), ValueError("bug"), ConnectionResetError("reset")]
)
def test_the_boundary_leaves_other_errors_as_they_are(error: Exception) -> None:
    assert transport_error(error) is None


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (transport_error(anthropic.APITimeoutError(request=_request())), 504, "backend_timeout"),
        (transport_error(anthropic.APIConnectionError(request=_request())), 502, "backend_unreachable"),
        (transport_error(httpx2.ConnectError("refused", request=_request())), 502, "backend_unreachable"),
        (ProviderTimeoutError("slow"), 504, "backend_timeout"),
        (ProviderConnectionError("refused"), 502, "backend_unreachable"),
        (ProviderStatusError("an error event in a 200 stream", status_code=200), 502, "backend_error"),
        (ProviderStatusError("teapot", status_code=418), 418, "backend_error"),
        (TimeoutError("a client of your own"), 504, "backend_timeout"),
        (ConnectionRefusedError("a client of your own"), 502, "backend_unreachable"),
    ],
    ids=[
        "anthropic-timeout",
        "anthropic-unreachable",
        "httpx-unreachable",
        "timeout",
        "unreachable",
        "status-200",
        "status-418",
        "python-timeout",
        "python-refused",
    ],
)
def test_the_gateway_answers_any_backends_transport_failure_by_its_kind(
    error: Exception, status: int, code: str
) -> None:
    reply = to_error_response(error)

    assert reply.status_code == status
    assert code in bytes(reply.body).decode()


def _status_error(sdk: Any, status: int, body: Any) -> Exception:
    """The SDK's own error for an answer with this status, as its client makes it."""
    client = sdk(api_key="x", base_url="https://api.example.com/v1")
    response = httpx2.Response(status, json=body, request=_request())
    return client._make_status_error("scripted", body=body, response=response)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("make_error", "line"),
    [
        (lambda: anthropic.APITimeoutError(request=_request()), "cannot reach the hosted openai API (APITimeoutError"),
        (
            lambda: _status_error(anthropic.Anthropic, 401, ANTHROPIC_INVALID),
            "the hosted openai API refused the key (scripted): check OPENAI_API_KEY",
        ),
        (
            lambda: _status_error(openai.OpenAI, 500, OPENAI_SERVER_ERROR),
            "the hosted openai API answered InternalServerError (scripted)",
        ),
    ],
    ids=["timeout", "401", "500"],
)
def test_the_cli_names_a_transport_failure_by_its_kind(make_error: Callable[[], Exception], line: str) -> None:
    from argparse import Namespace

    from so_middleware.cli import _one_line

    error = transport_error(make_error())  # as the adapter raises it
    assert error is not None
    assert _one_line(error, Namespace(provider="openai", base_url=None)).startswith(line)


NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "5, 7"}, 7.0),  # a header sent twice, joined by httpx: the largest wait
        ({"retry-after": "7,5"}, 7.0),
        ({"retry-after": "soon, 3"}, 3.0),  # the valid values count, the others are ignored
        ({"retry-after": "-1, nan, 4"}, 4.0),
        ({"retry-after": "soon, never"}, None),
        ({"retry-after": " , "}, None),
        ({"retry-after": "Tue, 14 Nov 2023 22:14:02 GMT"}, 42.0),  # a date's own comma
        ({"retry-after": "Tue, 14 Nov 2023 22:14:02 GMT, Tue, 14 Nov 2023 22:14:10 GMT"}, 50.0),
        ({"retry-after": "60, Tue, 14 Nov 2023 22:14:02 GMT"}, 60.0),
        ({"retry-after-ms": "250, 900"}, 0.9),
        ({"retry-after-ms": "never, soon", "retry-after": "2, 3"}, 3.0),  # none valid: the other header
        ({"retry-after": ["5", "7"]}, 7.0),  # a mapping of lists, as a client of your own may give
    ],
)
def test_retry_after_reads_every_value_of_a_repeated_header(headers: dict[str, Any], expected: float | None) -> None:
    assert retry_after_seconds(headers, now=NOW) == expected


@pytest.mark.parametrize("name", ["retry-after", "retry-after-ms"])
async def test_a_429_with_its_retry_after_header_twice_asks_for_the_longer_wait(name: str) -> None:
    headers = httpx2.Headers([(name, "5"), (name, "7")])
    client = openai_chat(lambda request: httpx2.Response(429, json=OPENAI_RATE_LIMIT, headers=headers))
    failure = failure_of(await failed_call(client, False))
    assert failure.retry_after == (7.0 if name == "retry-after" else 0.007)
