"""Stored responses: a small interface, SQLite as the embedded default.

A stored response is the response object and the input items the model saw (the conversation
so far and the request's own input), so `previous_response_id` continues a conversation and
`GET /v1/responses/{id}/input_items` lists them. `PostgresStore` (in `_postgres`) is the one a
deployment with several gateway processes shares.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import sqlite3
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from so_middleware import UserError

__all__ = [
    "MEMORY_MAX_AGE",
    "MEMORY_MAX_PER_KEY",
    "MEMORY_MAX_RESPONSES",
    "ResponseStore",
    "SQLiteStore",
    "StoreError",
    "StoredResponse",
    "check_store_path",
    "to_json",
]

_log = logging.getLogger("so_middleware.gateway")
MEMORY_MAX_RESPONSES = 10_000  # the default in-memory store keeps the newest 10,000 responses
MEMORY_MAX_AGE = 3600.0  # ... for at most an hour after their last write
MEMORY_MAX_PER_KEY = 1_000  # ... and at most 1,000 of one client key's

_T = TypeVar("_T")
# A run still `queued`/`in_progress` in the file when it opens was left by a gateway that stopped
# without finishing it (a crash, a kill): nothing runs it any more, so it fails instead of waiting forever.
_ABANDONED = {"code": "server_error", "message": "the gateway stopped before this response finished"}
_FAIL_ABANDONED = f"""UPDATE responses SET response = json_set(response, '$.status', 'failed', '$.error',
    json('{json.dumps(_ABANDONED)}'))
    WHERE json_valid(response) AND json_extract(response, '$.status') IN ('queued', 'in_progress')"""


class StoreError(Exception):
    """The store could not save or read a response. The message says why in words a client may see
    (a database's own message, which may quote SQL, is logged, never put here).

    Example: `except StoreError as error: response["error"] = {"message": str(error), ...}`.
    """


def to_json(value: Any) -> str:
    """`value` as strict JSON text, what every store writes; a number JSON has no spelling for
    (`inf`, `nan`: `1e999` decodes to `inf`) is a `StoreError` naming where it is, so a response is
    kept the same way, or refused the same way, whatever the store."""
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError:
        raise StoreError(f"{_non_finite(value)} is a number JSON cannot hold (past a double's range)") from None


def _non_finite(value: Any, where: str = "") -> str:
    """The path of the first non-finite number in `value` (for the message only: the refusal is cheap)."""
    pending: list[tuple[Any, str]] = [(value, where)]
    while pending:
        value, where = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return where or "a value"
        if isinstance(value, dict):
            pending.extend((item, f"{where}.{key}" if where else str(key)) for key, item in value.items())
        elif isinstance(value, (list, tuple)):
            pending.extend((item, f"{where}[{i}]") for i, item in enumerate(value))
    return "a value"


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

    `max_responses`, `max_per_key` (of one owner) and `max_age` (seconds since its last write) bound
    what is kept: each write drops the oldest responses past any (None: no bound). An owner's write
    past `max_responses` drops that owner's own oldest first: one client key filling the store does
    not evict another's. The gateway's default store, in memory, is bounded (`MEMORY_MAX_RESPONSES`,
    `MEMORY_MAX_PER_KEY`, `MEMORY_MAX_AGE`), so a long-running process does not grow without end.

    Every statement runs on one worker thread, in the order it was asked for: a write whose caller
    was cancelled still lands before a later one (a run's final status is its last write), and
    `close()` waits for every statement asked for before it.

    Example:
        store = SQLiteStore("responses.db")
    """

    def __init__(
        self,
        path: str = ":memory:",
        *,
        max_responses: int | None = None,
        max_age: float | None = None,
        max_per_key: int | None = None,
    ) -> None:
        check_store_path(path)  # here, so a wrong --store is refused before the gateway serves
        for name, count in (("max_responses", max_responses), ("max_per_key", max_per_key)):
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
                raise UserError(f"{name} must be None or a whole number >= 1, got {count!r}")
        if max_age is not None and (isinstance(max_age, bool) or not isinstance(max_age, (int, float))
                                    or not 0 < max_age < float("inf")):  # fmt: skip
            raise UserError(f"max_age must be None or a number of seconds > 0, got {max_age!r}")
        self.path, self.max_responses, self.max_age, self.max_per_key = path, max_responses, max_age, max_per_key
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
            await self._run("CREATE INDEX IF NOT EXISTS responses_owner ON responses (owner)")
            await _shielded(self._worker.submit(_repair, self._db))
            await self._run(_FAIL_ABANDONED)
        except (sqlite3.DatabaseError, StoreError) as error:
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
        row = (response["id"], to_json(response), to_json(input_items), owner, time.time())
        await _shielded(worker.submit(self._write, db, row))

    def _write(self, db: sqlite3.Connection, row: tuple[Any, ...]) -> None:
        try:
            db.execute("BEGIN")  # the write and its evictions land together, or neither does
            try:
                # a replaced row gets a new rowid: rowid order is the order of last writes
                cursor = db.execute("INSERT OR REPLACE INTO responses (id, response, input_items, owner, written) "
                                    "VALUES (?, ?, ?, ?, ?)", row)  # fmt: skip
                if cursor.lastrowid is not None:
                    self._evict(db, row[3], cursor.lastrowid)
                if self.max_age is not None:
                    db.execute("DELETE FROM responses WHERE written < ?", (row[-1] - self.max_age,))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as error:
            raise _refused("save", error) from None

    def _evict(self, db: sqlite3.Connection, owner: str | None, written: int) -> None:
        """Drop the oldest of `owner`'s past `max_per_key`, then, past `max_responses`, the owner's own
        oldest first (a key filling the store pays for it itself), then the oldest of all."""
        mine = "SELECT rowid FROM responses WHERE owner IS ? AND rowid != ? ORDER BY rowid"
        if self.max_per_key is not None:
            db.execute(f"DELETE FROM responses WHERE rowid IN ({mine} DESC LIMIT -1 OFFSET ?)",
                       (owner, written, self.max_per_key - 1))  # fmt: skip
        if self.max_responses is None:
            return
        over = db.execute("SELECT count(*) FROM responses").fetchone()[0] - self.max_responses
        if over > 0:
            evicted = db.execute(f"DELETE FROM responses WHERE rowid IN ({mine} LIMIT ?)", (owner, written, over))
            over -= evicted.rowcount
        if over > 0:
            db.execute("DELETE FROM responses WHERE rowid IN (SELECT rowid FROM responses WHERE rowid != ? "
                       "ORDER BY rowid LIMIT ?)", (written, over))  # fmt: skip

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
        return await _shielded(worker.submit(_fetch, db, sql, args))


def _fetch(db: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[Any]:
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.Error as error:
        raise _refused("read", error) from None


def _refused(doing: str, error: Exception) -> StoreError:
    """The error a client may see; the database's own message (it may quote SQL) goes to the log."""
    _log.warning("the response store could not %s a response: %s: %s", doing, type(error).__name__, error)
    return StoreError(f"the response store could not {doing} it ({type(error).__name__})")


def _repair(db: sqlite3.Connection) -> None:
    """Rewrite as strict JSON the rows an earlier version wrote with `Infinity`/`NaN` in them (SQLite's
    JSON functions refuse such a row: it would never be failed when abandoned, and it would break every
    item lookup); the non-finite numbers become null, as the answers that carried them spelled them."""
    rows = db.execute("SELECT rowid, response, input_items FROM responses "
                      "WHERE NOT json_valid(response) OR NOT json_valid(input_items)").fetchall()  # fmt: skip
    for rowid, response, items in rows:
        try:
            fixed = [to_json(json.loads(text, parse_constant=_null, parse_float=_finite)) for text in (response, items)]
        except ValueError:  # not JSON at all: not written by this store, left as it is
            continue
        db.execute("UPDATE responses SET response = ?, input_items = ? WHERE rowid = ?", (*fixed, rowid))


def _null(constant: str) -> None:
    return None


def _finite(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None


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
