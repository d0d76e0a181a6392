"""Which names reasoning deltas stream under. The Open Responses spec names them
`response.reasoning.delta`/`.done` and defines no header for a client to send, so a client that
does not say what it is (the spec's compliance runner sends nothing) gets the spec's names; OpenAI's
clients say what they are and get OpenAI's `response.reasoning_text.*`; `OpenResponses-Version` asks
for the spec's whoever sends it. Over HTTP and over a WebSocket, on a scripted backend that reasons
(`reasoning_content` deltas, as llama.cpp and vLLM send them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from fakes import sdk
from spec_schema import event_problems
from websockets.sync.client import connect

SPEC = {"response.reasoning.delta", "response.reasoning.done"}
OPENAI = {"response.reasoning_text.delta", "response.reasoning_text.done"}
CLIENTS = {  # headers a client sends -> the names it gets
    "none (the spec's runner)": ({}, SPEC),
    "OpenResponses-Version": ({"OpenResponses-Version": "2026-04-24"}, SPEC),
    "an OpenAI SDK": ({"X-Stainless-Lang": "js", "X-Stainless-Package-Version": "6.10.0"}, OPENAI),
    "an OpenAI SDK asking for the spec": ({"X-Stainless-Lang": "python", "OpenResponses-Version": "latest"}, SPEC),
    "Codex CLI": ({"originator": "codex_exec", "User-Agent": "codex_exec/0.169.0"}, OPENAI),
    # as the pinned `ai` 7.0.173 with @ai-sdk/openai 4.0.118 sends it (tests/clients/package.json)
    "the Vercel AI SDK": ({"User-Agent": "ai/7.0.173 ai-sdk-provider-utils/5.0.81 node.js/v20.20.2"}, OPENAI),
}


def _reasoning_kinds(kinds: list[str]) -> set[str]:
    return {kind for kind in kinds if kind.startswith("response.reasoning")}


@pytest.mark.parametrize("client", CLIENTS)
def test_a_stream_names_reasoning_as_its_client_reads(fake_gateway: Callable[..., Any], client: str) -> None:
    headers, names = CLIENTS[client]
    backend, gateway = fake_gateway()
    backend.reasoning = "Five numbers, one per line."
    body = {"model": "m", "input": "Count from 1 to 5.", "stream": True}
    reply = httpx2.post(f"{gateway.base_url}/responses", json=body, headers=headers, timeout=30)
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
    assert events[-1]["type"] == "response.completed"
    assert _reasoning_kinds([event["type"] for event in events]) == names
    if names == SPEC:  # what the spec's runner checks: every event in the spec's union
        assert [problem for event in events for problem in event_problems(event)] == []


def test_the_openai_sdk_reads_its_own_names_without_a_header(fake_gateway: Callable[..., Any]) -> None:
    backend, gateway = fake_gateway()
    backend.reasoning = "Five numbers, one per line."
    kinds = [event.type for event in sdk(gateway).responses.create(model="m", input="hi", stream=True)]
    assert _reasoning_kinds(kinds) == OPENAI


@pytest.mark.parametrize("client", ["none (the spec's runner)", "an OpenAI SDK"])
def test_a_websocket_names_reasoning_as_its_client_reads(fake_gateway: Callable[..., Any], client: str) -> None:
    headers, names = CLIENTS[client]
    backend, gateway = fake_gateway()
    backend.reasoning = "Three numbers."
    kinds = []
    with connect(gateway.base_url.replace("http", "ws", 1) + "/responses", additional_headers=headers) as socket:
        socket.send(json.dumps({"type": "response.create", "model": "m", "input": "Count from 1 to 3."}))
        while not kinds or kinds[-1] not in ("response.completed", "response.failed", "error"):
            kinds.append(json.loads(socket.recv(timeout=30))["type"])
    assert kinds[-1] == "response.completed"
    assert _reasoning_kinds(kinds) == names
