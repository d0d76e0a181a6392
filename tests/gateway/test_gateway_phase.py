"""An assistant message's `phase` (`commentary` / `final_answer`): accepted in input (an unknown value
is a 400 naming it, before any backend call) and written on every assistant message of the output —
the answer that ends a response is `final_answer`, text before a tool call is `commentary`."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from fakes import sdk

from so_middleware import ChatResponseUpdate, FinishReason, FunctionCallContent, TextContent
from so_middleware.wire.responses_events import ResponseWriter

HISTORY = [
    {"type": "message", "role": "assistant", "phase": "commentary", "content": "I should answer with the number."},
    {"type": "message", "role": "assistant", "phase": "final_answer", "content": "The number is four."},
    {"type": "message", "role": "user", "content": "Repeat only the number."},
]


@pytest.mark.parametrize("stream", [False, True])
def test_phase_is_accepted_and_the_answer_is_the_final_one(fake_gateway: Any, stream: bool) -> None:
    backend, gateway = fake_gateway()
    backend.text = "4"
    client = sdk(gateway)
    if stream:
        with client.responses.stream(model="m", input=HISTORY) as events:  # type: ignore[arg-type]
            response = events.get_final_response()
    else:
        response = client.responses.create(model="m", input=HISTORY)  # type: ignore[arg-type]
    assert [(item.type, item.phase) for item in response.output] == [("message", "final_answer")]  # type: ignore[union-attr]
    assert [m["content"] for m in backend.bodies[-1]["messages"]][:2] == [HISTORY[0]["content"], HISTORY[1]["content"]]


def test_an_unknown_phase_is_a_400_naming_it(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    item = {"type": "message", "role": "assistant", "phase": "thinking", "content": "x"}
    with pytest.raises(openai.BadRequestError) as caught:
        sdk(gateway).responses.create(model="m", input=[item])  # type: ignore[list-item]
    assert caught.value.body["param"] == "input[0].phase"  # type: ignore[index]
    assert backend.bodies == []


def test_text_before_a_tool_call_is_commentary() -> None:
    skeleton: dict[str, Any] = {"id": "resp_1", "object": "response", "output": [], "tools": []}
    writer = ResponseWriter(skeleton)
    writer.start()
    writer.feed(ChatResponseUpdate([TextContent("Looking it up."), FunctionCallContent("call_1", "lookup", "{}")],
                                   finish_reason=FinishReason.TOOL_CALLS))  # fmt: skip
    writer.finish()
    assert [(item["type"], item.get("phase")) for item in writer.response["output"]] == [
        ("message", "commentary"),
        ("function_call", None),
    ]
    done = [e["item"] for e in writer.events if e["type"] == "response.output_item.done"]
    assert done[0]["phase"] == "commentary"
