"""Helpers shared by test_tool_emulation.py and the cases of it that run through the layers
(test_tool_emulation_through_the_layers.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
from pydantic import BaseModel

from so_middleware import (
    ChatResponse,
    FunctionTool,
)
from so_middleware.openai import LLAMA_SERVER_CHAT, OpenAIChatClient

WEATHER = FunctionTool(
    "get_weather", {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "Weather"
)


class Backend:
    """Answers every chat completion with `text` (plain or as one chunk) and records the bodies."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.bodies: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        usage = {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
        if not body.get("stream"):
            message = {"role": "assistant", "content": self.text}
            return httpx2.Response(200, json={"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                              "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                              "usage": usage})  # fmt: skip
        chunks = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": self.text}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": usage},
        ]
        events = "".join(
            f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', 'created': 0, 'model': 'm', **c})}\n\n"
            for c in chunks
        )
        return httpx2.Response(200, text=events + "data: [DONE]\n\n", headers={"content-type": "text/event-stream"})

    def client(self) -> OpenAIChatClient:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        sdk = openai.AsyncOpenAI(api_key="k", base_url="http://llama.internal:8080/v1", http_client=http)
        return OpenAIChatClient(sdk, "m", capabilities=LLAMA_SERVER_CHAT)


async def get(client: Any, stream: bool, *args: Any, **kwargs: Any) -> ChatResponse[Any]:
    if not stream:
        return await client.get_response(*args, **kwargs)  # type: ignore[no-any-return]
    updates = client.get_response(*args, stream=True, **kwargs)
    async for _ in updates:
        pass
    return await updates.get_final_response()  # type: ignore[no-any-return]


class Answer(BaseModel):
    city: str
