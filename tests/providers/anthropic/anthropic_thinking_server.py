"""Helpers shared by test_anthropic_thinking.py and the cases of it that run through the layers
(test_anthropic_thinking_through_the_layers.py)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2

from so_middleware.anthropic import (
    AnthropicChatClient,
)

SIGNATURE = "EqQBCkgIARABGAIiQLl5Qm8vQ1ZtcUZ4b2xQUktqd3M9PQ=="  # opaque: it must come back byte for byte


class Server:
    """Answers each request with the next scripted body (JSON, or SSE bytes) and keeps the requests."""

    def __init__(self, *answers: dict[str, Any] | bytes) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        answer = self.answers[min(len(self.bodies), len(self.answers)) - 1]
        if isinstance(answer, bytes):
            return httpx2.Response(200, content=answer, headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=answer)


def adapter(server: Server, model: str, base_url: str = "https://api.anthropic.com", **options: Any) -> Any:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(server))
    sdk = anthropic.AsyncAnthropic(api_key="x", base_url=base_url, http_client=http, max_retries=0)
    return AnthropicChatClient(sdk, model, discover=False, **options)


def message(
    content: list[dict[str, Any]], stop_reason: str = "end_turn", model: str = "claude-opus-4-6"
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 10},
    }


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def streamed(content: list[dict[str, Any]], stop_reason: str) -> bytes:
    """The SSE stream of a message with these blocks, each in the pieces the API sends."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**message([], ""), "stop_reason": None}}]
    for index, block in enumerate(content):
        if block["type"] == "thinking":
            start, deltas = (
                {"type": "thinking", "thinking": "", "signature": ""},
                [
                    {"type": "thinking_delta", "thinking": block["thinking"][:9]},
                    {"type": "thinking_delta", "thinking": block["thinking"][9:]},
                    {"type": "signature_delta", "signature": block["signature"]},
                ],
            )
        elif block["type"] == "tool_use":
            arguments = json.dumps(block["input"])
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": arguments[:5]}]
            deltas.append({"type": "input_json_delta", "partial_json": arguments[5:]})
        else:
            start, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend({"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas)
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 10}})
    events.append({"type": "message_stop"})
    return sse(*events)


def thinking_turn(arguments: dict[str, Any], tool_name: str = "Person") -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": "The user gave a name; the age is next.", "signature": SIGNATURE},
        {"type": "tool_use", "id": "toolu_01A", "name": tool_name, "input": arguments},
    ]
