"""The gateway's objects as OpenAI's SDKs and the Open Responses spec read them: listed input items,
the model list, echoed tools, file parts, custom tools, parallel calls, reasoning items sent back."""

from __future__ import annotations

import json
from typing import Any

import httpx2
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
    backend, gateway = fake_gateway()
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
