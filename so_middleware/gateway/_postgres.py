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

_SCHEMA = """CREATE TABLE IF NOT EXISTS so_middleware_responses (
    id TEXT PRIMARY KEY, response JSON NOT NULL, input_items JSON NOT NULL)"""  # JSON keeps key order (JSONB would not)


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

    async def close(self) -> None:
        """Close the pool."""
        await self._pool.close()

    async def put(self, response: dict[str, Any], input_items: list[dict[str, Any]]) -> None:
        """Insert or replace."""
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO so_middleware_responses (id, response, input_items) VALUES (%s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET response = EXCLUDED.response, input_items = EXCLUDED.input_items",
                (response["id"], Json(response), Json(input_items)),
            )

    async def get(self, response_id: str) -> StoredResponse | None:
        """The stored response, or None."""
        async with self._pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT response, input_items FROM so_middleware_responses WHERE id = %s", (response_id,)
            )
            row = await cursor.fetchone()
        return StoredResponse(row[0], row[1]) if row else None

    async def delete(self, response_id: str) -> bool:
        """Remove it; False when there was none."""
        async with self._pool.connection() as conn:
            cursor = await conn.execute("DELETE FROM so_middleware_responses WHERE id = %s", (response_id,))
            return cursor.rowcount > 0
