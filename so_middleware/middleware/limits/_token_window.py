"""The token budget of `with_limits`: the tokens of the calls started in the last `period`.

A call reserves its estimate before it starts and settles with what its response used: its
entry becomes the larger of the two, at the time the call started. A call starts only when the
entries of the last `period` plus its reservation fit the budget, so what waits sees at once what
the calls before it used (a leaky bucket charged after the fact lets every queued call start on
its small estimate).

Estimates run low when layers below add to the prompt (a schema, instructions) or the text
takes more than one token per 4 characters: the largest excess (used minus estimated) among the
calls in the window, else the latest call's, is added to every later reservation (at most half
the budget, so one call far over its estimate slows the calls after it only while it is in the
window), and until the first call has reported its usage, one call at a time goes. What is left
over is the tolerance: calls in flight together that use more than their estimate plus that
excess.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio

__all__ = ["TokenWindow", "Reservation"]


@dataclass(eq=False)  # entries are found by identity
class Reservation:
    """One call's entry: when it started, what it reserved, what it was estimated at."""

    started: float
    tokens: float
    estimate: float
    settled: bool = False
    excess: float | None = None  # what it used beyond its estimate, once it reported its usage


class TokenWindow:
    """The entries of the calls started in the last `period` seconds, kept under `budget`."""

    def __init__(self, budget: float, period: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.period = period
        self.clock = clock
        self.entries: deque[Reservation] = deque()
        self.last_excess: float | None = None  # the latest call's excess; None until a call reported usage
        self.probe: Reservation | None = None  # the call whose usage is awaited before others go
        self.changed = anyio.Event()

    def used(self) -> float:
        """The tokens of the calls started within the last `period`."""
        horizon = self.clock() - self.period
        while self.entries and self.entries[0].started <= horizon:
            self.entries.popleft()
        return sum(entry.tokens for entry in self.entries)

    def delay(self, estimate: float) -> float:
        """0 when a call of `estimate` tokens may start now, else how long until it may (inf: a
        call under way must report its usage first)."""
        used = self.used()
        if self.last_excess is None and self.probe is not None:
            return math.inf
        needed = estimate + self.excess()
        if used + needed <= self.budget or not self.entries:  # a call over the whole budget goes alone
            return 0.0
        for entry in self.entries:  # the oldest leave the window first
            used -= entry.tokens
            if used + needed <= self.budget or entry is self.entries[-1]:
                return max(0.0, entry.started + self.period - self.clock())
        raise AssertionError("unreachable: the last entry ends the loop")

    def excess(self) -> float:
        """What a reservation adds to its estimate: the largest excess of the calls in the window,
        else the latest call's; never below 0 nor above half the budget."""
        in_window = [entry.excess for entry in self.entries if entry.excess is not None]
        excess = max(in_window) if in_window else (self.last_excess or 0)
        return min(max(excess, 0.0), self.budget / 2)

    async def reserve(self, estimate: float) -> Reservation:
        """Wait until a call of `estimate` tokens fits, then record it as started now."""
        while (wait := self.delay(estimate)) > 0:
            changed = self.changed
            with anyio.move_on_after(wait):
                await changed.wait()
        return self.take(estimate)

    def take(self, estimate: float) -> Reservation:
        """Record a call of `estimate` tokens as started now (`delay(estimate)` said it fits)."""
        entry = Reservation(self.clock(), estimate + self.excess(), estimate)
        self.entries.append(entry)
        if self.last_excess is None:
            self.probe = entry
        return entry

    def started(self, entry: Reservation) -> None:
        """The call starts now (a pause or the request pacer may have held it since it reserved):
        its entry counts from now, so it does not leave the window before its start does."""
        now = self.clock()
        if entry.started < now and entry in self.entries:
            self.entries.remove(entry)
            entry.started = now
            self.entries.append(entry)  # the latest time: the entries stay in order

    def settle(self, entry: Reservation, used: int | None) -> None:
        """Record what the call used (None: not reported; the reservation stands)."""
        if entry.settled:
            return
        entry.settled = True
        if used is not None:
            entry.tokens = max(entry.tokens, used)
            entry.excess = self.last_excess = used - entry.estimate
        elif entry is self.probe and self.last_excess is None:
            self.last_excess = 0  # a client that never reports usage: the estimates are all there is
        self._changed(entry)

    def cancel(self, entry: Reservation) -> None:
        """A reservation never used (the call did not start): it leaves the window."""
        if not entry.settled:
            entry.settled = True
            entry.tokens = 0
            self._changed(entry)

    def _changed(self, entry: Reservation) -> None:
        if entry is self.probe:
            self.probe = None
        self.changed.set()
        self.changed = anyio.Event()
