"""Stored responses: `store`, `previous_response_id`, GET/DELETE, input_items, on SQLite (file and
memory) and on a real PostgreSQL the tests start themselves, shared by two gateway processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import openai
import pytest
from fakes import sdk

from so_middleware.gateway import ResponseStore, SQLiteStore
from so_middleware.gateway._server import free_port

ROOT = Path(__file__).resolve().parents[2]
MODEL = "smollm2"


def test_stored_responses_over_the_sdk(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    client = sdk(gateway)
    first = client.responses.create(model="m", input="My name is Ada.")
    assert client.responses.retrieve(first.id).output_text == first.output_text
    second = client.responses.create(model="m", input="What is my name?", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    # the backend saw the whole conversation: the first input, its answer, the new input
    assert [(m["role"], m["content"]) for m in backend.bodies[-1]["messages"]] == [
        ("user", "My name is Ada."), ("assistant", backend.text), ("user", "What is my name?")]  # fmt: skip
    items = client.responses.input_items.list(second.id, order="asc")
    assert [getattr(item, "role", None) for item in items.data] == ["user", "assistant", "user"]
    assert client.responses.delete(first.id) is None
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="m", input="again", previous_response_id=first.id)
    client.close()


def test_store_false_keeps_nothing(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    client = sdk(gateway)
    response = client.responses.create(model="m", input="hi", store=False)
    assert response.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)
    client.close()


def test_streamed_responses_are_stored_too(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    client = sdk(gateway)
    events = list(client.responses.create(model="m", input="hi", stream=True))
    final = events[-1].response
    assert client.responses.retrieve(final.id).model_dump() == final.model_dump()
    client.close()


@pytest.mark.local_server
def test_previous_response_id_continues_a_conversation_on_the_local_model(gateway_sdk: openai.OpenAI) -> None:
    first = gateway_sdk.responses.create(model=MODEL, input="My name is Zebulon. Say OK.", max_output_tokens=10)
    second = gateway_sdk.responses.create(model=MODEL, input="Repeat my name, one word.", max_output_tokens=10,
                                          previous_response_id=first.id, temperature=0)  # fmt: skip
    assert second.status in ("completed", "incomplete") and second.output_text
    items = gateway_sdk.responses.input_items.list(second.id, order="asc").data
    texts = [item.content[0].text if isinstance(item.content, list) else item.content for item in items]  # type: ignore[union-attr]
    assert texts[0] == "My name is Zebulon. Say OK." and texts[1] == first.output_text
    assert texts[2] == "Repeat my name, one word."
    assert second.usage is not None and first.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens  # the history went to the model


async def _exercise(store: ResponseStore) -> None:
    await store.open()
    try:
        response = {"id": "resp_1", "status": "completed", "text": {"format": {"type": "json_schema", "strict": True,
                                                                               "name": "P", "schema": {"b": 1, "a": 2}}}}  # fmt: skip
        await store.put(response, [{"type": "message", "role": "user", "content": "hi"}])
        stored = await store.get("resp_1")
        assert stored is not None and json.dumps(stored.response) == json.dumps(response)  # key order kept
        await store.put({**response, "status": "cancelled"}, [])
        stored = await store.get("resp_1")
        assert stored is not None and stored.response["status"] == "cancelled" and stored.input_items == []
        assert await store.delete("resp_1") is True
        assert await store.delete("resp_1") is False
        assert await store.get("resp_1") is None
    finally:
        await store.close()


def test_sqlite_store_in_a_file(tmp_path: Path) -> None:
    anyio.run(_exercise, SQLiteStore(str(tmp_path / "responses.db")))
    anyio.run(_exercise, SQLiteStore())


def test_postgres_store(postgres_url: str) -> None:
    from so_middleware.gateway._postgres import PostgresStore

    anyio.run(_exercise, PostgresStore(postgres_url))


def test_sqlite_file_survives_a_restart(fake_gateway: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "responses.db")
    _, first = fake_gateway(store=path)
    created = httpx2.post(f"{first.base_url}/responses", json={"model": "m", "input": "hi"}).json()
    first.stop()
    _, second = fake_gateway(store=path)
    assert httpx2.get(f"{second.base_url}/responses/{created['id']}").json() == created


def _gateway_process(backend_url: str, store: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "so_middleware.cli", "gateway", "--port", str(port), "--backend",
                                backend_url, "--store", store], cwd=ROOT, env=dict(os.environ),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(300):
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process, url
        except httpx2.TransportError:
            if process.poll() is not None:
                break
            anyio.run(anyio.sleep, 0.1)
    process.kill()
    raise AssertionError(process.communicate()[1].decode()[-2000:])


def test_two_gateway_processes_share_postgres(postgres_url: str, fake_backend: Any) -> None:
    backend, backend_server = fake_backend
    processes = [_gateway_process(backend_server.base_url, postgres_url) for _ in range(2)]
    try:
        (_, url_a), (_, url_b) = processes
        a = openai.OpenAI(base_url=url_a, api_key="none", max_retries=0)
        b = openai.OpenAI(base_url=url_b, api_key="none", max_retries=0)
        first = a.responses.create(model="m", input="My name is Ada.")
        assert b.responses.retrieve(first.id).model_dump() == first.model_dump()
        second = b.responses.create(model="m", input="And my name?", previous_response_id=first.id)
        assert len(backend.bodies[-1]["messages"]) == 3  # process B continued process A's conversation
        assert [i.id for i in a.responses.input_items.list(second.id).data] == [
            i.id for i in b.responses.input_items.list(second.id).data]  # fmt: skip
        b.responses.delete(first.id)
        with pytest.raises(openai.NotFoundError):
            a.responses.retrieve(first.id)
        # a background run is cancelled on the process running it; the other one sees its status
        # (cancelling, resuming and deleting it from the other one: test_gateway_replicas.py)
        backend.chunk_delay, backend.pieces = 0.1, 100
        running = a.responses.create(model="m", input="hi", background=True)
        while b.responses.retrieve(running.id).status == "queued":
            time.sleep(0.05)
        assert a.responses.cancel(running.id).status == "cancelled"
        assert b.responses.retrieve(running.id).status == "cancelled"
        a.close()
        b.close()
    finally:
        for process, _ in processes:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=30)
    assert [process.returncode for process, _ in processes] == [0, 0]


def test_a_store_path_that_cannot_be_a_sqlite_file_is_a_user_error_naming_it(tmp_path: Path) -> None:
    from so_middleware import UserError
    from so_middleware.gateway import GatewayConfig

    missing = str(tmp_path / "missing" / "responses.db")
    with pytest.raises(UserError, match=r"missing/responses\.db.*does not exist"):
        SQLiteStore(missing)
    with pytest.raises(UserError, match="does not exist"):
        GatewayConfig(backend_url="http://127.0.0.1:9/v1", store=missing)
    with pytest.raises(UserError, match="is a directory"):
        SQLiteStore(str(tmp_path))
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("not a database, " * 100)
    with pytest.raises(UserError, match=r"notes\.txt"):
        anyio.run(SQLiteStore(str(not_sqlite)).open)
