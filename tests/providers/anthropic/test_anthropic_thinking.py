"""Anthropic Messages: assistant prefill per model, and thinking blocks kept across a tool-mode re-ask.

Over `httpx2.MockTransport` with request and response bodies from the documented Messages wire
format (provider-apis.md §3: `thinking` blocks with a `signature`, `tool_use`, the SSE events
`thinking_delta` and `signature_delta`): a hosted model's 400 for a prefill, or its signed
thinking, cannot come from the local server, and nothing may call the hosted API in tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import pytest
from pydantic import BaseModel

from so_middleware import ChatResponse, ChatResponseUpdate, ReasoningContent, TextContent, with_structured_output
from so_middleware.anthropic import (
    ANTHROPIC_API,
    LLAMA_SERVER_MESSAGES,
    AnthropicChatClient,
    profile_for,
    rejects_prefill,
)

pytestmark = pytest.mark.anyio

SIGNATURE = "EqQBCkgIARABGAIiQLl5Qm8vQ1ZtcUZ4b2xQUktqd3M9PQ=="  # opaque: it must come back byte for byte
STREAM = pytest.mark.parametrize("streaming", [False, True], ids=["respond", "stream"])


class Person(BaseModel):
    name: str
    age: int


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


async def run(client: Any, streaming: bool, **kwargs: Any) -> ChatResponse[Any]:
    if streaming:
        return await client.get_response("Ada is 36.", stream=True, **kwargs).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response("Ada is 36.", **kwargs)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- prefill per model


@pytest.mark.parametrize(
    ("model", "rejects"),
    [
        ("claude-opus-4-6", True),
        ("claude-sonnet-4-6", True),
        ("claude-opus-4-7", True),
        ("claude-sonnet-5-5", True),
        ("us.anthropic.claude-opus-4-6-v1", True),
        ("anthropic/claude-sonnet-4.6", True),
        ("claude-nova-7", True),  # a Claude model this list does not know: newer, so no prefill
        ("claude-haiku-4-5", False),
        ("claude-sonnet-4-5-20250929", False),
        ("claude-opus-4-5@20251101", False),
        ("claude-opus-4-1-20250805", False),
        ("claude-sonnet-4-20250514", False),
        ("claude-3-5-sonnet-20241022", False),
        ("anthropic.claude-3-7-sonnet-20250219-v1:0", False),
        ("SmolLM2-135M-Instruct", False),  # not Claude: the server's profile decides
    ],
)
def test_which_models_reject_a_prefill(model: str, rejects: bool) -> None:
    assert rejects_prefill(model) is rejects
    official = profile_for("https://api.anthropic.com", model)
    assert official.assistant_prefill is (not rejects and "claude" in model)
    assert profile_for("http://127.0.0.1:8080", model).assistant_prefill is not rejects


def test_the_official_profile_and_unnamed_models_send_no_prefill() -> None:
    assert ANTHROPIC_API.assistant_prefill is False
    assert profile_for("https://api.anthropic.com").assistant_prefill is False
    assert LLAMA_SERVER_MESSAGES.assistant_prefill is True


@STREAM
@pytest.mark.parametrize(
    ("model", "said", "sent_last"),
    [  # no prefill: the shape is in the instructions only, and prose before the JSON is read past
        ("claude-opus-4-6", 'Here is the JSON you asked for:\n{"name": "Ada", "age": 36}', "user"),
        ("claude-haiku-4-5", 'Ada", "age": 36}', "assistant"),  # a prefill, continued
    ],
)
async def test_a_prefill_goes_only_to_models_that_take_one(
    streaming: bool, model: str, said: str, sent_last: str
) -> None:
    block = [{"type": "text", "text": said}]
    server = Server(streamed(block, "end_turn") if streaming else message(block))
    client = with_structured_output(adapter(server, model), mode="prompted")

    response = await run(client, streaming, output_type=Person)

    assert response.value == Person(name="Ada", age=36)
    sent = server.bodies[0]
    assert sent["messages"][-1]["role"] == sent_last and "JSON" in sent["system"]
    if sent_last == "assistant":
        assert sent["messages"][-1]["content"] == '{"name": "'


# ---------------------------------------------------------------- thinking across a re-ask


def thinking_turn(arguments: dict[str, Any], tool_name: str = "Person") -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": "The user gave a name; the age is next.", "signature": SIGNATURE},
        {"type": "tool_use", "id": "toolu_01A", "name": tool_name, "input": arguments},
    ]


@STREAM
async def test_a_tool_mode_reask_sends_the_thinking_back_with_its_signature(streaming: bool) -> None:
    first, second = thinking_turn({"name": "Ada"}), thinking_turn({"name": "Ada", "age": 36})
    answers: list[Callable[..., Any]] = [streamed, streamed] if streaming else [message, message]
    server = Server(answers[0](first, "tool_use"), answers[1](second, "tool_use"))
    client = with_structured_output(adapter(server, "claude-opus-4-6"), mode="tool")
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 1024}}

    response = await run(client, streaming, output_type=Person, options={"extra_body": thinking, "max_tokens": 2048})

    assert response.value == Person(name="Ada", age=36) and len(server.bodies) == 2
    reask = server.bodies[1]
    assert reask["tool_choice"] == {"type": "auto"}  # a forced tool is refused together with thinking
    user, assistant, result = reask["messages"]
    assert user["role"] == "user" and assistant["role"] == "assistant" and result["role"] == "user"
    assert assistant["content"] == first  # the whole turn, the signature byte for byte
    [tool_result] = result["content"]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "toolu_01A"
    assert tool_result["is_error"] is True and "age" in tool_result["content"]


async def test_the_stream_keeps_the_signature_on_the_reasoning() -> None:
    server = Server(streamed(thinking_turn({"name": "Ada", "age": 36}), "tool_use"))
    stream = adapter(server, "claude-opus-4-6").get_response("x", stream=True)
    updates = [update async for update in stream]
    response = await stream.get_final_response()

    signed = [c for u in updates for c in u.contents if isinstance(c, ReasoningContent) and c.signature]
    assert [c.signature for c in signed] == [SIGNATURE]
    assert response.messages[0].contents[0] == ReasoningContent("The user gave a name; the age is next.", SIGNATURE)


def test_folding_keeps_each_signed_block_apart() -> None:
    pieces = [
        ReasoningContent("first "),
        ReasoningContent("thought"),
        ReasoningContent("", "sig-1"),
        ReasoningContent("second"),
        ReasoningContent("", "sig-2"),
        ReasoningContent("unsigned"),
    ]
    updates = [ChatResponseUpdate([piece]) for piece in pieces] + [ChatResponseUpdate([TextContent("ok")])]
    contents = ChatResponse.from_updates(updates).messages[0].contents
    assert contents == [
        ReasoningContent("first thought", "sig-1"),
        ReasoningContent("second", "sig-2"),
        ReasoningContent("unsigned"),
        TextContent("ok"),
    ]


async def test_every_call_of_the_reasked_turn_gets_a_result() -> None:
    lookup = {"type": "tool_use", "id": "toolu_02B", "name": "lookup", "input": {"q": "Ada"}}
    server = Server(
        message([*thinking_turn({"name": "Ada"}), lookup], "tool_use"),
        message(thinking_turn({"name": "Ada", "age": 36}), "tool_use"),
    )
    client = with_structured_output(adapter(server, "claude-opus-4-6"), mode="tool")

    response = await client.get_response("Ada is 36.", output_type=Person)

    assert response.value == Person(name="Ada", age=36)
    results = server.bodies[1]["messages"][2]["content"]
    assert [(r["tool_use_id"], r["is_error"]) for r in results] == [("toolu_01A", True), ("toolu_02B", True)]
    assert results[1]["content"] == "Not run: call only Person."


@STREAM
async def test_a_calls_own_model_that_rejects_prefill_gets_none(streaming: bool) -> None:
    said = '{"name": "Ada", "age": 36}'
    server = Server(
        streamed([{"type": "text", "text": said}], "end_turn")
        if streaming
        else message([{"type": "text", "text": said}])
    )
    client = with_structured_output(adapter(server, "claude-haiku-4-5"), mode="prompted")

    response = await run(client, streaming, output_type=Person, options={"model": "claude-opus-4-6"})

    assert response.value == Person(name="Ada", age=36)
    assert server.bodies[0]["model"] == "claude-opus-4-6" and server.bodies[0]["messages"][-1]["role"] == "user"
    assert client.capabilities.assistant_prefill is True  # the adapter's own model still takes one
