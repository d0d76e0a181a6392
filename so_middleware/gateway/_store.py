"""Stored responses: a small interface, SQLite as the embedded default.

A stored response is the response object and the input items the model saw (the conversation
so far and the request's own input), so `previous_response_id` continues a conversation and
`GET /v1/responses/{id}/input_items` lists them. `PostgresStore` (in `_postgres`) is the one a
deployment with several gateway processes shares.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import anyio.to_thread

__all__ = ["ResponseStore", "SQLiteStore", "StoredResponse"]


@dataclass(frozen=True)
class StoredResponse:
    """A response object and the input items its run saw.

    Example: `(await store.get("resp_…")).response["status"]`.
    """

    response: dict[str, Any]
    input_items: list[dict[str, Any]]


class ResponseStore(Protocol):
    """Where responses are kept. Every method is safe to call from several tasks at once.

    Example (any object with these five coroutines will do):
        store = SQLiteStore(); await store.open(); await store.put(response, items); await store.get(response["id"])
    """

    async def open(self) -> None:
        """Connect and create the table if needed."""

    async def close(self) -> None:
        """Release connections."""

    async def put(self, response: dict[str, Any], input_items: list[dict[str, Any]]) -> None:
        """Insert or replace the response with this id."""

    async def get(self, response_id: str) -> StoredResponse | None:
        """The stored response, or None."""

    async def delete(self, response_id: str) -> bool:
        """Remove it; False when there was none."""
        ...


class SQLiteStore:
    """Responses in one SQLite file (or in memory with `":memory:"`, for tests).

    Example:
        store = SQLiteStore("responses.db")
    """

    def __init__(self, path: str = ":memory:") -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    async def open(self) -> None:
        """Open the database file and create the table."""
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        await self._run(
            "CREATE TABLE IF NOT EXISTS responses (id TEXT PRIMARY KEY, response TEXT NOT NULL, input_items TEXT NOT NULL)"
        )

    async def close(self) -> None:
        """Close the database."""
        if self._db is not None:
            self._db.close()
            self._db = None

    async def put(self, response: dict[str, Any], input_items: list[dict[str, Any]]) -> None:
        """Insert or replace."""
        await self._run(
            "INSERT OR REPLACE INTO responses (id, response, input_items) VALUES (?, ?, ?)",
            response["id"], json.dumps(response), json.dumps(input_items),
        )  # fmt: skip

    async def get(self, response_id: str) -> StoredResponse | None:
        """The stored response, or None."""
        rows = await self._run("SELECT response, input_items FROM responses WHERE id = ?", response_id)
        return StoredResponse(json.loads(rows[0][0]), json.loads(rows[0][1])) if rows else None

    async def delete(self, response_id: str) -> bool:
        """Remove it; False when there was none."""
        rows = await self._run("DELETE FROM responses WHERE id = ? RETURNING id", response_id)
        return bool(rows)

    async def _run(self, sql: str, *args: Any) -> list[Any]:
        def execute() -> list[Any]:
            if self._db is None:
                raise RuntimeError("the response store is not open")
            with self._lock:
                return self._db.execute(sql, args).fetchall()

        return await anyio.to_thread.run_sync(execute)
