"""The Ollama adapter sends through the SDK's httpx client straight to its transport (`DirectPost`)
when that client's `send` would change nothing, and through the SDK's request method otherwise.

The HTTP request is the one the SDK's own `chat` sends for the same arguments (method, URL, every
header, body bytes, timeout), plain and streamed; answers and errors are read as the SDK's request
method reads them; a client with auth, cookies, event hooks, or a wrapped sending method is served
as before. Each request is captured by an `httpx.MockTransport` (the SDK's HTTP client is `httpx`),
answering with bodies in the documented `/api/chat` wire format (docs.ollama.com/api/chat, as the
loopback stand-in `ollama_server.py`): only a mock transport shows the exact bytes sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import ollama
import pytest
from ollama_server import chat_answer, chunk

from so_middleware import (
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ProviderStatusError,
    ReasoningContent,
    ResponseFormat,
    TextContent,
)
from so_middleware.ollama import OllamaChatClient
from so_middleware.providers import _direct_post
from so_middleware.providers.ollama import _client as ollama_client_module
from so_middleware.providers.ollama import _http as ollama_http

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}
LAST = {**chunk(""), "done": True, "done_reason": "stop", "prompt_eval_count": 3, "eval_count": 2}
Handler = Callable[[httpx.Request], httpx.Response]


def ndjson(*parts: dict[str, Any]) -> bytes:
    return "".join(json.dumps(part, ensure_ascii=False) + "\n" for part in parts).encode()


def answering(captured: list[httpx.Request]) -> Handler:
    """The documented answer, whole or as NDJSON chunks (as the request's `stream` asks)."""

    def handler(request: httpx.Request) -> httpx.Response:
        captured.append(request)
        if json.loads(request.content)["stream"]:
            body = ndjson(chunk('{"name": "Ada"'), chunk(', "age": 36}'), LAST)
            return httpx.Response(200, headers={"content-type": "application/x-ndjson"}, content=body)
        return httpx.Response(200, json=chat_answer('{"name": "Ada", "age": 36}'))

    return handler


def sdk(handler: Handler, **kwargs: Any) -> ollama.AsyncClient:
    return ollama.AsyncClient(host="http://ollama.test:11434", transport=httpx.MockTransport(handler), **kwargs)


def sent(request: httpx.Request) -> tuple[Any, ...]:
    return request.method, str(request.url), request.headers.raw, request.content, request.extensions["timeout"]


@pytest.fixture(params=["direct", "sdk"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each case both ways: straight to the transport, and through the SDK's request method."""
    if request.param == "sdk":
        monkeypatch.setattr(ollama_client_module, "direct_post", lambda http, path, last: None)
    return str(request.param)


@pytest.mark.parametrize("stream", [False, True])
async def test_the_request_sent_is_the_one_the_sdks_chat_sends(stream: bool) -> None:
    theirs: list[httpx.Request] = []
    ours: list[httpx.Request] = []
    image = b"\x89PNG\r\n"
    raw = await sdk(answering(theirs)).chat(
        model="llama3.2",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Who?", "images": [image]},
            {"role": "assistant", "content": "Ada.", "thinking": "A name."},
            {"role": "user", "content": "Her age?"},
            {"role": "assistant", "thinking": "Ask.",
             "tool_calls": [{"function": {"name": "get_age", "arguments": {"name": "Ada"}}}]},
            {"role": "tool", "content": "36", "tool_name": "get_age"},
        ],
        format=SCHEMA,
        options={"temperature": 0.1, "num_predict": 40, "seed": 4, "stop": ["\n\n"], "repeat_penalty": 1.3,
                 "num_ctx": 4096},
        keep_alive="10m",
        stream=stream,
    )  # fmt: skip
    if stream:
        [part async for part in raw]  # type: ignore[union-attr]
    client = OllamaChatClient(sdk(answering(ours)), "llama3.2", keep_alive="10m")
    history = [
        ChatMessage("user", [TextContent("Who?"), DataContent(image, "image/png")]),
        ChatMessage("assistant", [ReasoningContent("A name."), TextContent("Ada.")]),
        ChatMessage("user", "Her age?"),
        ChatMessage("assistant", [FunctionCallContent("c1", "get_age", '{"name": "Ada"}'), ReasoningContent("Ask.")]),
        ChatMessage("tool", [FunctionResultContent("c1", "36")]),
    ]
    options = {"instructions": "Be brief.", "temperature": 0.1, "max_tokens": 40, "stop": ["\n\n"], "seed": 4,
               "response_format": ResponseFormat.json_schema(SCHEMA),
               "extra_body": {"options": {"num_ctx": 4096}, "repeat_penalty": 1.3}}  # fmt: skip
    if stream:
        assert "".join([u.text async for u in client.get_response(history, options=options, stream=True)])
    else:
        assert (await client.get_response(history, options=options)).text
    assert [sent(request) for request in ours] == [sent(request) for request in theirs]


@pytest.mark.parametrize("stream", [False, True])
async def test_the_answer_is_read_alike_both_ways(stream: bool, path: str) -> None:
    captured: list[httpx.Request] = []
    client = OllamaChatClient(sdk(answering(captured)), "llama3.2")
    if stream:
        updates = client.get_response("Who?", stream=True)
        texts = [update.text async for update in updates]
        final = await updates.get_final_response()
        assert texts == ['{"name": "Ada"', ', "age": 36}', ""]
    else:
        final = await client.get_response("Who?")
    assert final.text == '{"name": "Ada", "age": 36}' and final.finish_reason == "stop"
    assert final.usage is not None and final.usage.input_tokens in (3, 12)


async def test_lines_split_anywhere_by_the_network_are_read_whole(path: str) -> None:
    """The NDJSON body arrives in pieces cut inside a line and inside a UTF-8 character."""
    body = ndjson(chunk("Grüß "), chunk("dich"), LAST)
    cut = body.index("ü".encode()) + 1
    pieces = [body[:5], body[5:cut], body[cut : cut + 40], body[cut + 40 :]]

    async def arriving() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    client = OllamaChatClient(sdk(lambda request: httpx.Response(200, content=arriving())), "llama3.2")
    assert [update.text async for update in client.get_response("x", stream=True)] == ["Grüß ", "dich", ""]


async def test_bytes_that_are_not_utf8_in_a_line_are_replaced_as_the_sdk_reads_them(path: str) -> None:
    body = ndjson(chunk("a"), LAST).replace(b'"a"', b'"a\xff"')
    client = OllamaChatClient(sdk(lambda request: httpx.Response(200, content=body)), "llama3.2")
    assert [update.text async for update in client.get_response("x", stream=True)] == ["a\ufffd", ""]


@pytest.mark.parametrize("stream", [False, True])
async def test_an_error_status_is_the_sdks_response_error(stream: bool, path: str) -> None:
    client = OllamaChatClient(sdk(lambda request: httpx.Response(404, json={"error": "no such model"})), "m")
    with pytest.raises(ProviderStatusError) as info:
        if stream:
            async for _ in client.get_response("x", stream=True):
                pass
        else:
            await client.get_response("x")
    assert isinstance(info.value, ollama.ResponseError)
    assert (info.value.status_code, info.value.error) == (404, "no such model")


async def test_an_error_inside_a_stream_is_the_sdks_response_error(path: str) -> None:
    body = ndjson(chunk("Hel"), {"error": "the model stopped"})
    client = OllamaChatClient(sdk(lambda request: httpx.Response(200, content=body)), "m")
    with pytest.raises(ProviderStatusError) as info:
        async for _ in client.get_response("x", stream=True):
            pass
    assert isinstance(info.value, ollama.ResponseError) and info.value.error == "the model stopped"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_server_that_cannot_be_reached_fails_as_through_the_sdk(stream: bool, path: str) -> None:
    """A plain call: the SDK's `ConnectionError`; a stream: httpx's `ConnectError` (the SDK maps
    only the plain call's), naming its request either way."""

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    client = OllamaChatClient(sdk(refused), "m")
    with pytest.raises(ConnectionError if not stream else httpx.ConnectError) as info:
        if stream:
            async for _ in client.get_response("x", stream=True):
                pass
        else:
            await client.get_response("x")
    if stream:
        assert str(info.value.request.url) == "http://ollama.test:11434/api/chat"  # type: ignore[attr-defined]


async def test_a_redirect_is_followed_as_the_client_would() -> None:
    captured: list[httpx.Request] = []
    answer = answering(captured)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/chat":
            captured.append(request)
            return httpx.Response(307, headers={"location": "/v2/api/chat"})
        return answer(request)

    client = OllamaChatClient(sdk(handler), "llama3.2")
    assert (await client.get_response("x")).text == '{"name": "Ada", "age": 36}'
    assert [request.url.path for request in captured] == ["/api/chat", "/v2/api/chat"]


async def test_a_cookie_set_by_the_server_is_kept_and_sent_back() -> None:
    captured: list[httpx.Request] = []
    answer = answering(captured)

    def handler(request: httpx.Request) -> httpx.Response:
        response = answer(request)
        response.headers["set-cookie"] = "session=abc; Path=/"
        return response

    client = OllamaChatClient(sdk(handler), "llama3.2")
    await client.get_response("x")
    await client.get_response("x")
    assert "cookie" not in captured[0].headers and captured[1].headers["cookie"] == "session=abc"


async def test_headers_a_timeout_or_query_changed_on_the_client_are_sent_on_the_next_call() -> None:
    captured: list[httpx.Request] = []
    raw = sdk(answering(captured))
    client = OllamaChatClient(raw, "llama3.2")
    await client.get_response("x")
    raw._client.headers["x-trace"] = "1"
    await client.get_response("x")
    raw._client.timeout = httpx.Timeout(7.0)
    await client.get_response("x")
    raw._client.params = httpx.QueryParams({"debug": "1"})
    await client.get_response("x")
    assert "x-trace" not in captured[0].headers and captured[1].headers["x-trace"] == "1"
    assert [request.extensions["timeout"]["read"] for request in captured] == [None, None, 7.0, 7.0]
    assert str(captured[3].url) == "http://ollama.test:11434/api/chat?debug=1"


async def test_auth_hooks_and_wrapped_sending_methods_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client with auth or event hooks, and a wrapped `httpx.AsyncClient.send` or SDK request
    method (as an instrumentation patches them): each still sees or shapes the call."""
    captured: list[httpx.Request] = []
    hooked: list[httpx.Request] = []

    async def hook(request: httpx.Request) -> None:
        hooked.append(request)

    await OllamaChatClient(sdk(answering(captured), auth=("ada", "secret")), "m").get_response("x")
    assert captured[-1].headers["authorization"].startswith("Basic ")
    await OllamaChatClient(sdk(answering(captured), event_hooks={"request": [hook]}), "m").get_response("x")
    assert hooked == [captured[-1]]

    seen: list[str] = []
    for owner, name in ((httpx.AsyncClient, "send"), (ollama.AsyncClient, "_request")):
        original = getattr(owner, name)

        async def wrapper(self: Any, *args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            seen.append(_name)
            return await _original(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)
        await OllamaChatClient(sdk(answering(captured)), "m").get_response("x")
        monkeypatch.undo()
    assert seen == ["send", "_request"]


async def test_the_clients_log_line_is_written(caplog: pytest.LogCaptureFixture, path: str) -> None:
    client = OllamaChatClient(sdk(answering([])), "llama3.2")
    with caplog.at_level(logging.INFO, logger="httpx"):
        await client.get_response("x")
    assert [r.getMessage() for r in caplog.records if r.name == "httpx"] == [
        'HTTP Request: POST http://ollama.test:11434/api/chat "HTTP/1.1 200 OK"'
    ]


def test_a_closed_client_or_credentials_in_its_url_get_no_direct_post() -> None:
    http = httpx.AsyncClient(base_url="http://ada:secret@ollama.test")
    assert _direct_post.direct_post(http, "/api/chat", None) is None
    assert _direct_post.direct_post(httpx.AsyncClient(base_url="http://ollama.test"), "/api/chat", None) is not None


async def test_an_answer_is_closed_when_handling_it_fails() -> None:
    """A failure between the transport's answer and its hand-over (here a log filter that raises)
    closes the answer, so its connection goes back to the pool."""
    closed: list[bool] = []

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b"{}"

        async def aclose(self) -> None:
            closed.append(True)

    def failing(record: logging.LogRecord) -> bool:
        raise RuntimeError("the filter failed")

    client = OllamaChatClient(sdk(lambda request: httpx.Response(200, stream=Body())), "llama3.2")
    logger = logging.getLogger("httpx")
    logger.addFilter(failing)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        with pytest.raises(RuntimeError, match="the filter failed"):
            await client.get_response("x")
    finally:
        logger.removeFilter(failing)
        logger.setLevel(level)
    assert closed == [True]


_SDKS_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode  # httpx's `json=`


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "messages": [{"role": "user", "content": "Ada é \u2028 \U0001f600"}], "options": {"top_p": 0.9}},
        {"model": "m", "format": {"type": ["string", "null"]}, "messages": [{"role": "user", "content": "NaN"}]},
        {"model": "m", "options": {"temperature": 1e-05, "seed": 2**70}, "messages": []},
    ],
    ids=["text", "null and NaN as text", "a small float and a big int"],
)
def test_the_body_is_the_json_the_sdk_sends(body: dict[str, Any]) -> None:
    """The body is the SDK's JSON: the same bytes, but for the spelling of a float under 1e-4 (the same number)."""
    theirs = _SDKS_JSON(body).encode()
    ours = ollama_http.encoded(body)
    assert json.loads(ours) == json.loads(theirs)
    if "temperature" not in json.dumps(body):
        assert ours == theirs


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_a_body_with_a_nan_or_an_infinity_is_refused_as_the_sdk_refuses_it(number: float) -> None:
    body = {"model": "m", "messages": [{"role": "tool", "content": "x"}], "options": {"temperature": number}}
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        _SDKS_JSON(body)
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        ollama_http.encoded(body)
