"""Stores for `with_cache`: the protocol, a bounded in-memory LRU, and a diskcache store on disk."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any, Protocol

from ..core import UserError

__all__ = ["CacheStore", "MemoryStore", "disk_store"]


class CacheStore(Protocol):
    """What `with_cache` needs of a store; `diskcache.Cache` is one as it is."""

    def get(self, key: str) -> Any: ...

    def set(self, key: str, value: Any) -> Any: ...


class MemoryStore:
    """An in-memory LRU of at most `maxsize` entries; values are copied in and out, never shared.

    Example: `with_cache(client, store=MemoryStore(maxsize=1000))`.
    """

    def __init__(self, maxsize: int = 256) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise UserError(f"maxsize must be an int of at least 1, not {maxsize!r}")
        self._maxsize = maxsize
        self._entries: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()  # sync entry points call from other threads

    def get(self, key: str) -> Any:
        """A copy of the value stored under `key`, or None; marks it as recently used."""
        with self._lock:
            if key not in self._entries:
                return None
            self._entries.move_to_end(key)
            return copy.deepcopy(self._entries[key])

    def set(self, key: str, value: Any) -> None:
        """Store a copy of `value`, evicting the least recently used entry beyond `maxsize`."""
        stored = copy.deepcopy(value)
        with self._lock:
            self._entries[key] = stored
            self._entries.move_to_end(key)
            while len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def __deepcopy__(self, memo: dict[int, Any]) -> MemoryStore:
        clone = MemoryStore(self._maxsize)
        with self._lock:
            clone._entries = copy.deepcopy(self._entries, memo)
        return clone


def disk_store(directory: str, **settings: Any) -> Any:
    """A `diskcache.Cache` in `directory` (`settings` go to it, e.g. `size_limit=2**30`).

    Example: `with_cache(client, store=disk_store(".cache/llm"))`.
    """
    try:
        import diskcache
    except ImportError as error:
        raise ImportError("disk_store needs diskcache: pip install 'so-middleware[cache]'") from error
    return diskcache.Cache(directory, **settings)
