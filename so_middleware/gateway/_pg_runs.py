"""Background runs shared over PostgreSQL: any gateway process follows, cancels or deletes a run
that another process is running.

- Events: the running process appends each event to `so_middleware_events` and sends a NOTIFY on
  `so_middleware_runs`; a process asked to resume a stream reads the table and waits for the next one.
- Cancel and delete: the asking process marks the row and sends a NOTIFY; the running process
  stops the run (and saves it `cancelled`, unless it was deleted).
- Lease: a process renews `lease_until` of the runs it is running every third of the lease; a run
  whose lease ran out (its process died) is ended by any process: `failed`, or `cancelled` when a
  cancel was asked for. Every wait also wakes each `POLL` seconds, so a lost NOTIFY only delays.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import psycopg
from psycopg.types.json import Json
from psycopg_pool import AsyncConnectionPool

from ..wire.responses import TERMINAL_EVENTS, Event
from ._runs import TERMINAL
from ._shared import CancelHandler
from ._store import StoreError

__all__ = ["CHANNEL", "EVENTS_TABLE", "PostgresRuns"]

_log = logging.getLogger("so_middleware.gateway")
CHANNEL = "so_middleware_runs"
POLL = 1.0  # seconds a waiting follower or canceller sleeps at most between two looks at the table
EVENTS_TABLE = """CREATE TABLE IF NOT EXISTS so_middleware_events (
    response_id TEXT NOT NULL, seq INTEGER NOT NULL, event JSON NOT NULL, PRIMARY KEY (response_id, seq))"""
# A follower holds an ending event (`TERMINAL_EVENTS`) back until the stored status is terminal: a
# client told the run ended then finds it ended when it asks (the running process saves the status
# after sharing these).
_UNFINISHED = "response->>'status' IN ('queued', 'in_progress') AND NOT deleted"
_LOST = "the gateway process running this response stopped (its lease ran out) before it finished"


class PostgresRuns:
    """The shared side of background runs for one process (`node`) of a `PostgresStore`."""

    def __init__(self, url: str, pool: AsyncConnectionPool[Any], node: str, lease: float) -> None:
        self.url, self.node, self.lease = url, node, lease
        self._pool = pool
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._live: Callable[[], list[str]] = list
        self._on_cancel: CancelHandler | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def attach(self, live: Callable[[], list[str]], on_cancel: CancelHandler) -> None:
        """Renew the leases of `live()`; call `on_cancel` for those another process cancels or deletes."""
        self._live, self._on_cancel = live, on_cancel

    async def start(self) -> None:
        """Listen for NOTIFYs and renew leases (ending expired runs) in tasks of their own."""
        self._spawn(self._listen())
        self._spawn(self._keep_leases())

    async def stop(self) -> None:
        """Stop listening and renewing (the runs of this process have ended by then)."""
        tasks, self._tasks = list(self._tasks), set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def append(self, response_id: str, events: list[dict[str, Any]]) -> None:
        """Insert the events, unless the response was deleted; the NOTIFY goes out when they are committed."""
        rows = [(response_id, event["sequence_number"], Json(event)) for event in events]
        try:
            await self._append(response_id, rows)
        except psycopg.Error as error:  # the run fails for a reason a client may read; the database's, logged
            _log.warning("sharing the events of %s failed: %s: %s", response_id, type(error).__name__, error)
            raise StoreError(f"the response store could not save its events ({type(error).__name__})") from None

    async def _append(self, response_id: str, rows: list[tuple[str, int, Json]]) -> None:
        async with self._pool.connection() as conn, conn.cursor() as cursor:
            # the response's row, locked until the commit: a delete elsewhere (an UPDATE of that row, then
            # a DELETE of its events) either came first and is seen here, or waits and removes these too
            await cursor.execute("SELECT 1 FROM so_middleware_responses WHERE id = %s AND NOT deleted FOR SHARE",
                                 (response_id,))  # fmt: skip
            if await cursor.fetchone() is None:
                return
            await cursor.executemany("INSERT INTO so_middleware_events (response_id, seq, event) VALUES (%s, %s, %s) "
                                     "ON CONFLICT DO NOTHING", rows)  # fmt: skip
            await cursor.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"events {response_id}"))

    async def follow(self, response_id: str, after: int) -> AsyncIterator[list[dict[str, Any]]]:
        """The stored events after `after`, in order and without gaps, then each new batch, until the
        stored status is terminal (then whatever is left) or the response is gone."""
        with self._woken_by(response_id) as woken:
            while True:
                woken.clear()
                status, events = await self._after(response_id, after)
                ended = status is None or status in TERMINAL
                ready = events if ended else _ready(events, after)
                if ready:
                    yield ready
                    after = ready[-1]["sequence_number"]
                if ended:
                    return
                if not ready:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(woken.wait(), POLL)

    async def cancel(self, response_id: str) -> bool:
        """Mark the run to be cancelled and tell its process; wait until it is no longer running,
        ending it here once its lease has run out. False when it still runs after two leases (its
        process renews the lease but does not stop it)."""
        deadline = asyncio.get_running_loop().time() + 2 * self.lease
        with self._woken_by(response_id) as woken:
            async with self._pool.connection() as conn:
                await conn.execute("UPDATE so_middleware_responses SET cancel_requested = true WHERE id = %s",
                                   (response_id,))  # fmt: skip
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"cancel {response_id}"))
            while True:
                woken.clear()
                async with self._pool.connection() as conn:
                    cursor = await conn.execute(f"SELECT lease_until IS NULL OR lease_until < now() FROM "
                                                f"so_middleware_responses WHERE id = %s AND {_UNFINISHED}", (response_id,))  # fmt: skip
                    row = await cursor.fetchone()
                if row is None:  # ended (cancelled by its process), or deleted
                    return True
                if row[0]:
                    await self.end_expired(response_id)
                    continue
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    return False
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(woken.wait(), min(POLL, left))

    async def end_expired(self, response_id: str | None = None) -> None:
        """End the unfinished runs whose lease ran out (or the one with this id, if it did): `failed`
        with a `response.failed` event for its followers, or `cancelled` when a cancel was asked for."""
        only = " AND id = %s" if response_id else ""
        async with self._pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT id, response, cancel_requested FROM so_middleware_responses WHERE {_UNFINISHED} AND "
                f"(lease_until IS NULL OR lease_until < now()){only} FOR UPDATE SKIP LOCKED",
                (response_id,) if response_id else (),
            )
            for expired_id, response, cancelled in await cursor.fetchall():
                response["status"] = "cancelled" if cancelled else "failed"
                if not cancelled:
                    response["error"] = {"code": "server_error", "message": _LOST}
                await conn.execute("UPDATE so_middleware_responses SET response = %s, runner = %s, lease_until = NULL "
                                   "WHERE id = %s", (Json(response), self.node, expired_id))  # fmt: skip
                if not cancelled:
                    await conn.execute(
                        "INSERT INTO so_middleware_events (response_id, seq, event) SELECT %s, n, "
                        f"json_build_object('type', '{Event.FAILED}', 'sequence_number', n, 'response', %s::json) "
                        "FROM (SELECT COALESCE(MAX(seq) + 1, 0) AS n FROM so_middleware_events WHERE response_id = %s) AS next",
                        (expired_id, Json(response), expired_id),
                    )  # fmt: skip
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"ended {expired_id}"))

    async def _after(self, response_id: str, after: int) -> tuple[str | None, list[dict[str, Any]]]:
        """The stored status (None when gone), then the events after `after`: read in this order, a
        terminal status means every event its run shared is among them."""
        async with self._pool.connection() as conn:
            cursor = await conn.execute("SELECT response->>'status' FROM so_middleware_responses "
                                        "WHERE id = %s AND NOT deleted", (response_id,))  # fmt: skip
            row = await cursor.fetchone()
            cursor = await conn.execute("SELECT event FROM so_middleware_events WHERE response_id = %s AND seq > %s "
                                        "ORDER BY seq", (response_id, after))  # fmt: skip
            return (row[0] if row else None), [event for (event,) in await cursor.fetchall()]

    @contextlib.contextmanager
    def _woken_by(self, response_id: str) -> Iterator[asyncio.Event]:
        """An event set by every NOTIFY about this response while the block runs."""
        woken = asyncio.Event()
        self._waiters.setdefault(response_id, set()).add(woken)
        try:
            yield woken
        finally:
            waiters = self._waiters.get(response_id, set())
            waiters.discard(woken)
            if not waiters:
                self._waiters.pop(response_id, None)

    async def _listen(self) -> None:
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    async for note in conn.notifies():
                        self._notified(note.payload)
            except (psycopg.Error, OSError) as error:  # the server restarted: listen again (waits poll meanwhile)
                _log.warning("listening for shared runs failed, retrying: %s: %s", type(error).__name__, error)
                await asyncio.sleep(POLL)

    def _notified(self, payload: str) -> None:
        kind, _, response_id = payload.partition(" ")
        for woken in self._waiters.get(response_id, ()):
            woken.set()
        if kind in ("cancel", "delete") and response_id in self._live():
            self._stop_here(response_id, kind == "delete")

    def _stop_here(self, response_id: str, deleted: bool) -> None:
        if self._on_cancel is not None:
            self._spawn(self._on_cancel(response_id, deleted))

    async def _keep_leases(self) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                await self._renew()
                await self.end_expired()
            except (psycopg.Error, OSError) as error:  # the next beat tries again; a lease outlives two misses
                _log.warning("renewing run leases failed: %s: %s", type(error).__name__, error)

    async def _renew(self) -> None:
        """Extend the leases of this process's runs; stop those cancelled or deleted meanwhile (a NOTIFY
        missed while the listener reconnected)."""
        live = self._live()
        if not live:
            return
        async with self._pool.connection() as conn:
            cursor = await conn.execute(
                # a deleted run (its lease cleared with its contents) is returned too, and stopped here
                "UPDATE so_middleware_responses SET lease_until = CASE WHEN deleted THEN NULL "
                "ELSE now() + make_interval(secs => %s) END "
                "WHERE id = ANY(%s) AND runner = %s AND (lease_until IS NOT NULL OR deleted) "
                "RETURNING id, cancel_requested, deleted",
                (self.lease, live, self.node),
            )
            rows = await cursor.fetchall()
        for response_id, cancelled, deleted in rows:
            if cancelled or deleted:
                self._stop_here(response_id, deleted)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _ready(events: list[dict[str, Any]], after: int) -> list[dict[str, Any]]:
    """The events that follow `after` without a gap (a later one may commit before an earlier one),
    stopping before an ending event (`TERMINAL_EVENTS`)."""
    ready: list[dict[str, Any]] = []
    for event in events:
        if event["sequence_number"] != after + len(ready) + 1 or event["type"] in TERMINAL_EVENTS:
            break
        ready.append(event)
    return ready
