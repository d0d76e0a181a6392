"""The Chat Completions chunk reader: every field of a delta is read, whatever else the delta holds.

Most chunks carry one text piece and take a short path; these pin that a delta with more than that
(a refusal, reasoning, tool calls beside the text) still gives every content, in the wire's order.
"""

from __future__ import annotations

from typing import Any

from so_middleware import FinishReason, FunctionCallContent, ReasoningContent, RefusalContent, TextContent
from so_middleware.providers._sse import JSONView
from so_middleware.wire.chat import ChunkReader


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> JSONView:
    return JSONView({"id": "c1", "model": "m", "choices": [{"index": index, "delta": delta, "finish_reason": finish}]})


def test_each_field_of_a_delta_is_read_beside_its_text() -> None:
    reader = ChunkReader()
    updates = [
        reader.read(chunk({"role": "assistant", "content": "a"})),
        reader.read(chunk({"content": "b", "refusal": "no"})),
        reader.read(chunk({"content": "c", "reasoning_content": "think"})),
        reader.read(chunk({"content": "d", "tool_calls": [{"index": 0, "id": "x", "function": {"name": "f"}}]})),
        reader.read(chunk({"content": "other"}, index=1)),
        reader.read(chunk({}, finish="stop")),
    ]
    assert [u.contents if u else None for u in updates] == [
        [TextContent("a")],
        [TextContent("b"), RefusalContent("no")],
        [ReasoningContent("think"), TextContent("c")],
        [TextContent("d"), FunctionCallContent("x", "f", "")],
        [],
        [],
    ]
    assert [u.role if u else None for u in updates] == ["assistant"] * 4 + [None, None]
    assert reader.text == ["a", "b", "c", "d"]
    assert updates[-1] is not None and updates[-1].finish_reason == FinishReason.REFUSAL  # a refusal was seen


def test_text_held_back_as_possible_echo_is_given_and_kept_when_the_answer_ends() -> None:
    reader = ChunkReader(prefill='{"a":')
    first = reader.read(chunk({"content": '{"a"'}))  # could still be the echo of the prefill: held back
    last = reader.read(chunk({}, finish="stop"))
    assert first is not None and first.contents == []
    assert last is not None and last.contents == [TextContent('{"a"')] and last.role == "assistant"
    assert reader.text == ['{"a"']
