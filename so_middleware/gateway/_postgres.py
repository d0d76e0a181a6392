"""`PostgresStore`: stored responses in PostgreSQL, through psycopg 3's async connection pool.

Several gateway processes given the same URL share their stored responses, which is how the
gateway scales out behind a load balancer. Needs `pip install "so-middleware[gateway]"`.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Json
from psycopg_pool import AsyncConnectionPool

from ._store import StoredResponse

__all__ = ["PostgresStore"]

# JSON keeps key order (JSONB would not); owner: the SHA-256 of the client key that made the response
_SCHEMA = """CREATE TABLE IF NOT EXISTS so_middleware_responses (
    id TEXT PRIMARY KEY, response JSON NOT NULL, input_items JSON NOT NULL, owner TEXT)"""
# A table made before owners were recorded gets the column; its rows stay NULL: anyone's, as they were.
_MIGRATE = "ALTER TABLE so_middleware_responses ADD COLUMN IF NOT EXISTS owner TEXT"
_BY_ID = "id = %s"
_BY_ID_AND_OWNER = "id = %s AND (owner = %s OR owner IS NULL)"  # with an owner: its rows, and the ownerless


class PostgresStore:
    """Responses in a PostgreSQL table (`so_middleware_responses`, created when missing).

    Example:
        store = PostgresStore("postgresql://gateway@db.internal/gateway")
    """

    def __init__(self, url: str, *, max_connections: int = 10) -> None:
        self.url = url
        self._pool = AsyncConnectionPool(url, min_size=1, max_size=max_connections, open=False)

    async def open(self) -> None:
        """Open the pool and create the table."""
        await self._pool.open(wait=True, timeout=30)
        async with self._pool.connection() as conn:
            await conn.execute(_SCHEMA)
            await conn.execute(_MIGRATE)

    async def close(self) -> None:
        """Close the pool."""
        await self._pool.close()

    async def put(self, response: dict[str, Any], input_items: list[dict[str, Any]], owner: str | None = None) -> None:
        """Insert or replace."""
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO so_middleware_responses (id, response, input_items, owner) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET response = EXCLUDED.response, input_items = EXCLUDED.input_items, "
                "owner = EXCLUDED.owner",
                (response["id"], Json(response), Json(input_items), owner),
            )

    async def get(self, response_id: str, owner: str | None = None) -> StoredResponse | None:
        """The stored response, or None."""
        select = "SELECT response, input_items FROM so_middleware_responses WHERE "
        async with self._pool.connection() as conn:
            if owner is None:
                cursor = await conn.execute(select + _BY_ID, (response_id,))
            else:
                cursor = await conn.execute(select + _BY_ID_AND_OWNER, (response_id, owner))
            row = await cursor.fetchone()
        return StoredResponse(row[0], row[1]) if row else None

    async def delete(self, response_id: str, owner: str | None = None) -> bool:
        """Remove it; False when there was none."""
        delete = "DELETE FROM so_middleware_responses WHERE "
        async with self._pool.connection() as conn:
            if owner is None:
                cursor = await conn.execute(delete + _BY_ID, (response_id,))
            else:
                cursor = await conn.execute(delete + _BY_ID_AND_OWNER, (response_id, owner))
            return cursor.rowcount > 0
