"""Background runs that several gateway processes share: what a store offers beyond the responses
themselves so that any process can follow, cancel or delete a run another process is running.

A store that offers it (`PostgresStore`) has a `shared_runs` attribute; a store owned by one
process (SQLite) has none, and its runs are followed and cancelled where they run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from ._store import ResponseStore

__all__ = ["CancelHandler", "SharedRuns", "shared_runs"]

# (response id, deleted): stop this process's run with that id; `deleted`, forget it too
CancelHandler = Callable[[str, bool], Awaitable[None]]


@runtime_checkable
class SharedRuns(Protocol):
    """The events, cancel requests and leases of background runs, shared by every process of one store.

    Example: `async for batch in store.shared_runs.follow("resp_…", after=3): ...`
    """

    def attach(self, live: Callable[[], list[str]], on_cancel: CancelHandler) -> None:
        """`live()`: the ids of the runs this process is running (their leases are renewed);
        `on_cancel` is called when another process cancels or deletes one of them."""

    async def append(self, response_id: str, events: list[dict[str, Any]]) -> None:
        """Make a run's next events visible to every process (in sequence order)."""

    def follow(self, response_id: str, after: int) -> AsyncIterator[list[dict[str, Any]]]:
        """The run's events after sequence number `after`, then live until it ends (or is deleted)."""
        ...

    async def cancel(self, response_id: str) -> bool:
        """Ask the process running it to cancel it; True once it is no longer running (that process
        stopped it, or its lease ran out and the run was ended here), False if it still runs after a
        bounded wait."""
        ...


def shared_runs(store: ResponseStore) -> SharedRuns | None:
    """The store's shared runs, or None for a store that only one process uses."""
    shared = getattr(store, "shared_runs", None)
    return shared if isinstance(shared, SharedRuns) else None
