"""A plain Messages call goes through `messages.create`'s raw-response twin and reads the answer's
JSON (`MessageView`) instead of the SDK's `Message` model. The HTTP request is the one `create`
sends (method, URL, headers with a beta header and the caller's extra ones, body bytes), plus the
twin's `X-Stainless-Raw-Response` marker; a `create` that was wrapped or replaced (as
OpenTelemetry's Anthropic instrumentation does, or a test double) is still called.

Each request is captured by an `httpx2.MockTransport`; the answers are minimal bodies in the
documented Messages wire format (docs.anthropic.com/en/api/messages, .../messages-streaming).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest
import wrapt
from anthropic.resources.messages.messages import AsyncMessages, Messages
from anthropic.types import Message

from so_middleware import ChatMessage, ChatOptions, FinishReason, FunctionTool, ProviderResponseError, ResponseFormat
from so_middleware.anthropic import ANTHROPIC_API, AnthropicChatClient
from so_middleware.providers.anthropic._json_create import MessageView

pytestmark = pytest.mark.anyio

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": '{"a": 1}'}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 2},
}
EVENTS = [
    {"type": "message_start", "message": {**MESSAGE, "content": [], "stop_reason": None}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": '{"a": 1}'}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
    },
    {"type": "message_stop"},
]
STREAMED = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in EVENTS).encode()
# Headers that differ between any two requests, whoever sends them, and the raw-response marker.
VARYING = {"x-stainless-retry-count", "x-stainless-raw-response"}
BETA = {"anthropic-beta": "context-1m-2025-08-07"}


def answering(captured: list[httpx2.Request], body: Any = MESSAGE) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        captured.append(request)
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=STREAMED)
        if isinstance(body, tuple):  # (content type, bytes)
            return httpx2.Response(200, headers={"content-type": body[0]}, content=body[1])
        if isinstance(body, bytes):
            return httpx2.Response(200, headers={"content-type": "text/plain"}, content=body)
        return httpx2.Response(200, json=body)

    return httpx2.MockTransport(handler)


def sdk_client(is_async: bool, captured: list[httpx2.Request], body: Any = MESSAGE) -> Any:
    transport = answering(captured, body)
    http: Any = httpx2.AsyncClient(transport=transport) if is_async else httpx2.Client(transport=transport)
    kind = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
    return kind(api_key="sk-ant", base_url="http://server.test", http_client=http, max_retries=0, default_headers=BETA)


def shown(request: httpx2.Request) -> tuple[Any, ...]:
    headers = sorted((k, v) for k, v in request.headers.items() if k not in VARYING)
    return request.method, str(request.url), headers, request.content


MESSAGES = [ChatMessage("system", "Be brief."), ChatMessage("user", "Give JSON.")]
FULL = ChatOptions(
    max_tokens=300,
    temperature=0.2,
    stop=["END"],
    tools=[FunctionTool("look_up", {"type": "object", "properties": {"q": {"type": "string"}}}, "Look a name up.")],
    tool_choice="auto",
    response_format=ResponseFormat.json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}),
    extra_body={"metadata": {"user_id": "u1"}},
)


@pytest.mark.parametrize("options", [ChatOptions(), FULL], ids=["plain", "every-option"])
@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
async def test_the_request_sent_is_the_one_create_sends(is_async: bool, stream: bool, options: ChatOptions) -> None:
    captured: list[httpx2.Request] = []
    adapter = AnthropicChatClient(
        sdk_client(is_async, captured), "claude-haiku-4-5", capabilities=ANTHROPIC_API, idle_timeout=None
    )
    if stream:
        async for _ in adapter.get_response(MESSAGES, options=options, stream=True):
            pass
    else:
        await adapter.get_response(MESSAGES, options=options)
    request = adapter.request_for(MESSAGES, options)
    by_create = sdk_client(is_async, captured).messages.create(**request, **({"stream": True} if stream else {}))
    if is_async:
        by_create = await by_create
    ours, theirs = captured
    assert shown(ours) == shown(theirs)
    assert ("x-stainless-raw-response", "raw") in ours.headers.items()  # the twin's marker, nothing more


@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
async def test_a_plain_answer_is_read_from_its_json(is_async: bool) -> None:
    """The answer reads as the SDK's `Message` would: same text, usage, reason and ids; its
    `raw_representation` is the JSON read by attribute (`.content[0].text`)."""
    answer = {**MESSAGE, "usage": {**MESSAGE["usage"], "cache_read_input_tokens": 4}}
    adapter = AnthropicChatClient(sdk_client(is_async, [], answer), "claude-haiku-4-5", capabilities=ANTHROPIC_API)
    response = await adapter.get_response("Give JSON.")
    view = response.raw_representation
    assert isinstance(view, MessageView)
    assert view.content[0].text == '{"a": 1}' and view.usage.cache_read_input_tokens == 4
    assert json.loads(view.model_dump_json()) == answer
    assert (response.text, response.finish_reason, response.response_id, response.model_id) == (
        '{"a": 1}',
        FinishReason.STOP,
        "msg_1",
        "claude-haiku-4-5",
    )
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (7, 2)


async def test_a_json_body_of_another_content_type_is_read_and_text_is_kept() -> None:
    """As `create` does for its model: a JSON body served as text/plain is read; a body that is
    not JSON is an unreadable answer that keeps the text."""
    read = AnthropicChatClient(sdk_client(True, [], json.dumps(MESSAGE).encode()), "m", capabilities=ANTHROPIC_API)
    assert (await read.get_response("Hi")).text == '{"a": 1}'
    unreadable = AnthropicChatClient(sdk_client(True, [], b"upstream says no"), "m", capabilities=ANTHROPIC_API)
    with pytest.raises(ProviderResponseError, match="got str") as raised:
        await unreadable.get_response("Hi")
    assert raised.value.raw_text == "upstream says no"


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
async def test_a_json_body_in_another_unicode_encoding_is_read(encoding: str) -> None:
    """JSON text may come in UTF-16 or with a byte order mark; `create` reads it (`json.loads` of
    bytes finds the encoding), so does the adapter."""
    body = ("application/json", json.dumps(MESSAGE).encode(encoding))
    assert (await AnthropicChatClient(sdk_client(True, [], body), "m").get_response("Hi")).text == '{"a": 1}'


async def test_a_json_content_type_with_a_body_that_is_not_json_is_unreadable() -> None:
    body = ("application/json", b'{"id": "msg_1", "content": [')
    with pytest.raises(ProviderResponseError, match="not valid JSON text") as raised:
        await AnthropicChatClient(sdk_client(True, [], body), "m", capabilities=ANTHROPIC_API).get_response("Hi")
    assert raised.value.raw_text == '{"id": "msg_1", "content": ['


@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
async def test_a_create_replaced_on_the_client_is_called(is_async: bool) -> None:
    """A test double set on `sdk.messages` (not the SDK's own function) gets the call, and its
    `Message` is what the answer is read from."""
    sdk = sdk_client(is_async, [])
    original, seen = sdk.messages.create, []

    def create(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return original(**kwargs)

    sdk.messages.create = create
    response = await AnthropicChatClient(sdk, "claude-haiku-4-5", capabilities=ANTHROPIC_API).get_response("Hi")
    assert len(seen) == 1 and seen[0]["model"] == "claude-haiku-4-5"
    assert isinstance(response.raw_representation, Message) and response.text == '{"a": 1}'


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
async def test_an_instrumented_create_sees_every_call(is_async: bool, stream: bool) -> None:
    """OpenTelemetry's Anthropic instrumentation wraps `Messages.create` / `AsyncMessages.create`
    on the class with `wrapt.wrap_function_wrapper`; that wrapper sees plain and streamed calls, a
    plain one also on a client whose raw-response twin was made before the instrumentation."""
    resource = AsyncMessages if is_async else Messages
    sdk = sdk_client(is_async, [])
    if not stream:
        sdk.messages.with_raw_response  # noqa: B018 - made now, it holds the `create` of before
    seen: list[dict[str, Any]] = []

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        seen.append(kwargs)
        return wrapped(*args, **kwargs)

    original = resource.__dict__["create"]
    wrapt.wrap_function_wrapper(resource, "create", wrapper)
    try:
        adapter = AnthropicChatClient(sdk, "claude-haiku-4-5", capabilities=ANTHROPIC_API)
        if stream:
            texts = [update.text async for update in adapter.get_response("Hi", stream=True)]
            assert "".join(texts) == '{"a": 1}'
        else:
            assert (await adapter.get_response("Hi")).text == '{"a": 1}'
    finally:
        resource.create = original
    assert len(seen) == 1 and seen[0]["model"] == "claude-haiku-4-5"


async def test_a_strictly_validating_client_reads_the_sdks_message() -> None:
    """A client made with `_strict_response_validation=True` validates each answer as a `Message`,
    which only `create` does: such a client's calls go through `create` as they are."""
    http = httpx2.AsyncClient(transport=answering([]))
    sdk = anthropic.AsyncAnthropic(
        api_key="sk-ant",
        base_url="http://server.test",
        http_client=http,
        max_retries=0,
        _strict_response_validation=True,
    )
    response = await AnthropicChatClient(sdk, "claude-haiku-4-5", capabilities=ANTHROPIC_API).get_response("Hi")
    assert isinstance(response.raw_representation, Message) and response.text == '{"a": 1}'
