"""Paused runs: a run whose tool calls wait for approval, kept in a store until it is resumed, by
this process or by another one after a restart.

The state is strict JSON (the conversation, the waiting calls, the tools' fingerprints, the options
that shape the answer); the token that names it is 192 random bits, and the store keeps only its
SHA-256, under the store's tenant: a token is resumed once, by its tenant only.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import secrets
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..core import (
    ChatMessage,
    ContinuationToken,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    ReasoningContent,
    RefusalContent,
    SOMiddlewareError,
    TextContent,
    UserError,
)
from ..middleware.function_invocation import ApprovalRequest, Tool, ToolActivity

__all__ = [
    "MemoryPausedRuns",
    "PausedRun",
    "PausedRunStore",
    "PausedRunStoreError",
    "PostgresPausedRuns",
    "SQLitePausedRuns",
    "new_token",
    "paused_key",
    "tool_fingerprints",
]

_log = logging.getLogger("so_middleware.agents")
_PREFIX = "paused_"  # a paused run's token is a ContinuationToken whose id starts so
_TABLE = "so_middleware_paused_runs"
_CONTENTS: dict[str, Any] = {
    kind.type: kind  # each content dataclass's `type` default names it
    for kind in (
        TextContent,
        DataContent,
        HostedFileContent,
        FunctionCallContent,
        FunctionResultContent,
        ReasoningContent,
        RefusalContent,
    )
}
# The options kept with a paused run: they shape the answer, and a resumed run must ask alike.
_KEPT_OPTIONS = ("model", "instructions", "temperature", "max_tokens", "top_p", "stop", "seed")


class PausedRunStoreError(SOMiddlewareError):
    """The paused-run store could not save or read a run. The message says why without the
    database's own text (it may quote SQL), which is logged.

    Example: `except PausedRunStoreError: ...  # the run could not be kept; ask again later`.
    """


def new_token() -> ContinuationToken:
    """A fresh paused run's token: 192 random bits, opaque."""
    return ContinuationToken(_PREFIX + secrets.token_urlsafe(24))


def paused_key(token: ContinuationToken | str | None) -> str | None:
    """The store key of a paused run's token (its SHA-256), or None when the token names no paused
    run (a background run's token)."""
    if token is None:
        return None
    parsed = ContinuationToken.parse(token) if isinstance(token, str) else token
    if not parsed.response_id.startswith(_PREFIX):
        return None
    return hashlib.sha256(parsed.response_id.encode()).hexdigest()


def tool_fingerprints(tools: Sequence[Tool]) -> dict[str, str]:
    """Each tool's name -> a hash of what the model sees of it and whether it needs approval."""
    found: dict[str, str] = {}
    for item in tools:
        shown = [item.schema.parameters, item.schema.description, item.requires_approval]
        found[item.name] = hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()[:16]
    return found


def type_name(output_type: Any) -> str | None:
    """How a paused run remembers its output type: the same name must be asked for on resume (the
    qualified name without the module: a script's `__main__.Receipt` is its importer's `Receipt`)."""
    if output_type is None:
        return None
    name = getattr(output_type, "__qualname__", None)
    return name if isinstance(name, str) else repr(output_type)


@dataclass(frozen=True)
class PausedRun:
    """A run waiting for approvals: what a resumed run needs to go on as if it had not stopped.

    `messages` is the whole conversation, ending with the answer that asked; `new` the run's own
    input (for the thread of the resumed run); `requests` the waiting calls; `tools` the tools'
    fingerprints; `output_type` its name; `options` the options kept; `activities` the tools
    that ran before the pause.
    """

    messages: list[ChatMessage]
    new: list[ChatMessage]
    requests: list[ApprovalRequest]
    tools: dict[str, str]
    output_type: str | None
    options: dict[str, Any]
    activities: list[ToolActivity]

    @staticmethod
    def kept_options(options: Any) -> dict[str, Any]:
        """The options of `_KEPT_OPTIONS` that are set."""
        kept = {name: getattr(options, name) for name in _KEPT_OPTIONS if getattr(options, name) is not None}
        if "stop" in kept:
            kept["stop"] = list(kept["stop"])
        return kept

    def to_json(self) -> str:
        """Strict JSON; `PausedRunStoreError` naming what JSON cannot hold."""
        state = {
            "messages": [_message_json(m) for m in self.messages],
            "new": [_message_json(m) for m in self.new],
            "requests": [{"call_id": r.call_id, "name": r.name, "arguments": r.arguments} for r in self.requests],
            "tools": self.tools,
            "output_type": self.output_type,
            "options": self.options,
            "activities": [asdict(activity) for activity in self.activities],
        }
        try:
            return json.dumps(state, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise PausedRunStoreError(f"a paused run must be JSON to be kept, and is not: {error}") from None

    @classmethod
    def from_json(cls, text: str) -> PausedRun:
        """The run `to_json` wrote."""
        state = json.loads(text)
        return cls(
            messages=[_message(m) for m in state["messages"]],
            new=[_message(m) for m in state["new"]],
            requests=[ApprovalRequest(**r) for r in state["requests"]],
            tools=dict(state["tools"]),
            output_type=state["output_type"],
            options=dict(state["options"]),
            activities=[_activity(a) for a in state["activities"]],
        )


def _activity(item: Mapping[str, Any]) -> ToolActivity:
    return ToolActivity(**{**item, "nested": tuple(_activity(inner) for inner in item.get("nested", ()))})


def _message_json(message: ChatMessage) -> dict[str, Any]:
    contents = []
    for content in message.contents:
        item = {f.name: getattr(content, f.name) for f in fields(content)}
        if isinstance(content, DataContent) and isinstance(content.data, bytes):
            item["data"], item["base64"] = base64.b64encode(content.data).decode(), True
        contents.append(item)
    return {"role": message.role, "contents": contents, "author_name": message.author_name}


def _message(item: Mapping[str, Any]) -> ChatMessage:
    contents = []
    for content in item["contents"]:
        values = dict(content)
        kind = _CONTENTS[values.pop("type")]
        if values.pop("base64", False):
            values["data"] = base64.b64decode(values["data"])
        contents.append(kind(**values))
    return ChatMessage(item["role"], contents, author_name=item["author_name"])


@runtime_checkable
class PausedRunStore(Protocol):
    """Where paused runs wait, under one tenant. Keys are SHA-256 hex digests of tokens; states
    are JSON text. Every method is safe to call from several tasks (and processes, for the
    database stores) at once.

    Example (any object with these three coroutines and a `tenant` will do):
        await store.save(key, state); await store.load(key); await store.take(key)
    """

    tenant: str

    async def save(self, key: str, state: str) -> None:
        """Keep a paused run."""

    async def load(self, key: str) -> tuple[str, bool] | None:
        """This tenant's paused run and whether it was resumed already; None when it has none."""

    async def take(self, key: str) -> bool:
        """Mark it resumed, once: True for the one caller that did, False when it already was."""
        ...


def _check_tenant(tenant: str) -> str:
    if not isinstance(tenant, str):
        raise UserError(f"a paused-run store's tenant must be a str, not {type(tenant).__name__}")
    return tenant


class MemoryPausedRuns:
    """Paused runs in this process's memory (lost when it stops): the default of an agent with
    tools. For a resume after a restart, use `SQLitePausedRuns` or `PostgresPausedRuns`.

    Example: `ChatAgent(client, tools=[transfer], paused_runs=MemoryPausedRuns(tenant="acme"))`.
    """

    def __init__(self, *, tenant: str = "") -> None:
        self.tenant = _check_tenant(tenant)
        self._runs: dict[tuple[str, str], tuple[str, bool]] = {}

    async def save(self, key: str, state: str) -> None:
        """Keep a paused run."""
        self._runs[self.tenant, key] = (state, False)

    async def load(self, key: str) -> tuple[str, bool] | None:
        """This tenant's paused run, and whether it was resumed."""
        return self._runs.get((self.tenant, key))

    async def take(self, key: str) -> bool:
        """Mark it resumed, once."""
        found = self._runs.get((self.tenant, key))
        if found is None or found[1]:
            return False
        self._runs[self.tenant, key] = ("null", True)  # the state is dropped: it will not be read again
        return True


class SQLitePausedRuns:
    """Paused runs in a SQLite file (stdlib `sqlite3`), shared by every process that opens it:
    a run paused by one resumes in another, after a restart too.

    Example: `ChatAgent(client, tools=[transfer], paused_runs=SQLitePausedRuns("runs.db", tenant="acme"))`.
    """

    def __init__(self, path: str | Path, *, tenant: str = "") -> None:
        self.path = str(path)
        self.tenant = _check_tenant(tenant)

    async def save(self, key: str, state: str) -> None:
        """Keep a paused run."""
        sql = f"INSERT INTO {_TABLE} (key, tenant, state, used, created) VALUES (?, ?, ?, 0, ?)"
        await asyncio.to_thread(self._execute, "save", sql, (key, self.tenant, state, time.time()))

    async def load(self, key: str) -> tuple[str, bool] | None:
        """This tenant's paused run, and whether it was resumed."""
        sql = f"SELECT state, used FROM {_TABLE} WHERE key = ? AND tenant = ?"
        rows = await asyncio.to_thread(self._execute, "read", sql, (key, self.tenant))
        return (rows[0][0], bool(rows[0][1])) if rows else None

    async def take(self, key: str) -> bool:
        """Mark it resumed, once (one UPDATE: two processes cannot both take it)."""
        sql = f"UPDATE {_TABLE} SET used = 1, state = 'null' WHERE key = ? AND tenant = ? AND used = 0"
        changed: int = await asyncio.to_thread(self._execute, "take", sql, (key, self.tenant))
        return changed == 1

    def _execute(self, doing: str, sql: str, row: tuple[Any, ...]) -> Any:
        """The rows a SELECT read, else how many rows changed."""
        with self._connection(doing) as conn:
            cursor = conn.execute(sql, row)
            rows = cursor.fetchall() if cursor.description else cursor.rowcount
            conn.commit()
            return rows

    @contextlib.contextmanager
    def _connection(self, doing: str) -> Iterator[sqlite3.Connection]:
        try:
            conn = sqlite3.connect(self.path, timeout=30)
            try:
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, tenant TEXT NOT NULL, "
                    "state TEXT NOT NULL, used INTEGER NOT NULL, created REAL NOT NULL)"
                )
                yield conn
            finally:
                conn.close()
        except sqlite3.Error as error:
            _log.warning("the paused-run store could not %s a run: %s: %s", doing, type(error).__name__, error)
            raise PausedRunStoreError(
                f"the paused-run store could not {doing} the run ({type(error).__name__})"
            ) from None


class PostgresPausedRuns:
    """Paused runs in PostgreSQL (table `so_middleware_paused_runs`, created when missing), shared
    by every process given the same URL. Needs psycopg (`pip install "so-middleware[gateway]"`).

    Example: `PostgresPausedRuns("postgresql://app@db.internal/app", tenant="acme")`.
    """

    def __init__(self, url: str, *, tenant: str = "") -> None:
        self.url = url
        self.tenant = _check_tenant(tenant)
        self._ready = False

    async def save(self, key: str, state: str) -> None:
        """Keep a paused run."""
        sql = f"INSERT INTO {_TABLE} (key, tenant, state, used) VALUES (%s, %s, %s, false)"
        await self._execute("save", sql, (key, self.tenant, state))

    async def load(self, key: str) -> tuple[str, bool] | None:
        """This tenant's paused run, and whether it was resumed."""
        sql = f"SELECT state::text, used FROM {_TABLE} WHERE key = %s AND tenant = %s"
        rows = await self._execute("read", sql, (key, self.tenant))
        return (rows[0][0], bool(rows[0][1])) if rows else None

    async def take(self, key: str) -> bool:
        """Mark it resumed, once (one UPDATE: two processes cannot both take it)."""
        sql = (
            f"UPDATE {_TABLE} SET used = true, state = 'null' WHERE key = %s AND tenant = %s AND NOT used RETURNING key"
        )
        return bool(await self._execute("take", sql, (key, self.tenant)))

    async def _execute(self, doing: str, sql: str, row: tuple[Any, ...]) -> list[Any]:
        async with self._connection(doing) as conn:
            cursor = await conn.execute(sql, row)
            return list(await cursor.fetchall()) if cursor.description else []

    @contextlib.asynccontextmanager
    async def _connection(self, doing: str) -> AsyncIterator[Any]:
        try:
            import psycopg
        except ImportError:
            raise ImportError('PostgresPausedRuns needs psycopg: pip install "so-middleware[gateway]"') from None
        try:
            async with await psycopg.AsyncConnection.connect(self.url, connect_timeout=30) as conn:
                if not self._ready:
                    async with conn.transaction():
                        await conn.execute("SELECT pg_advisory_xact_lock(7302)")  # two processes creating it at once
                        await conn.execute(
                            f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, tenant TEXT NOT NULL, "
                            "state JSON NOT NULL, used BOOLEAN NOT NULL, created TIMESTAMPTZ NOT NULL DEFAULT now())"
                        )
                    self._ready = True
                yield conn
        except psycopg.Error as error:
            _log.warning("the paused-run store could not %s a run: %s: %s", doing, type(error).__name__, error)
            raise PausedRunStoreError(
                f"the paused-run store could not {doing} the run ({type(error).__name__})"
            ) from None
