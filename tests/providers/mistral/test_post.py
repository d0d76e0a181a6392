"""The Mistral adapter sends its requests through the SDK's own request path without its pydantic
models (`_post.send`). The HTTP request is the one `chat.complete_async` / `chat.stream_async`
send: method, URL, headers (auth included), body, timeout; the answer reads the same, an HTTP error
is the same typed SDK error, the SDK's hooks still see every request, and a wrapped or replaced
method (an instrumentation) is called instead.

Each request is captured by an `httpx2.MockTransport` (the only way to see the bytes both ways
send); the answers are bodies in the documented wire format (docs.mistral.ai API reference,
`chat_completion_v1_chat_completions_post`: a `ChatCompletionResponse`, or `data:` chunks ending
`data: [DONE]`, and the error bodies `mistral_server.py` names).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import httpx2
import pytest
import wrapt
from mistral_server import MODEL, chat_answer, chunk, error_body
from mistralai.client import Mistral, errors
from mistralai.client.chat import Chat

from so_middleware import (
    ChatMessage,
    ChatOptions,
    DataContent,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderResponseError,
    ProviderStatusError,
    ResponseFormat,
    TextContent,
)
from so_middleware.mistral import MistralChatClient
from so_middleware.providers.mistral._post import can_send, send

pytestmark = pytest.mark.anyio

STREAM = "".join(f"data: {json.dumps(c)}\n\n" for c in (chunk("Hel"), chunk("lo", finish="stop", usage=True)))
STREAM += "data: [DONE]\n\n"


def answering(captured: list[httpx2.Request], status: int = 200, body: Any = None) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        captured.append(request)
        if status != 200:
            return httpx2.Response(status, json=body)
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=STREAM.encode())
        return httpx2.Response(200, json=chat_answer("Hello"))

    return httpx2.MockTransport(handler)


def sdk_pair(status: int = 200, body: Any = None, **kwargs: Any) -> tuple[Mistral, Mistral, list[httpx2.Request]]:
    """Two SDK clients alike (one for the SDK's methods, one for `send`) sharing one capture list."""
    captured: list[httpx2.Request] = []
    made = [
        Mistral(
            api_key="sk-user",
            server_url="http://server.test",
            async_client=httpx2.AsyncClient(transport=answering(captured, status, body)),
            **kwargs,
        )
        for _ in range(2)
    ]
    return made[0], made[1], captured


async def final(adapter: MistralChatClient, stream: bool, **options: Any) -> Any:
    """The final response of a plain call or of a stream read to its end."""
    if stream:
        return await adapter.get_response("x", stream=True, options=options).get_final_response()
    return await adapter.get_response("x", options=options)


def shown(request: httpx2.Request) -> tuple[Any, ...]:
    """The request as the server reads it (the body's keys come in another order than the SDK's
    model writes them; a JSON object's order means nothing), with its timeout."""
    headers = sorted(request.headers.items())
    return request.method, str(request.url), headers, json.loads(request.content), request.extensions["timeout"]


def requests_for() -> list[dict[str, Any]]:
    """`chat.complete_async` keyword arguments as the adapter builds them, from plain to every option."""
    fmt = ResponseFormat.json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}, name="Thing")
    tool = FunctionTool("look_up", {"type": "object", "properties": {"q": {"type": "string"}}}, "Look a name up.")
    full = ChatOptions(
        instructions="Be brief.", temperature=0.2, top_p=0.9, max_tokens=50, seed=7, stop=["\n\n"],
        tools=[tool], tool_choice="required", response_format=fmt,
    )  # fmt: skip
    conversation = [
        ChatMessage("user", [TextContent("What is this?"), DataContent(b"\x89PNG", "image/png")]),
        ChatMessage("user", [DataContent("https://example.com/a.pdf", "application/pdf")]),
        ChatMessage("assistant", [FunctionCallContent("D681PevKs", "look_up", '{"q": "x"}'),
                                  FunctionCallContent("a1b2c3d4e", "look_up", '{"q": "y"}')]),
        ChatMessage("tool", [FunctionResultContent("D681PevKs", "one"), FunctionResultContent("a1b2c3d4e", "two")]),
        ChatMessage("assistant", "Both found."),
        ChatMessage("user", "Thanks."),
    ]  # fmt: skip
    adapter = MistralChatClient(Mistral(api_key="k"), MODEL)
    return [
        adapter.request_for([ChatMessage("user", "Hi")], ChatOptions()),
        adapter.request_for(conversation, full),
        {**adapter.request_for([ChatMessage("user", "Hi")], ChatOptions(tool_choice=ForcedTool("look_up"),
                                                                         tools=[tool])), "timeout_ms": 1234},
    ]  # fmt: skip


@pytest.mark.parametrize("request_kwargs", requests_for())
@pytest.mark.parametrize("stream", [False, True])
async def test_the_request_sent_is_the_one_the_sdks_method_sends(request_kwargs: dict[str, Any], stream: bool) -> None:
    theirs, ours, captured = sdk_pair()
    if stream:
        their_chunks = [event.data async for event in await theirs.chat.stream_async(**request_kwargs)]
        our_chunks = [event async for event in await send(ours.chat, request_kwargs, stream=True)]
        assert [c.model_dump(mode="json", exclude_unset=True) for c in their_chunks] == [
            c.to_dict() for c in our_chunks
        ]
    else:
        their_answer = await theirs.chat.complete_async(**request_kwargs)
        our_answer = await send(ours.chat, request_kwargs, stream=False)
        assert their_answer.model_dump(mode="json", exclude_unset=True) == our_answer.to_dict()
    assert len(captured) == 2
    assert shown(captured[0]) == shown(captured[1])


@pytest.mark.parametrize("timeout_ms", [4321, 0])
async def test_a_client_timeout_is_the_clients_own(timeout_ms: int) -> None:
    theirs, ours, captured = sdk_pair(timeout_ms=timeout_ms)
    request = requests_for()[0]
    await theirs.chat.complete_async(**request)
    await send(ours.chat, request, stream=False)
    assert shown(captured[0]) == shown(captured[1])
    assert captured[1].extensions["timeout"]["read"] == timeout_ms / 1000


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("status", "body", "sdk_error"),
    [
        (429, error_body("Requests rate limit exceeded", "rate_limited", "1300"), errors.SDKError),
        (422, {"detail": [{"loc": ["body", "messages"], "msg": "Field required", "type": "missing"}]},
         errors.HTTPValidationError),
        (503, error_body("busy", "internal_error"), errors.SDKError),
    ],
)  # fmt: skip
async def test_an_error_status_is_the_sdks_own_error(
    stream: bool, status: int, body: dict[str, Any], sdk_error: type[Exception]
) -> None:
    theirs, ours, _ = sdk_pair(status, body)
    request = requests_for()[0]
    method = theirs.chat.stream_async if stream else theirs.chat.complete_async
    with pytest.raises(sdk_error) as their_error:
        await method(**request)
    with pytest.raises(sdk_error) as our_error:
        await send(ours.chat, request, stream=stream)
    assert type(our_error.value) is type(their_error.value)
    assert str(our_error.value) == str(their_error.value)
    assert our_error.value.raw_response.status_code == status  # type: ignore[attr-defined]


@pytest.mark.parametrize("stream", [False, True])
async def test_an_answer_that_is_not_json_is_a_response_error(stream: bool) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        kind = "text/event-stream" if stream else "application/json"
        return httpx2.Response(200, headers={"content-type": kind}, content=b"data: [oops\n\n" if stream else b"{oops")

    sdk = Mistral(api_key="k", server_url="http://server.test", async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))  # fmt: skip
    adapter = MistralChatClient(sdk, MODEL)
    with pytest.raises(ProviderResponseError, match="could not be read") as info:
        if stream:
            async for _ in adapter.get_response("x", stream=True):
                pass
        else:
            await adapter.get_response("x")
    assert "oops" in info.value.raw_text  # the body is kept


@pytest.mark.parametrize("stream", [False, True])
async def test_the_sdks_hooks_see_each_request(stream: bool) -> None:
    """The SDK's hooks (its tracing among them) run on the request the adapter sends."""
    _, sdk, captured = sdk_pair()
    seen: list[str] = []

    class Hook:
        def before_request(self, context: Any, request: httpx2.Request) -> httpx2.Request:
            seen.append(context.operation_id)
            return request

    sdk.sdk_configuration.__dict__["_hooks"].register_before_request_hook(Hook())
    response = await final(MistralChatClient(sdk, MODEL), stream)
    assert response.text == "Hello"
    assert seen == ["stream_chat" if stream else "chat_completion_v1_chat_completions_post"] and len(captured) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_wrapped_sdk_method_is_still_called(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """An instrumentation that wraps the SDK's method (as OpenTelemetry's does, with wrapt, on the
    class) or replaces it on the client sees every call."""
    name = "stream_async" if stream else "complete_async"
    calls: list[str] = []

    def recording(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        calls.append("class")
        return wrapped(*args, **kwargs)

    monkeypatch.setattr(Chat, name, wrapt.FunctionWrapper(getattr(Chat, name), recording))
    _, sdk, captured = sdk_pair()
    assert (await final(MistralChatClient(sdk, MODEL), stream)).text == "Hello"
    monkeypatch.undo()

    _, sdk, captured = sdk_pair()
    own = getattr(sdk.chat, name)

    @functools.wraps(own)
    async def replaced(**kwargs: Any) -> Any:
        calls.append("instance")
        return await own(**kwargs)

    monkeypatch.setattr(sdk.chat, name, replaced)
    assert (await final(MistralChatClient(sdk, MODEL), stream)).text == "Hello"
    assert calls == ["class", "instance"] and len(captured) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_fields_of_the_callers_own_go_through_the_sdks_method(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`extra_body` fields are the SDK's to check and complete: its own method sends them."""
    _, sdk, captured = sdk_pair()
    name = "stream_async" if stream else "complete_async"
    own = getattr(sdk.chat, name)
    calls: list[dict[str, Any]] = []

    async def recording(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return await own(**kwargs)

    # An instance attribute that is the SDK's own bound method: the check alone would send directly.
    monkeypatch.setattr(sdk.chat, name, recording)
    monkeypatch.setattr("so_middleware.providers.mistral._client.can_send", lambda chat, method: True)
    response = await final(MistralChatClient(sdk, MODEL), stream, extra_body={"safe_prompt": True})
    assert response.text == "Hello"
    assert len(calls) == 1 and calls[0]["safe_prompt"] is True
    assert json.loads(captured[0].content)["safe_prompt"] is True


async def test_an_error_status_through_the_adapter_is_a_status_error() -> None:
    _, sdk, _ = sdk_pair(429, error_body("Requests rate limit exceeded", "rate_limited", "1300"))
    with pytest.raises(ProviderStatusError, match="rate limit exceeded") as info:
        await MistralChatClient(sdk, MODEL).get_response("x")
    assert isinstance(info.value, errors.SDKError)


def test_without_the_sdks_request_builder_the_sdks_method_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """An SDK release that moved the builder or the helpers `send` uses: the adapter calls the SDK's methods."""

    class Moved(Chat):
        _build_request_async = None  # type: ignore[assignment]

    sdk = Mistral(api_key="k")
    assert can_send(sdk.chat, "complete_async") and can_send(sdk.chat, "stream_async")
    moved = Moved(sdk.sdk_configuration, parent_ref=sdk)
    assert not can_send(moved, "complete_async") and not can_send(moved, "stream_async")
    monkeypatch.setattr("so_middleware.providers.mistral._post._SENDS", False)  # as when their import failed
    assert not can_send(sdk.chat, "complete_async")


@pytest.mark.parametrize("stream", [False, True])
async def test_the_raw_answer_reads_by_attribute_as_the_sdks_objects(stream: bool) -> None:
    _, sdk, _ = sdk_pair()
    client = MistralChatClient(sdk, MODEL)
    if stream:
        updates = [update async for update in client.get_response("x", stream=True)]
        raw = [update.raw_representation for update in updates if update.text]
        assert [event.choices[0].delta.content for event in raw] == ["Hel", "lo"]
    else:
        response = await client.get_response("x")
        assert response.raw_representation.choices[0].message.content == "Hello"
        assert response.messages[-1].raw_representation.content == "Hello"
        assert response.raw_representation.usage.total_tokens == 18
