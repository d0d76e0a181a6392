"""Anthropic Messages: assistant prefill per model, and thinking blocks kept across a tool-mode re-ask.

Over `httpx2.MockTransport` with request and response bodies from the documented Messages wire
format (provider-apis.md §3: `thinking` blocks with a `signature`, `tool_use`, the SSE events
`thinking_delta` and `signature_delta`): a hosted model's 400 for a prefill, or its signed
thinking, cannot come from the local server, and nothing may call the hosted API in tests.
"""

from __future__ import annotations

import pytest
from anthropic_thinking_server import SIGNATURE, Server, adapter, streamed, thinking_turn

from so_middleware import ChatResponse, ChatResponseUpdate, ReasoningContent, TextContent
from so_middleware.anthropic import (
    ANTHROPIC_API,
    LLAMA_SERVER_MESSAGES,
    profile_for,
    rejects_prefill,
)

pytestmark = pytest.mark.anyio


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


# ---------------------------------------------------------------- thinking across a re-ask


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
