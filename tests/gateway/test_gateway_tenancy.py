"""Keys are tenants: a stored response belongs to the key that made it, and any other key of the
same gateway gets the 404 of an unknown id on every route, over real sockets with the OpenAI SDK,
on SQLite (memory and file) and on a real PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import httpx2
import openai
import pytest
from fakes import running_background

from so_middleware.gateway import SQLiteStore

KEY_A, KEY_B = "key-a-0123456789", "key-b-9876543210"


@pytest.fixture(params=["memory", "file", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "responses.db") if request.param == "file" else None


def _client(server: Any, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0, timeout=30)


def _raw(server: Any, method: str, path: str, key: str, body: Any = None) -> httpx2.Response:
    return httpx2.request(method, f"{server.base_url}{path}", json=body, timeout=30,
                          headers={"authorization": f"Bearer {key}"})  # fmt: skip


def test_another_key_gets_404_on_every_route(fake_gateway: Any, store: str | None) -> None:
    backend, gateway = fake_gateway(api_keys=(KEY_A, KEY_B), store=store)
    a, b = _client(gateway, KEY_A), _client(gateway, KEY_B)
    stored = a.responses.create(model="m", input="My name is Ada.")
    backend.text = "word " * 100
    running = running_background(a, backend)  # a live background run, streaming from the backend for 20 s
    calls = len(backend.raw_bodies)

    for response_id in (stored.id, running.id):
        with pytest.raises(openai.NotFoundError):
            b.responses.retrieve(response_id)
        with pytest.raises(openai.NotFoundError):
            b.responses.input_items.list(response_id)
        with pytest.raises(openai.NotFoundError):
            b.responses.cancel(response_id)
        with pytest.raises(openai.NotFoundError):
            b.responses.delete(response_id)
        with pytest.raises(openai.NotFoundError):
            b.responses.create(model="m", input="And my name?", previous_response_id=response_id)
    with pytest.raises(openai.NotFoundError):
        b.responses.retrieve(running.id, stream=True, starting_after=0)  # resuming its stream
    assert len(backend.raw_bodies) == calls  # B's continuations never reached the backend

    # the same body as for an id that does not exist, route by route
    missing = "resp_" + "0" * len(running.id.removeprefix("resp_"))
    routes = [("GET", "/responses/{}"), ("GET", "/responses/{}/input_items"), ("POST", "/responses/{}/cancel"),
              ("DELETE", "/responses/{}"), ("GET", "/responses/{}?stream=true")]  # fmt: skip
    for method, path in routes:
        unknown = _raw(gateway, method, path.format(missing), KEY_B)
        assert unknown.status_code == 404
        for response_id in (stored.id, running.id):
            foreign = _raw(gateway, method, path.format(response_id), KEY_B)
            assert (foreign.status_code, foreign.text) == (404, unknown.text.replace(missing, response_id))
    continued = _raw(
        gateway, "POST", "/responses", KEY_B, {"model": "m", "input": "hi", "previous_response_id": missing}
    )
    foreign = _raw(
        gateway, "POST", "/responses", KEY_B, {"model": "m", "input": "hi", "previous_response_id": stored.id}
    )
    assert (foreign.status_code, foreign.text) == (404, continued.text.replace(missing, stored.id))

    # nothing B did touched A's responses: A reads, lists, continues, resumes, cancels and deletes them
    assert a.responses.retrieve(stored.id).output_text == stored.output_text
    assert len(a.responses.input_items.list(stored.id).data) == 1
    with a.responses.retrieve(running.id, stream=True, starting_after=0) as events:
        assert next(iter(events)).sequence_number == 1
    assert a.responses.cancel(running.id).status == "cancelled"
    backend.chunk_delay = 0
    second = a.responses.create(model="m", input="And my name?", previous_response_id=stored.id)
    assert len(backend.bodies[-1]["messages"]) == 3
    assert a.responses.delete(stored.id) is None
    with pytest.raises(openai.NotFoundError):
        b.responses.retrieve(second.id)
    assert b.responses.create(model="m", input="mine").status == "completed"  # B keeps its own
    a.close()
    b.close()


def test_an_item_reference_is_resolved_from_the_keys_own_stored_responses(fake_gateway: Any, store: str | None) -> None:
    """`{"type": "item_reference", "id": ...}` (what the AI SDK sends back when it stores) is the item of
    that id from the key's stored responses, output or input; another key's, or none, is a 400 naming it."""
    backend, gateway = fake_gateway(api_keys=(KEY_A, KEY_B), store=store)
    backend.reasoning = "Ada is named."
    sent = {"type": "message", "id": "msg_sent_by_client", "role": "user", "content": "My name is Ada."}
    first = _raw(gateway, "POST", "/responses", KEY_A, {"model": "m", "input": [sent]}).json()
    reasoning, message = first["output"]
    references = [{"type": "item_reference", "id": i} for i in ("msg_sent_by_client", reasoning["id"], message["id"])]
    body = {"model": "m", "input": [*references, {"role": "user", "content": "And my name?"}]}
    reply = _raw(gateway, "POST", "/responses", KEY_A, body)
    assert reply.status_code == 200, reply.text
    assert [(m["role"], m["content"]) for m in backend.bodies[-1]["messages"]] == [
        ("user", "My name is Ada."), ("assistant", backend.text), ("user", "And my name?"),
    ]  # the reasoning item, found too, has no place in a chat request  # fmt: skip
    listed = _raw(gateway, "GET", f"/responses/{reply.json()['id']}/input_items?order=asc", KEY_A).json()["data"]
    assert [item["type"] for item in listed] == ["message", "reasoning", "message", "message"]  # stored resolved
    calls = len(backend.raw_bodies)
    for key, item_id in ((KEY_B, message["id"]), (KEY_A, "msg_nobody_stored")):
        body = {"model": "m", "input": [{"type": "item_reference", "id": item_id}]}
        refused = _raw(gateway, "POST", "/responses", key, body)
        assert refused.status_code == 400
        assert refused.json()["error"]["param"] == "input[0].id" and item_id in refused.json()["error"]["message"]
    not_an_id = _raw(
        gateway, "POST", "/responses", KEY_A, {"model": "m", "input": [{"type": "item_reference", "id": 5}]}
    )
    assert (not_an_id.status_code, not_an_id.json()["error"]["param"]) == (400, "input[0].id")
    assert len(backend.raw_bodies) == calls  # refused before any backend call


def test_the_store_keeps_a_hash_of_the_key_never_the_key(fake_gateway: Any, tmp_path: Path) -> None:
    path = tmp_path / "responses.db"
    _, gateway = fake_gateway(api_keys=(KEY_A, KEY_B), store=str(path))
    client = _client(gateway, KEY_A)
    created = client.responses.create(model="m", input="hi")
    client.close()
    gateway.stop()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT owner FROM responses WHERE id = ?", (created.id,)).fetchall() == [
            (hashlib.sha256(KEY_A.encode()).hexdigest(),)
        ]
    assert KEY_A.encode() not in path.read_bytes()


def test_a_single_key_and_no_key_see_their_responses_as_before(fake_gateway: Any) -> None:
    for keys, key in (((KEY_A,), KEY_A), ((), "anything")):
        _, gateway = fake_gateway(api_keys=keys)
        client = _client(gateway, key)
        first = client.responses.create(model="m", input="hi")
        assert client.responses.retrieve(first.id).id == first.id
        assert client.responses.create(model="m", input="and?", previous_response_id=first.id).status == "completed"
        client.close()


async def _legacy(store: Any, create_old_table: Any) -> None:
    await create_old_table()
    await store.open()  # a table made before owners were recorded: the column is added
    try:
        old = await store.get("resp_old", "someone")  # its rows had no owner: anyone's, as they were
        assert old is not None and old.response == {"id": "resp_old", "status": "completed"}
        await store.put({"id": "resp_new", "status": "completed"}, [], "owner-a")
        assert await store.get("resp_new", "owner-b") is None
        assert await store.delete("resp_new", "owner-b") is False
        assert (await store.get("resp_new", "owner-a")) is not None
        assert await store.delete("resp_new", "owner-a") is True
    finally:
        await store.close()


def test_a_sqlite_store_made_before_owners_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "old.db"

    async def create_old_table() -> None:
        with sqlite3.connect(path) as db:  # the schema of the previous release
            db.execute(
                "CREATE TABLE responses (id TEXT PRIMARY KEY, response TEXT NOT NULL, input_items TEXT NOT NULL)"
            )
            db.execute("INSERT INTO responses VALUES (?, ?, ?)", ("resp_old", json.dumps(
                {"id": "resp_old", "status": "completed"}), "[]"))  # fmt: skip
        db.close()

    anyio.run(_legacy, SQLiteStore(str(path)), create_old_table)


def test_a_postgres_store_made_before_owners_still_opens(postgres_url: str) -> None:
    import psycopg

    from so_middleware.gateway._postgres import PostgresStore

    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS legacy_store")
        admin.execute("CREATE DATABASE legacy_store")
    url = postgres_url.rsplit("/", 1)[0] + "/legacy_store"

    async def create_old_table() -> None:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("CREATE TABLE so_middleware_responses (id TEXT PRIMARY KEY, response JSON NOT NULL, "
                               "input_items JSON NOT NULL)")  # fmt: skip
            await conn.execute("INSERT INTO so_middleware_responses VALUES ('resp_old', %s, '[]')",
                               (json.dumps({"id": "resp_old", "status": "completed"}),))  # fmt: skip

    anyio.run(_legacy, PostgresStore(url), create_old_table)
