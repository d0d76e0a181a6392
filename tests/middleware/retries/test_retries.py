"""with_retries over FakeChatClient: what is retried, how long it waits, streams, visibility, config."""

from __future__ import annotations

import asyncio
import copy
import email.utils
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from so_middleware import (
    ChatResponse,
    DelegatingChatClient,
    Feature,
    ModelBehaviorError,
    ProviderConnectionError,
    ProviderStatusError,
    ProviderTimeoutError,
    StreamInterruptedError,
    UserError,
)
from so_middleware.middleware.retries import RetryingChatClient, is_transient, retry_after_seconds, with_retries
from so_middleware.middleware.telemetry import with_telemetry
from so_middleware.testing import FakeChatClient, Reply, StatusError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tagging(Feature):
    """A feature no layer knows: it must arrive below as the same object."""


class Clock:
    """A fake monotonic clock that the fake sleep advances: deadlines without wall time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(float(seconds))
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def no_jitter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Full jitter draws uniform(0, cap); take the cap so backoff waits are exact."""
    monkeypatch.setattr(random, "uniform", lambda low, high: high)
    yield


async def call(client: Any, stream: bool, **kwargs: Any) -> ChatResponse[Any]:
    if stream:
        response_stream = client.get_response("hi", stream=True, **kwargs)
        async for _ in response_stream:
            pass
        return await response_stream.get_final_response()  # type: ignore[no-any-return]
    return await client.get_response("hi", **kwargs)  # type: ignore[no-any-return]


STREAM = pytest.mark.parametrize("stream", [False, True], ids=["respond", "stream"])


# ---------------------------------------------------------------- retried, fail fast, give up


@STREAM
async def test_transient_errors_are_retried_then_the_answer_comes_back(
    stream: bool, clock: Clock, no_jitter: None
) -> None:
    fake = FakeChatClient([StatusError(503), ConnectionError("reset by peer"), StatusError(429), "hello"])
    client = with_retries(fake, max_attempts=4, base_delay=0.5, sleep=clock.sleep, clock=clock)

    response = await call(client, stream)

    assert response.text == "hello"
    assert len(fake.calls) == 4
    assert clock.sleeps == [0.5, 1.0, 2.0]  # base_delay * 2**(n-1), the cap of the jitter window
    assert response.additional_properties["so_middleware.retries"] == [
        {"attempt": 1, "error": "StatusError", "status_code": 503, "wait": 0.5},
        {"attempt": 2, "error": "ConnectionError", "status_code": None, "wait": 1.0},
        {"attempt": 3, "error": "StatusError", "status_code": 429, "wait": 2.0},
    ]


@STREAM
async def test_backoff_is_jittered_and_capped_by_max_delay(stream: bool, clock: Clock) -> None:
    fake = FakeChatClient([StatusError(500)] * 5 + ["ok"])
    client = with_retries(fake, max_attempts=6, base_delay=1.0, max_delay=3.0, sleep=clock.sleep, clock=clock)

    await call(client, stream)

    caps = [1.0, 2.0, 3.0, 3.0, 3.0]
    assert all(0 <= wait <= cap for wait, cap in zip(clock.sleeps, caps, strict=True))


@STREAM
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_fail_fast(stream: bool, status: int, clock: Clock) -> None:
    error = StatusError(status)
    fake = FakeChatClient([error, "never reached"])
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    with pytest.raises(StatusError) as raised:
        await call(client, stream)

    assert raised.value is error
    assert len(fake.calls) == 1
    assert clock.sleeps == []


@STREAM
async def test_non_transient_errors_of_our_own_pass_through_unchanged(stream: bool, clock: Clock) -> None:
    error = ModelBehaviorError("not a Person", raw_text="{}")
    fake = FakeChatClient([error])
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    with pytest.raises(ModelBehaviorError) as raised:
        await call(client, stream)

    assert raised.value is error
    assert len(fake.calls) == 1


@STREAM
async def test_gives_up_after_max_attempts_raising_the_last_error(stream: bool, clock: Clock, no_jitter: None) -> None:
    last = StatusError(503)
    fake = FakeChatClient([StatusError(500), StatusError(502), last])
    client = with_retries(fake, max_attempts=3, base_delay=0.1, sleep=clock.sleep, clock=clock)

    with pytest.raises(StatusError) as raised:
        await call(client, stream)

    assert raised.value is last
    assert len(fake.calls) == 3
    assert clock.sleeps == [0.1, 0.2]


@STREAM
async def test_max_attempts_one_means_no_retry(stream: bool, clock: Clock) -> None:
    fake = FakeChatClient([StatusError(503), "ok"])
    client = with_retries(fake, max_attempts=1, sleep=clock.sleep, clock=clock)

    with pytest.raises(StatusError):
        await call(client, stream)
    assert len(fake.calls) == 1


# ---------------------------------------------------------------- waits: deadline and retry-after


@STREAM
async def test_deadline_stops_before_a_wait_that_would_pass_it(stream: bool, clock: Clock) -> None:
    fake = FakeChatClient([StatusError(429, {"retry-after": "10"})] * 3 + ["ok"])
    client = with_retries(fake, max_attempts=10, deadline=15, sleep=clock.sleep, clock=clock)

    with pytest.raises(StatusError):
        await call(client, stream)

    assert clock.sleeps == [10.0]  # the second wait would end at 20 > 15: not started
    assert len(fake.calls) == 2


@STREAM
async def test_deadline_counts_time_spent_in_attempts(stream: bool, clock: Clock) -> None:
    def slow_failure(messages: Any, options: Any) -> Reply:
        clock.now += 8  # the attempt itself took 8 s
        return Reply(error=StatusError(503, {"retry-after": "1"}))

    fake = FakeChatClient([slow_failure])
    client = with_retries(fake, max_attempts=10, deadline=20, sleep=clock.sleep, clock=clock)

    with pytest.raises(StatusError):
        await call(client, stream)

    assert len(fake.calls) == 3  # 8 + 1 + 8 + 1 + 8 = 26: after the third attempt a wait would pass 20
    assert clock.sleeps == [1.0, 1.0]


@STREAM
@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the finer header wins
        ({"retry-after": "100000"}, 7.0),  # enormous: capped at max_retry_after
        ({"retry-after": "soon"}, 0.5),  # unparsable: ignored, the backoff applies
        ({"retry-after": "-5"}, 0.5),  # negative: ignored
        ({"retry-after": "nan"}, 0.5),
    ],
)
async def test_retry_after_is_honoured_and_capped(
    stream: bool, headers: dict[str, str], expected: float, clock: Clock, no_jitter: None
) -> None:
    fake = FakeChatClient([StatusError(429, headers), "ok"])
    client = with_retries(fake, base_delay=0.5, max_retry_after=7, sleep=clock.sleep, clock=clock)

    response = await call(client, stream)

    assert clock.sleeps == [expected]
    assert response.additional_properties["so_middleware.retries"][0]["wait"] == expected


async def test_retry_after_http_date_is_read_as_seconds_from_now() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 42, usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=now) == 42.0
    assert retry_after_seconds({"retry-after": email.utils.formatdate(now - 42, usegmt=True)}, now=now) is None
    assert retry_after_seconds({"retry-after": "Blursday, 99 Foo 2024"}, now=now) is None
    assert retry_after_seconds({}, now=now) is None


async def test_retry_after_http_date_far_ahead_is_capped(clock: Clock) -> None:
    date = email.utils.formatdate(time.time() + 3600, usegmt=True)
    fake = FakeChatClient([StatusError(503, {"retry-after": date}), "ok"])
    client = with_retries(fake, max_retry_after=60, sleep=clock.sleep, clock=clock)

    await client.get_response("hi")

    assert clock.sleeps == [60.0]


# ---------------------------------------------------------------- streams


async def test_stream_failing_before_the_first_update_is_retried(clock: Clock) -> None:
    fake = FakeChatClient([Reply("Hello world", error=StatusError(503), fail_after=0), "Hello world"])
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    stream = client.get_response("hi", stream=True)
    texts = [update.text async for update in stream]
    final = await stream.get_final_response()

    assert "".join(texts) == "Hello world"
    assert final.text == "Hello world"
    assert len(fake.calls) == 2
    assert fake.closed_streams == 2
    assert [r["status_code"] for r in final.additional_properties["so_middleware.retries"]] == [503]


async def test_stream_interrupted_before_the_first_update_is_retried(clock: Clock) -> None:
    broken = StreamInterruptedError("cut", partial_text="")
    fake = FakeChatClient([Reply("abc", error=broken, fail_after=0), "abc"])
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    final = await client.get_response("hi", stream=True).get_final_response()

    assert final.text == "abc"
    assert len(fake.calls) == 2


async def test_stream_failing_after_the_first_update_raises_stream_interrupted(clock: Clock) -> None:
    cause = StatusError(503)
    fake = FakeChatClient([Reply("Hello world", error=cause, fail_after=2, chunk_size=4), "never reached"])
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    received: list[str] = []
    with pytest.raises(StreamInterruptedError) as raised:
        async for update in client.get_response("hi", stream=True):
            received.append(update.text)

    assert received == ["Hell", "o wo"]
    assert raised.value.partial_text == "Hello wo"
    assert raised.value.updates == 2
    assert raised.value.__cause__ is cause
    assert len(fake.calls) == 1
    assert clock.sleeps == []


async def test_stream_interrupted_from_below_after_the_first_update_passes_through(clock: Clock) -> None:
    broken = StreamInterruptedError("cut", partial_text="Hell", updates=1)
    fake = FakeChatClient([Reply("Hello", error=broken, fail_after=1)])
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    with pytest.raises(StreamInterruptedError) as raised:
        await client.get_response("hi", stream=True).get_final_response()

    assert raised.value is broken


async def test_stream_non_transient_error_after_the_first_update_passes_through(clock: Clock) -> None:
    error = ValueError("a bug")
    fake = FakeChatClient([Reply("Hello", error=error, fail_after=1)])
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    with pytest.raises(ValueError) as raised:
        await client.get_response("hi", stream=True).get_final_response()
    assert raised.value is error


async def test_closing_a_stream_early_closes_the_inner_stream(clock: Clock) -> None:
    fake = FakeChatClient("Hello world, a long answer")
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    stream = client.get_response("hi", stream=True)
    async for _ in stream:
        break
    await stream.aclose()

    assert fake.closed_streams == 1


async def test_nothing_runs_before_a_stream_is_iterated(clock: Clock) -> None:
    fake = FakeChatClient("hi")
    client = with_retries(fake, sleep=clock.sleep, clock=clock)

    stream = client.get_response("hi", stream=True)

    assert fake.calls == []
    await stream.aclose()


# ---------------------------------------------------------------- pass-through and the proxy


class RecordingOutputType(DelegatingChatClient):
    """Records the output_type it receives and answers without it (FakeChatClient refuses one)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._self_output_types: list[Any] = []

    def get_response(self, messages: Any, *, options: Any = None, stream: bool = False, output_type: Any = None) -> Any:
        self._self_output_types.append(output_type)
        return super().get_response(messages, options=options, stream=stream)


@STREAM
async def test_options_features_and_output_type_pass_through_untouched(stream: bool, clock: Clock) -> None:
    fake = FakeChatClient([StatusError(503), "ok"])
    recorder = RecordingOutputType(fake)
    client = with_retries(recorder, sleep=clock.sleep, clock=clock)
    feature = Tagging()
    options = {"temperature": 0.3, "features": [feature]}
    messages = ["hi"]

    if stream:
        await client.get_response(messages, options=options, stream=True, output_type=int).get_final_response()
    else:
        await client.get_response(messages, options=options, output_type=int)

    assert len(fake.calls) == 2
    assert all(c.options.features[0] is feature for c in fake.calls)
    assert all(c.options.temperature == 0.3 for c in fake.calls)
    assert recorder._self_output_types == [int, int]
    assert options == {"temperature": 0.3, "features": [feature]}
    assert messages == ["hi"]


async def test_calls_ask_for_no_sdk_retries_through_other_layers_without_touching_the_caller() -> None:
    fake = FakeChatClient(["ok", "ok"])
    state = dict(vars(fake))
    options = {"temperature": 0.5}
    client = with_retries(with_telemetry(fake))
    assert dict(vars(fake)) == state  # building the layer changed nothing
    await client.get_response("hi", options=options)
    await client.get_response("hi", options={"sdk_max_retries": 1})
    assert [call.options.sdk_max_retries for call in fake.calls] == [0, 1]  # the caller's own value wins
    assert options == {"temperature": 0.5}


async def test_a_minimal_client_is_accepted() -> None:
    class Minimal:
        def get_response(
            self, messages: Any, *, options: Any = None, stream: bool = False, output_type: Any = None
        ) -> Any:
            return FakeChatClient("ok").get_response(messages, options=options, stream=stream)

    client = with_retries(Minimal())
    assert (await client.get_response("hi")).text == "ok"


async def test_proxy_contract_state_stays_on_the_layer() -> None:
    fake = FakeChatClient("ok")
    before = set(vars(fake))
    client = with_retries(fake, max_attempts=5)
    await client.get_response("hi")

    assert set(vars(fake)) == before
    assert "_self_policy" in client.__self_dict__
    assert type(client) is RetryingChatClient and isinstance(client, FakeChatClient)
    assert client.get_service(RetryingChatClient) is client
    assert client.model == "fake-model"
    async with client as entered:
        assert entered is client
    clone = copy.copy(client)
    assert type(clone) is RetryingChatClient and clone._self_policy is client._self_policy
    assert clone.__wrapped__ is not fake


# ---------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": 2.5}, "max_attempts"),
        ({"max_attempts": True}, "max_attempts"),
        ({"base_delay": -1}, "base_delay"),
        ({"max_delay": -0.1}, "max_delay"),
        ({"max_retry_after": float("nan")}, "max_retry_after"),
        ({"deadline": 0}, "deadline"),
        ({"deadline": -3}, "deadline"),
        ({"deadline": "soon"}, "deadline"),
    ],
)
async def test_bad_settings_raise_user_error_naming_the_parameter(kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(UserError, match=named):
        with_retries(FakeChatClient("ok"), **kwargs)


# ---------------------------------------------------------------- classification


def _status(status: int, headers: dict[str, str] | None = None, body: Any = None) -> ProviderStatusError:
    return ProviderStatusError("error", status_code=status, headers=headers, body=body)


@pytest.mark.parametrize(
    ("make_error", "transient"),
    [
        (lambda: _status(429), True),
        (lambda: _status(408), True),
        (lambda: _status(409), True),
        (lambda: _status(500), True),
        (lambda: _status(503), True),
        (lambda: _status(400), False),
        (lambda: _status(401), False),
        (lambda: _status(403), False),
        (lambda: _status(404), False),
        (lambda: _status(422), False),
        (lambda: _status(503, {"x-should-retry": "false"}), False),
        (lambda: _status(400, {"x-should-retry": "true"}), True),
        (lambda: ProviderConnectionError("refused"), True),
        (lambda: ProviderTimeoutError("slow"), True),
        (
            lambda: _status(529, body={"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
            True,
        ),
        # an error event inside a 200 stream
        (
            lambda: _status(200, body={"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
            True,
        ),
        (lambda: _status(200, body={"type": "error", "error": {"type": "invalid_request_error"}}), False),
        (lambda: ConnectionResetError("reset"), True),
        (lambda: TimeoutError(), True),
        (lambda: StreamInterruptedError("cut"), True),
        (lambda: ModelBehaviorError("bad"), False),
        (lambda: UserError("bad"), False),
        (lambda: ValueError("bug"), False),
        (lambda: asyncio.CancelledError(), False),
        (lambda: KeyboardInterrupt(), False),
    ],
)
def test_is_transient(make_error: Any, transient: bool) -> None:
    assert is_transient(make_error()) is transient


@STREAM
async def test_retry_if_replaces_the_classifier(stream: bool, clock: Clock) -> None:
    fake = FakeChatClient([ValueError("flaky"), "ok"])
    client = with_retries(fake, retry_if=lambda error: isinstance(error, ValueError), sleep=clock.sleep, clock=clock)

    assert (await call(client, stream)).text == "ok"
    assert len(fake.calls) == 2
