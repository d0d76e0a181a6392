"""`wire.messages` reads a message's JSON (a `JSONView`, as the adapter gets it) exactly as it reads
the SDK's `Message` built from the same JSON: every documented block kind, usage with cache counts,
a refusal's `stop_details`, an echoed prefill, and fields left out; `StreamReader` reads stream
events' JSON as it reads the SDK's event objects.

Bodies follow the documented Messages format (docs.anthropic.com/en/api/messages, .../messages-streaming).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from so_middleware import ChatResponse, ProviderResponseError
from so_middleware.wire.common import JSONView
from so_middleware.wire.messages import StreamReader, response_from_wire, usage_from

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


EVENTS = [
    {"type": "message_start", "message": {**HEAD, "content": [], "stop_reason": None, "usage": USAGE}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Look it up."}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": '{"name": "Ada'}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": '", "age": 36}'}},
    {"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"q": '}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '"Ada"}'}},
    {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": None,
                                        "stop_details": {"type": "refusal", "explanation": "Not this."}},
     "usage": {"output_tokens": 9, "cache_read_input_tokens": 2}},
    {"type": "message_stop"},
]  # fmt: skip


@pytest.mark.parametrize("prefill", ["", '{"name": "'], ids=["no prefill", "echoed prefill"])
def test_a_stream_read_from_its_json_is_read_as_from_the_sdks_events(prefill: str) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    from_json, from_sdk = StreamReader(prefill=prefill), StreamReader(prefill=prefill)
    for event in EVENTS:
        view, model = JSONView(event), adapter.validate_python(event)
        ours, theirs = from_json.read(view), from_sdk.read(model)
        assert (ours is None) is (theirs is None)
        if ours is not None and theirs is not None:
            assert ours.raw_representation is view and theirs.raw_representation is model
            assert dataclasses.replace(ours, raw_representation=None) == dataclasses.replace(
                theirs, raw_representation=None
            )
    assert from_json.text == from_sdk.text and from_json.finished and from_sdk.finished


@pytest.mark.parametrize("event", [
    {"type": "content_block_delta", "index": 0, "delta": None},
    {"type": "content_block_start", "index": 0, "content_block": "text"},
], ids=["delta", "content_block"])  # fmt: skip
def test_an_event_without_its_object_is_of_an_unexpected_shape(event: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="expected a JSON object"):
        StreamReader().read(JSONView(event))
