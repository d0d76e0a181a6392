"""The Open Responses compliance runner's WebSocket tests, ported: the same requests and the same checks,
against the gateway over the scripted backend on a real socket (the `websockets` client, with the key in
the upgrade's Authorization header as the runner sends it). Every event is checked against the spec's
OpenAPI, every turn ends on a terminal event or the spec's error envelope."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from scripted import ScriptedChatBackend
from spec_tap import event_problems, response_problems
from websockets.sync.client import connect

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer

MODEL = "gpt-4o-mini"  # the runner's default `--model`
KEY = "runner-key"
TERMINAL = ("response.completed", "response.failed", "response.incomplete")


@dataclass
class Turn:
    """What one `response.create` got back, as the runner records it."""

    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    final: dict[str, Any] | None = None
    error_code: str | None = None
    error_event: dict[str, Any] | None = None


Step = dict[str, Any] | Callable[[list[Turn]], dict[str, Any]]


def session(url: str, steps: list[Step]) -> list[Turn]:
    """One socket, the steps sent one after another, each when the previous turn ended."""
    turns: list[Turn] = []
    with connect(url, additional_headers={"Authorization": f"Bearer {KEY}"}, open_timeout=10) as ws:
        for step in steps:
            body = step(turns) if callable(step) else step
            turn = Turn()
            turns.append(turn)
            ws.send(json.dumps(body))
            while True:
                event = json.loads(ws.recv(timeout=30))
                turn.events.append(event)
                if event.get("type") != "error":
                    turn.errors += [f"{event.get('type')}: {p}" for p in event_problems(event)]
                if event.get("type") in TERMINAL:
                    turn.final = event["response"]
                    break
                code = (event.get("error") or {}).get("code") if isinstance(event.get("error"), dict) else None
                if event.get("type") == "error" or code:
                    turn.error_code, turn.error_event = code, event
                    if not code:
                        turn.errors.append(f"WebSocket error event: {event}")
                    break
    return turns


def checked(turn: Turn) -> list[str]:
    """The runner's validators of a streamed turn: events came, the response fits the spec, it completed."""
    if turn.final is None:
        return [*turn.errors, "no terminal response"]
    errors = list(turn.errors) + response_problems(turn.final)
    if not turn.events:
        errors.append("No streaming events received")
    if turn.final.get("status") != "completed":
        errors.append(f"Expected status 'completed' but got '{turn.final.get('status')}'")
    return errors


def code_of(turn: Turn) -> str | None:
    if turn.error_code:
        return turn.error_code
    error = (turn.final or {}).get("error")
    return error.get("code") if isinstance(error, dict) else None


def create(**fields: Any) -> dict[str, Any]:
    return {"type": "response.create", "model": MODEL, **fields}


def previous(turns: list[Turn], **fields: Any) -> dict[str, Any]:
    assert turns[0].final is not None, "First WebSocket turn did not return a response id"
    return create(store=False, previous_response_id=turns[0].final["id"], **fields)


@pytest.fixture
def url() -> Iterator[str]:
    backend = ScriptedChatBackend(calls=[])  # text answers: none of these tests asks for a tool
    with AppServer(backend.app()) as backend_server:
        config = GatewayConfig(backend_url=backend_server.base_url, api_keys=[KEY], max_attempts=1)
        with AppServer(create_app(config)) as gateway:
            yield f"ws://{gateway.host}:{gateway.port}/v1/responses"


def _text(role: str, kind: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def test_websocket_response(url: str) -> None:
    message = {"type": "message", "role": "user", "content": "Count from 1 to 3."}
    [turn] = session(url, [create(input=[message])])
    assert checked(turn) == []


def test_websocket_sequential_responses(url: str) -> None:
    turns = session(url, [create(store=False, input="Reply with exactly: first"),
                          create(store=False, input="Reply with exactly: second")])  # fmt: skip
    assert [checked(turn) for turn in turns] == [[], []]
    assert turns[0].final and turns[1].final and turns[0].final["id"] != turns[1].final["id"]


def test_websocket_continuation(url: str) -> None:
    first, second = session(url, [
        create(store=False, input="Remember the code word: cobalt. Reply with OK."),
        lambda turns: previous(turns, input="What is the code word? Reply with only the code word."),
    ])  # fmt: skip
    assert checked(first) == [] and checked(second) == []


def test_websocket_reconnect_store_false_recovery(url: str) -> None:
    [first] = session(url, [create(store=False, input="Remember the code word: copper. Reply with OK.")])
    assert checked(first) == [] and first.final is not None
    recovery_input = [{"type": "message", "role": "user", "content": "Start a new response; reply: recovered"}]
    reconnect, recovery = session(url, [
        create(store=False, previous_response_id=first.final["id"], input="Reply with exactly: reconnected"),
        create(store=False, input=recovery_input),
    ])  # fmt: skip
    assert reconnect.errors == [] and code_of(reconnect) == "previous_response_not_found"
    assert checked(recovery) == []


def test_websocket_previous_response_not_found(url: str) -> None:
    missing = f"resp_openresponses_missing_{int(time.time() * 1000)}"
    [turn] = session(url, [create(store=False, previous_response_id=missing, input="This should fail.")])
    assert turn.errors == [] and code_of(turn) == "previous_response_not_found"


def test_websocket_failed_continuation_evicts_cache(url: str) -> None:
    output = {"type": "function_call_output", "call_id": "call_openresponses_missing", "output": "No such call."}
    first, failed, retry = session(url, [
        create(store=False, input="Remember the code word: ember. Reply with OK."),
        lambda turns: previous(turns, input=[output]),
        lambda turns: previous(turns, input="Try to continue after the failed turn. Reply with exactly: stale"),
    ])  # fmt: skip
    assert checked(first) == []
    assert failed.error_event is not None or code_of(failed) or (failed.final or {}).get("status") == "failed"
    assert retry.errors == [] and code_of(retry) == "previous_response_not_found"


def test_websocket_compact_new_chain(url: str) -> None:
    """`/responses/compact`'s output, passed back as is, is the base input of a new chain on a socket
    (no `previous_response_id`)."""
    window = [_text("user", "input_text", "Remember the compaction code word: slate."),
              _text("assistant", "output_text", "OK."),
              _text("user", "input_text", "Compress this conversation for later continuation.")]  # fmt: skip
    compact_url = url.replace("ws://", "http://", 1) + "/compact"
    reply = httpx2.post(compact_url, json={"model": MODEL, "input": window},
                        headers={"Authorization": f"Bearer {KEY}"}, timeout=30)  # fmt: skip
    assert reply.status_code == 200, reply.text
    output = reply.json().get("output")
    assert isinstance(output, list), "Compaction response did not include an output array"
    follow_up = {"type": "message", "role": "user", "content": "Continue from here. Reply with exactly: compacted"}
    [turn] = session(url, [create(store=False, input=[*output, follow_up], tools=[])])
    assert checked(turn) == []
