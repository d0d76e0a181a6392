"""Stores for `with_cache`: the protocol, a bounded in-memory LRU, and a diskcache store on disk."""

from __future__ import annotations

import copy
import os
import threading
from collections import OrderedDict
from typing import Any, Protocol

from ...core import UserError

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

    The answers stored may quote prompts: the directories it creates are `0700`, and the files
    it creates (the SQLite database, its journals, the value files) `0600`, whatever the umask.

    Example: `with_cache(client, store=disk_store(".cache/llm"))`.
    """
    try:
        import diskcache
    except ImportError as error:
        raise ImportError("disk_store needs diskcache: pip install 'so-middleware[cache]'") from error
    _private_directory(directory)
    # SQLite gives its -wal and -shm files the mode of the database file it finds
    _private_file(os.path.join(directory, diskcache.core.DBNAME))
    disk = settings.pop("disk", diskcache.Disk)

    class PrivateDisk(disk):  # type: ignore[misc, valid-type]
        """Value files `0600`, in sub-directories `0700`."""

        def __init__(self, directory: str, **kwargs: Any) -> None:
            super().__init__(directory, **kwargs)
            self.private_directory = directory

        def filename(self, key: Any = diskcache.core.UNKNOWN, value: Any = diskcache.core.UNKNOWN) -> Any:
            name, full_path = super().filename(key, value)
            parent = self.private_directory
            for part in os.path.dirname(name).split(os.sep):
                parent = os.path.join(parent, part)
                _private_directory(parent)
            return name, full_path

        def store(self, value: Any, read: bool, key: Any = diskcache.core.UNKNOWN) -> Any:
            stored = super().store(value, read, key=key)
            if stored[2] is not None:  # written to a file of its own (diskcache creates it with 'xb')
                os.chmod(os.path.join(self.private_directory, stored[2]), 0o600)
            return stored

    return diskcache.Cache(directory, disk=PrivateDisk, **settings)


def _private_directory(path: str) -> None:
    """Create `path` `0700` (whatever the umask); a directory already there is left as it is."""
    if not os.path.isdir(path):
        os.makedirs(path, 0o700, exist_ok=True)
        os.chmod(path, 0o700)  # makedirs' mode passes through the umask


def _private_file(path: str) -> None:
    """Create `path` readable and writable by its owner only (a file already there is left as it is)."""
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(descriptor, 0o600)
    finally:
        os.close(descriptor)
