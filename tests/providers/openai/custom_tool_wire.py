"""A custom tool call in OpenAI's documented wire formats, for the tests that answer through
`httpx2.MockTransport` (no hosted call is made): the Responses `custom_tool_call` item, plain and
streamed as `response.custom_tool_call_input.delta` events, and Chat Completions'
`message.tool_calls[i].custom` (the SDK's `ResponseCustomToolCall`,
`ResponseCustomToolCallInputDeltaEvent`, `ChatCompletionMessageCustomToolCall`)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
from responses_shapes import RESPONSE, sse

CODE = r"[A-Z]{3}-[0-9]{4}"
SUM = 'start: NUM (" + " NUM)*\nNUM: /[0-9]+/'
USAGE = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}


def _call_item(text: str, *, done: bool = True) -> dict[str, Any]:
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "answer", "input": text}
    return {**item, "status": "completed" if done else "in_progress"}


class Wire:
    """Answers each request with the next text as a custom tool call, plain or streamed, on the
    Responses or the Chat Completions route; records the bodies sent."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.bodies: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        text = self.texts[min(len(self.bodies), len(self.texts)) - 1]
        if request.url.path.endswith("/responses"):
            return self._responses(body, text)
        return self._chat(text, tool=isinstance(body.get("tool_choice"), dict))

    def _responses(self, body: dict[str, Any], text: str) -> httpx2.Response:
        if body.get("tool_choice", {}).get("type") != "custom":  # no tool asked: a plain text answer
            output = RESPONSE["output"][0] | {"content": [{"type": "output_text", "text": text, "annotations": []}]}
            return httpx2.Response(200, json={**RESPONSE, "output": [output]})
        done = {**RESPONSE, "model": "gpt-5", "output": [_call_item(text)]}
        if not body.get("stream"):
            return httpx2.Response(200, json=done)
        where = {"item_id": "ctc_1", "output_index": 0}
        events = [
            {"type": "response.created", "sequence_number": 0, "response": {**done, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": _call_item("", done=False)},
            *(
                {"type": "response.custom_tool_call_input.delta", "sequence_number": 2 + i, **where, "delta": text[i : i + 3]}
                for i in range(0, len(text), 3)
            ),
            {"type": "response.custom_tool_call_input.done", "sequence_number": 90, **where, "input": text},
            {"type": "response.output_item.done", "sequence_number": 91, "output_index": 0, "item": _call_item(text)},
            {"type": "response.completed", "sequence_number": 92, "response": done},
        ]  # fmt: skip
        return httpx2.Response(200, content=sse(*events), headers={"content-type": "text/event-stream"})

    def _chat(self, text: str, *, tool: bool) -> httpx2.Response:
        call = {"id": "call_1", "type": "custom", "custom": {"name": "answer", "input": text}}
        message = (
            {"role": "assistant", "content": None, "tool_calls": [call]}
            if tool
            else {"role": "assistant", "content": text}
        )
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}
        completion = {"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-5", "choices": [choice]}
        return httpx2.Response(200, json={**completion, "usage": USAGE})

    def sdk(self) -> openai.AsyncOpenAI:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        return openai.AsyncOpenAI(api_key="k", base_url="https://api.openai.com/v1", http_client=http, max_retries=0)
