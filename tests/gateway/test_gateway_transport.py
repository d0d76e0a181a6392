"""How the gateway carries a request: a plain request is a plain backend call, a streamed one
streams; the SSE framing clients read; the default in-memory store stays bounded. Against the
recording fake Chat Completions backend on loopback (its replies follow the documented wire format)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import pytest
from fakes import sdk

from so_middleware import UserError
from so_middleware.gateway import GatewayConfig, SQLiteStore, _store
from so_middleware.gateway._cli import parser
from so_middleware.gateway._watch import frames


def test_a_plain_request_is_a_plain_call_to_the_backend(fake_gateway: Callable[..., Any]) -> None:
    """Before, every request was streamed from the backend (`stream: true`) even when the client
    asked for one JSON answer."""
    backend, server = fake_gateway()
    answer = sdk(server).responses.create(model="m", input="hi")
    assert answer.output_text == backend.text
    assert backend.bodies[-1].get("stream") in (None, False)
    assert answer.usage is not None and answer.usage.total_tokens == 18
    with sdk(server).responses.stream(model="m", input="hi") as events:
        assert events.get_final_response().output_text == backend.text
    assert backend.bodies[-1]["stream"] is True


# ------------------------------------------------------------ the default store is bounded


def _response(number: int) -> dict[str, Any]:
    return {"id": f"resp_{number:04d}", "object": "response", "status": "completed", "output": []}


@pytest.mark.anyio
async def test_the_memory_store_drops_the_oldest_past_its_size() -> None:
    """Before, the in-memory store kept every response for the life of the process."""
    store = SQLiteStore(max_responses=3)
    await store.open()
    try:
        for number in range(5):
            await store.put(_response(number), [])
        await store.put(_response(2), [])  # written again: now the newest
        await store.put(_response(5), [])
        kept = [number for number in range(6) if await store.get(f"resp_{number:04d}") is not None]
        assert kept == [2, 4, 5]
    finally:
        await store.close()


@pytest.mark.anyio
async def test_the_memory_store_drops_what_is_older_than_its_age(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(_store.time, "time", lambda: clock[0])
    store = SQLiteStore(max_age=60.0)
    await store.open()
    try:
        await store.put(_response(0), [])
        clock[0] += 30
        await store.put(_response(1), [])
        clock[0] += 31  # 61 s after the first write, 31 after the second
        await store.put(_response(2), [])
        assert await store.get("resp_0000") is None
        assert await store.get("resp_0001") is not None
        assert await store.get("resp_0002") is not None
    finally:
        await store.close()


def test_the_gateway_default_store_is_bounded(fake_gateway: Callable[..., Any]) -> None:
    """The defaults the README states, and a gateway whose size bound is 2 forgets its third-newest response."""
    config = GatewayConfig(backend_url="http://127.0.0.1:1/v1")
    assert (config.memory_store_size, config.memory_store_age) == (10_000, 3600.0)
    args = parser().parse_args(["--memory-store-size", "2", "--memory-store-age", "90"])
    assert (args.memory_store_size, args.memory_store_age) == (2, 90.0)
    assert (parser().parse_args([]).memory_store_size, parser().parse_args([]).memory_store_age) == (10_000, 3600.0)
    _, server = fake_gateway(memory_store_size=2)
    client = sdk(server)
    ids = [client.responses.create(model="m", input="hi").id for _ in range(3)]
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(ids[0])
    assert [client.responses.retrieve(i).id for i in ids[1:]] == ids[1:]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_a_bad_memory_store_bound_is_refused(bad: Any) -> None:
    with pytest.raises(UserError, match="memory_store_size"):
        GatewayConfig(backend_url="http://127.0.0.1:1/v1", memory_store_size=bad)
    with pytest.raises(UserError, match="max_responses"):
        SQLiteStore(max_responses=bad)


# ------------------------------------------------------------ SSE bytes, written by the gateway itself


def test_a_stream_is_framed_as_server_sent_events(fake_gateway: Callable[..., Any]) -> None:
    _, server = fake_gateway()
    body = {"model": "m", "input": "hi", "stream": True}
    with httpx2.stream("POST", f"{server.base_url}/responses", json=body, timeout=30) as reply:
        raw = reply.read().decode()
    assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert "content-length" not in reply.headers and reply.headers["cache-control"] == "no-store"
    frames = raw.split("\n\n")
    assert frames[-1] == ""  # every frame ends with a blank line
    events = []
    for frame in frames[:-1]:
        name, data = frame.split("\n")
        assert name.startswith("event: ") and data.startswith("data: ")
        events.append(json.loads(data[6:]))
        assert events[-1]["type"] == name[7:]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"


def test_what_orjson_refuses_is_still_written() -> None:
    """A lone surrogate (a model's, kept as sent) and an integer past 64 bits are valid JSON to send."""
    event = {"type": "t", "text": "a\ud83db", "n": 2**70}
    (frame,) = frames([event])[:-2].split(b"\n\n")
    assert json.loads(frame.split(b"\ndata: ")[1]) == event
