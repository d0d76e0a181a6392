"""Retries: a call that fails transiently is tried again, with backoff, within a deadline.

    client = with_retries(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"), max_attempts=4, deadline=60)

**Retried:** connection errors, timeouts, HTTP 408, 409, 429, 5xx (Anthropic's 529 `overloaded_error`
too), `x-should-retry: true`, `StreamInterruptedError`, and a `ProviderResponseError` that is
`transient` (a failure the server reports inside a 2xx answer with a transient error type, such as
Anthropic's in-stream `overloaded_error` or a Responses `error` event with `server_error`, or with
no type at all).
Errors are classified by duck typing (`status_code`, `response.headers`, `body`, MRO class names such
as `APIConnectionError`): no SDK is imported. Anything else (400, 401, 403, 404, 422, `OutputError`,
an unreadable answer) is raised at once, unchanged; `retry_if=` replaces the classifier.

**Waits:** full-jitter exponential backoff, a random time in `[0, min(max_delay, base_delay * 2**(n-1))]`
after attempt n; a `retry-after-ms`/`retry-after` header (seconds or HTTP date) replaces it, capped
at `max_retry_after` (ignored when it does not parse). `deadline` bounds the whole call: a wait that
would end past it is not started, and an attempt still running when it passes (a slow answer, a
stalled stream) is cancelled and the call raises `DeadlineExceededError`. When retries stop, the
last error is raised as it was.

**SDK retries:** both SDKs retry by themselves (`max_retries=2`). Under this layer each attempt
would hide up to three HTTP requests from the attempt count, the deadline and telemetry, so the
layer calls `disable_sdk_retries()` on the client it wraps when built (the attribute reaches the
innermost adapter through the proxies; a client without it is left alone). `max_attempts` is then
the number of HTTP requests. Without this layer the SDK keeps its own retries.

**Streams:** retried only before the first content delta (text, tool-call arguments, reasoning or a
refusal): the updates before it (Anthropic's `message_start`, the Responses `response.created`) are
held back until it comes, so nothing of a failed attempt reaches the caller. After a content delta
a transient failure raises `StreamInterruptedError` carrying `partial_text`, chained from the
original error.

**Visible:** each retry is a dict `{"attempt", "error", "status_code", "wait"}` (`error` is the
error's type name: a provider's message may quote the request, so it is never recorded) in
`response.additional_properties["so_middleware.retries"]` (a stream's final response too) and a
`so_middleware.retry` event on the current OpenTelemetry span (when opentelemetry-api is installed).

**Order:** `with_telemetry(with_retries(c))` gives one `chat` span per call, retries as its events,
waits inside it; `with_retries(with_telemetry(c))` one `chat` span per attempt, waits between them.
The loop is tenacity's `AsyncRetrying` with our stop, wait and retry callables.
"""

from __future__ import annotations

import email.utils
import functools
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from tenacity import AsyncRetrying, RetryCallState
from tenacity.wait import wait_random_exponential

from ..core import (
    TRANSIENT_ERROR_CODES,
    ChatClient,
    ChatResponse,
    ChatStream,
    DeadlineExceededError,
    DelegatingChatClient,
    MessageInput,
    OptionsInput,
    ProviderResponseError,
    ResponseStream,
    SOMiddlewareError,
    StreamInterruptedError,
    UserError,
    call_deadline,
)
from ._otel_names import RETRIES_KEY, RETRY_EVENT

try:
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - telemetry is an optional extra
    otel_trace = None  # type: ignore[assignment]

__all__ = ["RetryingChatClient", "is_transient", "retry_after_seconds", "with_retries"]

_TRANSIENT_STATUS = frozenset({408, 409, 429})
# SDK and httpx2 transport errors, matched by class name anywhere in the MRO
_TRANSIENT_CLASSES = frozenset(
    {"APIConnectionError", "APITimeoutError", "TimeoutException", "NetworkError", "RemoteProtocolError"}
)


def is_transient(error: BaseException) -> bool:
    """True when trying the same call again may succeed (the default `retry_if`).

    Example: `is_transient(openai.RateLimitError(...))` is True, `is_transient(openai.BadRequestError(...))` False.
    """
    if not isinstance(error, Exception):  # cancellation, GeneratorExit: never retried
        return False
    if isinstance(error, StreamInterruptedError):
        return True
    if isinstance(error, ProviderResponseError):
        return error.transient
    if isinstance(error, SOMiddlewareError):
        return False
    should_retry = str(_headers(error).get("x-should-retry") or "").lower()
    if should_retry in ("true", "false"):
        return should_retry == "true"
    if _error_type(error) in TRANSIENT_ERROR_CODES:
        return True
    status = status_code_of(error)
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    return any(cls.__name__ in _TRANSIENT_CLASSES for cls in type(error).__mro__)


def status_code_of(error: BaseException) -> int | None:
    """The HTTP status an SDK error carries (`.status_code` or `.response.status_code`), if any."""
    for status in (getattr(error, "status_code", None), getattr(getattr(error, "response", None), "status_code", None)):
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def retry_after_seconds(headers: Mapping[str, Any], *, now: float | None = None) -> float | None:
    """The wait a response asks for: `retry-after-ms`, else `retry-after` (seconds or HTTP date).

    None when absent, unparsable, negative or not finite. Example:
    `retry_after_seconds({"retry-after": "2"}) == 2.0`.
    """
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        seconds: float | None
        try:
            seconds = float(value) / scale
        except (TypeError, ValueError):
            seconds = _seconds_until_http_date(str(value), time.time() if now is None else now)
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _seconds_until_http_date(value: str, now: float) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - now
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _headers(error: BaseException) -> Mapping[str, Any]:
    headers = getattr(getattr(error, "response", None), "headers", None)
    return headers if isinstance(headers, Mapping) or hasattr(headers, "get") else {}  # type: ignore[return-value]


def _error_type(error: BaseException) -> str | None:
    body = getattr(error, "body", None)  # Anthropic: {"type": "error", "error": {"type": ...}}; OpenAI: the error
    if not isinstance(body, Mapping):
        return None
    nested = body.get("error")
    kind = (nested if isinstance(nested, Mapping) else body).get("type")
    return kind if isinstance(kind, str) else None


Sleep = Callable[[float], Awaitable[Any]]


@dataclass(frozen=True)
class _RetryPolicy:
    max_attempts: int
    deadline: float | None
    base_delay: float
    max_delay: float
    max_retry_after: float
    retry_if: Callable[[BaseException], bool]
    sleep: Sleep
    clock: Callable[[], float]

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise UserError(f"max_attempts must be an int of at least 1, not {self.max_attempts!r}")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            if not _is_number(getattr(self, name)) or not getattr(self, name) >= 0:
                raise UserError(f"{name} must be a number of seconds >= 0, not {getattr(self, name)!r}")
        if self.deadline is not None and (not _is_number(self.deadline) or not self.deadline > 0):
            raise UserError(f"deadline must be None or a number of seconds > 0, not {self.deadline!r}")
        for name in ("retry_if", "sleep", "clock"):
            if not callable(getattr(self, name)):
                raise UserError(f"{name} must be a callable, not {getattr(self, name)!r:.60}")

    def deadline_at(self) -> float | None:
        """When a call starting now must end (on `clock`), or None without a deadline."""
        return None if self.deadline is None else self.clock() + self.deadline

    def time_left(self, deadline_at: float | None) -> float | None:
        """Seconds until `deadline_at` (never negative), or None without a deadline."""
        return None if deadline_at is None else max(0.0, deadline_at - self.clock())

    def expired(self, partial_text: str = "") -> DeadlineExceededError:
        """The error for an attempt still running when the deadline passed."""
        return DeadlineExceededError(
            f"the deadline of {self.deadline:g} s passed while an attempt was running; it was cancelled",
            deadline=float(self.deadline or 0),
            partial_text=partial_text,
        )

    def retrying(self, retries: list[dict[str, Any]], deadline_at: float | None) -> AsyncRetrying:
        """A tenacity loop for one call; each retry is appended to `retries`."""
        backoff = wait_random_exponential(multiplier=self.base_delay, max=self.max_delay)

        def wait(state: RetryCallState) -> float:
            hinted = retry_after_seconds(_headers(_failure(state)))
            return backoff(state) if hinted is None else min(hinted, self.max_retry_after)

        def stop(state: RetryCallState) -> bool:
            out_of_attempts = state.attempt_number >= self.max_attempts
            return out_of_attempts or (deadline_at is not None and self.clock() + state.upcoming_sleep > deadline_at)

        def record(state: RetryCallState) -> None:
            error = _failure(state)
            retry = {
                "attempt": state.attempt_number,
                "error": type(error).__name__,
                "status_code": status_code_of(error),
                "wait": state.upcoming_sleep,
            }
            retries.append(retry)
            if otel_trace is not None:
                attributes: dict[str, Any] = {key: value for key, value in retry.items() if value is not None}
                otel_trace.get_current_span().add_event(RETRY_EVENT, attributes)

        return AsyncRetrying(
            sleep=self.sleep,
            stop=stop,
            wait=wait,
            before_sleep=record,
            reraise=True,
            retry=lambda state: state.outcome is not None and state.outcome.failed and self.retry_if(_failure(state)),
        )


def _failure(state: RetryCallState) -> BaseException:
    error = state.outcome.exception() if state.outcome is not None else None
    return error if error is not None else RuntimeError("no failure recorded")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _with_retries(response: ChatResponse[Any], retries: Sequence[dict[str, Any]]) -> ChatResponse[Any]:
    if retries:
        earlier = response.additional_properties.get(RETRIES_KEY) or []
        response.additional_properties[RETRIES_KEY] = [*earlier, *retries]
    return response


class RetryingChatClient(DelegatingChatClient):
    """Retries transient failures; a stream only until its first update reaches the caller.

    Example:
        client = RetryingChatClient(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"), max_attempts=5)
        response = await client.get_response("Hi")
        response.additional_properties.get("so_middleware.retries", [])  # one dict per retry
    """

    def __init__(
        self,
        inner: ChatClient | Any,
        *,
        max_attempts: int = 3,
        deadline: float | None = None,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        max_retry_after: float = 60.0,
        retry_if: Callable[[BaseException], bool] = is_transient,
        sleep: Sleep = anyio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        policy = _RetryPolicy(max_attempts, deadline, base_delay, max_delay, max_retry_after, retry_if, sleep, clock)
        super().__init__(inner)
        self._self_policy = policy
        disable_sdk_retries = getattr(self.__wrapped__, "disable_sdk_retries", None)
        if callable(disable_sdk_retries):
            disable_sdk_retries()

    def process(
        self, messages: MessageInput, *, options: OptionsInput, stream: bool, output_type: Any
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Call the inner client, retrying transient failures; see the module docstring."""
        call = functools.partial(self.__wrapped__.get_response, messages, options=options, output_type=output_type)
        if stream:
            retried = _RetriedStream(call, self._self_policy)
            return ResponseStream(retried.updates(), retried.final_response)
        return self._respond(call)

    async def _respond(self, call: Callable[..., Any]) -> ChatResponse[Any]:
        policy = self._self_policy
        retries: list[dict[str, Any]] = []
        deadline_at = policy.deadline_at()

        async def attempt() -> ChatResponse[Any]:
            left = policy.time_left(deadline_at)
            with anyio.move_on_after(left), call_deadline(left):  # the adapter caps its HTTP timeouts
                return await call(stream=False)  # type: ignore[no-any-return]
            raise policy.expired()

        return _with_retries(await policy.retrying(retries, deadline_at)(attempt), retries)


_END: Any = object()
_EXPIRED: Any = object()


class _RetriedStream:
    """One streamed call: retried until its first content delta, then forwarded as is."""

    def __init__(self, call: Callable[..., Any], policy: _RetryPolicy) -> None:
        self._call = call
        self._policy = policy
        self._retries: list[dict[str, Any]] = []
        self._inner: ChatStream | None = None
        self._deadline_at: float | None = None

    async def _open(self) -> tuple[ChatStream, list[Any]]:
        """Open the stream and read up to its first content delta (or its end)."""
        stream: ChatStream = self._call(stream=True)
        held: list[Any] = []
        try:
            with anyio.move_on_after(self._policy.time_left(self._deadline_at)):
                while not held or (held[-1] is not _END and not held[-1].contents):
                    held.append(await anext(stream, _END))
                return stream, held
            raise self._policy.expired()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise

    async def updates(self) -> AsyncIterator[Any]:
        self._deadline_at = self._policy.deadline_at()
        opened: tuple[ChatStream, list[Any]] = await self._policy.retrying(self._retries, self._deadline_at)(self._open)
        stream, held = opened
        self._inner = stream
        texts: list[str] = []
        try:
            for update in held:
                if update is _END:
                    return
                texts.append(update.text)
                yield update
            while True:
                update = _EXPIRED
                with anyio.move_on_after(self._policy.time_left(self._deadline_at)):
                    update = await anext(stream, _END)
                if update is _EXPIRED:
                    raise self._policy.expired("".join(texts))
                if update is _END:
                    return
                texts.append(update.text)
                yield update
        except Exception as error:
            if isinstance(error, (StreamInterruptedError, DeadlineExceededError)) or not self._policy.retry_if(error):
                raise
            raise StreamInterruptedError(
                f"the stream broke after {len(texts)} updates had reached the caller, so it was not retried: "
                f"{type(error).__name__}",
                partial_text="".join(texts),
                updates=len(texts),
            ) from error
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def final_response(self, updates: Sequence[Any]) -> ChatResponse[Any]:
        if self._inner is None:
            raise RuntimeError("the stream has not been opened")
        return _with_retries(await self._inner.get_final_response(), self._retries)


def with_retries(
    client: ChatClient | Any,
    *,
    max_attempts: int = 3,
    deadline: float | None = None,
    base_delay: float = 0.5,
    max_delay: float = 30.0,
    max_retry_after: float = 60.0,
    retry_if: Callable[[BaseException], bool] = is_transient,
    sleep: Sleep = anyio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> RetryingChatClient:
    """Wrap `client` in a `RetryingChatClient` (and turn its SDK's own retries off).

    Example:
        client = with_retries(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"), max_attempts=4, deadline=30)
    """
    return RetryingChatClient(
        client,
        max_attempts=max_attempts,
        deadline=deadline,
        base_delay=base_delay,
        max_delay=max_delay,
        max_retry_after=max_retry_after,
        retry_if=retry_if,
        sleep=sleep,
        clock=clock,
    )
