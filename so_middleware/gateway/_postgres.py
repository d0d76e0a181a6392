"""`PostgresStore`: stored responses in PostgreSQL, through psycopg 3's async connection pool.

Several gateway processes given the same URL share their stored responses and their background
runs (`shared_runs`, in `_pg_runs`): any of them polls, resumes, cancels or deletes a run another
one is running, which is how the gateway scales out behind a load balancer. Needs
`pip install "so-middleware[gateway]"`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
from psycopg.types.json import Json
from psycopg_pool import AsyncConnectionPool

from ._pg_runs import CHANNEL, EVENTS_TABLE, PostgresRuns
from ._runs import TERMINAL
from ._store import StoredResponse, StoreError, to_json

__all__ = ["DEFAULT_LEASE", "PostgresStore"]

_log = logging.getLogger("so_middleware.gateway")
_json = functools.partial(Json, dumps=to_json)  # strict, as every store writes: `inf` is refused before the database
DEFAULT_LEASE = 10.0  # seconds a run stays `in_progress` after its process was last heard from
# JSON keeps key order (JSONB would not); owner: the SHA-256 of the client key that made the response
_SCHEMA = """CREATE TABLE IF NOT EXISTS so_middleware_responses (
    id TEXT PRIMARY KEY, response JSON NOT NULL, input_items JSON NOT NULL, owner TEXT)"""
# Columns added to tables made before: their rows stay as they were (owner NULL: anyone's).
# deleted: a tombstone, so a run still going elsewhere cannot store the response again;
# runner/lease_until: the process running an unfinished run, and until when it is trusted to.
_MIGRATE = """ALTER TABLE so_middleware_responses ADD COLUMN IF NOT EXISTS owner TEXT,
    ADD COLUMN IF NOT EXISTS deleted BOOLEAN NOT NULL DEFAULT false, ADD COLUMN IF NOT EXISTS runner TEXT,
    ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS cancel_requested BOOLEAN NOT NULL DEFAULT false"""
_BY_ID = "id = %s AND NOT deleted"
_BY_ID_AND_OWNER = _BY_ID + " AND (owner = %s OR owner IS NULL)"  # with an owner: its rows, and the ownerless
# A save lands unless the response was deleted, or another process took the run over (its lease ran out).
_PUT = """INSERT INTO so_middleware_responses (id, response, input_items, owner, runner, lease_until)
    VALUES (%s, %s, %s, %s, %s, now() + make_interval(secs => %s))
    ON CONFLICT (id) DO UPDATE SET response = EXCLUDED.response, input_items = EXCLUDED.input_items,
        owner = EXCLUDED.owner, runner = EXCLUDED.runner, lease_until = EXCLUDED.lease_until
    WHERE NOT so_middleware_responses.deleted
        AND (so_middleware_responses.runner IS NULL OR so_middleware_responses.runner = EXCLUDED.runner)"""


class PostgresStore:
    """Responses in a PostgreSQL table (`so_middleware_responses`, created when missing), and the
    events of background runs (`so_middleware_events`), shared by every process given the same URL.

    A process renews the lease of each run it is running every `lease / 3` seconds; a run whose
    lease ran out (its process died) is ended `failed` by another process (or the next one to start).

    Example:
        store = PostgresStore("postgresql://gateway@db.internal/gateway")
    """

    def __init__(self, url: str, *, max_connections: int = 10, lease: float = DEFAULT_LEASE) -> None:
        if not lease > 0:
            raise ValueError(f"lease must be a positive number of seconds, got {lease!r}")
        self.url, self.lease = url, lease
        # each connection is checked as it leaves the pool: one the server dropped (a restart, a
        # failover) is replaced there, instead of failing the request that drew it
        self._pool = AsyncConnectionPool(url, min_size=1, max_size=max_connections, open=False,
                                         check=AsyncConnectionPool.check_connection)  # fmt: skip
        self.shared_runs = PostgresRuns(url, self._pool, uuid.uuid4().hex, lease)

    async def open(self) -> None:
        """Open the pool, create or update the tables, and start sharing runs."""
        await self._pool.open(wait=True, timeout=30)
        async with self._pool.connection() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(7301)")  # two processes starting at once
            await conn.execute(_SCHEMA)
            await conn.execute(_MIGRATE)
            await conn.execute(EVENTS_TABLE)
        await self.shared_runs.start()

    async def close(self) -> None:
        """Stop sharing runs and close the pool."""
        await self.shared_runs.stop()
        await self._pool.close()

    async def put(self, response: dict[str, Any], input_items: list[dict[str, Any]], owner: str | None = None) -> None:
        """Insert or replace (an unfinished run gets a lease), unless it was deleted meanwhile."""
        lease = None if response.get("status") in TERMINAL else self.lease
        row = (response["id"], _json(response), _json(input_items), owner, self.shared_runs.node, lease)
        async with self._connection("save") as conn:
            await conn.execute(_PUT, row)
            if response.get("background"):  # followers and cancellers elsewhere wait on its status
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"saved {response['id']}"))

    async def get(self, response_id: str, owner: str | None = None) -> StoredResponse | None:
        """The stored response, or None."""
        select = "SELECT response, input_items FROM so_middleware_responses WHERE "
        async with self._connection("read") as conn:
            if owner is None:
                cursor = await conn.execute(select + _BY_ID, (response_id,))
            else:
                cursor = await conn.execute(select + _BY_ID_AND_OWNER, (response_id, owner))
            row = await cursor.fetchone()
        return StoredResponse(row[0], row[1]) if row else None

    async def find_item(self, item_id: str, owner: str | None = None) -> dict[str, Any] | None:
        """The stored item with this id, or None."""
        if "\x00" in item_id:  # PostgreSQL text cannot hold a NUL: no stored item has this id
            return None
        mine = "NOT deleted" if owner is None else "NOT deleted AND (owner = %(owner)s OR owner IS NULL)"
        query = (f"SELECT item FROM so_middleware_responses, json_array_elements(response -> 'output') AS item "
                 f"WHERE {mine} AND item ->> 'id' = %(id)s UNION ALL SELECT item FROM so_middleware_responses, "
                 f"json_array_elements(input_items) AS item WHERE {mine} AND item ->> 'id' = %(id)s LIMIT 1")  # fmt: skip
        async with self._connection("read") as conn:
            row = await (await conn.execute(query, {"id": item_id, "owner": owner})).fetchone()
        return dict(row[0]) if row else None

    async def delete(self, response_id: str, owner: str | None = None) -> bool:
        """Remove it and its events, leaving a tombstone (a later save of a run still going is refused);
        the process running it is told to stop. False when there was none."""
        delete = ("UPDATE so_middleware_responses SET deleted = true, response = '{}', input_items = '[]', "
                  "lease_until = NULL WHERE ")  # fmt: skip
        async with self._connection("delete") as conn:
            if owner is None:
                cursor = await conn.execute(delete + _BY_ID, (response_id,))
            else:
                cursor = await conn.execute(delete + _BY_ID_AND_OWNER, (response_id, owner))
            if cursor.rowcount == 0:
                return False
            await conn.execute("DELETE FROM so_middleware_events WHERE response_id = %s", (response_id,))
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"delete {response_id}"))
        return True

    @contextlib.asynccontextmanager
    async def _connection(self, doing: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection (committed when the block ends); a database error becomes a `StoreError`
        a client may see, the database's own message (it may quote SQL) is logged."""
        try:
            async with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as error:
            _log.warning("the response store could not %s a response: %s: %s", doing, type(error).__name__, error)
            raise StoreError(f"the response store could not {doing} it ({type(error).__name__})") from None
