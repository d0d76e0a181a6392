"""The Open Responses compliance runner (`bin/compliance-test.ts` over `src/lib/compliance-tests.ts` and
`src/lib/sse-parser.ts` of the public repository openresponses/openresponses), ported to Python: its
templates of commits 0cb939ccf839234347b4f0c317569b49fad8fd0e and 18e565604fdf7a08ad3a06bbc30d1ddaee999ea4
(each has one the other lacks: `tool-calling-streaming`; `function-call-roundtrip`, `file-input`,
`previous-response-id`), with the same ids, request bodies, headers and checks, all run at once as its
`runAllTests` runs them.

Why a port: the runner is published on no package registry (it runs from a checkout of that repository
under bun), and this project's tests take third-party code from package registries only. What it checks,
checked the same way here:
- a status outside 200-299 fails the test with `HTTP <status>: <body>`;
- the answer (streamed: the `response` of the last `response.completed`/`.failed`/`.incomplete` event)
  validates as a `ResponseResource` (the runner's zod schemas are generated from the same OpenAPI,
  tests/gateway/spec/openapi.json; zod objects, like these JSON schemas, admit fields they do not name);
- streamed, the body is read as its SSE parser reads it: lines split on `\\n` alone, an event dispatched at
  an empty line, the last `data:` line its data, `[DONE]` skipped (so a stream framed with `\\r\\n` has no
  events); every event validates as one of the
  spec's streaming events (a type outside the spec is an error) and there is at least one;
- each template's validators: output present, status "completed", an output item of a type, the
  function-call events of a streamed tool call; the two-request templates check their second answer.
Its two optional templates (`file-search`, `offline-web-search`) run only when given a vector store or
asked for offline web search, which the gateway, a Chat Completions front, has neither of: not ported.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).parents[1] / "gateway"))  # spec_schema and the spec live there
from spec_schema import event_problems, problems

MODEL = "gpt-4o-mini"  # the runner's default `--model`
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
# a 32x32 PNG (a red heart on white) and a one-page PDF, as data URLs, as the templates send them
HEART_PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAABmklEQVR42tyWAaTyUBzFew/eG4AHz+MBSAHKBiJRGFKw"
    "IgQQJKLUIioBIhCAiCAAEizAQIAECaASqFFJq84nudjnaqvuPnxzgP9xfrq5938csPn7PwHTKSoViCIEAYEAMhmoKsU2mUCWEQqB5xEMIp/HaGQG"
    "2G6RSuH9HQ7H34rFrtPbdz4jl6PbwmEsl3QA1mt4vcRKk8dz9eg6IpF7tt9fzGY0gCgafFRFo5Blc5vLhf3eCOj1yNhM5GRMVK0aATxPZoz09YXj"
    "kQDmczJgquGQAPp9WwCNBgG027YACgUC6HRsAZRKBDAY2AJoNv/ZnwzA6WScznG3p4UAymXGAEkyXrTFAh8fLAGqagQAyGaZpYsi7bHTNPz8MEj/"
    "/LxuFPo+UBS8vb0KaLXubrRa7aX0RMLCykwmn0z3+XA4WACcTpCkh9MFAZpmuVXo+mO/w+/HZvNgbblcUCxaSo/Hyck80Yu6XXDcvfVZr79cvMZj"
    "uN2U9O9vKAqjZrfbIZ0mV4TUi9Xqz6jddNy//7+e3n8Fhf/Llo2kxi8AQyGRoDkmAhAAAAAASUVORK5CYII="
)
FIXTURE_PDF = (
    "data:application/pdf;base64,JVBERi0xLjEKMSAwIG9iago8PCAvVHlwZSAvQ2F0YWxvZyAvUGFnZXMgMiAwIFIgPj4KZW5kb2JqCjIgMCBv"
    "YmoKPDwgL1R5cGUgL1BhZ2VzIC9LaWRzIFszIDAgUl0gL0NvdW50IDEgPj4KZW5kb2JqCjMgMCBvYmoKPDwgL1R5cGUgL1BhZ2UgL1BhcmVudCAy"
    "IDAgUiAvTWVkaWFCb3ggWzAgMCAzMDAgMTQ0XSAvQ29udGVudHMgNCAwIFIgL1Jlc291cmNlcyA8PCAvRm9udCA8PCAvRjEgNSAwIFIgPj4gPj4g"
    "Pj4KZW5kb2JqCjQgMCBvYmoKPDwgL0xlbmd0aCA3NCA+PgpzdHJlYW0KQlQKL0YxIDEyIFRmCjcyIDcyIFRkCihUaXRsZTogT3BlblJlc3BvbnNl"
    "cyBGaWxlIElucHV0IEZpeHR1cmUpIFRqCkVUCmVuZHN0cmVhbQplbmRvYmoKNSAwIG9iago8PCAvVHlwZSAvRm9udCAvU3VidHlwZSAvVHlwZTEg"
    "L0Jhc2VGb250IC9IZWx2ZXRpY2EgPj4KZW5kb2JqCnRyYWlsZXIKPDwgL1Jvb3QgMSAwIFIgPj4KJSVFT0Y="
)
WEATHER_QUESTION = "What's the weather like in San Francisco?"


def _message(role: str, content: Any) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": content}


@dataclass
class Sse:
    """What the runner's `parseSSEStream` returns: the events, the errors, the final response."""

    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    final: Any = None


def parse_sse(body: str) -> Sse:
    """The runner's SSE reading of a whole body (see the module docstring): what follows the last `\n` is
    a line still being read, never read as one. (The runner also forgets a half-dispatched event when its
    `data:` line and the empty line come in two reads of the socket; a whole body has no reads to mirror.)"""
    parsed, data = Sse(), ""
    for line in body.split("\n")[:-1]:
        if line.startswith("data:"):
            data = line[5:].strip()
        elif line == "" and data:
            if data != "[DONE]":
                try:
                    event = json.loads(data)
                except json.JSONDecodeError:
                    parsed.errors.append(f"Failed to parse event data: {data}")
                else:
                    parsed.events.append(event)
                    found = event_problems(event) if isinstance(event, dict) else ["not an object"]
                    parsed.errors += [f"Event validation failed for {event.get('type')}: {p}" for p in found]
                    if event.get("type") in ("response.completed", "response.failed", "response.incomplete"):
                        parsed.final = event.get("response")
            data = ""
    return parsed


Validator = Callable[[dict[str, Any], "Sse | None"], list[str]]


def has_output(response: dict[str, Any], sse: Sse | None) -> list[str]:
    return [] if response.get("output") else ["Response has no output items"]


def completed(response: dict[str, Any], sse: Sse | None) -> list[str]:
    status = response.get("status")
    return [] if status == "completed" else [f'Expected status "completed" but got "{status}"']


def has_output_type(kind: str) -> Validator:
    def check(response: dict[str, Any], sse: Sse | None) -> list[str]:
        found = any(item.get("type") == kind for item in response.get("output") or [])
        return [] if found else [f'Expected output item of type "{kind}" but none found']

    return check


def streaming_events(response: dict[str, Any], sse: Sse | None) -> list[str]:
    return [] if sse is None or sse.events else ["No streaming events received"]


def streaming_schema(response: dict[str, Any], sse: Sse | None) -> list[str]:
    return [] if sse is None else sse.errors


def function_call_events(response: dict[str, Any], sse: Sse | None) -> list[str]:
    if sse is None:
        return []
    kinds = [event.get("type") for event in sse.events]
    errors = []
    for kind in ("response.output_item.added", "response.function_call_arguments.delta",
                 "response.function_call_arguments.done", "response.output_item.done"):  # fmt: skip
        items = [e for e in sse.events if e.get("type") == kind and e.get("item", {}).get("type") == "function_call"]
        if kind.startswith("response.output_item") and not items:
            errors.append(f"Missing {kind} event with function_call item")
        elif kind.startswith("response.function_call") and kind not in kinds:
            errors.append(f"Missing {kind} event")
    return errors


@dataclass
class Template:
    """One runner test: its first request, streamed or not; `second` makes the follow-up request from
    the first answer (the two-request templates); `validators` check the last answer."""

    request: dict[str, Any]
    validators: list[Validator]
    streaming: bool = False
    second: Callable[[dict[str, Any]], dict[str, Any] | str] | None = None


def _after_call(first: dict[str, Any]) -> dict[str, Any] | str:
    call = next((item for item in first.get("output") or [] if item.get("type") == "function_call"), None)
    if call is None or "call_id" not in call:
        return "First response did not include a function_call with call_id"
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "64 degrees and clear"}
    return {"model": MODEL, "previous_response_id": first.get("id"), "input": [output]}


TEMPLATES: dict[str, Template] = {
    "basic-response": Template({"model": MODEL, "input": [_message("user", "Say hello in exactly 3 words.")]},
                               [has_output, completed]),
    "streaming-response": Template({"model": MODEL, "input": [_message("user", "Count from 1 to 5.")]},
                                   [streaming_events, streaming_schema, completed], streaming=True),
    "system-prompt": Template({"model": MODEL, "input": [
        _message("system", "You are a pirate. Always respond in pirate speak."), _message("user", "Say hello.")]},
                              [has_output, completed]),
    "tool-calling": Template({"model": MODEL, "input": [_message("user", WEATHER_QUESTION)], "tools": [WEATHER_TOOL]},
                             [has_output, has_output_type("function_call")]),
    "tool-calling-streaming": Template(
        {"model": MODEL, "input": [_message("user", WEATHER_QUESTION)], "tools": [WEATHER_TOOL]},
        [streaming_events, streaming_schema, function_call_events], streaming=True),
    "function-call-roundtrip": Template(
        {"model": MODEL, "input": "Use the weather tool to get the temperature in San Francisco.",
         "tools": [WEATHER_TOOL], "tool_choice": {"type": "function", "name": "get_weather"}},
        [has_output, completed], second=_after_call),
    "image-input": Template({"model": MODEL, "input": [_message("user", [
        {"type": "input_text", "text": "What do you see in this image? Answer in one sentence."},
        {"type": "input_image", "image_url": HEART_PNG}])]}, [has_output, completed]),
    "file-input": Template({"model": MODEL, "input": [_message("user", [
        {"type": "input_text", "text": "Read the attached file and answer with its title only."},
        {"type": "input_file", "filename": "openresponses-fixture.pdf", "file_data": FIXTURE_PDF}])]},
                           [has_output, completed]),
    "multi-turn": Template({"model": MODEL, "input": [
        _message("user", "My name is Alice."),
        _message("assistant", "Hello Alice! Nice to meet you. How can I help you today?"),
        _message("user", "What is my name?")]}, [has_output, completed]),
    "previous-response-id": Template(
        {"model": MODEL, "input": "Remember this code word: papaya. Reply with only OK."}, [has_output, completed],
        second=lambda first: {"model": MODEL, "previous_response_id": first.get("id"),
                              "input": "What code word did I ask you to remember?"}),
}  # fmt: skip


async def _answer(client: httpx2.AsyncClient, base_url: str, body: dict[str, Any], streaming: bool) -> Any:
    """(final answer, SSE or None), or the errors that fail the test."""
    reply = await client.post(f"{base_url}/responses", json={**body, "stream": streaming},
                              headers={"Authorization": "Bearer none"})  # fmt: skip
    if not 200 <= reply.status_code < 300:
        return [f"HTTP {reply.status_code}: {reply.text}"]
    sse = parse_sse(reply.text) if streaming else None
    answer = sse.final if sse is not None else reply.json()
    found = [f"ResponseResource {p}" for p in problems("ResponseResource", answer)]
    return found or (answer, sse)


async def run_test(client: httpx2.AsyncClient, base_url: str, template: Template) -> list[str]:
    """The errors of one template (none: it passed)."""
    got = await _answer(client, base_url, template.request, template.streaming)
    if isinstance(got, list):
        return got
    if template.second is not None:
        follow_up = template.second(got[0])
        if isinstance(follow_up, str):
            return [follow_up]
        got = await _answer(client, base_url, follow_up, False)
        if isinstance(got, list):
            return got
    answer, sse = got
    return [error for validator in template.validators for error in validator(answer, sse)]


async def run_all(base_url: str, ids: list[str] | None = None) -> dict[str, list[str]]:
    """Every template (or those of IDS) at once against the Responses API at BASE_URL: id -> errors."""
    chosen = {name: TEMPLATES[name] for name in ids or TEMPLATES}
    async with httpx2.AsyncClient(timeout=60) as client:

        async def one(template: Template) -> list[str]:
            try:
                return await run_test(client, base_url, template)
            except Exception as error:  # the runner reports a thrown error as the test's one error
                return [f"{type(error).__name__}: {error}"]

        runs: list[Awaitable[list[str]]] = [one(template) for template in chosen.values()]
        return dict(zip(chosen, await asyncio.gather(*runs), strict=True))
