"""The Open Responses compliance runner's tests (ported: open_responses_runner.py), all at once against the
gateway over the scripted backend; the fixture's tap checks every answer and streamed event against the
spec's OpenAPI besides. Positive controls: a gateway whose answers lose a field, or whose stream is framed
with CRLF line ends, fails the runner's tests that read them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx2
from open_responses_runner import TEMPLATES, parse_sse, run_all
from scripted import ScriptedChatBackend
from spec_schema import problems

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer


def test_every_runner_test_passes_against_the_gateway(scripted: Any) -> None:
    backend, gateway = scripted
    results = asyncio.run(run_all(gateway.base_url))
    assert set(results) == set(TEMPLATES)
    failed = {name: errors for name, errors in results.items() if errors}
    assert failed == {}, json.dumps(failed, indent=1)[:4000]
    sent = [body for body in gateway.app.requests if body.get("previous_response_id")]
    assert len(sent) == 2  # the two-request templates sent their follow-ups
    tool_results = backend.tool_results()
    assert tool_results == ["64 degrees and clear"]  # the round trip's output reached the backend


def test_every_runner_test_passes_over_a_backend_that_reasons(scripted: Any) -> None:
    """The runner sends no `OpenResponses-Version` (the spec defines none) and accepts only the spec's
    event names: reasoning (`reasoning_content` from the backend) streams to it as `response.reasoning.*`."""
    backend, gateway = scripted
    backend.reasoning = "Answer as asked, then stop."
    results = asyncio.run(run_all(gateway.base_url))
    failed = {name: errors for name, errors in results.items() if errors}
    assert failed == {}, json.dumps(failed, indent=1)[:4000]
    streamed = b"".join(body for _, kind, body in gateway.app.answers if kind.startswith("text/event-stream"))
    assert b"event: response.reasoning.delta" in streamed and b"response.reasoning_text" not in streamed


class _Broken:
    """ASGI middleware that rewrites each whole answer body of the Responses routes with `change`."""

    def __init__(self, app: Any, change: Callable[[bytes, str], bytes]) -> None:
        self.app, self.change = app, change

    @property
    def state(self) -> Any:
        return self.app.state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        body = bytearray()

        async def hold(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            headers = dict(start.get("headers") or [])
            changed = self.change(bytes(body), headers.get(b"content-type", b"").decode())
            kept = [(k, v) for k, v in start.get("headers") or [] if k != b"content-length"]
            await send({**start, "headers": [*kept, (b"content-length", str(len(changed)).encode())]})
            await send({"type": "http.response.body", "body": changed})

        await self.app(scope, receive, hold)


def _run_against(
    change: Callable[[bytes, str], bytes], backend: ScriptedChatBackend | None = None
) -> dict[str, list[str]]:
    backend = backend or ScriptedChatBackend()
    with AppServer(backend.app()) as backend_server:
        app = create_app(GatewayConfig(backend_url=backend_server.base_url, max_attempts=1))
        with AppServer(_Broken(app, change)) as gateway:
            return asyncio.run(run_all(gateway.base_url))


def _without_tools(body: bytes, kind: str) -> bytes:
    if not kind.startswith("application/json"):
        return body
    answer = json.loads(body)
    answer.pop("tools", None)
    return json.dumps(answer).encode()


def test_the_runner_fails_a_response_without_a_required_field() -> None:
    results = _run_against(_without_tools)
    plain = [name for name, template in TEMPLATES.items() if not template.streaming]
    for name in plain:
        assert any("'tools' is a required property" in error for error in results[name]), (name, results[name])
    assert results["streaming-response"] == [] and results["tool-calling-streaming"] == []


def test_the_runner_fails_a_stream_framed_with_crlf() -> None:
    """The runner dispatches an event at an empty line of a body split on `\\n` alone: it reads no event,
    so no final response (and stops there, as it does at any schema error)."""
    results = _run_against(lambda body, kind: body.replace(b"\n", b"\r\n") if "event-stream" in kind else body)
    for name in ("streaming-response", "tool-calling-streaming"):
        assert results[name] == ["ResponseResource : None is not of type 'object'"], results[name]
    assert results["basic-response"] == []


def test_the_runner_reads_an_unknown_or_broken_event_as_an_error() -> None:
    sse = parse_sse('data: {"type": "response.made_up"}\n\ndata: {not json\n\ndata: [DONE]\n\n')
    assert len(sse.events) == 1 and sse.final is None
    assert sse.errors[0].startswith("Event validation failed for response.made_up")
    assert sse.errors[1] == "Failed to parse event data: {not json"


def test_the_runner_fails_a_model_that_calls_no_tool() -> None:
    """The same gateway over a backend that only ever answers in text: the tool templates fail, each with
    the runner's own reason, and the rest pass."""
    results = _run_against(lambda body, kind: body, ScriptedChatBackend(calls=[]))
    assert results["tool-calling"] == ['Expected output item of type "function_call" but none found']
    assert results["function-call-roundtrip"] == ["First response did not include a function_call with call_id"]
    assert results["tool-calling-streaming"] == [
        "Missing response.output_item.added event with function_call item",
        "Missing response.function_call_arguments.delta event",
        "Missing response.function_call_arguments.done event",
        "Missing response.output_item.done event with function_call item",
    ]
    assert [name for name, errors in results.items() if errors] == [
        "tool-calling", "tool-calling-streaming", "function-call-roundtrip"]  # fmt: skip


# The runner's templates of the 2026-04-24 line (`compact-response`, `compact-missing-model`,
# `assistant-phase`) with their request bodies and checks; the WebSocket ones are ported beside the
# gateway's WebSocket mode.
COMPACT_INPUT = [
    {"type": "message", "role": "user", "content": "We agreed to launch on Tuesday and notify support first."},
    {"type": "message", "role": "assistant",
     "content": "Understood. The launch is Tuesday, with support notified beforehand."},
]  # fmt: skip
PHASE_INPUT = [
    {
        "type": "message",
        "role": "assistant",
        "phase": "commentary",
        "content": "I should answer with the saved number.",
    },
    {"type": "message", "role": "assistant", "phase": "final_answer", "content": "The number is four."},
    {"type": "message", "role": "user", "content": "Repeat only the number."},
]


def _post(gateway: Any, path: str, body: dict[str, Any]) -> Any:
    return httpx2.post(f"{gateway.base_url}{path}", json=body, headers={"Authorization": "Bearer none"}, timeout=60)


def test_compact_response(scripted: Any) -> None:
    _, gateway = scripted
    body = {"model": "gpt-4o-mini", "prompt_cache_key": "openresponses-compact-test", "input": COMPACT_INPUT}
    reply = _post(gateway, "/responses/compact", body)
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["object"] == "response.compaction" and isinstance(answer["created_at"], int)
    assert isinstance(answer["id"], str) and isinstance(answer["usage"]["total_tokens"], int)
    assert [item["type"] for item in answer["output"]] == ["compaction"]
    assert all(isinstance(item["encrypted_content"], str) for item in answer["output"])


def test_compact_missing_model(scripted: Any) -> None:
    _, gateway = scripted
    reply = _post(gateway, "/responses/compact", {"input": [{"type": "message", "role": "user",
                                                              "content": "Compact this conversation."}]})  # fmt: skip
    assert reply.status_code in (400, 422), reply.text


def test_assistant_phase(scripted: Any) -> None:
    _, gateway = scripted
    reply = _post(gateway, "/responses", {"model": "gpt-4o-mini", "input": PHASE_INPUT})
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["status"] == "completed" and answer["output"]
    assert problems("ResponseResource", answer) == []


def _phase_fixture() -> dict[str, Any]:
    """The runner's `response-output-phase-schema` fixture: a completed response of two assistant
    messages, one per `phase`."""

    def message(phase: str, text: str) -> dict[str, Any]:
        return {"id": f"msg_phase_{phase.split('_')[0]}", "type": "message", "status": "completed",
                "role": "assistant", "phase": phase,
                "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip

    return {
        "id": "resp_phase_schema", "object": "response", "created_at": 1764967971, "completed_at": 1764967972,
        "status": "completed", "incomplete_details": None, "model": "gpt-4o-mini", "previous_response_id": None,
        "instructions": None,
        "output": [message("commentary", "I am checking the answer."), message("final_answer", "The answer is four.")],
        "error": None, "tools": [], "tool_choice": "auto", "truncation": "disabled", "parallel_tool_calls": True,
        "text": {"format": {"type": "text"}}, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0,
        "top_logprobs": 0, "temperature": 1, "reasoning": {"effort": None, "summary": None},
        "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        "max_output_tokens": None, "max_tool_calls": None, "store": True, "background": False,
        "service_tier": "default", "metadata": {}, "safety_identifier": None, "prompt_cache_key": None,
    }  # fmt: skip


def test_response_output_phase_schema() -> None:
    """The runner's one template that sends no request: its fixture validates as the spec's
    `ResponseResource` (the OpenAPI the gateway's answers are checked against) and carries both phases.
    The gateway's own phases are `tests/gateway/test_gateway_phase.py`'s."""
    answer = _phase_fixture()
    assert problems("ResponseResource", answer) == []
    assert answer["status"] == "completed" and answer["output"]
    phases = {
        item.get("phase") for item in answer["output"] if item["type"] == "message" and item["role"] == "assistant"
    }
    assert phases == {"commentary", "final_answer"}
    answer["output"][0]["phase"] = "thinking"  # a label outside the spec's two: the schema refuses it
    assert problems("ResponseResource", answer) != []


# The runner's 17 templates at the 2026-04-24 line (bin/compliance-test.ts, src/lib/compliance-tests.ts).
LINE_2026_04_24 = (
    "basic-response", "assistant-phase", "response-output-phase-schema", "streaming-response",
    "websocket-response", "websocket-sequential-responses", "websocket-continuation",
    "websocket-reconnect-store-false-recovery", "websocket-previous-response-not-found",
    "websocket-failed-continuation-evicts-cache", "websocket-compact-new-chain", "system-prompt",
    "tool-calling", "image-input", "multi-turn", "compact-response", "compact-missing-model",
)  # fmt: skip


def test_every_template_of_the_2026_04_24_line_is_ported() -> None:
    """What docs/tests-and-benchmarks.md says: each of the 17 runs in `make test`, either among the older
    templates run all at once or as a test of its own name here or in the WebSocket port."""
    import test_open_responses_websocket as websocket_port

    own = {name for module in (globals(), vars(websocket_port)) for name in module if name.startswith("test_")}
    assert len(LINE_2026_04_24) == 17
    missing = [t for t in LINE_2026_04_24 if t not in TEMPLATES and f"test_{t.replace('-', '_')}" not in own]
    assert missing == []
