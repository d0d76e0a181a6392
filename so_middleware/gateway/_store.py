"""Stored responses: a small interface, SQLite as the embedded default.

A stored response is the response object and the input items the model saw (the conversation
so far and the request's own input), so `previous_response_id` continues a conversation and
`GET /v1/responses/{id}/input_items` lists them. `PostgresStore` (in `_postgres`) is the one a
deployment with several gateway processes shares.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

__all__ = ["ResponseStore", "SQLiteStore", "StoredResponse"]

_T = TypeVar("_T")
# A run still `queued`/`in_progress` in the file when it opens was left by a gateway that stopped
# without finishing it (a crash, a kill): nothing runs it any more, so it fails instead of waiting forever.
_FAIL_ABANDONED = """UPDATE responses SET response = json_set(response, '$.status', 'failed', '$.error',
    json('{"code": "server_error", "message": "the gateway stopped before this response finished"}'))
    WHERE json_valid(response) AND json_extract(response, '$.status') IN ('queued', 'in_progress')"""


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
    """Responses in one SQLite file (or in memory with `":memory:"`, for tests), owned by one gateway
    process: on open, runs a previous process left `queued`/`in_progress` are marked `failed`.

    Every statement runs on one worker thread, in the order it was asked for: a write whose caller
    was cancelled still lands before a later one (a run's final status is its last write), and
    `close()` waits for every statement asked for before it.

    Example:
        store = SQLiteStore("responses.db")
    """

    def __init__(self, path: str = ":memory:") -> None:
        self.path = path
        self._worker: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None

    async def open(self) -> None:
        """Open the database file, create the table, fail the runs a stopped process left unfinished."""
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="so-middleware-sqlite")
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        await self._run(
            "CREATE TABLE IF NOT EXISTS responses (id TEXT PRIMARY KEY, response TEXT NOT NULL, input_items TEXT NOT NULL)"
        )
        await self._run(_FAIL_ABANDONED)

    async def close(self) -> None:
        """Close the database once every statement asked for before has run."""
        worker, db = self._worker, self._db
        if worker is None or db is None:
            return
        self._worker = None  # later calls fail at once instead of reaching a closed connection
        await _shielded(worker.submit(db.close))
        worker.shutdown(wait=False)
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
        worker, db = self._worker, self._db
        if worker is None or db is None:
            raise RuntimeError("the response store is not open")
        return await _shielded(worker.submit(lambda: db.execute(sql, args).fetchall()))


async def _shielded(future: Future[_T]) -> _T:
    """Wait for a statement on the worker; a cancelled caller stops waiting, the statement still runs."""
    return await asyncio.shield(asyncio.wrap_future(future))
