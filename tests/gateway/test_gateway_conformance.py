"""The gateway's objects as OpenAI's SDKs and the Open Responses spec read them: listed input items,
the model list, echoed tools, file parts, custom tools, parallel calls, reasoning items sent back."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from fakes import sdk


def test_input_items_are_typed_items_with_ids_and_parts(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    client = sdk(gateway)
    first = client.responses.create(model="m", input=[{"role": "user", "content": "Hi"}])
    second = client.responses.create(model="m", input="And now?", previous_response_id=first.id)
    items = client.responses.input_items.list(second.id, order="asc").data
    assert [item.type for item in items] == ["message", "message", "message"]
    assert [item.role for item in items] == ["user", "assistant", "user"]  # type: ignore[union-attr]
    assert all(item.id and item.status == "completed" for item in items)  # type: ignore[union-attr]
    assert len({item.id for item in items}) == 3
    user, answer, _ = items
    assert user.content[0].type == "input_text" and user.content[0].text == "Hi"  # type: ignore[union-attr]
    assert answer.content[0].type == "output_text"  # type: ignore[union-attr]
    client.close()


def test_models_are_the_backends_list_as_given(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    listed = httpx2.get(f"{gateway.base_url}/models", timeout=30).json()
    assert listed == {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0,
                                                  "owned_by": "tests"}]}  # fmt: skip


def test_echoed_function_tools_carry_description_parameters_strict(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    tools = [{"type": "function", "name": "a"}, {"type": "function", "name": "b", "description": "B", "strict": True,
              "parameters": {"type": "object", "properties": {}}}]  # fmt: skip
    reply = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", "tools": tools}, timeout=30)
    assert reply.json()["tools"] == [
        {"type": "function", "name": "a", "description": None, "parameters": None, "strict": None},
        tools[1],
    ]
    assert json.dumps(reply.json()["tools"][1]) == json.dumps(tools[1])  # what was given keeps its order


CUSTOM = {"type": "custom", "name": "apply_patch", "description": "Apply a patch."}
CUSTOM_TOOL_PARAMETERS = {  # the function a custom tool is offered as: one string parameter, `input`
    "type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"], "additionalProperties": False,
}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_custom_tool_is_a_function_of_one_string_and_comes_back_custom(fake_gateway: Any, stream: bool) -> None:
    backend, gateway = fake_gateway()
    backend.tool_call = {"name": "apply_patch", "arguments": json.dumps({"input": "*** Begin Patch\n"})}
    client = sdk(gateway)
    body: dict[str, Any] = {"model": "m", "input": "fix it", "tools": [CUSTOM],
                            "tool_choice": {"type": "custom", "name": "apply_patch"}}  # fmt: skip
    if stream:
        events = list(client.responses.create(**body, stream=True))
        assert [e.input for e in events if e.type == "response.custom_tool_call_input.done"] == ["*** Begin Patch\n"]
        response = events[-1].response
    else:
        response = client.responses.create(**body)
    sent = backend.bodies[-1]
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "apply_patch", "description": "Apply a patch.", "parameters": CUSTOM_TOOL_PARAMETERS}}]  # fmt: skip
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "apply_patch"}}
    (call,) = response.output
    assert call.type == "custom_tool_call" and call.call_id == "call_1" and call.input == "*** Begin Patch\n"
    assert call.id and call.name == "apply_patch"
    # the call and its output sent back: the backend sees the function call and its result
    backend.tool_call = None
    follow = [call.model_dump(), {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Done."}]
    client.responses.create(model="m", input=follow, tools=[CUSTOM])  # type: ignore[arg-type]
    messages = backend.bodies[-1]["messages"]
    assert messages[0]["tool_calls"] == [{"id": "call_1", "type": "function", "function": {
        "name": "apply_patch", "arguments": json.dumps({"input": "*** Begin Patch\n"})}}]  # fmt: skip
    assert messages[1] == {"role": "tool", "tool_call_id": "call_1", "content": "Done."}
    client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_parallel_calls_go_out_and_come_back_as_one_assistant_turn(fake_gateway: Any, stream: bool) -> None:
    backend, gateway = fake_gateway()
    backend.tool_calls = [{"name": "lookup", "arguments": '{"q":"a"}'}, {"name": "lookup", "arguments": '{"q":"b"}'}]
    client = sdk(gateway)
    tool = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    if stream:
        events = list(client.responses.create(model="m", input="both", tools=[tool], stream=True))  # type: ignore[list-item]
        response = events[-1].response
        deltas = [(e.output_index, e.delta) for e in events if e.type == "response.function_call_arguments.delta"]
        assert deltas == [(0, '{"q":"a"}'), (1, '{"q":"b"}')]
    else:
        response = client.responses.create(model="m", input="both", tools=[tool])  # type: ignore[list-item]
    assert [(c.type, c.call_id, c.arguments) for c in response.output] == [  # type: ignore[union-attr]
        ("function_call", "call_1", '{"q":"a"}'), ("function_call", "call_2", '{"q":"b"}')]  # fmt: skip
    backend.tool_calls = []
    outputs = [{"type": "function_call_output", "call_id": f"call_{i}", "output": f"r{i}"} for i in (1, 2)]
    client.responses.create(model="m", input=outputs, previous_response_id=response.id, tools=[tool])  # type: ignore[list-item]
    messages = backend.bodies[-1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["call_1", "call_2"]
    client.close()


def test_reasoning_items_sent_back_are_accepted(fake_gateway: Any) -> None:
    """Codex sends the reasoning items of earlier turns back; a Chat Completions backend has no place for them."""
    backend, gateway = fake_gateway()
    backend.reasoning = "thinking"
    client = sdk(gateway)
    first = client.responses.create(model="m", input="hi")
    assert first.output[0].type == "reasoning"
    history = [{"role": "user", "content": "hi"}, *[item.model_dump() for item in first.output],
               {"role": "user", "content": "and?"}]  # fmt: skip
    second = client.responses.create(model="m", input=history)  # type: ignore[arg-type]
    assert second.status == "completed"
    assert [m["role"] for m in backend.bodies[-1]["messages"]] == ["user", "assistant", "user"]
    client.close()


def test_input_file_parts_become_chat_completions_file_parts(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    pdf = "data:application/pdf;base64,JVBERi0xLjQK"
    content = [
        {"type": "input_text", "text": "Summarise both."},
        {"type": "input_file", "filename": "a.pdf", "file_data": pdf},
        {"type": "input_file", "file_id": "file-abc123"},
    ]
    reply = httpx2.post(f"{gateway.base_url}/responses", timeout=30,
                        json={"model": "m", "input": [{"role": "user", "content": content}]})  # fmt: skip
    assert reply.status_code == 200, reply.text
    assert backend.bodies[-1]["messages"][0]["content"] == [
        {"type": "text", "text": "Summarise both."},
        {"type": "file", "file": {"file_data": pdf, "filename": "a.pdf"}},
        {"type": "file", "file": {"file_id": "file-abc123"}},
    ]
    url_only = [{"role": "user", "content": [{"type": "input_file", "file_url": "https://example.com/a.pdf"}]}]
    sent = len(backend.bodies)
    refused = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": url_only}, timeout=30)
    assert refused.status_code == 400 and "file_url" in refused.json()["error"]["message"]
    assert refused.json()["error"]["param"] == "input[0].content[0].file_url"
    assert len(backend.bodies) == sent  # refused before any backend call
