"""The adapters' typed errors through the retry and structured-output layers: what is retried, what is
kept as an attempt (the mock wire of tests/providers/test_adapter_errors.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from adapter_wire import (
    ADAPTERS,
    BLOCK,
    CREATED,
    MESSAGE,
    RESPONSE,
    START,
    STREAM,
    SYNC_OR_ASYNC,
    Handler,
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
from pydantic import BaseModel

from so_middleware import (
    ContentFilterError,
    FinishReason,
    IncompleteOutputError,
    ModelBehaviorError,
    ProviderResponseError,
    RefusalError,
    StreamInterruptedError,
    UsageDetails,
    with_retries,
    with_structured_output,
)

pytestmark = pytest.mark.anyio


class Person(BaseModel):
    name: str


def script(*handlers: Handler) -> tuple[Handler, list[httpx2.Request]]:
    """A handler answering each request with the next one (the last repeats); the requests seen."""
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return handlers[min(len(seen), len(handlers)) - 1](request)

    return handle, seen


def text_event(text: str, sequence: int = 1) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
            "delta": text, "logprobs": [], "sequence_number": sequence}  # fmt: skip


COMPLETED = {"type": "response.completed", "sequence_number": 9, "response": RESPONSE}


ANTHROPIC_END = [
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
    },
    {"type": "message_stop"},
]


def good_stream(adapter: str, text: str = "ok") -> bytes:
    if adapter == "chat":
        return sse(chunk({"role": "assistant", "content": text}), chunk({}, "stop"), "[DONE]")
    if adapter == "responses":
        return sse(CREATED, text_event(text), COMPLETED)
    return sse(START, BLOCK, anthropic_text(text), *ANTHROPIC_END)


def failing_before_content(adapter: str, kind: str) -> bytes:
    """A stream that starts (message_start / response.created / a role chunk) and then reports `kind`."""
    if adapter == "messages":
        return sse(START, anthropic_error(kind))
    if adapter == "responses":
        return sse(CREATED, {"type": "error", "code": kind, "message": "failed", "param": None, "sequence_number": 1})
    return sse(chunk({"role": "assistant", "content": ""}), {"error": {"type": kind, "message": "failed"}})


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


# ------------------------------------------------------------ every typed end keeps its usage

USED = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
USED_R = {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14}
CUT = '{"name": "A'


def chat_end(finish: str, refusal: bool = False) -> tuple[dict[str, Any], bytes]:
    said: dict[str, Any] = {"refusal": "No."} if refusal else {"content": CUT}
    plain = {"index": 0, "message": {"role": "assistant", "content": None, **said}, "finish_reason": finish}
    usage_chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [],
                   "usage": USED}  # fmt: skip
    stream = sse(chunk({"role": "assistant", **said}), chunk({}, finish), usage_chunk, "[DONE]")
    return {**completion(plain), "usage": USED}, stream


def responses_end(status: str, reason: str | None = None, refusal: bool = False) -> tuple[dict[str, Any], bytes]:
    part = {"type": "refusal", "refusal": "No."} if refusal else {"type": "output_text", "text": CUT, "annotations": []}
    output = [{**RESPONSE["output"][0], "content": [part]}]  # type: ignore[index]
    answer: dict[str, Any] = {**RESPONSE, "status": status, "output": output, "usage": USED_R}
    if reason:
        answer["incomplete_details"] = {"reason": reason}
    if status == "failed":
        answer["error"] = {"code": "server_error", "message": "x"}
    kind = "refusal" if refusal else "output_text"
    piece = {"type": f"response.{kind}.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
             "delta": "No." if refusal else CUT, "sequence_number": 1}  # fmt: skip
    event = {"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed"}
    return answer, sse(CREATED, piece, {"type": event[status], "sequence_number": 2, "response": answer})


def messages_end(stop: str) -> tuple[dict[str, Any], bytes]:
    answer = {**MESSAGE, "content": [{"type": "text", "text": CUT}], "stop_reason": stop,
              "usage": {"input_tokens": 5, "output_tokens": 9}}  # fmt: skip
    stream = sse(START, BLOCK, anthropic_text(CUT), {"type": "content_block_stop", "index": 0},
                 {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": 9}}, {"type": "message_stop"})  # fmt: skip
    return answer, stream


TYPED_ENDS = {
    "chat-length": ("chat", chat_end("length"), IncompleteOutputError),
    "chat-content-filter": ("chat", chat_end("content_filter"), ContentFilterError),
    "chat-refusal": ("chat", chat_end("stop", refusal=True), RefusalError),
    "responses-incomplete": ("responses", responses_end("incomplete", "max_output_tokens"), IncompleteOutputError),
    "responses-content-filter": ("responses", responses_end("incomplete", "content_filter"), ContentFilterError),
    "responses-refusal": ("responses", responses_end("completed", refusal=True), RefusalError),
    "responses-failed": ("responses", responses_end("failed"), ProviderResponseError),
    "messages-max-tokens": ("messages", messages_end("max_tokens"), IncompleteOutputError),
    "messages-refusal": ("messages", messages_end("refusal"), RefusalError),
}


@STREAM
@pytest.mark.parametrize("end", list(TYPED_ENDS))
async def test_every_typed_end_keeps_its_usage_through_structured_output(end: str, streaming: bool) -> None:
    """Each typed end of each protocol, plain and streamed (documented bodies and SSE events through
    `httpx2.MockTransport`), raises its typed error with the answer's usage on it and its attempt."""
    adapter, (plain, stream), expected = TYPED_ENDS[end]
    handler = stream_of(stream) if streaming else (lambda request: httpx2.Response(200, json=plain))
    client = with_structured_output(make(adapter, handler))
    with pytest.raises(expected) as caught:
        await call(client, streaming, output_type=Person)
    error: Any = caught.value
    assert error.usage == UsageDetails(5, 9, 14)
    assert [attempt.usage for attempt in error.attempts] == [UsageDetails(5, 9, 14)]
