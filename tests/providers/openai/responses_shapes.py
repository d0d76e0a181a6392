"""Documented Responses API shapes (a response object, SSE framing, a text delta event) for the
adapter tests that answer through `httpx2.MockTransport`, here and in tests/integration."""

from __future__ import annotations

import json
from typing import Any

RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-4o",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": '{"a": 1}', "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 15,
    },
}


def sse(*events: dict[str, Any] | bytes) -> bytes:
    parts = [e if isinstance(e, bytes) else f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return b"".join(parts)


def delta(text: str) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": text,
        "sequence_number": 1,
    }
