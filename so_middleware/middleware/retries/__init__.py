"""Retries: a call that fails transiently is tried again, with backoff, within a deadline.

    client = with_retries(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"), max_attempts=4, deadline=60)

**Retried:** connection errors, timeouts, HTTP 408, 409, 429, 5xx (Anthropic's 529 `overloaded_error`
too), `x-should-retry: true`, `StreamInterruptedError`, and a `ProviderResponseError` that is
`transient` (a failure the server reports inside a 2xx answer with a transient error type, such as
Anthropic's in-stream `overloaded_error` or a Responses `error` event with `server_error`, or with
no type at all).
Errors are read through `failure_of` (the `TransportFailure` of the `TransportError` an adapter
raises at its boundary; `so_middleware.core`). Anything else (400, 401, 403, 404, 422, `OutputError`,
an unreadable answer) is raised at once, unchanged; `retry_if=` replaces the classifier.

**Waits:** full-jitter exponential backoff, a random time in `[0, min(max_delay, base_delay * 2**(n-1))]`
after attempt n; a `retry-after-ms`/`retry-after` header (seconds or HTTP date) replaces it, capped
at `max_retry_after` (ignored when it does not parse). `deadline` bounds the whole call: a wait that
would end past it is not started, and an attempt still running when it passes (a slow answer, a
stalled stream) is cancelled and the call raises `DeadlineExceededError`; an adapter caps its HTTP
timeouts by the time left, so no request outlives the deadline. When retries stop, the last error
is raised as it was.

**SDK retries:** both SDKs retry by themselves (`max_retries=2`). Under this layer each attempt
would hide up to three HTTP requests from the attempt count, the deadline and telemetry, so the
layer's calls carry the option `sdk_max_retries=0` (unless the caller set it): the adapter makes
them through a copy of its SDK client without retries. Nothing the caller holds changes: the
adapter and its SDK client keep their own retries for calls that do not pass through this layer.
`max_attempts` is then the number of HTTP requests.

**Streams:** retried only before the first content delta (text, tool-call arguments, reasoning or a
refusal): the updates before it (Anthropic's `message_start`, the Responses `response.created`) are
held back until it comes, so nothing of a failed attempt reaches the caller. After a content delta
a transient failure raises `StreamInterruptedError` carrying `partial_text`, chained from the
original error.

**Background runs:** a background create (`options={"background": True}`) is sent once, never
retried, since the server may have accepted it before the failure; polls and resumed streams
(`continuation_token=...`) are retried like any call.

**Visible:** each retry is a dict `{"attempt", "error", "status_code", "wait"}` (`error` is the
error's type name: a provider's message may quote the request, so it is never recorded) in
`response.additional_properties["so_middleware.retries"]` (a stream's final response too) and a
`so_middleware.retry` event on the current OpenTelemetry span (when opentelemetry-api is installed).

**Order:** `with_telemetry(with_retries(c))` gives one `chat` span per call, retries as its events,
waits inside it; `with_retries(with_telemetry(c))` one `chat` span per attempt, waits between them.
With structured output below (a `RetriesEachCall` layer, found with `get_service` when this layer is
built), the layer hands the call's `CallRetries` down as a feature and retries nothing itself: the
run retries each of its model calls with it, so a fault during a re-ask retries that call only,
every attempt stays on `.attempts`/`.usage`, and the run is never restarted.
The loop is tenacity's `AsyncRetrying` with our stop, wait and retry callables, entered only after a
first failure: the first try is a plain call.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ...core import (
    FEATURES_KEY,
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    ResponseStream,
    is_transient,
    retry_after_seconds,
)
from ._policy import RetryPolicy, Sleep
from ._scope import CallRetries, RetriesEachCall

__all__ = [
    "CallRetries",
    "RetriesEachCall",
    "RetryingChatClient",
    "is_transient",
    "retry_after_seconds",
    "with_retries",
]


class RetryingChatClient(DelegatingChatClient):
    """Retries transient failures; a stream only until its first content delta.

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
        policy = RetryPolicy(max_attempts, deadline, base_delay, max_delay, max_retry_after, retry_if, sleep, clock)
        super().__init__(inner)
        self._self_policy = policy
        # a layer below that retries each of its own model calls (structured output): the call's
        # retries are handed to it, and this layer retries nothing itself
        self._self_each_call_below = self.get_service(RetriesEachCall) is not None  # not this layer: below it

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """Call the inner client, retrying transient failures; see the module docstring."""
        if call.options.starts_background_run:  # sent once: a retry could start a second job
            return super().respond(_sent_once(call))
        retries = CallRetries(self._self_policy)
        if self._self_each_call_below:
            return retries.recorded(super().respond(_handing_down(call, retries)))
        return retries.respond(self._inner(_sent_once(call)), with_records=True)

    def stream(self, call: LayerCall) -> ChatStream:
        """The same, streamed: retried until the first content arrives."""
        if call.options.starts_background_run:
            return super().stream(_sent_once(call))
        retries = CallRetries(self._self_policy)
        if self._self_each_call_below:
            inner = super().stream(_handing_down(call, retries))
            return ResponseStream(inner, lambda updates: retries.recorded(inner.get_final_response()))
        return retries.stream(self._inner(_sent_once(call)), with_records=True)

    def _inner(self, call: LayerCall) -> Callable[..., Any]:
        return functools.partial(
            self.__wrapped__.get_response, call.messages, options=call.options, output_type=call.output_type
        )


def _sent_once(call: LayerCall) -> LayerCall:
    """The call with the SDK's own retries off (unless the caller set them): each attempt is one
    HTTP request."""
    return call.replace(options=call.options.replace(sdk_max_retries=_sdk_retries(call.options)))


def _handing_down(call: LayerCall, retries: CallRetries) -> LayerCall:
    """The call, SDK retries off, with its `CallRetries` among the features for the layer below
    that applies them (one copy of the options)."""
    options = call.options
    features = {**options.additional_properties, FEATURES_KEY: [*options.features, retries]}
    sdk_retries = 0 if options.sdk_max_retries is None else options.sdk_max_retries
    return call.replace(options=options.replace(sdk_max_retries=sdk_retries, additional_properties=features))


def _sdk_retries(options: ChatOptions) -> int:
    return 0 if options.sdk_max_retries is None else options.sdk_max_retries


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
    """Wrap `client` in a `RetryingChatClient` (its calls go out without the SDK's own retries).

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
