"""`ExtractionServer`: a loopback Chat Completions server that answers each item with its own value,
with injected 429s (`retry-after-ms`) and connection resets, and a log of what it received.

Built on `so_middleware.testing`'s `FaultServer` (a real threaded HTTP server on 127.0.0.1): the
answers are the documented Chat Completions body, the 429 the documented error body. An item is
the first user message, `item N`; its answer is `{"n": N, "word": "wN"}`, except items listed in
`invalid`, which always answer `not json` (so they end as `ModelBehaviorError`).
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from so_middleware.testing._faults import Fault, FaultServer, RecordedRequest, completion, reset, status


class Row(BaseModel):
    """What every item extracts to."""

    n: int
    word: str


@dataclass(frozen=True)
class Served:
    """One request as the server saw it."""

    at: float  # time.monotonic() when it arrived
    item: int | None
    answer: str  # "ok", "invalid", "429", "reset"


class ExtractionServer(FaultServer):
    """Answers `item N` requests after `delay` seconds (`slow_delay` for a share `slow` of them);
    `rate_limited` and `resets` are the chance of each fault per request."""

    def __init__(
        self,
        *,
        delay: float = 0.0,
        rate_limited: float = 0.0,
        resets: float = 0.0,
        retry_after_ms: int = 100,
        invalid: frozenset[int] = frozenset(),
        seed: int = 0,
        slow: float = 0.0,
        slow_delay: float = 0.0,
    ) -> None:
        super().__init__()
        self.delay, self.rate_limited, self.resets = delay, rate_limited, resets
        self.slow, self.slow_delay = slow, slow_delay  # the chance of a slow answer, and how slow
        self.retry_after_ms, self.invalid = retry_after_ms, invalid
        self.served: list[Served] = []
        self.in_flight = self.peak_in_flight = 0
        self._random = random.Random(seed)
        self._log_lock = threading.Lock()

    def next_fault(self, request: RecordedRequest) -> Fault:
        if request.method == "GET":  # a capability-discovery probe: not a chat call, not counted
            return status(404, error_type="not_found_error", message="not found")
        arrived = time.monotonic()
        item = _item_of(request.body)
        with self._log_lock:
            self.requests.append(request)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            draw, pace = self._random.random(), self._random.random()
        try:
            delay = self.slow_delay if pace < self.slow else self.delay
            if delay:
                time.sleep(delay)  # the request stays in flight meanwhile
            if draw < self.rate_limited:
                answer, fault = (
                    "429",
                    status(
                        429,
                        headers={"retry-after-ms": str(self.retry_after_ms)},
                        error_type="rate_limit_error",
                        message="Rate limit reached",
                    ),
                )
            elif draw < self.rate_limited + self.resets:
                answer, fault = "reset", reset()
            elif item is None or item in self.invalid:
                answer, fault = "invalid", completion("not json")
            else:
                answer, fault = "ok", completion(json.dumps({"n": item, "word": f"w{item}"}))
        finally:
            with self._log_lock:
                self.in_flight -= 1
        with self._log_lock:
            self.served.append(Served(arrived, item, answer))
        return fault

    def items_requested(self) -> list[int]:
        with self._log_lock:
            return [s.item for s in self.served if s.item is not None]


def _item_of(body: Any) -> int | None:
    for message in (body or {}).get("messages", []) if isinstance(body, dict) else []:
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            found = re.search(r"item (\d+)", text)
            return int(found.group(1)) if found else None
    return None


def most_in_any_window(times: list[float], window: float) -> int:
    """The most events in one half-open window [t, t + window)."""
    times = sorted(times)
    best, left = 0, 0
    for right, at in enumerate(times):
        while at - times[left] >= window:
            left += 1
        best = max(best, right - left + 1)
    return best
