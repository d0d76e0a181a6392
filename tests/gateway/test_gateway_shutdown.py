"""Stopping the gateway: every run ends in a terminal status that can be read afterwards, the SQLite
store closes only once its writes have landed, a run a killed process left `in_progress` fails at
the next start, and SIGTERM ends open streams with a terminal event instead of cutting them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fakes import FakeChatBackend, sdk
from spec_schema import OPENAI_ONLY_EVENTS, event_problems

from so_middleware.gateway import GatewayConfig, SQLiteStore, create_app
from so_middleware.gateway._runs import SHUTTING_DOWN
from so_middleware.gateway._server import AppServer, free_port

ROOT = Path(__file__).resolve().parents[2]


def _stored(path: Path, ids: list[str]) -> dict[str, str]:
    async def read() -> dict[str, str]:
        store = SQLiteStore(str(path))
        await store.open()
        try:
            found = {i: await store.get(i) for i in ids}
        finally:
            await store.close()
        return {i: s.response["status"] if s else "missing" for i, s in found.items()}

    return anyio.run(read)


@pytest.mark.parametrize("attempt", range(4))  # a race: a few tries catch it (before, it crashed 1 in 2)
def test_stopping_with_many_background_runs_on_a_dropping_backend(tmp_path: Path, attempt: int) -> None:
    """40 background runs on a backend that stalls, then drops every connection as the gateway
    stops: no crash, and each run is stored `cancelled` or `failed`, readable from the file."""
    path = tmp_path / "responses.db"
    backend = FakeChatBackend(chunk_delay=0.2, pieces=200)
    backend_server = AppServer(backend.app()).start()
    config = GatewayConfig(backend_url=backend_server.base_url, store=str(path), max_attempts=1,
                           max_background_runs=40)  # fmt: skip
    gateway = AppServer(create_app(config)).start()
    client = sdk(gateway)
    ids = [client.responses.create(model="m", input=f"run {i}", background=True).id for i in range(40)]
    deadline = time.monotonic() + 30
    while backend.open_streams < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    backend.cut = True  # every connection drops: the runs fail (and retry) while the gateway stops
    gateway.stop()
    client.close()
    backend_server.stop()
    statuses = _stored(path, ids)
    assert set(statuses.values()) <= {"cancelled", "failed"}, statuses


def test_a_run_left_in_progress_by_a_stopped_process_fails_at_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / "responses.db"

    async def leave_behind() -> None:  # what a killed gateway leaves: its last write said in_progress
        store = SQLiteStore(str(path))
        await store.open()
        for status in ("queued", "in_progress", "completed"):
            await store.put({"id": f"resp_{status}", "object": "response", "status": status, "error": None}, [])
        await store.close()

    anyio.run(leave_behind)
    backend = FakeChatBackend()
    with AppServer(backend.app()) as backend_server:
        config = GatewayConfig(backend_url=backend_server.base_url, store=str(path))
        with AppServer(create_app(config)) as gateway:
            answers = {s: httpx2.get(f"{gateway.base_url}/responses/resp_{s}", timeout=10).json()
                       for s in ("queued", "in_progress", "completed")}  # fmt: skip
    assert [answers[s]["status"] for s in ("queued", "in_progress", "completed")] == ["failed", "failed", "completed"]
    assert answers["in_progress"]["error"]["message"] == "the gateway stopped before this response finished"
    assert list(answers["completed"]) == ["id", "object", "status", "error"]  # untouched


def _gateway_process(backend_url: str, store: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "so_middleware.cli", "gateway", "--port", str(port), "--backend",
                                backend_url, "--store", str(store)], cwd=ROOT, env=dict(os.environ),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    for _ in range(300):
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process, f"http://127.0.0.1:{port}/v1"
        except httpx2.TransportError:
            if process.poll() is not None:
                break
            time.sleep(0.1)
    process.kill()
    raise AssertionError(process.communicate()[1].decode()[-2000:])


def _events(lines: Any) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in lines if line.startswith("data:")]


def _read_stream(url: str, body: dict[str, Any]) -> list[str]:
    with httpx2.stream("POST", f"{url}/responses", json=body, timeout=30) as reply:
        return list(reply.iter_lines())


def test_sigterm_ends_open_streams_with_a_terminal_event(tmp_path: Path, fake_backend: Any) -> None:
    backend, backend_server = fake_backend
    backend.chunk_delay, backend.pieces = 0.2, 200  # 40 s: it cannot finish within the grace period
    process, url = _gateway_process(backend_server.base_url, tmp_path / "responses.db")
    reader = ThreadPoolExecutor(1)
    try:
        background = httpx2.post(f"{url}/responses", json={"model": "m", "input": "hi", "background": True},
                                 timeout=10).json()  # fmt: skip
        followed = reader.submit(_read_stream, url, {"model": "m", "input": "hi", "background": True, "stream": True})
        with httpx2.stream("POST", f"{url}/responses", json={"model": "m", "input": "hi", "stream": True},
                           timeout=30) as reply:  # fmt: skip
            lines = reply.iter_lines()
            seen = []
            for line in lines:
                seen.append(line)
                if "response.output_text.delta" in line:
                    break
            deadline = time.monotonic() + 15
            while backend.open_streams < 3 and time.monotonic() < deadline:  # all three runs are under way
                time.sleep(0.05)
            process.send_signal(signal.SIGTERM)
            seen.extend(lines)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
        reader.shutdown()
    follower_events = _events(followed.result())  # a background run's stream: an `error` event, run cancelled
    assert follower_events[-1]["type"] == "error" and follower_events[-1]["code"] == "server_shutting_down"
    events = _events(seen)
    for event in follower_events + events:  # both endings as the Open Responses spec has them
        assert event["type"] in OPENAI_ONLY_EVENTS or event_problems(event) == [], event["type"]
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["message"] == SHUTTING_DOWN
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert process.returncode == 0
    followed_id = follower_events[0]["response"]["id"]
    statuses = _stored(tmp_path / "responses.db", [background["id"], followed_id, events[-1]["response"]["id"]])
    assert statuses == {background["id"]: "cancelled", followed_id: "cancelled", events[-1]["response"]["id"]: "failed"}
