"""A response the store cannot save: the run ends `failed` with the reason on every store (memory,
SQLite file, PostgreSQL), no database message (it may quote SQL) reaches a client, and a run a
crashed process left unfinished in a SQLite file ends `failed` at the next start.

The refusals are real: a number JSON cannot hold (`inf`, what `1e999` decodes to), and a trigger the
test installs in the real database that refuses any row holding a marker (as a CHECK constraint, a
full disk or a dropped connection refuses a write)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import openai
import pytest
from fakes import FakeChatBackend, running_background, sdk

from so_middleware.gateway import GatewayConfig, SQLiteStore, create_app
from so_middleware.gateway._server import AppServer, free_port
from so_middleware.gateway._store import ResponseStore, StoreError

ROOT = Path(__file__).resolve().parents[2]
MARKER = "refuse-me-7f3a"  # a row holding it is refused by the trigger below
SQL_WORDS = ("INSERT", "UPDATE", "so_middleware_responses", "responses (", "trigger", MARKER)
SQLITE_TRIGGER = f"""CREATE TEMP TRIGGER refuse_marked BEFORE INSERT ON responses
    WHEN NEW.response LIKE '%{MARKER}%' OR NEW.input_items LIKE '%{MARKER}%'
    BEGIN SELECT RAISE(ABORT, 'trigger refused INSERT INTO responses: {MARKER}'); END"""
PG_TRIGGER = f"""CREATE OR REPLACE FUNCTION refuse_marked() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.response::text LIKE '%{MARKER}%' OR NEW.input_items::text LIKE '%{MARKER}%' THEN
        PERFORM pg_sleep(0.5);  -- a slow refusal: a poll meanwhile must not be told the run completed
        RAISE EXCEPTION 'trigger refused UPDATE so_middleware_responses: {MARKER}'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER refuse_marked BEFORE INSERT OR UPDATE ON so_middleware_responses
        FOR EACH ROW EXECUTE FUNCTION refuse_marked()"""

PG_EVENTS_TRIGGER = f"""CREATE OR REPLACE FUNCTION refuse_marked_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.event::text LIKE '%{MARKER}%' THEN
        RAISE EXCEPTION 'trigger refused INSERT INTO so_middleware_events: {MARKER}'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER refuse_marked BEFORE INSERT ON so_middleware_events FOR EACH ROW EXECUTE FUNCTION refuse_marked_event()"""


class RefusingSQLite(SQLiteStore):
    """A real SQLite store (memory or file) with a trigger that refuses rows holding `MARKER`."""

    async def open(self) -> None:
        await super().open()
        await self._run(SQLITE_TRIGGER)


@pytest.fixture(params=["memory", "file", "postgres"])
def refusing_gateway(request: pytest.FixtureRequest, tmp_path: Path, fake_backend: Any) -> Iterator[Any]:
    """A gateway over the fake backend on a store whose database refuses rows holding `MARKER`."""
    import psycopg

    backend, backend_server = fake_backend
    config = GatewayConfig(backend_url=backend_server.base_url, max_attempts=1,
                           store=request.getfixturevalue("postgres_url") if request.param == "postgres" else None)  # fmt: skip
    store = None
    if request.param != "postgres":
        store = RefusingSQLite(":memory:" if request.param == "memory" else str(tmp_path / "responses.db"))
    with AppServer(create_app(config, store=store)) as server:
        if request.param == "postgres":
            with psycopg.connect(config.store or "", autocommit=True) as conn:
                conn.execute(PG_TRIGGER)
        try:
            yield backend, server
        finally:
            if request.param == "postgres":
                with psycopg.connect(config.store or "", autocommit=True) as conn:
                    conn.execute("DROP TRIGGER refuse_marked ON so_middleware_responses")


def _says_why_without_sql(response: Any) -> None:
    assert response.status == "failed", response
    assert response.error is not None and response.error.code == "server_error"
    assert response.error.message.startswith("The response could not be stored: the response store could not save it")
    assert not any(word in response.error.message for word in SQL_WORDS), response.error.message


def test_a_background_run_the_store_refuses_ends_failed_without_calling_the_backend(refusing_gateway: Any) -> None:
    backend, server = refusing_gateway
    client = sdk(server)
    answer = client.responses.create(model="m", input="hi", background=True, metadata={"tag": MARKER})
    _says_why_without_sql(answer)
    _says_why_without_sql(client.responses.retrieve(answer.id))  # a poll finds it failed, for the same reason
    assert backend.bodies == []  # never run
    client.close()


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_the_store_refuses_ends_failed_and_the_client_still_gets_it(
    refusing_gateway: Any, stream: bool
) -> None:
    backend, server = refusing_gateway
    backend.text = f"the answer holds {MARKER}"
    client = sdk(server)
    if stream:
        events = list(client.responses.create(model="m", input="hi", stream=True))
        assert events[-1].type == "response.failed"
        assert all(event.type != "response.completed" for event in events)
        answer = events[-1].response
    else:
        answer = client.responses.create(model="m", input="hi")
    _says_why_without_sql(answer)
    assert answer.output_text == backend.text  # nothing lost: the answer the store refused reaches the client
    stored = client.responses.retrieve(answer.id)
    _says_why_without_sql(stored)
    assert stored.output == []  # the refused values are not in the store
    client.close()


def test_a_background_answer_the_store_refuses_ends_failed_for_pollers(refusing_gateway: Any) -> None:
    backend, server = refusing_gateway
    backend.text = f"the answer holds {MARKER}"
    client = sdk(server)
    started = client.responses.create(model="m", input="hi", background=True)
    deadline = time.monotonic() + 60
    while (polled := client.responses.retrieve(started.id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.05)
    _says_why_without_sql(polled)
    client.close()


@pytest.fixture(params=["memory", "file", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> ResponseStore:
    if request.param == "postgres":
        from so_middleware.gateway._postgres import PostgresStore

        return PostgresStore(request.getfixturevalue("postgres_url"))
    return SQLiteStore(":memory:" if request.param == "memory" else str(tmp_path / "responses.db"))


def test_a_number_json_cannot_hold_is_refused_naming_where_it_is_on_every_store(any_store: ResponseStore) -> None:
    async def scenario() -> None:
        await any_store.open()
        try:
            response = {"id": "resp_with_inf", "status": "queued", "metadata": {"x": float("inf")}}
            with pytest.raises(StoreError, match=r"^metadata\.x is a number JSON cannot hold"):
                await any_store.put(response, [])
            with pytest.raises(StoreError, match=r"^\[0\]\.content\[1\] is a number JSON cannot hold"):
                await any_store.put({"id": "resp_with_nan", "status": "queued"}, [{"content": [1, float("nan")]}])
            assert await any_store.get("resp_with_inf") is None and await any_store.get("resp_with_nan") is None
        finally:
            await any_store.close()

    anyio.run(scenario)


def test_a_sqlite_file_from_an_earlier_version_with_infinity_in_it_is_repaired_at_start(tmp_path: Path) -> None:
    """An earlier version wrote `inf` as `Infinity`, which SQLite's JSON functions refuse: such a run
    left `in_progress` was never failed, and its row broke every `item_reference` lookup."""
    path = tmp_path / "responses.db"

    async def write_as_before() -> None:
        await SQLiteStore(str(path)).open()  # today's table, then rows as the earlier version wrote them

    anyio.run(write_as_before)
    item = {"type": "message", "id": "msg_kept", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    with sqlite3.connect(path) as db:
        for response_id, status in (("resp_left_running", "in_progress"), ("resp_done", "completed")):
            response = {"id": response_id, "object": "response", "status": status, "metadata": {"x": float("inf")},
                        "output": [], "background": True, "error": None}  # fmt: skip
            db.execute("INSERT INTO responses (id, response, input_items, owner) VALUES (?, ?, ?, NULL)",
                       (response_id, json.dumps(response), json.dumps([item, {"score": float("-inf")}])))  # fmt: skip
    backend = FakeChatBackend()
    with AppServer(backend.app()) as backend_server:
        config = GatewayConfig(backend_url=backend_server.base_url, store=str(path), max_attempts=1)
        with AppServer(create_app(config)) as gateway:  # a new process on the same file
            client = sdk(gateway)
            left = client.responses.retrieve("resp_left_running")
            assert left.status == "failed" and left.error is not None
            assert left.error.message == "the gateway stopped before this response finished"
            assert left.metadata == {"x": None}
            assert client.responses.retrieve("resp_done").status == "completed"
            answer = client.responses.create(model="m", input=[{"type": "item_reference", "id": "msg_kept"}])
            assert answer.status == "completed"  # the lookup reads every row: none breaks it now
            client.close()
    assert "hi" in json.dumps(backend.bodies[-1]["messages"])  # the referenced item reached the model


def test_a_background_run_of_a_killed_gateway_ends_failed_when_a_new_one_opens_the_file(
    tmp_path: Path, fake_backend: Any
) -> None:
    backend, backend_server = fake_backend
    path = tmp_path / "responses.db"
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "so_middleware.cli", "gateway", "--port", str(port),
                                "--backend", backend_server.base_url, "--store", str(path)], cwd=ROOT,
                               env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/v1"
        for _ in range(300):
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                assert process.poll() is None, process.communicate()[1].decode()[-2000:]
                time.sleep(0.1)
        with openai.OpenAI(base_url=url, api_key="none", max_retries=0) as client:
            running = running_background(client, backend)
    finally:
        process.send_signal(signal.SIGKILL)  # no shutdown: the run stays in_progress in the file
        process.wait(timeout=30)
    config = GatewayConfig(backend_url=backend_server.base_url, store=str(path), max_attempts=1)
    with AppServer(create_app(config)) as gateway:
        client = sdk(gateway)
        failed = client.responses.retrieve(running.id)
        client.close()
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.message == "the gateway stopped before this response finished"


def test_an_item_reference_whose_id_holds_a_nul_is_not_found_on_every_store(
    fake_gateway: Any, any_store: ResponseStore
) -> None:
    """PostgreSQL text cannot hold a NUL: asked for such an id, the database refused the query (a 500)."""
    _, gateway = fake_gateway(store=getattr(any_store, "url", None) or getattr(any_store, "path", None))
    reply = httpx2.post(f"{gateway.base_url}/responses", timeout=30,
                        json={"model": "m", "input": [{"type": "item_reference", "id": "msg_\u0000x"}]})  # fmt: skip
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["message"].startswith("Item with id 'msg_\x00x' not found")
    assert reply.json()["error"]["param"] == "input[0].id"


def test_a_background_run_whose_events_the_database_refuses_ends_failed_without_sql(
    postgres_url: str, fake_gateway: Any
) -> None:
    import psycopg

    backend, gateway = fake_gateway(store=postgres_url)
    client = sdk(gateway)
    client.responses.create(model="m", input="warm up")  # the tables exist
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(PG_EVENTS_TRIGGER)
    try:
        backend.text = f"the answer holds {MARKER}"
        started = client.responses.create(model="m", input="hi", background=True)
        deadline = time.monotonic() + 60
        while (polled := client.responses.retrieve(started.id)).status in ("queued", "in_progress"):
            assert time.monotonic() < deadline, "the run did not end"
            time.sleep(0.05)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER refuse_marked ON so_middleware_events")
    assert polled.status == "failed" and polled.error is not None
    assert polled.error.message == (
        "The response could not be stored: the response store could not save its events (RaiseException)"
    )
    client.close()
