"""Unusable answers become typed errors at the adapter boundary, and only choice 0 is the answer.

Every body here is one a server (or a proxy in front of it) can send but the local model cannot be
made to: an HTML page with status 200, bytes that are not UTF-8, JSON nested 100,000 deep, chat
completions without choices or with several, error events inside streams. So they go through
`httpx2.MockTransport` under the real SDKs, with bodies in the providers' documented wire format
(reference/provider-apis.md), over sync and async SDK clients alike.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from adapter_wire import (
    ADAPTERS,
    BLOCK,
    CREATED,
    RESPONSE,
    START,
    STREAM,
    SYNC_OR_ASYNC,
    anthropic_error,
    anthropic_text,
    body,
    call,
    chunk,
    completion,
    make,
    sse,
    stream_of,
)

from so_middleware import (
    FinishReason,
    ProviderResponseError,
    StreamInterruptedError,
    UsageDetails,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ------------------------------------------------------------ wire bodies (documented shapes)


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


async def test_an_error_event_without_retries_carries_the_partial_text_and_the_code() -> None:
    client = make("messages", stream_of(sse(START, BLOCK, anthropic_text("Hel"), anthropic_error("overloaded_error"))))
    with pytest.raises(ProviderResponseError) as caught:
        await call(client, True)
    assert caught.value.partial_text == "Hel" and caught.value.code == "overloaded_error" and caught.value.transient
    assert "your prompt was" not in str(caught.value)


@STREAM
async def test_a_failed_response_keeps_its_usage_as_its_attempt_plain_and_streaming(streaming: bool) -> None:
    """The streamed `response.failed` carries the response and its usage: kept as the plain call keeps them."""
    failed = {**RESPONSE, "status": "failed", "error": {"code": "server_error", "message": "x"},
              "usage": {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14}}  # fmt: skip
    text = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
            "delta": "Hel", "sequence_number": 1}  # fmt: skip
    handler = stream_of(sse(CREATED, text, {"type": "response.failed", "sequence_number": 2, "response": failed}))
    client = make("responses", handler if streaming else (lambda request: httpx2.Response(200, json=failed)))
    with pytest.raises(ProviderResponseError) as caught:
        await call(client, streaming)
    error = caught.value
    assert error.usage == UsageDetails(5, 9, 14) and [a.usage for a in error.attempts] == [UsageDetails(5, 9, 14)]
    assert error.attempts[0].text == ("Hel" if streaming else error.raw_text) and error.attempts[0].error is error


ERROR_AFTER_USAGE = {
    "chat": sse(chunk({"role": "assistant", "content": "Hel"}),
                {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [],
                 "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}},
                {"error": {"message": "boom", "type": "server_error", "code": "server_error"}}),
    "messages": sse(START, BLOCK, anthropic_text("Hel"), anthropic_error("overloaded_error")),
}  # fmt: skip


@pytest.mark.parametrize(
    ("adapter", "usage"), [("chat", UsageDetails(5, 9, 14)), ("messages", UsageDetails(5, None, 5))]
)
async def test_an_error_event_keeps_the_text_and_the_usage_received_before_it(
    adapter: str, usage: UsageDetails
) -> None:
    """An error inside a stream, after updates that reported usage: the text and that usage are its attempt."""
    with pytest.raises(ProviderResponseError) as caught:
        await call(make(adapter, stream_of(ERROR_AFTER_USAGE[adapter])), True)
    error = caught.value
    assert [(a.text, a.usage) for a in error.attempts] == [("Hel", usage)] and error.usage == usage


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


# ------------------------------------------------------------ lone surrogates in an answer


async def test_an_error_event_before_anything_came_keeps_no_empty_attempt() -> None:
    first = sse({"error": {"message": "boom", "type": "server_error", "code": "server_error"}})
    with pytest.raises(ProviderResponseError) as caught:
        await call(make("chat", stream_of(first)), True)
    assert caught.value.attempts == [] and caught.value.usage is None
