"""Unusable answers become typed errors at the adapter boundary, and only choice 0 is the answer.

Every body here is one a server (or a proxy in front of it) can send but the local model cannot be
made to: an HTML page with status 200, bytes that are not UTF-8, JSON nested 100,000 deep, chat
completions without choices or with several, error events inside streams. So they go through
`httpx2.MockTransport` under the real SDKs, with bodies in the providers' documented wire format
(reference/provider-apis.md), over sync and async SDK clients alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from pydantic import BaseModel

from so_middleware import (
    FinishReason,
    ModelBehaviorError,
    ProviderResponseError,
    StreamInterruptedError,
    UsageDetails,
    with_retries,
    with_structured_output,
)
from so_middleware.anthropic import ANTHROPIC_API, AnthropicChatClient
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

pytestmark = pytest.mark.anyio

Handler = Callable[[httpx2.Request], httpx2.Response]
ADAPTERS = pytest.mark.parametrize("adapter", ["chat", "responses", "messages"])
SYNC_OR_ASYNC = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
STREAM = pytest.mark.parametrize("streaming", [False, True], ids=["plain", "stream"])


class Person(BaseModel):
    name: str


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make(adapter: str, handler: Handler, *, is_async: bool = True) -> Any:
    """An adapter over a real SDK client whose HTTP goes to `handler` (SDK retries off)."""
    transport = httpx2.MockTransport(handler)
    http: Any = httpx2.AsyncClient(transport=transport) if is_async else httpx2.Client(transport=transport)
    if adapter == "messages":
        cls: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        sdk = cls(api_key="x", base_url="http://mock", http_client=http, max_retries=0)
        return AnthropicChatClient(sdk, "claude-haiku-4-5", capabilities=ANTHROPIC_API)
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    sdk = cls(api_key="x", base_url="http://mock/v1", http_client=http, max_retries=0)
    return (OpenAIChatClient if adapter == "chat" else OpenAIResponsesClient)(sdk, "gpt-4o")


async def call(client: Any, streaming: bool, **kwargs: Any) -> Any:
    if streaming:
        return await client.get_response("hi", stream=True, **kwargs).get_final_response()
    return await client.get_response("hi", **kwargs)


def body(content: bytes, content_type: str) -> Handler:
    return lambda request: httpx2.Response(200, content=content, headers={"content-type": content_type})


def sse(*events: Any) -> bytes:
    """SSE frames: a dict with a `type` gets an `event:` line (Responses, Anthropic), else data only."""
    frames = []
    for event in events:
        if isinstance(event, bytes):
            frames.append(event)
        elif isinstance(event, dict) and "type" in event:
            frames.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        else:
            frames.append(f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode())
    return b"".join(frames)


def script(*handlers: Handler) -> tuple[Handler, list[httpx2.Request]]:
    """A handler answering each request with the next one (the last repeats); the requests seen."""
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return handlers[min(len(seen), len(handlers)) - 1](request)

    return handle, seen


# ------------------------------------------------------------ wire bodies (documented shapes)


def completion(*choices: dict[str, Any] | None, content: str = "ok") -> dict[str, Any]:
    listed = list(choices) if choices else [{"index": 0, "message": {"role": "assistant", "content": content}}]
    for choice in listed:
        if choice is not None:
            choice.setdefault("finish_reason", "stop")
    return {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
            "choices": None if choices == (None,) else listed,
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}  # fmt: skip


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}  # fmt: skip


RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-4o", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}}  # fmt: skip
CREATED = {
    "type": "response.created",
    "sequence_number": 0,
    "response": {**RESPONSE, "status": "in_progress", "output": []},
}


def text_event(text: str, sequence: int = 1) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
            "delta": text, "logprobs": [], "sequence_number": sequence}  # fmt: skip


COMPLETED = {"type": "response.completed", "sequence_number": 9, "response": RESPONSE}

MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
           "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 5, "output_tokens": 2}}  # fmt: skip
START = {"type": "message_start",
         "message": {**MESSAGE, "content": [], "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}  # fmt: skip
BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}


def anthropic_text(text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}


ANTHROPIC_END = [
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
    },
    {"type": "message_stop"},
]


def anthropic_error(kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": "Overloaded; your prompt was: hi"}}


def good_stream(adapter: str, text: str = "ok") -> bytes:
    if adapter == "chat":
        return sse(chunk({"role": "assistant", "content": text}), chunk({}, "stop"), "[DONE]")
    if adapter == "responses":
        return sse(CREATED, text_event(text), COMPLETED)
    return sse(START, BLOCK, anthropic_text(text), *ANTHROPIC_END)


def stream_of(content: bytes) -> Handler:
    return body(content, "text/event-stream")


# ------------------------------------------------------------ crashes become typed errors


@ADAPTERS
@SYNC_OR_ASYNC
@STREAM
async def test_an_html_page_with_status_200_is_a_provider_response_error(
    adapter: str, is_async: bool, streaming: bool
) -> None:
    """Before: `AttributeError` ('str' object has no attribute 'choices') in all three adapters."""
    page = b"<html><body><h1>Welcome to the captive portal</h1></body></html>"
    client = make(adapter, body(page, "text/html; charset=utf-8"), is_async=is_async)
    with pytest.raises(ProviderResponseError, match="could not be read") as caught:
        await call(client, streaming)
    assert not caught.value.transient and caught.value.code is None
    assert "captive" not in str(caught.value)  # the body is not quoted


@ADAPTERS
@SYNC_OR_ASYNC
@STREAM
@pytest.mark.parametrize(
    "payload",
    [b'{"id": "\xff\xfe not utf-8"}', b"[" * 100_000 + b"]" * 100_000, b"[]", b'{"choices": "no", "output": 5}'],
    ids=["invalid-utf8", "100k-deep", "a-list", "wrong-shape"],
)
async def test_unreadable_json_is_a_provider_response_error(
    adapter: str, is_async: bool, streaming: bool, payload: bytes
) -> None:
    """Before: raw `UnicodeDecodeError` / `RecursionError` / `AttributeError` from a plain call.
    A stream event that is not JSON is the same error; one of an unknown shape is skipped, and
    the stream then ends without its terminal event."""
    if streaming:  # the same bytes as the data of one event
        name = {
            "chat": b"",
            "responses": b"event: response.output_text.delta\n",
            "messages": b"event: content_block_delta\n",
        }
        handler = stream_of(name[adapter] + b"data: " + payload + b"\n\n")
    else:
        handler = body(payload, "application/json")
    client = make(adapter, handler, is_async=is_async)
    well_formed = payload.startswith((b"[]", b'{"choices"'))
    if streaming and well_formed:  # JSON of another shape is an event of an unknown type: skipped
        with pytest.raises(StreamInterruptedError, match="ended without"):
            await call(client, streaming)
        return
    with pytest.raises(ProviderResponseError) as caught:
        await call(client, streaming)
    assert not caught.value.transient


# ------------------------------------------------------------ choices


@SYNC_OR_ASYNC
async def test_a_plain_completion_answers_with_choice_index_0_wherever_it_is_listed(is_async: bool) -> None:
    listed = completion(
        {"index": 1, "message": {"role": "assistant", "content": "second"}},
        {"index": 0, "message": {"role": "assistant", "content": "first"}},
    )
    client = make("chat", lambda request: httpx2.Response(200, json=listed), is_async=is_async)
    assert (await client.get_response("hi")).text == "first"


@SYNC_OR_ASYNC
async def test_a_stream_with_interleaved_choices_carries_choice_0_only(is_async: bool) -> None:
    interleaved = sse(
        chunk({"role": "assistant", "content": "A"}, index=0),
        chunk({"role": "assistant", "content": "X"}, index=1),
        chunk({"content": "B"}, index=0),
        chunk({"content": "Y"}, index=1),
        chunk({}, "length", index=1),  # choice 1 ends first: not the end of the answer
        chunk({"content": "C"}, index=0),
        chunk({}, "stop", index=0),
        "[DONE]",
    )
    client = make("chat", stream_of(interleaved), is_async=is_async)
    stream = client.get_response("hi", stream=True)
    texts = [update.text async for update in stream]
    final = await stream.get_final_response()
    assert "".join(texts) == final.text == "ABC"
    assert final.finish_reason == FinishReason.STOP


@SYNC_OR_ASYNC
@pytest.mark.parametrize("choices", [(), (None,), ({"index": 1, "message": {"role": "assistant", "content": "x"}},)],
                         ids=["empty", "null", "no-index-0"])  # fmt: skip
async def test_no_choice_0_is_a_provider_response_error_not_a_user_error(
    is_async: bool, choices: tuple[Any, ...]
) -> None:
    payload = completion(*choices)
    if choices == ():
        payload["choices"] = []
    client = make("chat", lambda request: httpx2.Response(200, json=payload), is_async=is_async)
    with pytest.raises(ProviderResponseError, match="without a choice of index 0") as caught:
        await client.get_response("hi")
    assert not caught.value.transient


# ------------------------------------------------------------ failures reported inside an answer


@STREAM
async def test_a_failed_responses_status_is_the_same_error_plain_and_streaming(streaming: bool) -> None:
    failed = {**RESPONSE, "status": "failed", "error": {"code": "invalid_prompt", "message": "Your prompt 'hi' ..."}}
    handler = stream_of(sse(CREATED, {"type": "response.failed", "sequence_number": 1, "response": failed}))
    client = make("responses", handler if streaming else (lambda request: httpx2.Response(200, json=failed)))
    with pytest.raises(ProviderResponseError) as caught:
        await call(client, streaming)
    assert type(caught.value) is ProviderResponseError
    assert caught.value.code == "invalid_prompt" and not caught.value.transient
    assert "prompt 'hi'" not in str(caught.value)


@STREAM
async def test_a_cancelled_responses_status_is_a_provider_response_error(streaming: bool) -> None:
    cancelled = {**RESPONSE, "status": "cancelled"}
    handler = stream_of(sse(CREATED, {"type": "response.cancelled", "sequence_number": 1, "response": cancelled}))
    client = make("responses", handler if streaming else (lambda request: httpx2.Response(200, json=cancelled)))
    with pytest.raises(ProviderResponseError, match="the response cancelled") as caught:
        await call(client, streaming)
    # a cancel is deliberate (a background run someone stopped): named, and not retried
    assert caught.value.code == "cancelled" and not caught.value.transient


@STREAM
async def test_with_retries_retries_a_transient_failed_status_plain_and_streaming(streaming: bool) -> None:
    failed = {**RESPONSE, "status": "failed", "error": {"code": "server_error", "message": "crashed"}}
    if streaming:
        first = stream_of(sse(CREATED, {"type": "response.failed", "sequence_number": 1, "response": failed}))
        then = stream_of(good_stream("responses"))
    else:
        first, then = (lambda r: httpx2.Response(200, json=failed)), (lambda r: httpx2.Response(200, json=RESPONSE))
    handler, seen = script(first, then)
    response = await call(with_retries(make("responses", handler), base_delay=0), streaming)
    assert response.text == "ok" and len(seen) == 2
    assert [r["error"] for r in response.additional_properties["so_middleware.retries"]] == ["ProviderResponseError"]


def failing_before_content(adapter: str, kind: str) -> bytes:
    """A stream that starts (message_start / response.created / a role chunk) and then reports `kind`."""
    if adapter == "messages":
        return sse(START, anthropic_error(kind))
    if adapter == "responses":
        return sse(CREATED, {"type": "error", "code": kind, "message": "failed", "param": None, "sequence_number": 1})
    return sse(chunk({"role": "assistant", "content": ""}), {"error": {"type": kind, "message": "failed"}})


@ADAPTERS
@SYNC_OR_ASYNC
async def test_a_transient_error_event_before_any_content_delta_is_retried(adapter: str, is_async: bool) -> None:
    """Anthropic's `overloaded_error` after `message_start`, a Responses `error` after
    `response.created`, a Chat Completions error chunk after the role chunk: nothing of the
    failed attempt reaches the caller, and the retry's answer does."""
    kind = "overloaded_error" if adapter == "messages" else "server_error"
    handler, seen = script(stream_of(failing_before_content(adapter, kind)), stream_of(good_stream(adapter, "fine")))
    stream = with_retries(make(adapter, handler, is_async=is_async), base_delay=0).get_response("hi", stream=True)
    updates = [update async for update in stream]
    final = await stream.get_final_response()
    assert final.text == "fine" and len(seen) == 2
    assert "".join(update.text for update in updates) == "fine"
    assert final.additional_properties["so_middleware.retries"][0]["error"] == "ProviderResponseError"


@ADAPTERS
async def test_an_error_event_without_a_type_is_retried_too(adapter: str) -> None:
    if adapter == "messages":
        failing = sse(START, {"type": "error", "error": {"message": "?"}})
    elif adapter == "responses":
        failing = sse(CREATED, {"type": "error", "code": None, "message": "?", "param": None, "sequence_number": 1})
    else:
        failing = sse(chunk({"role": "assistant", "content": ""}), {"error": {"message": "?"}})
    handler, seen = script(stream_of(failing), stream_of(good_stream(adapter)))
    final = (
        await with_retries(make(adapter, handler), base_delay=0).get_response("hi", stream=True).get_final_response()
    )
    assert final.text == "ok" and len(seen) == 2


@ADAPTERS
async def test_a_permanent_error_event_is_not_retried(adapter: str) -> None:
    kind = "invalid_request_error" if adapter != "responses" else "invalid_prompt"
    handler, seen = script(stream_of(failing_before_content(adapter, kind)), stream_of(good_stream(adapter)))
    with pytest.raises(ProviderResponseError) as caught:
        await with_retries(make(adapter, handler), base_delay=0).get_response("hi", stream=True).get_final_response()
    assert caught.value.code == kind and len(seen) == 1


@ADAPTERS
async def test_an_error_event_after_a_content_delta_is_not_retried(adapter: str) -> None:
    if adapter == "messages":
        broken = sse(START, BLOCK, anthropic_text("Hel"), anthropic_error("overloaded_error"))
    elif adapter == "responses":
        error = {"type": "error", "code": "server_error", "message": "x", "param": None, "sequence_number": 2}
        broken = sse(CREATED, text_event("Hel"), error)
    else:
        broken = sse(
            chunk({"role": "assistant", "content": "Hel"}), {"error": {"type": "server_error", "message": "x"}}
        )
    handler, seen = script(stream_of(broken), stream_of(good_stream(adapter)))
    with pytest.raises(StreamInterruptedError) as caught:
        await with_retries(make(adapter, handler), base_delay=0).get_response("hi", stream=True).get_final_response()
    assert caught.value.partial_text == "Hel" and len(seen) == 1
    assert isinstance(caught.value.__cause__, ProviderResponseError)


async def test_an_error_event_without_retries_carries_the_partial_text_and_the_code() -> None:
    client = make("messages", stream_of(sse(START, BLOCK, anthropic_text("Hel"), anthropic_error("overloaded_error"))))
    with pytest.raises(ProviderResponseError) as caught:
        await call(client, True)
    assert caught.value.partial_text == "Hel" and caught.value.code == "overloaded_error" and caught.value.transient
    assert "your prompt was" not in str(caught.value)


async def test_a_stream_that_never_sends_choice_0_ends_without_a_finish_reason() -> None:
    only_choice_1 = sse(chunk({"role": "assistant", "content": "X"}, index=1), chunk({}, "stop", index=1), "[DONE]")
    with pytest.raises(StreamInterruptedError, match="ended without a finish reason") as caught:
        await call(make("chat", stream_of(only_choice_1)), True)
    assert caught.value.partial_text == ""


# ------------------------------------------------------------ an unusable answer is kept


@ADAPTERS
@SYNC_OR_ASYNC
@pytest.mark.parametrize(
    ("payload", "content_type", "kept"),
    [
        (b"<html><h1>Welcome to the captive portal</h1></html>", "text/html", "captive portal"),
        (b'{"id": "c1", "choices": [{"index": 0, "mess', "application/json", '"choices": [{"index": 0, "mess'),
        (b'{"id": "\xff\xfe not utf-8"}', "application/json", "not utf-8"),
        (b'{"choices": "no", "output": 5, "content": 7}', "application/json", '"no"'),
    ],
    ids=["html", "truncated-json", "invalid-utf8", "wrong-shape"],
)
async def test_an_unusable_plain_answer_keeps_its_body_as_an_attempt(
    adapter: str, is_async: bool, payload: bytes, content_type: str, kept: str
) -> None:
    """Before: `.attempts` was empty and the body was kept nowhere."""
    client = make(adapter, body(payload, content_type), is_async=is_async)
    with pytest.raises(ProviderResponseError) as caught:
        await client.get_response("hi")
    error = caught.value
    assert [attempt.text for attempt in error.attempts] == [error.raw_text]
    assert kept in error.raw_text and error.attempts[0].error is error
    assert kept not in str(error)  # kept, not quoted in the message (it may hold anything)


@ADAPTERS
@SYNC_OR_ASYNC
async def test_a_page_answering_a_stream_is_kept_as_an_attempt(adapter: str, is_async: bool) -> None:
    page = b"<html><h1>Welcome to the captive portal</h1></html>"
    client = make(adapter, body(page, "text/html"), is_async=is_async)
    with pytest.raises(ProviderResponseError, match="not an event stream") as caught:
        await call(client, True)
    assert caught.value.raw_text == page.decode() and len(caught.value.attempts) == 1
    with pytest.raises(ProviderResponseError) as structured:
        await call(with_structured_output(client), True, output_type=Person)
    assert [a.text for a in structured.value.attempts] == [page.decode()]


async def test_an_answer_without_choice_0_keeps_its_body_and_usage() -> None:
    payload = completion({"index": 1, "message": {"role": "assistant", "content": "second"}})
    client = make("chat", lambda request: httpx2.Response(200, json=payload))
    with pytest.raises(ProviderResponseError, match="without a choice of index 0") as caught:
        await client.get_response("hi")
    assert "second" in caught.value.raw_text
    assert caught.value.usage == caught.value.attempts[0].usage == UsageDetails(5, 2, 7)


async def test_a_huge_unusable_body_is_kept_up_to_64_kib() -> None:
    page = b"<html>" + b"x" * 200_000 + b"</html>"
    client = make("chat", body(page, "text/html"))
    with pytest.raises(ProviderResponseError) as caught:
        await client.get_response("hi")
    assert caught.value.raw_text == page.decode()[: 64 * 1024]


@pytest.mark.parametrize("status", ["in_progress", "queued"])
async def test_a_plain_request_answered_as_unfinished_is_the_servers_fault(status: str) -> None:
    """Before: a `LONG_RUNNING` response came back for a request that asked for no background run,
    and `.value` raised UserError (blaming the caller)."""
    unfinished = {**RESPONSE, "status": status, "output": [], "usage": None}
    seen: list[httpx2.Request] = []
    client = make("responses", lambda request: seen.append(request) or httpx2.Response(200, json=unfinished))
    with pytest.raises(ProviderResponseError, match=f"started no background run with status '{status}'") as caught:
        await client.get_response("hi")
    assert f'"status":"{status}"' in caught.value.raw_text and len(caught.value.attempts) == 1
    with pytest.raises(ProviderResponseError) as structured:
        await with_structured_output(client).get_response("hi", output_type=int)
    assert [a.strategy for a in structured.value.attempts] == ["native"]
    assert f'"status":"{status}"' in structured.value.attempts[0].text
    background = await client.get_response("hi", options={"background": True})  # asked for: a run to poll
    assert background.finish_reason == FinishReason.LONG_RUNNING and len(seen) == 3


async def test_a_structured_run_keeps_an_unusable_answer_after_its_earlier_attempts() -> None:
    handler, seen = script(
        lambda request: httpx2.Response(200, json=completion(content="not JSON at all")),
        body(b"<html>Bad gateway</html>", "text/html"),
    )
    client = with_structured_output(make("chat", handler), mode="prompted")
    with pytest.raises(ProviderResponseError) as caught:
        await client.get_response("hi", output_type=int)
    error: Any = caught.value
    assert [a.text for a in error.attempts] == ["not JSON at all", "<html>Bad gateway</html>"]
    assert error.attempts[1].error is error and error.attempts[1].strategy == "prompted"
    assert len(seen) == 2


# ------------------------------------------------------------ lone surrogates in an answer


@STREAM
@pytest.mark.parametrize("adapter", ["chat", "messages"])
async def test_a_lone_surrogate_in_an_answer_is_an_invalid_attempt_not_a_crash(adapter: str, streaming: bool) -> None:
    """Before: the re-ask sent the answer back and the SDK raised UnicodeEncodeError writing it.
    Each answer is kept as the model wrote it; a re-ask sends U+FFFD in its place."""
    answer = '{"name": "Ada \ud83d"}'  # json.dumps writes it as the escape \\ud83d: valid JSON
    if adapter == "chat":
        plain = completion(content=answer)
        streamed = sse(chunk({"role": "assistant", "content": answer}), chunk({}, "stop"), "[DONE]")
    else:
        plain = {**MESSAGE, "content": [{"type": "text", "text": answer}]}
        streamed = sse(START, BLOCK, anthropic_text(answer), *ANTHROPIC_END)
    if streaming:
        handler, seen = script(stream_of(streamed))
    else:
        handler, seen = script(body(json.dumps(plain).encode(), "application/json"))
    client = with_structured_output(make(adapter, handler), mode="prompted", max_retries=1)
    with pytest.raises(ModelBehaviorError) as caught:
        await call(client, streaming, output_type=Person)
    assert [a.text for a in caught.value.attempts] == [answer, answer]
    reask = json.loads(seen[1].content)
    assert "Ada \ufffd" in json.dumps(reask, ensure_ascii=False)
    str(caught.value).encode()  # the message is valid text
