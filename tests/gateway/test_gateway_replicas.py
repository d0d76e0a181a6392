"""Several gateway processes on one PostgreSQL store: any of them polls, resumes, cancels and deletes
a background run another one is running, and a run whose process died ends `failed` (its lease).

Two real `so-middleware gateway` processes on the real PostgreSQL server the suite starts, in front
of one recording fake backend, driven with the unmodified OpenAI SDK."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import openai
import pytest
from fakes import running_background

from so_middleware.gateway._server import free_port

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0  # seconds any wait below may take at most before the test fails (a bound, not a speed)

Replicas = tuple[openai.OpenAI, openai.OpenAI, list[subprocess.Popen[bytes]]]


def _start(backend_url: str, store: str, options: tuple[str, ...]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "so_middleware.cli", "gateway", "--port", str(port), "--backend",
                                backend_url, "--store", store, *options],
                               cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
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


@pytest.fixture
def replicas(postgres_url: str, fake_backend: Any) -> Iterator[Callable[..., Replicas]]:
    """`replicas(*cli_options)`: two gateway processes on one PostgreSQL, and an SDK client on each."""
    _, backend_server = fake_backend
    processes: list[subprocess.Popen[bytes]] = []
    clients: list[openai.OpenAI] = []

    def start(*options: str, api_key: str = "none") -> Replicas:
        for _ in range(2):
            process, url = _start(backend_server.base_url, postgres_url, options)
            processes.append(process)
            clients.append(openai.OpenAI(base_url=url, api_key=api_key, max_retries=0, timeout=WAIT))
        return clients[0], clients[1], processes

    yield start
    for client in clients:
        client.close()
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, process.communicate()[1].decode()[-2000:]


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.05)


def test_a_run_on_one_replica_is_polled_and_resumed_on_the_other(replicas: Any, fake_backend: Any) -> None:
    backend, _ = fake_backend
    a, b, _ = replicas()
    backend.chunk_delay, backend.pieces = 0.05, 40
    started = a.responses.create(model="m", input="hi", background=True)
    _until(lambda: b.responses.retrieve(started.id).status == "in_progress")
    with b.responses.retrieve(started.id, stream=True, starting_after=1) as stream:  # while A runs it
        resumed = list(stream)
    numbers = [event.sequence_number for event in resumed]
    assert numbers == list(range(2, numbers[-1] + 1))  # every event after 1, once, in order
    assert resumed[-1].type == "response.completed"
    assert resumed[-1].response.output_text == backend.text
    assert b.responses.retrieve(started.id).status == "completed"  # the stream ended: the status says so
    with a.responses.retrieve(started.id, stream=True) as stream:  # the process that ran it: the same events
        assert [event.model_dump() for event in list(stream)[2:]] == [event.model_dump() for event in resumed]


def test_a_run_on_one_replica_is_cancelled_on_the_other(replicas: Any, fake_backend: Any) -> None:
    backend, _ = fake_backend
    a, b, _ = replicas()
    running = running_background(a, backend)
    closed = backend.streams_closed_early
    with b.responses.retrieve(running.id, stream=True) as stream:  # a follower on B, live
        assert next(iter(stream)).type == "response.created"
        cancelled = b.responses.cancel(running.id)
        rest = list(stream)  # and its stream ends
    assert cancelled.status == "cancelled"
    assert all(event.type != "response.completed" for event in rest)
    assert a.responses.retrieve(running.id).status == "cancelled"
    _until(lambda: backend.streams_closed_early > closed)  # A stopped calling the backend


def test_a_run_on_one_replica_deleted_on_the_other_stays_deleted(replicas: Any, fake_backend: Any) -> None:
    backend, _ = fake_backend
    a, b, _ = replicas()
    running = running_background(a, backend)
    closed = backend.streams_closed_early
    b.responses.delete(running.id)
    with pytest.raises(openai.NotFoundError):
        a.responses.retrieve(running.id)
    _until(lambda: backend.streams_closed_early > closed)  # A stopped the run: its last save came and went
    for client in (a, b):
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(running.id)
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(running.id, stream=True)


def test_another_key_cannot_follow_cancel_or_delete_a_run_through_the_other_replica(
    replicas: Any, fake_backend: Any
) -> None:
    backend, _ = fake_backend
    a, b, _ = replicas("--api-key", "key-one", "--api-key", "key-two", api_key="key-one")
    running = running_background(a, backend)
    stranger = openai.OpenAI(base_url=str(b.base_url), api_key="key-two", max_retries=0, timeout=WAIT)
    with pytest.raises(openai.NotFoundError):
        stranger.responses.retrieve(running.id, stream=True)
    with pytest.raises(openai.NotFoundError):
        stranger.responses.cancel(running.id)
    with pytest.raises(openai.NotFoundError):
        stranger.responses.delete(running.id)
    stranger.close()
    assert b.responses.retrieve(running.id).status == "in_progress"  # untouched: its own key still sees it run
    assert b.responses.cancel(running.id).status == "cancelled"


def test_a_killed_replicas_run_is_failed_by_the_survivor_within_the_lease(replicas: Any, fake_backend: Any) -> None:
    backend, _ = fake_backend
    a, b, processes = replicas("--run-lease", "2")
    running = running_background(a, backend)
    with b.responses.retrieve(running.id, stream=True, starting_after=0) as stream:
        processes[0].kill()  # no shutdown: its run is left in_progress in the store
        processes[0].wait(timeout=30)
        events = list(stream)  # B ends it once the lease has run out, and its followers see it end
    assert events[-1].type == "response.failed"
    failed = b.responses.retrieve(running.id)
    assert failed.status == "failed"
    assert failed.error is not None and failed.error.code == "server_error" and "lease" in failed.error.message


def test_a_delete_wins_over_a_later_save_from_another_process(postgres_url: str) -> None:
    from so_middleware.gateway._postgres import PostgresStore

    async def scenario() -> None:
        running, deleting = PostgresStore(postgres_url), PostgresStore(postgres_url)
        await running.open()
        await deleting.open()
        try:
            response = {"id": "resp_deleted_while_running", "status": "in_progress", "background": True}
            await running.put(response, [])
            assert await deleting.delete(response["id"]) is True
            await running.put({**response, "status": "completed"}, [])  # the run's last save, after the delete
            assert await deleting.get(response["id"]) is None and await running.get(response["id"]) is None
            assert await deleting.delete(response["id"]) is False
        finally:
            await running.close()
            await deleting.close()

    anyio.run(scenario)


def test_the_documented_lease_reaches_the_store_and_a_lease_of_zero_is_refused() -> None:
    from so_middleware import UserError
    from so_middleware.gateway import GatewayConfig, create_app
    from so_middleware.gateway._cli import parser
    from so_middleware.gateway._postgres import PostgresStore

    assert parser().parse_args([]).run_lease == 10.0  # docs/how-to/gateway.md: "`--run-lease` | 10 s"
    assert GatewayConfig(backend_url="x").run_lease == 10.0 == PostgresStore("postgresql://db/gw").lease
    assert parser().parse_args(["--run-lease", "2.5"]).run_lease == 2.5
    app = create_app(GatewayConfig(backend_url="http://127.0.0.1:9/v1", store="postgresql://db/gw", run_lease=2.5))
    assert app.state.gateway.store.lease == 2.5
    with pytest.raises(SystemExit):
        parser().parse_args(["--run-lease", "0"])
    with pytest.raises(UserError, match="run_lease"):
        GatewayConfig(backend_url="x", run_lease=0)


def test_a_cancel_ends_a_dead_processs_run_cancelled_and_waits_a_bounded_time_for_a_live_one(postgres_url: str) -> None:
    from so_middleware.gateway._postgres import PostgresStore

    async def scenario() -> None:
        stuck, gone = "resp_run_never_stopped", "resp_run_of_a_dead_process"
        running, dead, asking = (PostgresStore(postgres_url, lease=1.5) for _ in range(3))
        told: list[str] = []

        async def ignore(response_id: str, deleted: bool) -> None:  # a process that renews but never stops
            told.append(response_id)

        running.shared_runs.attach(lambda: [stuck], ignore)
        for store in (running, dead, asking):
            await store.open()
        try:
            await running.put({"id": stuck, "status": "in_progress", "background": True}, [])
            await dead.put({"id": gone, "status": "in_progress", "background": True}, [])  # never renewed
            assert await asking.shared_runs.cancel(gone) is True  # once its lease ran out
            stored = await asking.get(gone)
            assert stored is not None and stored.response["status"] == "cancelled"  # asked for: not `failed`
            assert await asking.shared_runs.cancel(stuck) is False  # after two leases
            assert told and set(told) == {stuck}
            stored = await asking.get(stuck)
            assert stored is not None and stored.response["status"] == "in_progress"
        finally:
            for store in (running, dead, asking):
                await store.close()

    anyio.run(scenario)


def test_a_run_deleted_on_one_replica_while_it_streams_on_the_other_leaves_no_text_in_any_table(
    replicas: Any, fake_backend: Any, postgres_url: str
) -> None:
    """A goes on writing events until it hears of the delete: here, for a while, as its listener was cut
    just before (the delete's NOTIFY is lost; A learns of it at its next lease renewal)."""
    import psycopg
    from psycopg import sql

    backend, _ = fake_backend
    a, b, _ = replicas()
    word = f"zebra{uuid.uuid4().hex}"  # the answer's text, found nowhere else in the database
    backend.text, backend.pieces, backend.chunk_delay = f"{word} " * 400, 400, 0.02
    closed = backend.streams_closed_early
    with a.responses.create(model="m", input="hi", background=True, stream=True) as stream:
        events = iter(stream)
        response_id = next(events).response.id
        for event in events:
            if event.sequence_number > 40:  # well under way: A writes its events as they come
                with psycopg.connect(postgres_url, autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE query = 'LISTEN so_middleware_runs'")  # fmt: skip
                b.responses.delete(response_id)
                break
        rest = list(events)  # and the stream on A ends
    assert all(event.type != "response.completed" for event in rest)
    _until(lambda: backend.streams_closed_early > closed)  # A stopped the run: its last write came and went
    with psycopg.connect(postgres_url) as conn:
        tables = [name for (name,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        found = {}
        for table in tables:
            rows = conn.execute(sql.SQL("SELECT t::text FROM {} AS t WHERE t::text LIKE %s OR t::text LIKE %s")
                                .format(sql.Identifier(table)), (f"%{word}%", f"%{response_id}%")).fetchall()  # fmt: skip
            if rows:
                found[table] = [row for (row,) in rows]
        tombstone = conn.execute("SELECT deleted, response::text, input_items::text FROM so_middleware_responses "
                                 "WHERE id = %s", (response_id,)).fetchall()  # fmt: skip
    assert "so_middleware_events" in tables
    assert list(found) == ["so_middleware_responses"] and len(found["so_middleware_responses"]) == 1, found
    assert tombstone == [(True, "{}", "[]")]  # the id alone stays, so a late save of the run is refused
    assert not any(word in row for rows in found.values() for row in rows)
