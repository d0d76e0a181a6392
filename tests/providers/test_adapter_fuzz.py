"""Property: whatever a server sends, every adapter call ends in time, in a value or a typed error.

Hypothesis drives the three adapters, plain and streaming, over sync and async SDK clients, with
random HTTP answers through `httpx2.MockTransport`: random statuses, content types and bytes,
random JSON, valid bodies with one field replaced by a random value, and SSE streams mixing valid
events, random JSON, garbage lines and cut connections. Each call must end within `BOUND` seconds
in a `ChatResponse`, a `SOMiddlewareError` or the SDK's own error; afterwards no thread is left
running SDK or HTTP code and no file descriptor (socket) is left open.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import anyio
import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from so_middleware import ChatResponse, SOMiddlewareError
from so_middleware.anthropic import ANTHROPIC_API, AnthropicChatClient
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

BOUND = 10.0
SDK_ERRORS = (openai.OpenAIError, anthropic.AnthropicError)

CHAT = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip
RESPONSE = {"id": "r", "object": "response", "created_at": 1, "model": "m", "status": "completed",
            "output": [{"type": "message", "id": "i", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}  # fmt: skip
MESSAGE = {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "ok"}],
           "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
PLAIN = {"chat": CHAT, "responses": RESPONSE, "messages": MESSAGE}

EVENTS: dict[str, list[tuple[str | None, Any]]] = {
    "chat": [
        (None, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "o"}, "finish_reason": None}]}),
        (None, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        (None, "[DONE]"),
    ],
    "responses": [
        ("response.created", {"type": "response.created", "sequence_number": 0,
                              "response": {**RESPONSE, "status": "in_progress", "output": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "i", "output_index": 0,
                                        "content_index": 0, "delta": "o", "logprobs": [], "sequence_number": 1}),
        ("response.completed", {"type": "response.completed", "sequence_number": 2, "response": RESPONSE}),
    ],
    "messages": [
        ("message_start", {"type": "message_start", "message": {**MESSAGE, "content": [], "stop_reason": None}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "o"}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    ],
}  # fmt: skip

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def replace_one(value: Any, data: st.DataObject) -> Any:
    """`value` (a JSON object) with one field, at any depth, replaced by a random JSON value."""
    if isinstance(value, dict) and value:
        key = data.draw(st.sampled_from(sorted(value)))
        deeper = data.draw(st.booleans())
        return {**value, key: replace_one(value[key], data) if deeper else data.draw(json_values)}
    if isinstance(value, list) and value:
        index = data.draw(st.integers(0, len(value) - 1))
        return [*value[:index], replace_one(value[index], data), *value[index + 1 :]]
    return data.draw(json_values)


def plain_body(adapter: str, data: st.DataObject) -> tuple[int, str, bytes]:
    kind = data.draw(st.sampled_from(["mutated", "json", "bytes", "deep", "valid"]))
    if kind == "mutated":
        content = json.dumps(replace_one(PLAIN[adapter], data)).encode()
    elif kind == "json":
        content = json.dumps(data.draw(json_values)).encode()
    elif kind == "bytes":
        content = data.draw(st.binary(max_size=200))
    elif kind == "deep":
        depth = data.draw(st.integers(1_000, 50_000))
        content = b"[" * depth + b"]" * depth
    else:
        content = json.dumps(PLAIN[adapter]).encode()
    status = data.draw(st.sampled_from([200, 200, 200, 400, 429, 500, 529]))
    content_type = data.draw(st.sampled_from(["application/json", "text/html", "text/event-stream", ""]))
    return status, content_type, content


def frame(name: str | None, payload: Any) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return (f"event: {name}\n" if name else "").encode() + f"data: {text}\n\n".encode()


def stream_frames(adapter: str, data: st.DataObject) -> tuple[list[bytes], bool]:
    """SSE frames (valid events, mutated ones, random JSON, garbage) and whether the connection is cut."""
    frames: list[bytes] = []
    for name, payload in EVENTS[adapter]:
        kind = data.draw(st.sampled_from(["valid", "valid", "valid", "mutated", "json", "garbage", "drop"]))
        if kind == "valid":
            frames.append(frame(name, payload))
        elif kind == "mutated" and isinstance(payload, dict):
            frames.append(frame(name, replace_one(payload, data)))
        elif kind == "json":
            frames.append(frame(name, data.draw(json_values)))
        elif kind == "garbage":
            frames.append(data.draw(st.binary(max_size=60)) + b"\n\n")
    return frames, data.draw(st.booleans())


def adapter_for(adapter: str, handler: Callable[[httpx2.Request], httpx2.Response], is_async: bool) -> Any:
    transport = httpx2.MockTransport(handler)
    http: Any = httpx2.AsyncClient(transport=transport) if is_async else httpx2.Client(transport=transport)
    if adapter == "messages":
        cls: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return AnthropicChatClient(cls(api_key="x", base_url="http://mock", http_client=http, max_retries=0), "m",
                                   capabilities=ANTHROPIC_API)  # fmt: skip
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    sdk = cls(api_key="x", base_url="http://mock/v1", http_client=http, max_retries=0)
    return (OpenAIChatClient if adapter == "chat" else OpenAIResponsesClient)(sdk, "m", discover=False)


def busy_threads() -> list[str]:
    """Threads (other than this one) currently running SDK, HTTP or adapter code."""
    busy = []
    for ident, frame_ in sys._current_frames().items():
        if ident == threading.get_ident():
            continue
        current: Any = frame_
        while current is not None:
            name = current.f_code.co_filename
            if any(part in name for part in ("/openai/", "/anthropic/", "/httpx2/", "/httpcore2/", "so_middleware/")):
                busy.append(f"{name}:{current.f_code.co_name}")
                break
            current = current.f_back
    return busy


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def run_once(client: Any, streaming: bool) -> Any:
    with anyio.fail_after(BOUND):
        if streaming:
            stream = client.get_response("hi", stream=True)
            async with stream:
                return await stream.get_final_response()
        return await client.get_response("hi")


def check(adapter: str, is_async: bool, streaming: bool, handler: Any) -> None:
    client = adapter_for(adapter, handler, is_async)
    started = time.monotonic()
    try:
        outcome = anyio.run(run_once, client, streaming)
    except TimeoutError:
        pytest.fail(f"the call did not end within {BOUND} s")
    except (SOMiddlewareError, *SDK_ERRORS):
        pass
    else:
        assert isinstance(outcome, ChatResponse)
    assert time.monotonic() - started < BOUND
    client.sdk_client.close() if not is_async else anyio.run(client.sdk_client.close)


CASES = pytest.mark.parametrize(
    ("adapter", "is_async"),
    [(adapter, is_async) for adapter in ("chat", "responses", "messages") for is_async in (False, True)],
    ids=[
        f"{adapter}-{'async' if a else 'sync'}" for adapter in ("chat", "responses", "messages") for a in (False, True)
    ],
)
FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.fixture
def no_leaks() -> Any:
    before = open_fds()
    yield
    end = time.monotonic() + 5
    while (busy_threads() or open_fds() > before) and time.monotonic() < end:
        time.sleep(0.05)
    assert busy_threads() == []
    assert open_fds() <= before


@CASES
@FUZZ
@given(data=st.data())
def test_any_plain_answer_ends_in_a_value_or_a_typed_error(adapter: str, is_async: bool, data: st.DataObject) -> None:
    status, content_type, content = plain_body(adapter, data)
    headers = {"content-type": content_type} if content_type else {}
    check(adapter, is_async, False, lambda request: httpx2.Response(status, content=content, headers=headers))


@CASES
@FUZZ
@given(data=st.data())
def test_any_event_stream_ends_in_a_value_or_a_typed_error(adapter: str, is_async: bool, data: st.DataObject) -> None:
    frames, cut = stream_frames(adapter, data)

    async def async_body() -> AsyncIterator[bytes]:
        for piece in frames:
            yield piece
        if cut:
            raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    def sync_body() -> Any:
        yield from frames
        if cut:
            raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    def handler(request: httpx2.Request) -> httpx2.Response:
        content = async_body() if is_async else sync_body()
        return httpx2.Response(200, content=content, headers={"content-type": "text/event-stream"})

    check(adapter, is_async, True, handler)


@CASES
def test_no_thread_or_socket_is_left_behind(adapter: str, is_async: bool, no_leaks: Any) -> None:
    """A fixed sample of the fuzzed answers, run under the leak check."""
    answers = [
        httpx2.Response(200, content=b"<html>", headers={"content-type": "text/html"}),
        httpx2.Response(200, content=b"[" * 50_000 + b"]" * 50_000, headers={"content-type": "application/json"}),
        httpx2.Response(200, content=b"\xff\xfe", headers={"content-type": "application/json"}),
        httpx2.Response(200, content=json.dumps(PLAIN[adapter]).encode(), headers={"content-type": "application/json"}),
    ]
    for answer in answers:
        check(adapter, is_async, False, lambda request, answer=answer: answer)
    frames = [frame(name, payload) for name, payload in EVENTS[adapter]]
    for streamed in (frames, frames[:1], [b"data: {not json\n\n"]):
        body = b"".join(streamed)
        check(adapter, is_async, True, lambda request, body=body: httpx2.Response(
            200, content=body, headers={"content-type": "text/event-stream"}))  # fmt: skip
