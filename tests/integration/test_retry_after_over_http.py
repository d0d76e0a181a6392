"""`with_retries` over a real SDK client whose 429 sends its `retry-after` header twice: the wait the
layer records is the longer one (httpx joins repeated headers with a comma). The answers come from an
httpx MockTransport: only a mock sends a header twice on demand; the body is OpenAI's documented
rate-limit error."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from adapter_wire import completion, make

from so_middleware import with_retries

pytestmark = pytest.mark.anyio

RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "requests", "param": None,
                        "code": "rate_limit_exceeded"}}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_repeated_retry_after_is_waited_for_its_longest_value(stream: bool) -> None:
    answers = [
        httpx2.Response(429, json=RATE_LIMIT, headers=[("retry-after", "5"), ("retry-after", "7")]),
        httpx2.Response(200, json=completion(content="ok")),
    ]
    if stream:
        frames = [{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o",
                   "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}]  # fmt: skip
        events = "".join(f"data: {json.dumps(frame)}\n\n" for frame in frames) + "data: [DONE]\n\n"
        answers[1] = httpx2.Response(200, text=events, headers={"content-type": "text/event-stream"})
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    client: Any = with_retries(make("chat", lambda request: answers.pop(0)), max_retry_after=60, sleep=sleep)
    if stream:
        response = await client.get_response("hi", stream=True).get_final_response()
    else:
        response = await client.get_response("hi")
    assert response.text == "ok"
    [retry] = response.additional_properties["so_middleware.retries"]
    assert retry["wait"] == 7.0 and sleeps == [7.0]
