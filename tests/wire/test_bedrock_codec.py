"""The Converse codec (`so_middleware.wire.bedrock`): documented `ConverseResponse` bodies (shapes of
botocore's bedrock-runtime service model) read and written back unchanged, and the stop-reason
table read and written both ways."""

from __future__ import annotations

from typing import Any

import pytest

from so_middleware import ChatMessage, ChatOptions, FinishReason, FunctionCallContent, FunctionResultContent
from so_middleware.wire import bedrock

ANSWERS: list[dict[str, Any]] = [
    {
        "output": {"message": {"role": "assistant", "content": [{"text": "Hello"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4},
        "metrics": {"latencyMs": 0},
    },
    {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "sig=="}}},
                    {"text": "Let me look."},
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "lookup", "input": {"q": "oslo"}}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 9, "outputTokens": 5, "totalTokens": 14, "cacheReadInputTokens": 2},
        "metrics": {"latencyMs": 0},
    },
    {
        "output": {"message": {"role": "assistant", "content": [{"text": '{"a": '}]}},
        "stopReason": "max_tokens",
        "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
        "metrics": {"latencyMs": 0},
    },
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_an_answer_read_and_written_back_is_the_answer(answer: dict[str, Any]) -> None:
    assert bedrock.response_to_wire(bedrock.response_from_wire(answer)) == answer


@pytest.mark.parametrize("reason", ["end_turn", "tool_use", "max_tokens", "content_filtered"])
def test_each_written_stop_reason_reads_back_as_itself(reason: str) -> None:
    finish = bedrock.STOP_REASONS[reason]
    written = bedrock.response_to_wire(bedrock.response_from_wire({**ANSWERS[0], "stopReason": reason}))
    assert (written["stopReason"], bedrock.STOP_REASONS[written["stopReason"]]) == (reason, finish)
    assert bedrock.STOP_REASONS["guardrail_intervened"] == FinishReason.CONTENT_FILTER


def test_a_conversation_with_a_call_and_its_result_is_sent_in_converse_turns() -> None:
    history = [
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "Weather?"),
        ChatMessage("assistant", [FunctionCallContent("t1", "weather", '{"city": "Oslo"}')]),
        ChatMessage("tool", [FunctionResultContent("t1", "sunny")]),
        ChatMessage("tool", [FunctionResultContent("t2", "boom", is_error=True)]),
    ]
    request = bedrock.request_to_wire(history, ChatOptions(), model="amazon.nova-pro-v1:0")
    assert request["system"] == [{"text": "Be brief."}]
    assert [turn["role"] for turn in request["messages"]] == ["user", "assistant", "user"]
    results = [block["toolResult"] for block in request["messages"][2]["content"]]
    assert [(r["toolUseId"], r["status"]) for r in results] == [("t1", "success"), ("t2", "error")]
    assert request["messages"][1]["content"][0]["toolUse"]["input"] == {"city": "Oslo"}
