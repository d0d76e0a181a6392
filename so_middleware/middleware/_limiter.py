"""The mechanics of `with_limits`: the gate each call passes (a concurrency limiter and two
pacers), its configuration and the token estimate."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import TypeGuard

import anyio
from aiolimiter import AsyncLimiter

from ..core import (
    ChatOptions,
    MessageInput,
    OptionsInput,
    UsageDetails,
    UserError,
    as_messages,
)
from ._retry_after import retry_after_seconds
from ._retry_errors import status_code_of

__all__ = ["LimitStats", "Gate", "LimitsConfig", "estimate_tokens", "is_number"]

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


def _pacer(limit: float, period: float, burst: float) -> AsyncLimiter:
    # A leaky bucket of capacity `burst` draining at `rate` admits fewer than burst + rate * period
    # in any window of `period`: at most `limit` for burst 1 (requests) or limit / 60 (tokens).
    return AsyncLimiter(burst, burst / (_HEADROOM * limit / period))


class Gate:
    """The limiters and counters of one event loop."""

    def __init__(self, config: LimitsConfig) -> None:
        self.loop = asyncio.get_running_loop()
        self.slots = anyio.CapacityLimiter(config.max_concurrency)
        rpm, tpm = config.requests_per_minute, config.tokens_per_minute
        self.requests = None if rpm is None else _pacer(rpm, config.period, 1)
        self.tokens = None if tpm is None else _pacer(tpm, config.period, max(1.0, tpm / 60))
        self.token_debt = 0
        self.paused_until = 0.0
        self.cut_at = -math.inf
        self.successes = self.in_flight = self.peak = self.started = self.rate_limited = 0

    async def enter(self, borrower: object, tokens: int) -> float:
        await self.slots.acquire_on_behalf_of(borrower)
        try:
            if self.tokens:
                remaining: float = tokens + self.token_debt
                self.token_debt = 0
                while remaining > 0:  # a call larger than the burst is charged in bursts
                    step = min(remaining, self.tokens.max_rate)
                    await self.tokens.acquire(step)
                    remaining -= step
            while True:  # the paced start must fall outside a pause, or the calls it held would burst
                while (wait := self.paused_until - time.monotonic()) > 0:
                    await anyio.sleep(wait)
                if self.requests:
                    await self.requests.acquire()
                if self.paused_until <= time.monotonic():
                    break
        except BaseException:
            self.slots.release_on_behalf_of(borrower)
            raise
        self.in_flight += 1
        self.started += 1
        self.peak = max(self.peak, self.in_flight)
        return time.monotonic()

    def leave(self, borrower: object, started_at: float, error: BaseException | None, config: LimitsConfig) -> None:
        self.in_flight -= 1
        self.slots.release_on_behalf_of(borrower)
        if error is not None and status_code_of(error) == 429:
            self.rate_limited += 1
            headers = getattr(getattr(error, "response", None), "headers", None) or {}
            hinted = retry_after_seconds(headers)
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

    def charge(self, estimate: int, usage: UsageDetails | None) -> None:
        used = usage and (usage.total_tokens or (usage.input_tokens or 0) + (usage.output_tokens or 0))
        if self.tokens and used and used > estimate:
            self.token_debt += used - estimate


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
