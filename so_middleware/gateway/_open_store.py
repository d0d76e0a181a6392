"""Choosing the store from a `--store` value (PostgreSQL is imported only when asked for)."""

from __future__ import annotations

from ._store import ResponseStore, SQLiteStore

__all__ = ["open_store"]


def open_store(url: str | None, *, lease: float | None = None) -> ResponseStore:
    """The store for a `--store` value: a `postgresql://` URL, a SQLite file path, or None (in memory).
    `lease`: PostgreSQL only, the seconds a background run outlives its process's last heartbeat.

    Example: `open_store("postgresql://gateway@db/gateway")` is a `PostgresStore`.
    """
    if url and url.startswith(("postgres://", "postgresql://")):
        from ._postgres import PostgresStore

        return PostgresStore(url) if lease is None else PostgresStore(url, lease=lease)
    return SQLiteStore(url or ":memory:")
