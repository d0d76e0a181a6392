"""`Regex` and `Grammar` outputs through the OpenAI Chat adapter and the unmodified SDK, on the
vLLM profile: the HTTP body carries `structured_outputs`, beside the caller's own fields.

No vLLM server runs here, so `httpx2.MockTransport` answers with bodies in the documented Chat
Completions wire format ("The chat completion object" / "The chat completion chunk object");
what is checked is the request the SDK really sent."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from so_middleware import Grammar, Regex, with_structured_output
from so_middleware.openai import VLLM_CHAT, OpenAIChatClient

pytestmark = pytest.mark.anyio

CODE = r"[A-Z]{3}-[0-9]{4}"
SUM = 'start: NUM (" + " NUM)*\nNUM: /[0-9]+/'


class ChatWire:
    """Answers each request with the next text, plain or streamed; records the bodies."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.bodies: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        text = self.texts[min(len(self.bodies), len(self.texts)) - 1]
        usage = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
        head = {"id": "c", "created": 0, "model": "m"}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return httpx2.Response(200, json={**head, "object": "chat.completion", "choices": [choice], "usage": usage})
        chunks = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": usage},
        ]
        events = "".join(f"data: {json.dumps({**head, 'object': 'chat.completion.chunk', **c})}\n\n" for c in chunks)
        return httpx2.Response(200, text=events + "data: [DONE]\n\n", headers={"content-type": "text/event-stream"})

    def client(self) -> OpenAIChatClient:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        return OpenAIChatClient(openai.AsyncOpenAI(api_key="k", http_client=http), "m", capabilities=VLLM_CHAT)


async def _value(client: Any, output_type: Any, stream: bool) -> Any:
    options = {"extra_body": {"top_k": 5}}
    if not stream:
        return (await client.get_response("?", output_type=output_type, options=options)).value
    updates = client.get_response("?", output_type=output_type, stream=True, options=options)
    async with updates:
        async for _ in updates:
            pass
    return (await updates.get_final_response()).value


@pytest.mark.parametrize("stream", [False, True])
async def test_vllm_is_sent_structured_outputs_and_the_answer_is_still_checked(stream: bool) -> None:
    wire = ChatWire("no code", "ABC-1234", "1 + 2")
    client = with_structured_output(wire.client())
    assert await _value(client, Regex(CODE), stream) == "ABC-1234"
    assert await _value(client, Grammar(lark=SUM), stream) == "1 + 2"
    sent = [(b["structured_outputs"], b["top_k"]) for b in wire.bodies]
    assert sent == [({"regex": CODE}, 5), ({"regex": CODE}, 5), ({"grammar": SUM}, 5)]
