"""What structured-output runs learned about a backend: which strategies it ignores, and why.

One `Learned` store per structured-output layer (the client stack), keyed by route and model.
A run starts at the first strategy not known to be ignored, so a backend that ignores `native`
costs one wasted attempt per layer, not one per call. Only an answer that showed the strategy
ignored teaches it (a cut-off one never does); each lesson keeps that evidence and when it was
learned, and is forgotten after `LESSON_TTL` seconds or `LESSON_RUNS` runs that started from
it, whichever comes first: the next run probes the first strategy again (a server restarted
with another grammar backend, a model swapped behind the same name).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

__all__ = ["LESSON_RUNS", "LESSON_TTL", "Learned", "Lesson", "route_of"]

LESSON_TTL = 3600.0  # seconds a lesson about ignored strategies is trusted
LESSON_RUNS = 1000  # runs that may start from one lesson before the first strategy is tried again


@dataclass(frozen=True)
class Lesson:
    """What was learned for one (route, model): strategies the backend ignored, and the one that worked.

    `evidence` maps each ignored strategy to what showed it (the answer's start and the error);
    `learned_at` is when the first of them was learned (`time.time()`); `runs` counts the runs
    that started from this lesson since.
    """

    ignored: frozenset[str] = frozenset()
    worked: str | None = None
    evidence: Mapping[str, str] = field(default_factory=dict)
    learned_at: float | None = None
    runs: int = 0


class Learned:
    """A small thread-safe map from (route, model) to `Lesson` (runs of the sync entry point
    may share one store across threads); `ttl` and `max_runs` bound how long a lesson holds."""

    def __init__(
        self, ttl: float = LESSON_TTL, max_runs: int = LESSON_RUNS, clock: Callable[[], float] = time.time
    ) -> None:
        self._lessons: dict[tuple[str, str | None], Lesson] = {}
        self._lock = threading.Lock()
        self._ttl, self._max_runs, self._clock = ttl, max_runs, clock

    def get(self, key: tuple[str, str | None], *, run: bool = False) -> Lesson:
        """The lesson for `key` (an empty one once it expired); `run=True` counts a run starting from it."""
        with self._lock:
            lesson = self._lessons.get(key, Lesson())
            if lesson.learned_at is not None and self._expired(lesson):
                del self._lessons[key]
                return Lesson()
            if run and lesson.ignored:
                lesson = self._lessons[key] = replace(lesson, runs=lesson.runs + 1)
            return lesson

    def _expired(self, lesson: Lesson) -> bool:
        age = self._clock() - (lesson.learned_at or 0.0)
        return age >= self._ttl or lesson.runs >= self._max_runs

    def ignored(self, key: tuple[str, str | None], strategy: str, evidence: str = "") -> None:
        with self._lock:
            lesson = self._lessons.get(key, Lesson())
            at = lesson.learned_at if lesson.learned_at is not None else self._clock()
            shown = MappingProxyType({**lesson.evidence, strategy: evidence})
            self._lessons[key] = replace(lesson, ignored=lesson.ignored | {strategy}, evidence=shown, learned_at=at)

    def worked(self, key: tuple[str, str | None], strategy: str) -> None:
        with self._lock:
            lesson = self._lessons.get(key, Lesson())
            if lesson.worked != strategy:
                self._lessons[key] = replace(lesson, worked=strategy)

    def view(self) -> Mapping[tuple[str, str | None], Lesson]:
        with self._lock:
            return MappingProxyType(
                {
                    key: lesson
                    for key, lesson in self._lessons.items()
                    if lesson.learned_at is None or not self._expired(lesson)
                }
            )

    def clear(self) -> None:
        with self._lock:
            self._lessons.clear()


def route_of(client: Any) -> str:
    """The innermost client's class name (`OpenAIResponsesClient`, ...): the route a stack talks to."""
    while hasattr(client, "__wrapped__"):
        client = client.__wrapped__
    return type(client).__qualname__
