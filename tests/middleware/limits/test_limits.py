"""with_limits: concurrency bound, request and token pacing over any window, adapting to 429s.

The 429 tests run the real OpenAI SDK against `FaultServer`, a real HTTP server on loopback that
answers with the documented rate-limit error body and `retry-after-ms` header.
"""

from __future__ import annotations

import gc
import itertools
import math
import random
import time
from functools import partial
from typing import Any

import anyio
import openai
import pytest
from anyio import wait_all_tasks_blocked

from so_middleware import (
    ChatResponse,
    Feature,
    LimitsChatClient,
    ProviderStatusError,
    UserError,
    with_limits,
    with_retries,
)
from so_middleware.middleware.limits._token_window import Reservation, TokenWindow
from so_middleware.openai import OpenAIChatClient
from so_middleware.testing import FakeChatClient, Reply
from so_middleware.testing._faults import FaultServer, completion, status

pytestmark = pytest.mark.anyio


class SlowClient(FakeChatClient):
    """A fake that takes `delay` seconds per call and records starts and the calls in flight."""

    def __init__(self, delay: float = 0.01, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delay = delay
        self.starts: list[float] = []
        self.in_flight = self.peak = 0

    async def _respond(self, messages: Any, options: Any) -> ChatResponse[Any]:
        self._begin()
        try:
            await anyio.sleep(self.delay)
            return await super()._respond(messages, options)
        finally:
            self.in_flight -= 1

    async def _stream(self, messages: Any, options: Any) -> Any:
        self._begin()
        try:
            await anyio.sleep(self.delay)
            async for update in super()._stream(messages, options):
                yield update
        finally:
            self.in_flight -= 1

    def _begin(self) -> None:
        self.starts.append(time.monotonic())
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)


def most_in_any_window(times: list[float], window: float, weights: list[float] | None = None) -> float:
    """The largest total weight of events falling in one half-open window [t, t + window)."""
    events = sorted(zip(times, weights or [1.0] * len(times), strict=True))
    best = total = 0.0
    left = 0
    for right in range(len(events)):
        total += events[right][1]
        while events[right][0] - events[left][0] >= window:
            total -= events[left][1]
            left += 1
        best = max(best, total)
    return best


async def call(client: Any, stream: bool, text: str = "hi", **options: Any) -> ChatResponse[Any]:
    if stream:
        async with client.get_response(text, stream=True, options=options or None) as responses:
            return await responses.get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(text, options=options or None)  # type: ignore[no-any-return]


@pytest.mark.parametrize("stream", [False, True])
async def test_peak_in_flight_never_exceeds_max_concurrency(stream: bool) -> None:
    inner = SlowClient(delay=0.02, script="ok")
    client = with_limits(inner, max_concurrency=5)
    async with anyio.create_task_group() as group:
        for _ in range(40):
            group.start_soon(call, client, stream)
    assert len(inner.starts) == 40
    assert inner.peak == 5  # used to the full, never over
    stats = client.stats()
    assert (stats.peak_in_flight, stats.in_flight, stats.started, stats.concurrency) == (5, 0, 40, 5)


async def test_a_closed_stream_gives_its_slot_back() -> None:
    inner = SlowClient(delay=0, script="a long answer " * 10)
    client = with_limits(inner, max_concurrency=1)
    for _ in range(3):  # with one slot, a leaked slot would hang the second call
        with anyio.fail_after(5):
            async with client.get_response("hi", stream=True) as responses:
                async for _update in responses:
                    break
    assert client.stats().in_flight == 0 and len(inner.starts) == 3


@pytest.mark.parametrize("stream", [False, True])
async def test_request_starts_never_exceed_the_rate_in_any_window(stream: bool) -> None:
    # 40 requests per 0.5 s window: 100 calls span 2.5 windows; the window is `period`, shortened here.
    inner = SlowClient(delay=0, script="ok")
    client = with_limits(inner, max_concurrency=50, requests_per_minute=40, period=0.5)
    started = time.monotonic()
    async with anyio.create_task_group() as group:
        for _ in range(100):
            group.start_soon(call, client, stream)
    assert most_in_any_window(inner.starts, 0.5) <= 40
    # paced evenly: 100 starts need at least 99 gaps of 0.5 s / 40
    assert time.monotonic() - started >= 99 * 0.5 / 40
    gaps = [b - a for a, b in itertools.pairwise(inner.starts)]
    assert min(gaps) >= 0.5 / 40 / 2  # no burst (a GC pause between a start and its record shortens a gap)


async def test_tokens_per_window_never_exceed_the_limit_and_overuse_is_charged() -> None:
    # Each call is estimated at 20 // 4 + 1 + max_tokens(10) = 16 tokens but reports 100 used:
    # the 84 beyond the estimate are charged to the next call, so the real use stays in the limit.
    inner = SlowClient(delay=0, script=Reply("ok", usage=_usage(100)))
    client = with_limits(inner, max_concurrency=1, tokens_per_minute=600, period=0.5)
    for _ in range(12):
        await client.get_response("x" * 20, options={"max_tokens": 10})
    assert most_in_any_window(inner.starts[1:], 0.5, [100.0] * 11) <= 600
    assert inner.starts[-1] - inner.starts[0] >= (12 * 100 - 600) * 0.5 / 600  # the overuse was waited for


def _usage(total: int) -> Any:
    from so_middleware import UsageDetails

    return UsageDetails(total // 2, total - total // 2, total)


async def test_a_429_pauses_every_start_for_retry_after_and_halves_concurrency() -> None:
    script = [status(429, headers={"retry-after-ms": "400"}, error_type="rate_limit_error"), completion("ok")]
    with FaultServer(script) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
            limits = with_limits(OpenAIChatClient(sdk, "m", discover=False), max_concurrency=8)
            with pytest.raises(openai.RateLimitError):
                await limits.get_response("hi")
            limited_at = time.monotonic()
            stats = limits.stats()
            assert (stats.rate_limited, stats.concurrency) == (1, 4)
            assert stats.paused_until == pytest.approx(limited_at + 0.4, abs=0.1)
            response = await limits.get_response("hi")
            assert response.text == "ok"
            assert time.monotonic() - limited_at >= 0.35  # the next start waited for retry-after
    assert len(server.requests) == 2


async def test_429s_of_one_episode_cut_once_then_concurrency_grows_back_one_slot_per_round() -> None:
    # Four calls start together and all get a 429: one cut (8 -> 4), not four (8 -> 1).
    script = [status(429, error_type="rate_limit_error")] * 4 + [completion("ok")]
    with FaultServer(script) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
            limits = with_limits(OpenAIChatClient(sdk, "m", discover=False), max_concurrency=8)

            async def fail() -> None:
                with pytest.raises(openai.RateLimitError):
                    await limits.get_response("hi")

            async with anyio.create_task_group() as group:
                for _ in range(4):
                    group.start_soon(fail)
            assert limits.stats().concurrency == 4
            seen = []
            for _ in range(4 + 5 + 6 + 7 + 1):
                await limits.get_response("hi")
                seen.append(limits.stats().concurrency)
    # a round at level n is n successes; then one slot more, up to max_concurrency
    assert seen[3] == 5 and seen[8] == 6 and seen[14] == 7 and seen[21] == 8 and seen[-1] == 8
    assert seen[:3] == [4, 4, 4]


async def test_retries_outside_the_limits_retry_429s_through_them() -> None:
    script = [status(429, headers={"retry-after-ms": "100"}, error_type="rate_limit_error"), completion("done")]
    with FaultServer(script) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test") as sdk:
            client = with_retries(
                with_limits(OpenAIChatClient(sdk, "m", discover=False), max_concurrency=2), max_attempts=3
            )
            response = await client.get_response("hi")
            assert response.text == "done"
            limits = client.get_service(LimitsChatClient)
            assert limits is not None and limits.stats().started == 2 and limits.stats().rate_limited == 1
    assert len(server.requests) == 2  # the SDK's own retries are off under with_retries


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"max_concurrency": True}, "max_concurrency"),
        ({"min_concurrency": 9, "max_concurrency": 8}, "min_concurrency"),
        ({"requests_per_minute": 0}, "requests_per_minute"),
        ({"tokens_per_minute": float("nan")}, "tokens_per_minute"),
        ({"period": -1}, "period"),
    ],
)
def test_bad_limits_are_user_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        with_limits(FakeChatClient("ok"), **options)


def test_the_layer_is_found_and_passes_attributes_through() -> None:
    inner = FakeChatClient("ok", model="m1")
    client = with_limits(inner, max_concurrency=3)
    assert client.model == "m1"
    assert client.get_service(LimitsChatClient) is client
    assert client.stats().concurrency == 3 and client.stats().started == 0
    assert client.get_response_sync("hi").text == "ok"
    assert client.stats().started == 1


class RateLimited(ProviderStatusError):
    """A 429 as an adapter raises it, with the server's `retry-after-ms`."""

    def __init__(self, retry_after_ms: int) -> None:
        super().__init__("rate limited", status_code=429, headers={"retry-after-ms": str(retry_after_ms)})


async def test_calls_held_by_a_retry_after_pause_start_paced_not_in_a_burst() -> None:
    inner = SlowClient(delay=0.05, script=[RateLimited(300), "ok"])
    client = with_limits(inner, max_concurrency=8, requests_per_minute=40, period=1.0)  # one start per 25 ms
    async with anyio.create_task_group() as group:

        async def limited() -> None:
            with pytest.raises(RateLimited):
                await client.get_response("hi")

        group.start_soon(limited)
        await anyio.sleep(0.06)  # the 429 has arrived: a 300 ms pause
        for _ in range(8):
            group.start_soon(client.get_response, "hi")
    after = inner.starts[1:]
    assert after[0] - inner.starts[0] >= 0.3
    gaps = [b - a for a, b in itertools.pairwise(after)]
    assert len(after) == 8 and min(gaps) >= 0.025 / 2  # paced: a burst would show gaps near 0


# ------------------------------------------------------------ every way out gives the slot back


class RaisesAtOnce:
    """A client whose get_response raises before returning a stream or an awaitable."""

    model = "raises"

    def get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("refused before any request")


class NeedsALayer(Feature):
    handled_by = "with_something_else"


class NeverAnswers(FakeChatClient):
    async def _stream(self, messages: Any, options: Any) -> Any:
        await anyio.sleep_forever()
        yield  # pragma: no cover


async def _fail_background(client: Any) -> None:
    with pytest.raises(UserError, match="background"):
        await client.get_response("hi", stream=True, options={"background": True}).get_final_response()


async def _fail_feature(client: Any) -> None:
    with pytest.raises(UserError, match="with_something_else"):
        await client.get_response("hi", stream=True, options={"features": [NeedsALayer()]}).get_final_response()


async def _fail_before_first_update(client: Any) -> None:
    with pytest.raises(ConnectionError):
        await client.get_response("down", stream=True).get_final_response()


async def _cancel_before_first_update(client: Any) -> None:
    with anyio.move_on_after(0.05):
        await client.get_response("never", stream=True).get_final_response()


async def _close_without_iterating(client: Any) -> None:
    stream = client.get_response("hi", stream=True)
    await stream.aclose()


async def _close_after_first_update(client: Any) -> None:
    async with client.get_response("hi", stream=True) as stream:
        async for _ in stream:
            break


async def _drop_after_first_update(client: Any) -> None:
    stream = client.get_response("hi", stream=True)
    await stream.__anext__()
    del stream
    gc.collect()  # the event loop's async generator hook closes it


@pytest.mark.parametrize(
    ("scenario", "inner"),
    [
        (_fail_background, lambda: FakeChatClient(["ok"])),
        (_fail_feature, lambda: FakeChatClient(["ok"])),
        (_fail_before_first_update, lambda: FakeChatClient([ConnectionError("down"), "ok"])),
        (_cancel_before_first_update, lambda: NeverAnswers()),
        (_close_without_iterating, lambda: FakeChatClient(["ok"])),
        (_close_after_first_update, lambda: FakeChatClient([Reply("a long answer", chunk_size=2), "ok"])),
        (_drop_after_first_update, lambda: FakeChatClient([Reply("a long answer", chunk_size=2), "ok"])),
    ],
    ids=["background-refused", "unhandled-feature", "error", "cancelled", "never-iterated", "closed", "dropped"],
)
async def test_every_way_a_stream_ends_gives_its_slot_back(scenario: Any, inner: Any) -> None:
    fake = inner()
    client = with_limits(fake, max_concurrency=1)
    with anyio.fail_after(5):  # a leaked slot would make the next call wait forever
        await scenario(client)
        if isinstance(fake, NeverAnswers):
            client = with_limits(FakeChatClient("ok"), max_concurrency=1)  # the same gate would be fine too
        else:
            assert (await client.get_response("next")).text == "ok"
    assert client.stats().in_flight == 0


@pytest.mark.parametrize("stream", [False, True])
async def test_a_client_raising_before_the_call_gives_the_slot_back(stream: bool) -> None:
    client = with_limits(RaisesAtOnce(), max_concurrency=1)
    for _ in range(3):
        with anyio.fail_after(5), pytest.raises(RuntimeError, match="refused"):
            await call(client, stream)
    assert client.stats().in_flight == 0 and client.stats().started == 3


# ------------------------------------------------------------ tokens over any window


async def test_calls_using_more_than_estimated_do_not_overshoot_the_token_limit() -> None:
    # Each call is estimated at 2 // 4 + 1 + max_tokens(10) = 11 tokens but uses 1,100 (a schema or
    # instructions a layer below adds). Nothing leaves the 60 s window while the test runs, so the
    # calls that started hold every token of the window; the ones that wait are never released.
    inner = SlowClient(delay=0, script=Reply("ok", usage=_usage(1100)))
    client = with_limits(inner, max_concurrency=16, tokens_per_minute=3000)
    async with anyio.create_task_group() as group:
        for _ in range(10):
            group.start_soon(partial(client.get_response, "hi", options={"max_tokens": 10}))
        with anyio.fail_after(5):
            await wait_all_tasks_blocked()
        group.cancel_scope.cancel()
    assert 1100 * len(inner.starts) <= 3000
    assert len(inner.starts) == 2  # the first alone (its usage teaches the excess), then what fits


@pytest.mark.parametrize("seed", range(5))
def test_the_token_window_holds_over_any_window_on_a_fake_clock(seed: int) -> None:
    """Up to 4 calls in flight, each using 200-400 tokens against an estimate of 11, over 30 minutes."""
    rng = random.Random(seed)
    now = 0.0
    window = TokenWindow(0.98 * 3000, 60.0, clock=lambda: now)
    in_flight: list[tuple[float, Reservation, int]] = []
    starts: list[float] = []
    used: list[float] = []
    while now < 1800:
        if len(in_flight) < 4 and window.delay(11) == 0:
            in_flight.append((now + rng.uniform(0.5, 20), window.take(11), rng.randint(200, 400)))
            starts.append(now)
            used.append(in_flight[-1][2])
            continue
        wait = window.delay(11) if len(in_flight) < 4 else math.inf
        now = min([now + wait, *(end for end, _, _ in in_flight)])
        for ended in [call for call in in_flight if call[0] <= now]:
            in_flight.remove(ended)
            window.settle(ended[1], ended[2])
    assert len(starts) > 200  # the limit was used, not starved
    # the budget (98%) plus the tolerance: what the 4 calls in flight together use beyond their
    # reservations (at most 400 - 200 each, once the first answer taught an excess of >= 189)
    assert most_in_any_window(starts, 60.0, used) <= 0.98 * 3000 + 4 * (400 - 200)


def test_a_call_held_after_it_reserved_counts_from_its_start() -> None:
    now = 0.0
    window = TokenWindow(1000, 60.0, clock=lambda: now)
    held = window.take(600)
    window.settle(window.take(300), 300)  # usage as estimated: no excess learned
    now = 30.0  # a retry-after pause held the first call until here
    window.started(held)
    now = 61.0
    assert window.used() == 600 and window.delay(500) == pytest.approx(29.0)
    now = 90.0
    assert window.used() == 0 and window.delay(2000) == 0  # a call over the budget goes alone


def test_one_call_far_over_its_estimate_slows_the_next_calls_only_while_it_is_in_the_window() -> None:
    now = 0.0
    window = TokenWindow(10_000, 60.0, clock=lambda: now)
    first = window.take(200)
    window.settle(first, 200)  # the estimates are right: no excess
    outlier = window.take(200)
    window.settle(outlier, 10_500)  # an image or a large tool result the estimate could not see
    assert window.excess() == 5_000  # at most half the budget: the next calls still go, one at a time
    assert window.delay(200) > 0  # the window holds 10,700 tokens
    now = 61.0  # both have left the window
    assert window.delay(200) == 0.0 and window.excess() == 5_000  # the latest excess (10,300), capped
    small = window.take(200)
    window.settle(small, 200)
    assert window.excess() == 0  # the latest call in the window used what it was estimated at
