"""What structured-output runs learned about a backend: which strategies it ignores.

One `Learned` store per structured-output layer (the client stack), keyed by route and model.
A run starts at the first strategy not known to be ignored, so a backend that ignores `native`
costs one wasted attempt per layer, not one per call.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["Learned", "Lesson", "route_of"]


@dataclass(frozen=True)
class Lesson:
    """What was learned for one (route, model): strategies the backend ignored, and the one that worked."""

    ignored: frozenset[str] = frozenset()
    worked: str | None = None


class Learned:
    """A small thread-safe map from (route, model) to `Lesson` (runs of the sync entry point
    may share one store across threads)."""

    def __init__(self) -> None:
        self._lessons: dict[tuple[str, str | None], Lesson] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str | None]) -> Lesson:
        with self._lock:
            return self._lessons.get(key, Lesson())

    def ignored(self, key: tuple[str, str | None], strategy: str) -> None:
        with self._lock:
            lesson = self._lessons.get(key, Lesson())
            self._lessons[key] = Lesson(lesson.ignored | {strategy}, lesson.worked)

    def worked(self, key: tuple[str, str | None], strategy: str) -> None:
        with self._lock:
            lesson = self._lessons.get(key, Lesson())
            if lesson.worked != strategy:
                self._lessons[key] = Lesson(lesson.ignored, strategy)

    def view(self) -> Mapping[tuple[str, str | None], Lesson]:
        with self._lock:
            return MappingProxyType(dict(self._lessons))

    def clear(self) -> None:
        with self._lock:
            self._lessons.clear()


def route_of(client: Any) -> str:
    """The innermost client's class name (`OpenAIResponsesClient`, ...): the route a stack talks to."""
    while hasattr(client, "__wrapped__"):
        client = client.__wrapped__
    return type(client).__qualname__
