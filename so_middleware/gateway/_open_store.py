"""Choosing the store from a `--store` value (PostgreSQL is imported only when asked for)."""

from __future__ import annotations

from ._store import MEMORY_MAX_AGE, MEMORY_MAX_PER_KEY, MEMORY_MAX_RESPONSES, ResponseStore, SQLiteStore

__all__ = ["open_store"]


def open_store(
    url: str | None,
    *,
    lease: float | None = None,
    max_responses: int | None = MEMORY_MAX_RESPONSES,
    max_age: float | None = MEMORY_MAX_AGE,
    max_per_key: int | None = MEMORY_MAX_PER_KEY,
) -> ResponseStore:
    """The store for a `--store` value: a `postgresql://` URL, a SQLite file path, or None (in
    memory, bounded by `max_responses`, `max_per_key` and `max_age`; a file or a database keeps everything).
    `lease`: PostgreSQL only, the seconds a background run outlives its process's last heartbeat.

    Example: `open_store("postgresql://gateway@db/gateway")` is a `PostgresStore`.
    """
    if url and url.startswith(("postgres://", "postgresql://")):
        from ._postgres import PostgresStore

        return PostgresStore(url) if lease is None else PostgresStore(url, lease=lease)
    if url:
        return SQLiteStore(url)
    return SQLiteStore(":memory:", max_responses=max_responses, max_age=max_age, max_per_key=max_per_key)
