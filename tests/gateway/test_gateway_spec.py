"""Every response object and every streamed event the gateway sends validates against the Open
Responses OpenAPI (`spec/openapi.json`), over a scripted Chat Completions backend: plain, streamed,
background, a tool call, reasoning, structured output."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx2
import pytest
from spec_schema import OPENAI_ONLY_EVENTS, event_problems, problems

TOOL = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}
SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {  # request body extras, backend settings
    "plain": ({}, {}),
    "tools": (
        {"tools": [TOOL], "tool_choice": "required"},
        {"tool_call": {"name": "lookup", "arguments": '{"q":"x"}'}},
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
    reply = httpx2.post(f"{gateway.base_url}/responses", json=body, timeout=30)
    events = _events(reply)
    assert events and events[-1]["type"] in ("response.completed", "response.incomplete")
    if scenario == "reasoning":  # the spec's names, beside OpenAI's (tested in test_gateway_http)
        kinds = [event["type"] for event in events]
        assert kinds.count("response.reasoning.delta") == 2 and "response.reasoning.done" in kinds
    for event in events:
        if event["type"] not in OPENAI_ONLY_EVENTS:
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
