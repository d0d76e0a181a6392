"""The Open Responses compliance runner's cases, ported to pytest: one test per template of
`src/lib/compliance-tests.ts` in the public repository openresponses/openresponses (commit
0cb939ccf839234347b4f0c317569b49fad8fd0e; its CLI is `bin/compliance-test.ts`), with the same ids, the
same request bodies (`stream` set as its `makeRequest` sets it) and the same checks, run against the gateway
(uvicorn on loopback) over the recording fake Chat Completions backend.

Why a port: the runner is published on no package registry (it runs from a checkout of that repository
under bun), and this project's tests reach only package registries and may not vendor that repository's
code. What the runner checks, checked the same way here:
- the answer (or, streamed, the `response` of the final `response.completed`/`.failed`/`.incomplete`
  event) validates as a `ResponseResource` (the runner's zod schemas are generated from the same OpenAPI,
  tests/gateway/spec/openapi.json);
- streamed, every SSE `data:` event but `[DONE]` validates as one of the spec's streaming events (an event
  type outside the spec is an error, as in the runner's `parseSSEStream`), and there is at least one;
- the template's own validators: output present, status "completed", a `function_call` output item,
  and for `tool-calling-streaming` the function-call events.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from spec_schema import event_problems, problems

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}},
        "required": ["location"],
    },
}
WEATHER_QUESTION = {"type": "message", "role": "user", "content": "What's the weather like in San Francisco?"}
# the template's image: a 32x32 PNG (a red heart on white), as a data URL
HEART_PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAABmklEQVR42tyWAaTyUBzFew/eG4AHz+MBSAHKBiJRGFKw"
    "IgQQJKLUIioBIhCAiCAAEizAQIAECaASqFFJq84nudjnaqvuPnxzgP9xfrq5938csPn7PwHTKSoViCIEAYEAMhmoKsU2mUCWEQqB5xEMIp/HaGQG"
    "2G6RSuH9HQ7H34rFrtPbdz4jl6PbwmEsl3QA1mt4vcRKk8dz9eg6IpF7tt9fzGY0gCgafFRFo5Blc5vLhf3eCOj1yNhM5GRMVK0aATxPZoz09YXj"
    "kQDmczJgquGQAPp9WwCNBgG027YACgUC6HRsAZRKBDAY2AJoNv/ZnwzA6WScznG3p4UAymXGAEkyXrTFAh8fLAGqagQAyGaZpYsi7bHTNPz8MEj/"
    "/LxuFPo+UBS8vb0KaLXubrRa7aX0RMLCykwmn0z3+XA4WACcTpCkh9MFAZpmuVXo+mO/w+/HZvNgbblcUCxaSo/Hyck80Yu6XXDcvfVZr79cvMZj"
    "uN2U9O9vKAqjZrfbIZ0mV4TUi9Xqz6jddNy//7+e3n8Fhf/Llo2kxi8AQyGRoDkmAhAAAAAASUVORK5CYII="
)


def _message(role: str, content: Any) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": content}


# id: (request body without model, streaming, the backend's tool call or None, the template's validators)
TEMPLATES: dict[str, tuple[dict[str, Any], bool, dict[str, str] | None, list[str]]] = {
    "basic-response": (
        {"input": [_message("user", "Say hello in exactly 3 words.")]}, False, None, ["output", "completed"]
    ),
    "streaming-response": (
        {"input": [_message("user", "Count from 1 to 5.")]}, True, None, ["events", "completed"]
    ),
    "system-prompt": (
        {"input": [_message("system", "You are a pirate. Always respond in pirate speak."),
                   _message("user", "Say hello.")]},
        False, None, ["output", "completed"],
    ),
    "tool-calling": (
        {"input": [WEATHER_QUESTION], "tools": [WEATHER_TOOL]},
        False, {"name": "get_weather", "arguments": '{"location": "San Francisco, CA"}'}, ["output", "function_call"],
    ),
    "tool-calling-streaming": (
        {"input": [WEATHER_QUESTION], "tools": [WEATHER_TOOL]},
        True, {"name": "get_weather", "arguments": '{"location": "San Francisco, CA"}'},
        ["events", "function_call_events"],
    ),
    "image-input": (
        {"input": [_message("user", [
            {"type": "input_text", "text": "What do you see in this image? Answer in one sentence."},
            {"type": "input_image", "image_url": HEART_PNG}])]},
        False, None, ["output", "completed"],
    ),
    "multi-turn": (
        {"input": [_message("user", "My name is Alice."),
                   _message("assistant", "Hello Alice! Nice to meet you. How can I help you today?"),
                   _message("user", "What is my name?")]},
        False, None, ["output", "completed"],
    ),
}  # fmt: skip


def _sse_events(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The runner's SSE reading: each `data:` line but `[DONE]`, JSON-parsed and validated."""
    events: list[dict[str, Any]] = []
    errors: list[str] = []
    for line in text.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        try:
            event = json.loads(line[5:].strip())
        except json.JSONDecodeError:
            errors.append(f"Failed to parse event data: {line}")
            continue
        events.append(event)
        errors += [f"{event.get('type')}: {problem}" for problem in event_problems(event)]
    return events, errors


def _function_call_event_errors(events: list[dict[str, Any]]) -> list[str]:
    kinds = [event.get("type") for event in events]
    errors = []
    for kind in ("response.output_item.added", "response.output_item.done"):
        if not any(e.get("type") == kind and e.get("item", {}).get("type") == "function_call" for e in events):
            errors.append(f"Missing {kind} event with function_call item")
    for kind in ("response.function_call_arguments.delta", "response.function_call_arguments.done"):
        if kind not in kinds:
            errors.append(f"Missing {kind} event")
    return errors


@pytest.mark.parametrize("template_id", TEMPLATES)
def test_compliance_template(fake_gateway: Any, template_id: str) -> None:
    body, streaming, tool_call, checks = TEMPLATES[template_id]
    backend, gateway = fake_gateway()
    backend.tool_call = tool_call
    request = {"model": "gpt-4o-mini", **body, "stream": streaming}
    reply = httpx2.post(f"{gateway.base_url}/responses", json=request, headers={"Authorization": "Bearer none"},
                        timeout=30)  # fmt: skip
    assert reply.status_code == 200, f"HTTP {reply.status_code}: {reply.text}"
    errors: list[str] = []
    events: list[dict[str, Any]] = []
    if streaming:
        events, errors = _sse_events(reply.text)
        finals = [
            e for e in events if e.get("type") in ("response.completed", "response.failed", "response.incomplete")
        ]
        response = finals[-1]["response"] if finals else None
    else:
        response = reply.json()
    assert problems("ResponseResource", response) == [], "the response is not a ResponseResource"
    assert response is not None
    output = response.get("output") or []
    for check in checks:
        if check == "output" and not output:
            errors.append("Response has no output items")
        if check == "completed" and response["status"] != "completed":
            errors.append(f'Expected status "completed" but got "{response["status"]}"')
        if check == "function_call" and not any(item.get("type") == "function_call" for item in output):
            errors.append('Expected output item of type "function_call" but none found')
        if check == "events" and not events:
            errors.append("No streaming events received")
        if check == "function_call_events":
            errors += ["No streaming events received"] if not events else _function_call_event_errors(events)
    assert errors == []
