"""Anthropic thinking and prefill under the structured-output layer: which models get a prefill, and a
re-ask that sends the signed thinking back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from anthropic_thinking_server import Server, adapter, message, streamed, thinking_turn
from pydantic import BaseModel

from so_middleware import ChatResponse, with_structured_output

pytestmark = pytest.mark.anyio


STREAM = pytest.mark.parametrize("streaming", [False, True], ids=["respond", "stream"])


class Person(BaseModel):
    name: str
    age: int


async def run(client: Any, streaming: bool, **kwargs: Any) -> ChatResponse[Any]:
    if streaming:
        return await client.get_response("Ada is 36.", stream=True, **kwargs).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response("Ada is 36.", **kwargs)  # type: ignore[no-any-return]


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
