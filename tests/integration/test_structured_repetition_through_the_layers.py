"""A complete, valid answer that repeats itself, through the real openai SDK from a loopback server
(the testing layer's FaultServer, Chat Completions wire format): it is the value, on a hosted
profile and on one prone to loops, plain and streamed; an answer cut off while repeating is still
a loop, re-asked with the profile's loop-breaking field."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from adapter_wire import CREATED, MESSAGE, RESPONSE, START, chunk, completion, sse
from pydantic import BaseModel

from so_middleware import with_structured_output
from so_middleware.anthropic import (
    ANTHROPIC_API,
    ANTHROPIC_COMPATIBLE,
    LLAMA_SERVER_MESSAGES,
    OLLAMA_MESSAGES,
    VLLM_MESSAGES,
    AnthropicChatClient,
)
from so_middleware.openai import (
    GATEWAY_RESPONSES,
    LLAMA_SERVER_CHAT,
    LLAMA_SERVER_RESPONSES,
    OLLAMA_CHAT,
    OPENAI_API,
    OPENAI_API_RESPONSES,
    OPENAI_COMPATIBLE,
    VLLM_CHAT,
    OpenAIChatClient,
    OpenAIResponsesClient,
)
from so_middleware.testing import _faults
from so_middleware.testing._faults import FaultServer

pytestmark = pytest.mark.anyio

LOREM = "lorem ipsum dolor sit amet " * 60


class Note(BaseModel):
    title: str
    text: str


DOCUMENT = Note(title="Filler", text=LOREM).model_dump_json()


async def ask(server: FaultServer, profile: Any, streaming: bool) -> Any:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    try:
        client = with_structured_output(OpenAIChatClient(sdk, "m", capabilities=profile))
        options = {"max_tokens": 2000}  # well inside: the server streams 4 characters a chunk
        if streaming:
            answer = client.get_response("x", output_type=Note, options=options, stream=True)
            return await answer.get_final_response()
        return await client.get_response("x", output_type=Note, options=options)
    finally:
        await sdk.close()


@pytest.mark.parametrize("streaming", [False, True], ids=["respond", "stream"])
@pytest.mark.parametrize("profile", [OPENAI_API, LLAMA_SERVER_CHAT], ids=lambda p: p.name)
async def test_a_long_repetitive_field_in_a_valid_answer_is_the_value(profile: Any, streaming: bool) -> None:
    with FaultServer(_faults.stream(DOCUMENT) if streaming else _faults.completion(DOCUMENT)) as server:
        response = await ask(server, profile, streaming)
    assert response.value == Note(title="Filler", text=LOREM)
    assert len(server.requests) == 1 and "frequency_penalty" not in server.requests[0].body


@pytest.mark.parametrize("profile", [OPENAI_API, LLAMA_SERVER_CHAT], ids=lambda p: p.name)
async def test_an_answer_cut_off_while_repeating_is_reasked_with_the_loop_breaking_field(profile: Any) -> None:
    looping = '{"title": "Filler", "text": "' + LOREM
    with FaultServer([_faults.completion(looping, finish_reason="length"), _faults.completion(DOCUMENT)]) as server:
        response = await ask(server, profile, streaming=False)
    assert response.value == Note(title="Filler", text=LOREM)
    assert "looped" in str(response.attempts[0].error)
    first, reask = (request.body for request in server.requests)
    assert "frequency_penalty" not in first and reask["frequency_penalty"] == 0.5


# ---------------------------------------------------------------- every route, every profile


class Wire:
    """A backend answering each route in its documented wire format (Chat Completions, Responses,
    Anthropic Messages; JSON, or SSE in 4-character pieces) through `httpx2.MockTransport`: the one
    way to serve all three routes under every shipped profile. It answers what the request asks
    for: a forced tool's call (Messages), or text continuing a trailing assistant prefill (echoed
    or not, as the profile says)."""

    def __init__(self, route: str, profile: Any, document: str) -> None:
        self.route, self.profile, self.document = route, profile, document
        self.bodies: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        tool = self._forced_tool(body)
        text = self.document if tool else self._continuation(body)
        pieces = [text[start : start + 4] for start in range(0, len(text), 4)]
        if self.route == "chat":
            return self._chat(body, text, pieces)
        if self.route == "responses":
            return self._responses(body, text, pieces)
        return self._messages(body, tool, text, pieces)

    @staticmethod
    def _forced_tool(body: dict[str, Any]) -> str | None:
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            return choice.get("name") or (choice.get("function") or {}).get("name")
        return None

    def _continuation(self, body: dict[str, Any]) -> str:
        turns = body.get("messages") or body.get("input") or []
        last = turns[-1] if isinstance(turns, list) and turns else {}
        if not isinstance(last, dict) or last.get("role") != "assistant":
            return self.document
        content = last.get("content")
        blocks = content if isinstance(content, list) else [{"text": content}]
        prefill = "".join(block.get("text", "") for block in blocks if isinstance(block, dict))
        assert self.document.startswith(prefill)
        return self.document if self.profile.prefill_echoed else self.document[len(prefill) :]

    def _chat(self, body: dict[str, Any], text: str, pieces: list[str]) -> httpx2.Response:
        if not body.get("stream"):
            return httpx2.Response(200, json=completion(content=text))
        events = [chunk({"role": "assistant", "content": piece}) for piece in pieces] + [chunk({}, "stop"), "[DONE]"]
        return httpx2.Response(200, content=sse(*events), headers={"content-type": "text/event-stream"})

    def _responses(self, body: dict[str, Any], text: str, pieces: list[str]) -> httpx2.Response:
        item = {**RESPONSE["output"][0], "content": [{"type": "output_text", "text": text, "annotations": []}]}
        done = {**RESPONSE, "output": [item]}
        if not body.get("stream"):
            return httpx2.Response(200, json=done)
        deltas = [
            {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
             "delta": piece, "logprobs": [], "sequence_number": n + 1}
            for n, piece in enumerate(pieces)
        ]  # fmt: skip
        completed = {"type": "response.completed", "sequence_number": len(pieces) + 1, "response": done}
        events = sse(CREATED, *deltas, completed)
        return httpx2.Response(200, content=events, headers={"content-type": "text/event-stream"})

    def _messages(self, body: dict[str, Any], tool: str | None, text: str, pieces: list[str]) -> httpx2.Response:
        block: dict[str, Any] = {"type": "text", "text": text}
        if tool:
            block = {"type": "tool_use", "id": "toolu_1", "name": tool, "input": json.loads(text)}
        stop = "tool_use" if tool else "end_turn"
        if not body.get("stream"):
            return httpx2.Response(200, json={**MESSAGE, "content": [block], "stop_reason": stop})
        opened = {**block, "input": {}} if tool else {"type": "text", "text": ""}
        kind, field = ("input_json_delta", "partial_json") if tool else ("text_delta", "text")
        events = [START, {"type": "content_block_start", "index": 0, "content_block": opened}]
        events += [{"type": "content_block_delta", "index": 0, "delta": {"type": kind, field: p}} for p in pieces]
        events += [
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": len(pieces)}},
            {"type": "message_stop"},
        ]  # fmt: skip
        return httpx2.Response(200, content=sse(*events), headers={"content-type": "text/event-stream"})


ROUTES = [
    *[("chat", p) for p in (OPENAI_API, OPENAI_COMPATIBLE, LLAMA_SERVER_CHAT, VLLM_CHAT, OLLAMA_CHAT)],
    *[("responses", p) for p in (OPENAI_API_RESPONSES, LLAMA_SERVER_RESPONSES, GATEWAY_RESPONSES)],
    *[("messages", p) for p in (ANTHROPIC_API, ANTHROPIC_COMPATIBLE, LLAMA_SERVER_MESSAGES)],
    *[("messages", p) for p in (VLLM_MESSAGES, OLLAMA_MESSAGES)],
]
LOREM_40 = Note(title="Filler", text="lorem ipsum dolor sit amet " * 40)


def client_for(route: str, profile: Any, wire: Wire) -> Any:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(wire.handle))
    if route == "messages":
        sdk: Any = anthropic.AsyncAnthropic(api_key="x", base_url="http://mock", http_client=http, max_retries=0)
        return AnthropicChatClient(sdk, "m", capabilities=profile, max_tokens=2000)
    sdk = openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http, max_retries=0)
    adapter = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    return adapter(sdk, "m", capabilities=profile)


@pytest.mark.parametrize("streaming", [False, True], ids=["respond", "stream"])
@pytest.mark.parametrize(("route", "profile"), ROUTES, ids=[f"{r}-{p.name}" for r, p in ROUTES])
async def test_a_valid_answer_with_a_repeated_phrase_is_the_value_on_every_route(
    route: str, profile: Any, streaming: bool
) -> None:
    """The document whose one string field is `"lorem ipsum dolor sit amet " * 40`, well inside
    max_tokens, once on each route's wire: one request, no loop-breaking field, the value."""
    wire = Wire(route, profile, json.dumps(LOREM_40.model_dump()))  # spaced as models write it
    client = with_structured_output(client_for(route, profile, wire))
    options = {"max_tokens": 2000}
    if streaming:
        response = await client.get_response("x", output_type=Note, options=options, stream=True).get_final_response()
    else:
        response = await client.get_response("x", output_type=Note, options=options)
    assert response.value == LOREM_40
    assert len(wire.bodies) == 1
    assert not {"frequency_penalty", "temperature"} & set(wire.bodies[0])
