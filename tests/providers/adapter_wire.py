"""Helpers shared by test_adapter_errors.py and the cases of it that run through the layers
(test_adapter_errors_through_the_layers.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from so_middleware.anthropic import ANTHROPIC_API, AnthropicChatClient
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

Handler = Callable[[httpx2.Request], httpx2.Response]


ADAPTERS = pytest.mark.parametrize("adapter", ["chat", "responses", "messages"])


SYNC_OR_ASYNC = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])


STREAM = pytest.mark.parametrize("streaming", [False, True], ids=["plain", "stream"])


def make(adapter: str, handler: Handler, *, is_async: bool = True) -> Any:
    """An adapter over a real SDK client whose HTTP goes to `handler` (SDK retries off, no server
    discovery: `handler` sees the test's requests only, whichever test runs first)."""
    transport = httpx2.MockTransport(handler)
    http: Any = httpx2.AsyncClient(transport=transport) if is_async else httpx2.Client(transport=transport)
    if adapter == "messages":
        cls: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        sdk = cls(api_key="x", base_url="http://mock", http_client=http, max_retries=0)
        return AnthropicChatClient(sdk, "claude-haiku-4-5", capabilities=ANTHROPIC_API)
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    sdk = cls(api_key="x", base_url="http://mock/v1", http_client=http, max_retries=0)
    return (OpenAIChatClient if adapter == "chat" else OpenAIResponsesClient)(sdk, "gpt-4o", discover=False)


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


MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
           "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 5, "output_tokens": 2}}  # fmt: skip


START = {"type": "message_start",
         "message": {**MESSAGE, "content": [], "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}  # fmt: skip


BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}


def anthropic_text(text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}


def anthropic_error(kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": "Overloaded; your prompt was: hi"}}


def stream_of(content: bytes) -> Handler:
    return body(content, "text/event-stream")
