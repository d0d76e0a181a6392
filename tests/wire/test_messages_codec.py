"""`wire.messages.response_from_wire` reads a message's JSON (a `JSONView`, as the adapter gets it)
exactly as it reads the SDK's `Message` built from the same JSON: every documented block kind,
usage with cache counts, a refusal's `stop_details`, an echoed prefill, and fields left out.

Bodies follow the documented Messages format (docs.anthropic.com/en/api/messages).
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message

from so_middleware import ChatResponse, ProviderResponseError
from so_middleware.wire.common import JSONView
from so_middleware.wire.messages import response_from_wire, usage_from

HEAD = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5"}
USAGE = {"input_tokens": 5, "output_tokens": 7}
MESSAGES = {
    "text": {**HEAD, "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn", "usage": USAGE},
    "every block": {
        **HEAD,
        "content": [
            {"type": "thinking", "thinking": "Look it up.", "signature": "sig"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "look_up", "input": {"q": "Ada", "n": [1, 2]}},
            {"type": "text", "text": "Second text block."},
        ],
        "stop_reason": "tool_use",
        "usage": {**USAGE, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 2},
    },
    "refusal": {
        **HEAD,
        "content": [],
        "stop_reason": "refusal",
        "stop_details": {"type": "refusal", "category": "cyber", "explanation": "Not this."},
        "usage": USAGE,
    },
    "no usage, no reason": {**HEAD, "content": [{"type": "text", "text": "{}"}]},
    "an unknown block": {**HEAD, "content": [{"type": "server_tool_use", "id": "s1"}, {"type": "text", "text": "ok"}]},
}


def seen(response: ChatResponse[Any]) -> tuple[Any, ...]:
    return (
        response.messages[0].contents,
        response.usage,
        response.finish_reason,
        response.response_id,
        response.model_id,
    )


@pytest.mark.parametrize("prefill", ["", '{"name": "', "Looking"], ids=["no prefill", "prefill", "echoed prefill"])
@pytest.mark.parametrize("body", MESSAGES.values(), ids=MESSAGES.keys())
def test_a_message_read_from_its_json_is_read_as_from_the_sdks_message(body: dict[str, Any], prefill: str) -> None:
    view = JSONView(body)
    from_json = response_from_wire(view, prefill=prefill)
    assert seen(from_json) == seen(response_from_wire(Message.construct(**body), prefill=prefill))
    assert from_json.raw_representation is view and from_json.messages[0].raw_representation is view


def test_a_message_without_a_content_list_is_an_unreadable_answer() -> None:
    with pytest.raises(ProviderResponseError, match="without a content list"):
        response_from_wire(JSONView({**HEAD, "content": "Hi"}))


@pytest.mark.parametrize("part", ["all", "input", "output"])
def test_usage_reads_its_json_as_its_object(part: Any) -> None:
    usage = {**USAGE, "cache_read_input_tokens": 3}
    from_object = usage_from(Message.construct(**{**HEAD, "content": [], "usage": usage}).usage, part=part)
    assert usage_from(usage, part=part) == usage_from(JSONView(usage), part=part) == from_object
