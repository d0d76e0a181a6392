"""The gateway as a server in the library's chain: server spans parent the chat spans, retries,
the opt-in validation, a client gone mid-stream, graceful shutdown."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fakes import sdk
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from so_middleware.gateway import SQLiteStore

PERSON = {"type": "json_schema", "name": "Person", "strict": True, "schema": {
    "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"], "additionalProperties": False}}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_server_spans_parent_the_chat_spans(fake_gateway: Any, stream: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _, gateway = fake_gateway(tracer_provider=provider)
    client = sdk(gateway)
    if stream:
        list(client.responses.create(model="m", input="hi", stream=True))
    else:
        client.responses.create(model="m", input="hi")
    client.close()
    deadline = time.monotonic() + 5
    while len(exporter.get_finished_spans()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    spans = exporter.get_finished_spans()
    [server] = [s for s in spans if s.kind == SpanKind.SERVER]
    [chat] = [s for s in spans if s.name.startswith("chat")]
    assert server.name == "POST /v1/responses"
    assert chat.parent is not None and chat.parent.span_id == server.context.span_id
    assert chat.context.trace_id == server.context.trace_id


def test_without_a_tracer_provider_no_server_span_wraps_the_run() -> None:
    """No tracer provider (none given, none set globally): the run's events are not wrapped in a
    span that would record nothing; with one, they are."""
    from opentelemetry.trace import NoOpTracerProvider

    from so_middleware.gateway._telemetry import server_span

    async def events() -> Any:
        yield {"type": "response.created"}

    run = events()
    assert server_span(None, "POST /v1/responses").wrap(run) is run
    assert server_span(NoOpTracerProvider(), "POST /v1/responses").wrap(run) is run
    assert server_span(TracerProvider(), "POST /v1/responses").wrap(run) is not run


def test_transient_backend_errors_are_retried(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway(max_attempts=3)
    backend.error = (503, {"error": {"message": "busy", "type": "server_error", "param": None, "code": None}})

    def recover() -> None:
        while len(backend.raw_bodies) < 1:
            time.sleep(0.01)
        backend.error = None

    import threading

    threading.Thread(target=recover).start()
    reply = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": "hi"}, timeout=30)
    assert reply.status_code == 200 and len(backend.raw_bodies) == 2


def test_output_is_passed_through_unvalidated_by_default(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.replies = ['{"name": "Ada"}']
    reply = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", "text": {"format": PERSON}})
    assert reply.json()["output"][0]["content"][0]["text"] == '{"name": "Ada"}'
    assert len(backend.raw_bodies) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_validate_mode_re_asks_until_the_schema_holds(fake_gateway: Any, stream: bool) -> None:
    backend, gateway = fake_gateway(validate=True)
    backend.replies = ['{"name": "Ada"}']  # age missing: invalid, then the valid default
    client = sdk(gateway)
    body: Any = {"model": "m", "input": "Ada, 36", "text": {"format": PERSON}}
    if stream:
        events = list(client.responses.create(**body, stream=True))
        text = events[-1].response.output_text
    else:
        text = client.responses.create(**body).output_text
    assert json.loads(text) == {"name": "Ada Lovelace", "age": 36}
    assert len(backend.raw_bodies) == 2
    client.close()


def test_a_client_gone_mid_stream_closes_the_backend_stream(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.chunk_delay, backend.pieces = 0.1, 200
    with httpx2.stream("POST", f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", "stream": True},
                       timeout=30) as reply:  # fmt: skip
        lines = reply.iter_lines()
        assert any("response.output_text.delta" in line for line in lines)
    deadline = time.monotonic() + 10
    while backend.streams_closed_early == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (backend.streams_closed_early, backend.streams_finished) == (1, 0)


def test_graceful_shutdown_cancels_background_runs(fake_gateway: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "responses.db")
    backend, gateway = fake_gateway(store=path)
    backend.chunk_delay, backend.pieces = 0.2, 100
    started = httpx2.post(
        f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", "background": True}
    ).json()
    while httpx2.get(f"{gateway.base_url}/responses/{started['id']}").json()["status"] == "queued":
        time.sleep(0.05)
    gateway.stop()
    assert backend.streams_closed_early == 1

    async def stored_status() -> str:
        store = SQLiteStore(path)
        await store.open()
        stored = await store.get(started["id"])
        await store.close()
        assert stored is not None
        return str(stored.response["status"])

    assert anyio.run(stored_status) == "cancelled"
