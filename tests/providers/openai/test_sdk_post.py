"""The OpenAI adapters send `create`'s request through the SDK client's `post` (`SDKPost`), which
skips the SDK's request transform. The HTTP request is the one `create` sends: method, URL, query,
headers (auth included, with an admin key configured too), body, timeout; the result is the
same SDK object, and an HTTP error the same typed SDK error.

Each request is captured by an `httpx2.MockTransport`; the answers are minimal bodies in the
documented Chat Completions / Responses wire format.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import Response
from test_openai_responses import RESPONSE  # a Response in the documented wire format

from so_middleware import ChatMessage, ChatOptions, FunctionTool, ResponseFormat
from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient, OpenAIResponsesClient
from so_middleware.providers._post import SDKPost

pytestmark = pytest.mark.anyio

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"a": 1}'}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
}
CHUNK = 'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}\n\ndata: [DONE]\n\n'
# Headers that differ between any two requests, whoever sends them.
VARYING = {"x-stainless-retry-count"}


def answering(captured: list[httpx2.Request], status: int = 200) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        captured.append(request)
        if status != 200:
            return httpx2.Response(status, json={"error": {"message": "nope", "type": "invalid_request_error"}})
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=CHUNK.encode())
        return httpx2.Response(200, json=RESPONSE if request.url.path.endswith("/responses") else COMPLETION)

    return httpx2.MockTransport(handler)


def sdk_pair(is_async: bool, status: int = 200, **kwargs: Any) -> tuple[Any, Any, list[httpx2.Request]]:
    """Two SDK clients alike (one for `create`, one for `SDKPost`) sharing one capture list."""
    captured: list[httpx2.Request] = []
    made = []
    for _ in range(2):
        transport = answering(captured, status)
        http = httpx2.AsyncClient(transport=transport) if is_async else httpx2.Client(transport=transport)
        kind = openai.AsyncOpenAI if is_async else openai.OpenAI
        made.append(
            kind(api_key="sk-user", base_url="http://server.test/v1", http_client=http, max_retries=0, **kwargs)
        )
    return made[0], made[1], captured


def shown(request: httpx2.Request) -> tuple[Any, ...]:
    """The request as the server reads it (the body's keys come in the adapter's order, not the
    order of `create`'s own field list; a JSON object's order means nothing)."""
    headers = sorted((k, v) for k, v in request.headers.items() if k not in VARYING)
    return request.method, str(request.url), headers, json.loads(request.content)


def requests_for(route: str) -> list[dict[str, Any]]:
    """`create` keyword arguments as the adapter builds them, from plain to every option."""
    fmt = ResponseFormat.json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}, name="Thing")
    tool = FunctionTool("look_up", {"type": "object", "properties": {"q": {"type": "string"}}}, "Look a name up.")
    plain = ChatOptions(model="m")
    full = ChatOptions(
        model="m",
        instructions="Be brief.",
        temperature=0.5,
        max_tokens=20,
        seed=7,
        stop=["END"] if route == "chat" else None,
        tools=[tool],
        response_format=fmt,
        extra_body={"cache_prompt": True, "nested": {"x": [1, 2]}},
    )
    messages = [ChatMessage("user", "Hello, é ✓")]
    adapter_kind = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    adapter = adapter_kind(openai.OpenAI(api_key="x", base_url="http://server.test/v1"), capabilities=LLAMA_SERVER)
    built = [adapter.request_for(messages, options) for options in (plain, full)]
    extras = {"extra_headers": {"X-Trace": "t1"}, "extra_query": {"api-version": "2"}, "timeout": httpx2.Timeout(3.0)}
    return [*built, {**built[1], **extras}, {**built[0], "timeout": None}]


ROUTES = {"chat": ("/chat/completions", ChatCompletion), "responses": ("/responses", Response)}


def create_of(sdk: Any, route: str) -> Any:
    return sdk.chat.completions.create if route == "chat" else sdk.responses.create


@pytest.mark.parametrize("route", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
async def test_the_request_sent_is_the_one_create_sends_async(route: str, stream: bool) -> None:
    path, cast_to = ROUTES[route]
    for request in requests_for(route):
        by_create, by_post, captured = sdk_pair(True, admin_api_key="sk-admin")
        kwargs = {**request, "stream": True} if stream else request
        theirs = await create_of(by_create, route)(**kwargs)
        ours = await SDKPost(by_post, path, cast_to, is_async=True)(**kwargs)
        assert shown(captured[1]) == shown(captured[0])
        assert captured[1].headers["authorization"] == "Bearer sk-user"
        assert captured[1].extensions["timeout"] == captured[0].extensions["timeout"]
        if stream:
            assert type(ours).__name__ == "AsyncStream"
            assert await ours.response.aread() == CHUNK.encode()  # the SDK read no event of it
            await ours.response.aclose()
            await theirs.response.aclose()
        else:
            assert type(ours) is cast_to
            assert ours.model_dump() == theirs.model_dump()


@pytest.mark.parametrize("route", ["chat", "responses"])
def test_the_request_sent_is_the_one_create_sends_sync(route: str) -> None:
    path, cast_to = ROUTES[route]
    for request in requests_for(route):
        by_create, by_post, captured = sdk_pair(False)
        theirs = create_of(by_create, route)(**request)
        ours = SDKPost(by_post, path, cast_to, is_async=False)(**request)
        assert shown(captured[1]) == shown(captured[0])
        assert type(ours) is cast_to and ours.model_dump() == theirs.model_dump()


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500])
async def test_an_http_error_is_the_sdk_error_create_raises(status: str) -> None:
    by_create, by_post, _ = sdk_pair(True, status=int(status))
    request = requests_for("chat")[0]
    with pytest.raises(openai.APIStatusError) as theirs:
        await by_create.chat.completions.create(**request)
    with pytest.raises(openai.APIStatusError) as ours:
        await SDKPost(by_post, "/chat/completions", ChatCompletion, is_async=True)(**request)
    assert type(ours.value) is type(theirs.value)
    assert ours.value.status_code == status and ours.value.body == theirs.value.body


@pytest.mark.parametrize("route", ["chat", "responses"])
async def test_the_adapters_send_their_requests_through_post_as_create_would(route: str) -> None:
    """End to end through the adapter: the request sent equals `create`'s for the same kwargs."""
    by_create, by_post, captured = sdk_pair(True)
    adapter_kind = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    adapter = adapter_kind(by_post, "m", capabilities=LLAMA_SERVER)
    options = ChatOptions(temperature=0, extra_body={"cache_prompt": True})
    response = await adapter.get_response("Hi", options=options)
    assert response.text == '{"a": 1}'
    assert isinstance(response.raw_representation, ROUTES[route][1])
    request = adapter.request_for([ChatMessage("user", "Hi")], options)
    await create_of(by_create, route)(**request)
    assert shown(captured[0]) == shown(captured[1])


@pytest.mark.parametrize("route", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
async def test_the_adapters_skip_the_sdk_request_transform(
    route: str, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transform walks every nested dict of the request against the parameter types; the
    adapters' requests are wire-ready, so they never pay for it."""
    import openai.resources.chat.completions.completions as chat_module
    import openai.resources.responses.responses as responses_module

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the SDK's request transform ran")

    for module in (chat_module, responses_module):
        monkeypatch.setattr(module, "async_maybe_transform", refuse)
    _, by_post, captured = sdk_pair(True)
    adapter_kind = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    adapter = adapter_kind(by_post, "m", capabilities=LLAMA_SERVER)
    if stream:
        updates = adapter.get_response("Hi", stream=True)
        with pytest.raises(Exception, match="ended without"):  # the minimal body has no finish
            async for _ in updates:
                pass
    else:
        assert (await adapter.get_response("Hi")).text == '{"a": 1}'
    assert json.loads(captured[0].content)["model"] == "m"
    with pytest.raises(AssertionError, match="transform ran"):
        await create_of(by_post, route)(model="m", **({"messages": []} if route == "chat" else {"input": "Hi"}))


async def test_a_streamed_response_keeps_the_events_read_by_attribute() -> None:
    """docs/concepts/strategies.md ("The response"): after a stream, `.raw_representation` is the events as read, each read by
    attribute like the SDK's objects."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        event = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
        return f"data: {json.dumps(event)}\n\n"

    body = chunk({"role": "assistant", "content": "Hel"}) + chunk({"content": "lo"}) + chunk({}, "stop")
    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=(body + "data: [DONE]\n\n").encode()
        )
    )
    sdk = openai.AsyncOpenAI(
        api_key="k", base_url="http://server.test/v1", http_client=httpx2.AsyncClient(transport=transport)
    )
    stream = OpenAIChatClient(sdk, "m", capabilities=LLAMA_SERVER).get_response("Hi", stream=True)
    async for _ in stream:
        pass
    response = await stream.get_final_response()
    events = response.raw_representation
    assert response.text == "Hello"
    assert [e.choices[0].delta.content for e in events] == ["Hel", "lo", None]
    assert events[-1].choices[0].finish_reason == "stop"


@pytest.mark.parametrize("route", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_create_wrapped_by_instrumentation_still_sees_every_call(
    route: str, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenTelemetry's and Langfuse's OpenAI instrumentation wrap `create` (with wrapt, on the
    class): the adapters then call `create` itself, so the wrapper sees the call."""
    import wrapt
    from openai.resources.chat.completions import AsyncCompletions
    from openai.resources.responses import AsyncResponses

    seen: list[dict[str, Any]] = []

    def instrument(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        seen.append(kwargs)
        return wrapped(*args, **kwargs)

    resource_class = AsyncCompletions if route == "chat" else AsyncResponses
    monkeypatch.setattr(resource_class, "create", wrapt.FunctionWrapper(resource_class.create, instrument))
    _, by_post, captured = sdk_pair(True)
    adapter_kind = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    adapter = adapter_kind(by_post, "m", capabilities=LLAMA_SERVER)
    if stream:
        with pytest.raises(Exception, match="ended without"):  # the minimal body has no finish
            async for _ in adapter.get_response("Hi", stream=True):
                pass
    else:
        assert (await adapter.get_response("Hi")).text == '{"a": 1}'
    assert len(seen) == 1 and seen[0]["model"] == "m" and bool(seen[0].get("stream")) is stream
    assert len(captured) == 1


async def test_a_create_replaced_on_the_client_is_called() -> None:
    """A test double or a per-client patch of `create` is called, not bypassed."""
    _, by_post, _ = sdk_pair(True)
    original = by_post.chat.completions.create
    calls: list[dict[str, Any]] = []

    async def spy(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return await original(**kwargs)

    by_post.chat.completions.create = spy
    response = await OpenAIChatClient(by_post, "m", capabilities=LLAMA_SERVER).get_response("Hi")
    assert response.text == '{"a": 1}' and calls[0]["messages"] == [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize("route", ["chat", "responses"])
async def test_an_adapter_reuses_its_post_while_the_calls_sdk_client_is_the_same(route: str) -> None:
    """One `SDKPost` per SDK client in use: a call with its own `sdk_max_retries` (a copy of the
    SDK client) gets one of its copy, and every request still goes out."""
    _, by_post, captured = sdk_pair(True)
    adapter_kind = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    adapter = adapter_kind(by_post, "m", capabilities=LLAMA_SERVER)
    first = adapter.create_for(ChatOptions())
    assert isinstance(first, SDKPost) and first.sdk_client is by_post
    assert adapter.create_for(ChatOptions()) is first
    other = adapter.create_for(ChatOptions(sdk_max_retries=5))
    assert isinstance(other, SDKPost) and other is not first and other.sdk_client.max_retries == 5
    for options in (ChatOptions(), ChatOptions(sdk_max_retries=5), ChatOptions()):
        assert (await adapter.get_response("Hi", options=options)).text == '{"a": 1}'
    assert len(captured) == 3
