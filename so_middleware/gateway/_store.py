"""Stored responses: a small interface, SQLite as the embedded default.

A stored response is the response object and the input items the model saw (the conversation
so far and the request's own input), so `previous_response_id` continues a conversation and
`GET /v1/responses/{id}/input_items` lists them. `PostgresStore` (in `_postgres`) is the one a
deployment with several gateway processes shares.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from so_middleware import UserError

__all__ = [
    "MEMORY_MAX_AGE",
    "MEMORY_MAX_RESPONSES",
    "ResponseStore",
    "SQLiteStore",
    "StoredResponse",
    "check_store_path",
]

MEMORY_MAX_RESPONSES = 10_000  # the default in-memory store keeps the newest 10,000 responses
MEMORY_MAX_AGE = 3600.0  # ... for at most an hour after their last write

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

    Example (any object with these six coroutines will do):
        store = SQLiteStore(); await store.open(); await store.put(response, items); await store.get(response["id"])
    """

    async def open(self) -> None:
        """Connect and create the table if needed."""

    async def close(self) -> None:
        """Release connections."""

    async def put(self, response: dict[str, Any], input_items: list[dict[str, Any]], owner: str | None = None) -> None:
        """Insert or replace the response with this id; `owner` (a hash of the client's key) is who may
        see it, None anyone."""

    async def get(self, response_id: str, owner: str | None = None) -> StoredResponse | None:
        """The stored response, or None; with an `owner`, None for another owner's response."""

    async def delete(self, response_id: str, owner: str | None = None) -> bool:
        """Remove it; False when there was none (with an `owner`: none of this owner's)."""
        ...

    async def find_item(self, item_id: str, owner: str | None = None) -> dict[str, Any] | None:
        """The item with this id in a stored response's output or input items (an `item_reference`),
        or None; with an `owner`, only among the responses `get` would give that owner."""
        ...


class SQLiteStore:
    """Responses in one SQLite file (or in memory with `":memory:"`), owned by one gateway process:
    on open, runs a previous process left `queued`/`in_progress` are marked `failed`.

    `max_responses` and `max_age` (seconds since its last write) bound what is kept: each write
    drops the oldest responses past either (None: no bound). The gateway's default store, in
    memory, is bounded (`MEMORY_MAX_RESPONSES`, `MEMORY_MAX_AGE`), so a long-running process does
    not grow without end.

    Every statement runs on one worker thread, in the order it was asked for: a write whose caller
    was cancelled still lands before a later one (a run's final status is its last write), and
    `close()` waits for every statement asked for before it.

    Example:
        store = SQLiteStore("responses.db")
    """

    def __init__(
        self, path: str = ":memory:", *, max_responses: int | None = None, max_age: float | None = None
    ) -> None:
        check_store_path(path)  # here, so a wrong --store is refused before the gateway serves
        if max_responses is not None and (isinstance(max_responses, bool) or not isinstance(max_responses, int)
                                          or max_responses < 1):  # fmt: skip
            raise UserError(f"max_responses must be None or a whole number >= 1, got {max_responses!r}")
        if max_age is not None and (isinstance(max_age, bool) or not isinstance(max_age, (int, float))
                                    or not 0 < max_age < float("inf")):  # fmt: skip
            raise UserError(f"max_age must be None or a number of seconds > 0, got {max_age!r}")
        self.path, self.max_responses, self.max_age = path, max_responses, max_age
        self._worker: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None

    async def open(self) -> None:
        """Open the database file (created 0600: stored conversations are nobody else's), create the
        table or add the `owner` column to a table made before owners were recorded, and fail the runs
        a stopped process left unfinished."""
        if self.path != ":memory:":
            _create_private(self.path)
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="so-middleware-sqlite")
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            await self._run(
                "CREATE TABLE IF NOT EXISTS responses "
                "(id TEXT PRIMARY KEY, response TEXT NOT NULL, input_items TEXT NOT NULL, owner TEXT, written REAL)"
            )
            columns = [row[1] for row in await self._run("PRAGMA table_info(responses)")]
            if "owner" not in columns:  # rows stored before owners were: NULL, anyone's (as they were)
                await self._run("ALTER TABLE responses ADD COLUMN owner TEXT")
            if "written" not in columns:  # rows stored before ages were: NULL, never too old
                await self._run("ALTER TABLE responses ADD COLUMN written REAL")
            await self._run("CREATE INDEX IF NOT EXISTS responses_written ON responses (written)")
            await self._run(_FAIL_ABANDONED)
        except sqlite3.DatabaseError as error:
            await self.close()
            raise UserError(f"cannot use {self.path!r} as the response store: {error}") from error

    async def close(self) -> None:
        """Close the database once every statement asked for before has run."""
        worker, db = self._worker, self._db
        if worker is None or db is None:
            return
        self._worker = None  # later calls fail at once instead of reaching a closed connection
        await _shielded(worker.submit(db.close))
        worker.shutdown(wait=False)
        self._db = None

    async def put(self, response: dict[str, Any], input_items: list[dict[str, Any]], owner: str | None = None) -> None:
        """Insert or replace; then drop what is past the bounds, in the same trip to the worker."""
        worker, db = self._worker, self._db
        if worker is None or db is None:
            raise RuntimeError("the response store is not open")
        row = (response["id"], json.dumps(response), json.dumps(input_items), owner, time.time())
        await _shielded(worker.submit(self._write, db, row))

    def _write(self, db: sqlite3.Connection, row: tuple[Any, ...]) -> None:
        # a replaced row gets a new rowid: rowid order is the order of last writes
        cursor = db.execute(
            "INSERT OR REPLACE INTO responses (id, response, input_items, owner, written) VALUES (?, ?, ?, ?, ?)", row
        )
        if self.max_responses is not None and cursor.lastrowid is not None:
            db.execute("DELETE FROM responses WHERE rowid <= ?", (cursor.lastrowid - self.max_responses,))
        if self.max_age is not None:
            db.execute("DELETE FROM responses WHERE written < ?", (row[-1] - self.max_age,))

    async def get(self, response_id: str, owner: str | None = None) -> StoredResponse | None:
        """The stored response, or None."""
        where, args = _where(response_id, owner)
        rows = await self._run(f"SELECT response, input_items FROM responses WHERE {where}", *args)
        return StoredResponse(json.loads(rows[0][0]), json.loads(rows[0][1])) if rows else None

    async def delete(self, response_id: str, owner: str | None = None) -> bool:
        """Remove it; False when there was none."""
        where, args = _where(response_id, owner)
        rows = await self._run(f"DELETE FROM responses WHERE {where} RETURNING id", *args)
        return bool(rows)

    async def find_item(self, item_id: str, owner: str | None = None) -> dict[str, Any] | None:
        """The stored item with this id, or None."""
        where, args = "json_extract(item.value, '$.id') = ?", [item_id]
        if owner is not None:  # as `_where`: the owner's responses, and those stored without an owner
            where, args = where + " AND (responses.owner = ? OR responses.owner IS NULL)", [item_id, owner]
        rows = await self._run(
            f"SELECT item.value FROM responses, json_each(responses.response, '$.output') AS item WHERE {where} "
            f"UNION ALL SELECT item.value FROM responses, json_each(responses.input_items) AS item WHERE {where} "
            "LIMIT 1", *args, *args,
        )  # fmt: skip
        found: dict[str, Any] | None = json.loads(rows[0][0]) if rows else None
        return found

    async def _run(self, sql: str, *args: Any) -> list[Any]:
        worker, db = self._worker, self._db
        if worker is None or db is None:
            raise RuntimeError("the response store is not open")
        return await _shielded(worker.submit(lambda: db.execute(sql, args).fetchall()))


def _where(response_id: str, owner: str | None) -> tuple[str, tuple[str, ...]]:
    """The id, and the owner's responses only (and those stored without an owner) when one is given."""
    if owner is None:
        return "id = ?", (response_id,)
    return "id = ? AND (owner = ? OR owner IS NULL)", (response_id, owner)


def check_store_path(path: str) -> None:
    """Refuse, naming it, a SQLite path whose directory does not exist or that is a directory."""
    if path == ":memory:":
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UserError(f"the response store {path!r} cannot be created: its directory {directory!r} does not exist")
    if os.path.isdir(path):
        raise UserError(f"the response store {path!r} is a directory, not a SQLite file")


def _create_private(path: str) -> None:
    """Create the file 0600 if it is missing (SQLite gives its -journal, -wal and -shm files the same
    mode); an existing file keeps its mode, and no directory is made or changed."""
    check_store_path(path)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError as error:
        raise UserError(f"cannot open the response store {path!r}: {error.strerror or error}") from error


async def _shielded(future: Future[_T]) -> _T:
    """Wait for a statement on the worker; a cancelled caller stops waiting, the statement still runs."""
    return await asyncio.shield(asyncio.wrap_future(future))
