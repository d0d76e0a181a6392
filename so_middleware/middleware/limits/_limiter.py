"""The mechanics of `with_limits`: the gate each call passes (a concurrency limiter, a request
pacer and a token window), its configuration and the token estimate."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import TypeGuard

import anyio
from aiolimiter import AsyncLimiter

from ...core import ChatOptions, MessageInput, OptionsInput, UsageDetails, UserError, as_messages, failure_of
from ._token_window import Reservation, TokenWindow

__all__ = ["LimitStats", "Gate", "LimitsConfig", "Ticket", "estimate_tokens", "is_number"]

_HEADROOM = 0.98  # pace at 98% of a limit: jitter between here and the provider stays under it


@dataclass(frozen=True)
class LimitStats:
    """What a `LimitsChatClient` has seen in the current event loop."""

    concurrency: int  # slots now (shrinks on 429s, grows back)
    in_flight: int
    peak_in_flight: int
    started: int  # calls that passed the limits
    rate_limited: int  # 429 answers
    paused_until: float  # time.monotonic() before which no call starts (retry-after)


def _pacer(limit: float, period: float) -> AsyncLimiter:
    # A leaky bucket of capacity 1 draining at `rate` admits fewer than 1 + rate * period starts
    # in any window of `period`: at most `limit`.
    return AsyncLimiter(1, 1 / (_HEADROOM * limit / period))


@dataclass
class Ticket:
    """A call that passed the gate: when it started, and its tokens (with a token limit)."""

    started_at: float
    tokens: Reservation | None


class Gate:
    """The limiters and counters of one event loop."""

    def __init__(self, config: LimitsConfig) -> None:
        self.loop = asyncio.get_running_loop()
        self.slots = anyio.CapacityLimiter(config.max_concurrency)
        rpm, tpm = config.requests_per_minute, config.tokens_per_minute
        self.requests = None if rpm is None else _pacer(rpm, config.period)
        self.tokens = None if tpm is None else TokenWindow(_HEADROOM * tpm, config.period)
        self.paused_until = 0.0
        self.cut_at = -math.inf
        self.successes = self.in_flight = self.peak = self.started = self.rate_limited = 0

    async def enter(self, borrower: object, tokens: int) -> Ticket:
        await self.slots.acquire_on_behalf_of(borrower)
        reservation = None
        try:
            if self.tokens:
                reservation = await self.tokens.reserve(tokens)
            while True:  # the paced start must fall outside a pause, or the calls it held would burst
                while (wait := self.paused_until - time.monotonic()) > 0:
                    await anyio.sleep(wait)
                if self.requests:
                    await self.requests.acquire()
                if self.paused_until <= time.monotonic():
                    break
        except BaseException:
            if self.tokens and reservation is not None:
                self.tokens.cancel(reservation)
            self.slots.release_on_behalf_of(borrower)
            raise
        if self.tokens and reservation is not None:
            self.tokens.started(reservation)
        self.in_flight += 1
        self.started += 1
        self.peak = max(self.peak, self.in_flight)
        return Ticket(time.monotonic(), reservation)

    def leave(self, borrower: object, ticket: Ticket, error: BaseException | None, config: LimitsConfig) -> None:
        self.in_flight -= 1
        self.slots.release_on_behalf_of(borrower)
        if self.tokens and ticket.tokens is not None:
            self.tokens.settle(ticket.tokens, None)  # no usage known (an error): the reservation stands
        started_at = ticket.started_at
        failure = failure_of(error) if error is not None else None
        if failure is not None and failure.status == 429:
            self.rate_limited += 1
            hinted = failure.retry_after
            if hinted is not None:
                self.paused_until = max(self.paused_until, time.monotonic() + min(hinted, config.max_retry_after))
            if started_at >= self.cut_at:  # the first 429 of this episode
                self.cut_at = time.monotonic()
                self.slots.total_tokens = max(config.min_concurrency, int(self.slots.total_tokens) // 2)
                self.successes = 0
        elif error is None:
            self.successes += 1
            if self.successes >= self.slots.total_tokens and self.slots.total_tokens < config.max_concurrency:
                self.slots.total_tokens = int(self.slots.total_tokens) + 1
                self.successes = 0

    def charge(self, ticket: Ticket, usage: UsageDetails | None) -> None:
        used = usage and (usage.total_tokens or (usage.input_tokens or 0) + (usage.output_tokens or 0))
        if self.tokens and ticket.tokens is not None:
            self.tokens.settle(ticket.tokens, used or None)


@dataclass(frozen=True)
class LimitsConfig:
    max_concurrency: int
    requests_per_minute: float | None
    tokens_per_minute: float | None
    min_concurrency: int
    completion_tokens: int
    max_retry_after: float
    period: float

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_concurrency, bool)
            or not isinstance(self.max_concurrency, int)
            or self.max_concurrency < 1
        ):
            raise UserError(f"max_concurrency must be an int of at least 1, not {self.max_concurrency!r}")
        if not isinstance(self.min_concurrency, int) or not 1 <= self.min_concurrency <= self.max_concurrency:
            raise UserError(f"min_concurrency must be an int from 1 to max_concurrency, not {self.min_concurrency!r}")
        for name in ("requests_per_minute", "tokens_per_minute", "period", "max_retry_after", "completion_tokens"):
            value = getattr(self, name)
            optional = name.endswith("_minute")
            if (value is None and optional) or (is_number(value) and value > 0):
                continue
            raise UserError(f"{name} must be {'None or ' if optional else ''}a number > 0, not {value!r}")


def is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def estimate_tokens(messages: MessageInput, options: OptionsInput, completion_tokens: int) -> int:
    characters = sum(len(message.text) for message in as_messages(messages))
    max_tokens = ChatOptions.coerce(options).max_tokens
    return characters // 4 + 1 + (max_tokens or completion_tokens)
