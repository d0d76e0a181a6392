"""Every response object and every streamed event the gateway sends validates against the Open
Responses OpenAPI (`spec/openapi.json`), over a scripted Chat Completions backend: plain, streamed,
background, a tool call, reasoning, structured output."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx2
import pytest
from spec_schema import OPENAI_ONLY_EVENTS, event_problems, list_problems, problems, response_problems

TOOL = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}
SPEC_MODE = {"OpenResponses-Version": "2026-04-24"}  # the client reads the spec's event names
OPENAI_SDK = {"X-Stainless-Lang": "python"}  # as an OpenAI SDK says what it is: it reads OpenAI's names
SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {  # request body extras, backend settings
    "plain": ({}, {}),
    "tools": (
        {"tools": [TOOL], "tool_choice": "required"},
        {"tool_call": {"name": "lookup", "arguments": '{"q":"x"}'}},
    ),
    "parallel": (
        {"tools": [TOOL]},
        {"tool_calls": [{"name": "lookup", "arguments": '{"q":"a"}'}, {"name": "lookup", "arguments": '{"q":"b"}'}]},
    ),
    "reasoning": ({"reasoning": {"effort": "low"}}, {"reasoning": "Ada is named; 36 is her age."}),
    "structured": ({"text": {"format": {"type": "json_schema", "name": "p", "schema": SCHEMA, "strict": True}}}, {}),
    "settings": ({"temperature": 0.2, "top_p": 0.9, "max_output_tokens": 50, "instructions": "Be brief."}, {}),
    "incomplete": ({}, {"finish_reason": "length"}),
}


def _events(reply: httpx2.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]


def _configure(backend: Any, settings: dict[str, Any]) -> None:
    for name, value in settings.items():
        setattr(backend, name, value)


def _check_response(response: dict[str, Any]) -> None:
    assert problems("ResponseResource", response) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_plain_response_validates(fake_gateway: Any, scenario: str) -> None:
    backend, gateway = fake_gateway()
    extra, settings = SCENARIOS[scenario]
    _configure(backend, settings)
    reply = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", **extra}, timeout=30)
    assert reply.status_code == 200, reply.text
    response = reply.json()
    _check_response(response)
    _check_response(httpx2.get(f"{gateway.base_url}/responses/{response['id']}", timeout=30).json())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_streamed_event_validates(fake_gateway: Any, scenario: str) -> None:
    backend, gateway = fake_gateway()
    extra, settings = SCENARIOS[scenario]
    _configure(backend, settings)
    body = {"model": "m", "input": "hi", "stream": True, **extra}
    reply = httpx2.post(f"{gateway.base_url}/responses", json=body, headers=SPEC_MODE, timeout=30)
    events = _events(reply)
    assert events and events[-1]["type"] in ("response.completed", "response.incomplete")
    if scenario == "reasoning":  # the spec's names, and only those (OpenAI's by default: test_gateway_http)
        kinds = [event["type"] for event in events]
        assert kinds.count("response.reasoning.delta") == 2 and "response.reasoning.done" in kinds
        assert not OPENAI_ONLY_EVENTS & set(kinds)
    for event in events:
        assert event_problems(event) == [], event["type"]


def test_a_background_response_validates_while_queued_running_and_done(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.chunk_delay, backend.pieces = 0.05, 10
    created = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", "background": True},
                          timeout=30).json()  # fmt: skip
    _check_response(created)
    seen = {created["status"]}
    deadline = time.monotonic() + 30
    while created["status"] not in ("completed", "failed") and time.monotonic() < deadline:
        time.sleep(0.05)
        created = httpx2.get(f"{gateway.base_url}/responses/{created['id']}", timeout=30).json()
        _check_response(created)
        seen.add(created["status"])
    assert "completed" in seen
    streamed = httpx2.get(f"{gateway.base_url}/responses/{created['id']}", params={"stream": "true"}, timeout=30)
    for event in _events(streamed):
        assert event_problems(event) == [], event["type"]


def test_a_background_stream_is_replayed_in_each_readers_names(fake_gateway: Any) -> None:
    """One run, two readers: the one that asks for the spec reads `response.reasoning.*`, the other
    OpenAI's `response.reasoning_text.*`, the same events under the same sequence numbers."""
    backend, gateway = fake_gateway()
    backend.reasoning = "Ada is named; 36 is her age."
    body = {"model": "m", "input": "hi", "background": True}
    created = httpx2.post(f"{gateway.base_url}/responses", json=body, timeout=30).json()
    url, query = f"{gateway.base_url}/responses/{created['id']}", {"stream": "true"}
    spec = _events(httpx2.get(url, params=query, headers=SPEC_MODE, timeout=30))
    openai = _events(httpx2.get(url, params=query, headers=OPENAI_SDK, timeout=30))
    assert [e["sequence_number"] for e in spec] == [e["sequence_number"] for e in openai]
    renamed = {"response.reasoning.delta": "response.reasoning_text.delta",
               "response.reasoning.done": "response.reasoning_text.done"}  # fmt: skip
    assert [renamed.get(e["type"], e["type"]) for e in spec] == [e["type"] for e in openai]
    assert "response.reasoning.delta" in {e["type"] for e in spec}
    assert "response.reasoning.delta" not in {e["type"] for e in openai}
    for event in spec:
        assert event_problems(event) == [], event["type"]


def test_a_failed_stream_validates(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.break_after, backend.pieces = 2, 6
    reply = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", "stream": True}, timeout=30)
    events = _events(reply)
    assert events[-1]["type"] == "response.failed"
    for event in events:
        assert event_problems(event) == [], event["type"]


def test_the_schema_check_catches_a_missing_field() -> None:
    """A positive control: the validators do reject what the spec forbids."""
    assert problems("ResponseResource", {"id": "resp_1", "object": "response"})
    assert event_problems({"type": "response.output_text.delta", "sequence_number": 0})
    image = {"type": "input_image", "image_url": "data:image/png;base64,AA=="}  # no `detail`
    item = {"id": "i", "type": "message", "status": "completed", "role": "user", "content": [image]}
    page = {"object": "list", "data": [item], "first_id": "i", "last_id": "i", "has_more": False}
    assert list_problems(page) and list_problems({"object": "list", "data": []})
    assert list_problems({**page, "data": [{**item, "content": [{**image, "detail": "auto"}]}]}) == []


CUSTOM = {"type": "custom", "name": "apply_patch", "description": "Apply a patch.",
          "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "patch"'}}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_custom_tool_call_validates_the_spec_beside_openais_types(fake_gateway: Any, stream: bool) -> None:
    """OpenAI's custom tools are not in the spec: the tool echoed and its call (and the call's events)
    validate against the OpenAI SDK's types, all else in the same answers against the spec."""
    backend, gateway = fake_gateway()
    backend.tool_call = {"name": "apply_patch", "arguments": json.dumps({"input": "patch"})}
    forced = {"type": "custom", "name": "apply_patch"}
    body = {"model": "m", "input": "hi", "tools": [CUSTOM, TOOL], "tool_choice": forced, "stream": stream}
    reply = httpx2.post(f"{gateway.base_url}/responses", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    if not stream:
        response = reply.json()
        assert [item["type"] for item in response["output"]] == ["custom_tool_call"]
        assert response_problems(response, custom_tools=True) == []
        assert response_problems(response)  # the spec alone has no custom tool
        return
    events = _events(reply)
    assert "response.custom_tool_call_input.done" in {e["type"] for e in events}
    for event in events:
        assert event_problems(event, custom_tools=True) == [], event["type"]
    assert event_problems(events[-1])


def test_the_custom_tool_check_catches_a_call_without_its_input() -> None:
    """A positive control: OpenAI's types do reject a custom tool call that lacks its `input`."""
    call = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch"}
    event = {"type": "response.output_item.done", "output_index": 0, "sequence_number": 3, "item": call}
    assert event_problems(event, custom_tools=True)
    assert event_problems({**event, "item": {**call, "input": "patch"}}, custom_tools=True) == []
    delta = {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "output_index": 0,
             "sequence_number": 2}  # fmt: skip
    assert event_problems(delta, custom_tools=True)  # no `delta`
    assert event_problems({**delta, "delta": "pa"}, custom_tools=True) == []
