"""Limits: at most N calls in flight, R requests and T tokens a minute, adapting down on 429s.

    client = with_retries(with_limits(OpenAIChatClient(AsyncOpenAI(), "gpt-4o-mini"), max_concurrency=16,
                                      requests_per_minute=500, tokens_per_minute=200_000))

**Concurrency:** an `anyio.CapacityLimiter` of `max_concurrency` slots; a call holds one from its
start until its response arrives (a stream: until it ends or is closed).

**Rates:** requests are paced by an `aiolimiter.AsyncLimiter` leaky bucket, once a call holds a
slot: starts are spaced evenly at 98% of `requests_per_minute` (a burst of one), so no window
`[t, t + 60 s)` ever holds more starts than the limit, and a little network jitter does not
push the provider's own count over. Tokens are kept in a window of the calls started in the last
minute, under 98% of `tokens_per_minute`: a call reserves an estimate before it starts (prompt
characters / 4, plus `max_tokens` or `completion_tokens`, plus the largest excess of usage over
estimate seen so far) and waits until it fits; when its response reports usage, its entry becomes
the larger of the two, and the calls waiting see it at once. Until the first response has
reported usage, one call at a time goes. **Tolerance:** a window can hold more only by what calls
in flight together use beyond their reservations (an answer much longer than any before).

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
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import anyio

from ...core import (
    ChatClient,
    ChatResponse,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    MessageInput,
    OptionsInput,
    ResponseStream,
)
from ._limiter import Gate, LimitsConfig, LimitStats, estimate_tokens

__all__ = ["LimitStats", "LimitsChatClient", "with_limits"]


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
        config = LimitsConfig(
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
        self._self_gate: Gate | None = None

    def stats(self) -> LimitStats:
        """Counters of the current event loop's limiters (zeros before the first call)."""
        gate = self._self_gate
        if gate is None:
            return LimitStats(self._self_config.max_concurrency, 0, 0, 0, 0, 0.0)
        concurrency = int(gate.slots.total_tokens)
        return LimitStats(concurrency, gate.in_flight, gate.peak, gate.started, gate.rate_limited, gate.paused_until)

    def _gate(self) -> Gate:
        gate = self._self_gate
        if gate is None or gate.loop is not asyncio.get_running_loop():
            gate = self._self_gate = Gate(self._self_config)
        return gate

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """Call the inner client within the limits; see the module docstring."""
        estimate = estimate_tokens(call.messages, call.options, self._self_config.completion_tokens)
        return self._respond(call.messages, call.options, call.output_type, estimate)

    def stream(self, call: LayerCall) -> ChatStream:
        """The same, streamed: the slot is held until the stream ends."""
        estimate = estimate_tokens(call.messages, call.options, self._self_config.completion_tokens)
        inner_stream: list[ChatStream] = []
        updates = self._stream(call.messages, call.options, call.output_type, estimate, inner_stream)
        return ResponseStream(updates, lambda _updates: _final_response(inner_stream))

    async def _respond(self, messages: MessageInput, options: OptionsInput, output_type: Any, estimate: int) -> Any:
        gate, borrower = self._gate(), object()
        ticket = await gate.enter(borrower, estimate)
        error: BaseException | None = None
        try:
            response = await self.__wrapped__.get_response(messages, options=options, output_type=output_type)
            gate.charge(ticket, response.usage)
            return response
        except BaseException as raised:
            error = raised
            raise
        finally:
            gate.leave(borrower, ticket, error, self._self_config)

    async def _stream(
        self, messages: MessageInput, options: OptionsInput, output_type: Any, estimate: int, opened: list[ChatStream]
    ) -> AsyncIterator[Any]:
        gate, borrower = self._gate(), object()
        ticket = await gate.enter(borrower, estimate)
        error: BaseException | None = None
        try:  # from here every way out gives the slot back: an error raised by get_response itself too
            inner: ChatStream = self.__wrapped__.get_response(
                messages, options=options, output_type=output_type, stream=True
            )
            opened.append(inner)
            async for update in inner:
                yield update
            gate.charge(ticket, (await inner.get_final_response()).usage)
        except BaseException as raised:
            error = raised
            raise
        finally:
            try:
                if opened:
                    with anyio.CancelScope(shield=True):
                        await opened[0].aclose()
            finally:
                gate.leave(borrower, ticket, error, self._self_config)


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
