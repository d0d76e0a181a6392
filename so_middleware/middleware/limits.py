"""Limits: at most N calls in flight, R requests and T tokens a minute, adapting down on 429s.

    client = with_retries(with_limits(OpenAIChatClient(AsyncOpenAI(), "gpt-4o-mini"), max_concurrency=16,
                                      requests_per_minute=500, tokens_per_minute=200_000))

**Concurrency:** an `anyio.CapacityLimiter` of `max_concurrency` slots; a call holds one from its
start until its response arrives (a stream: until it ends or is closed).

**Rates:** `aiolimiter.AsyncLimiter` leaky buckets pace the starts, once a call holds a slot.
Requests are spaced evenly at 98% of `requests_per_minute` (a burst of one), so no window
`[t, t + 60 s)` ever holds more starts than the limit, and a little network jitter does not
push the provider's own count over. Tokens are paced the same way with a burst of a second's
worth. A call is charged an estimate before it starts (prompt characters / 4, plus `max_tokens`
or `completion_tokens`); what its response used beyond the estimate is charged to the next calls.

**429s:** a rate-limited answer (HTTP 429) halves the concurrency, down to `min_concurrency`
(once per episode: 429s of calls that started before the cut do not cut again), and its
`retry-after-ms`/`retry-after` header holds every new start until that time has passed. After
each round of successes at the current level (as many successes as slots) one slot comes back,
up to `max_concurrency`. The error itself is raised unchanged: put `with_retries` outside this
layer (`with_retries(with_limits(c))`) so each retry passes the limits again.

The limiters belong to one asyncio event loop; a call from another loop starts fresh ones.
`period` (60 s) is the window the two rates count over; tests shorten it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any

import anyio
from aiolimiter import AsyncLimiter

from .._client import ChatClient, ChatStream
from .._delegating import DelegatingChatClient
from .._exceptions import UserError
from .._options import ChatOptions, OptionsInput
from .._stream import ResponseStream
from .._types import ChatResponse, MessageInput, UsageDetails, as_messages
from .retries import retry_after_seconds, status_code_of

__all__ = ["LimitStats", "LimitsChatClient", "with_limits"]

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


class _Gate:
    """The limiters and counters of one event loop."""

    def __init__(self, config: _Config) -> None:
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

    def leave(self, borrower: object, started_at: float, error: BaseException | None, config: _Config) -> None:
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
class _Config:
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
            if (value is None and optional) or (_is_number(value) and value > 0):
                continue
            raise UserError(f"{name} must be {'None or ' if optional else ''}a number > 0, not {value!r}")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _estimate_tokens(messages: MessageInput, options: OptionsInput, completion_tokens: int) -> int:
    characters = sum(len(message.text) for message in as_messages(messages))
    max_tokens = ChatOptions.coerce(options).max_tokens
    return characters // 4 + 1 + (max_tokens or completion_tokens)


class LimitsChatClient(DelegatingChatClient):
    """Bounds the calls in flight and paces their starts; adapts down on 429s (see the module).

    Example:
        client = with_retries(LimitsChatClient(adapter, max_concurrency=8, requests_per_minute=60))
        client.get_service(LimitsChatClient).stats().peak_in_flight  # never above 8
    """

    def __init__(
        self,
        inner: ChatClient | Any,
        *,
        max_concurrency: int = 16,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        min_concurrency: int = 1,
        completion_tokens: int = 512,
        max_retry_after: float = 60.0,
        period: float = 60.0,
    ) -> None:
        config = _Config(
            max_concurrency,
            requests_per_minute,
            tokens_per_minute,
            min_concurrency,
            completion_tokens,
            max_retry_after,
            period,
        )
        super().__init__(inner)
        self._self_config = config
        self._self_gate: _Gate | None = None

    def stats(self) -> LimitStats:
        """Counters of the current event loop's limiters (zeros before the first call)."""
        gate = self._self_gate
        if gate is None:
            return LimitStats(self._self_config.max_concurrency, 0, 0, 0, 0, 0.0)
        concurrency = int(gate.slots.total_tokens)
        return LimitStats(concurrency, gate.in_flight, gate.peak, gate.started, gate.rate_limited, gate.paused_until)

    def _gate(self) -> _Gate:
        gate = self._self_gate
        if gate is None or gate.loop is not asyncio.get_running_loop():
            gate = self._self_gate = _Gate(self._self_config)
        return gate

    def process(
        self, messages: MessageInput, *, options: OptionsInput, stream: bool, output_type: Any
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Call the inner client within the limits; see the module docstring."""
        estimate = _estimate_tokens(messages, options, self._self_config.completion_tokens)
        if stream:
            inner_stream: list[ChatStream] = []
            updates = self._stream(messages, options, output_type, estimate, inner_stream)
            return ResponseStream(updates, lambda _updates: _final_response(inner_stream))
        return self._respond(messages, options, output_type, estimate)

    async def _respond(self, messages: MessageInput, options: OptionsInput, output_type: Any, estimate: int) -> Any:
        gate, borrower = self._gate(), object()
        started_at = await gate.enter(borrower, estimate)
        error: BaseException | None = None
        try:
            response = await self.__wrapped__.get_response(messages, options=options, output_type=output_type)
            gate.charge(estimate, response.usage)
            return response
        except BaseException as raised:
            error = raised
            raise
        finally:
            gate.leave(borrower, started_at, error, self._self_config)

    async def _stream(
        self, messages: MessageInput, options: OptionsInput, output_type: Any, estimate: int, opened: list[ChatStream]
    ) -> AsyncIterator[Any]:
        gate, borrower = self._gate(), object()
        started_at = await gate.enter(borrower, estimate)
        error: BaseException | None = None
        inner: ChatStream = self.__wrapped__.get_response(
            messages, options=options, output_type=output_type, stream=True
        )
        opened.append(inner)
        try:
            async for update in inner:
                yield update
            gate.charge(estimate, (await inner.get_final_response()).usage)
        except BaseException as raised:
            error = raised
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await inner.aclose()
            gate.leave(borrower, started_at, error, self._self_config)


async def _final_response(opened: list[ChatStream]) -> ChatResponse[Any]:
    if not opened:
        raise RuntimeError("the stream was closed before it started")
    return await opened[0].get_final_response()


def with_limits(
    client: ChatClient | Any,
    *,
    max_concurrency: int = 16,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    min_concurrency: int = 1,
    completion_tokens: int = 512,
    max_retry_after: float = 60.0,
    period: float = 60.0,
) -> LimitsChatClient:
    """Wrap `client` in a `LimitsChatClient`; put `with_retries` outside it to retry the 429s.

    Example:
        client = with_retries(with_limits(adapter, max_concurrency=32, requests_per_minute=3_000))
    """
    return LimitsChatClient(
        client,
        max_concurrency=max_concurrency,
        requests_per_minute=requests_per_minute,
        tokens_per_minute=tokens_per_minute,
        min_concurrency=min_concurrency,
        completion_tokens=completion_tokens,
        max_retry_after=max_retry_after,
        period=period,
    )
