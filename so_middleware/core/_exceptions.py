"""The errors so_middleware raises.

```
SOMiddlewareError
├── UserError                  bad type, option or configuration; raised before any model call
│   └── StreamConsumedError    a ResponseStream iterated a second time
├── LocalServerError           the embedded llama-server is missing, fails to start or dies
├── StreamInterruptedError     a stream stopped before its end (connection cut, idle timeout, no end event)
├── ProviderResponseError      the server's answer is unreadable, has no choice 0, or reports a failure
├── DeadlineExceededError      with_retries(deadline=...) ran out during an attempt (also a TimeoutError)
├── TransportError             the call failed in transport (`_failures.py`; over an SDK: also the SDK's type)
│   ├── ProviderStatusError    an HTTP error status
│   ├── ProviderTimeoutError   no answer within the timeout
│   └── ProviderConnectionError not reached, or the connection broke
└── OutputError                the model answered, but not with a usable value
    ├── ModelBehaviorError     output still invalid after every retry
    ├── RefusalError           the model refused
    ├── IncompleteOutputError  output cut off (length, max_tokens, incomplete)
    └── ContentFilterError     output withheld by a content filter
```

Every error raised after a model call carries `attempts` (the raw text, error and usage of each
attempt) and `usage` (summed over the attempts), so nothing the model produced is lost.
Transport errors (rate limits, timeouts, connection errors) are `TransportError`s raised `from`
the SDK's own exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._attempts import Attempt
from ._usage import UsageDetails

__all__ = [
    "MAX_RAW_TEXT",
    "TRANSIENT_ERROR_CODES",
    "ContentFilterError",
    "DeadlineExceededError",
    "IncompleteOutputError",
    "LocalServerError",
    "ModelBehaviorError",
    "OutputError",
    "ProviderResponseError",
    "RefusalError",
    "SOMiddlewareError",
    "StreamConsumedError",
    "StreamInterruptedError",
    "UserError",
]


class SOMiddlewareError(Exception):
    """Base class of every error so_middleware raises itself."""


class UserError(SOMiddlewareError, ValueError):
    """A bad type, option or configuration, found before any model call.

    Example: `StructuredOutput(lambda: 1)` raises `UserError` naming the type and the reason.
    """


class StreamConsumedError(UserError):
    """A `ResponseStream` was iterated a second time; a stream can be consumed once."""


class LocalServerError(SOMiddlewareError, RuntimeError):
    """The embedded local model server is not installed, could not start, or stopped."""


class StreamInterruptedError(SOMiddlewareError):
    """A streamed response broke off before its end.

    `partial_text` holds the text received so far; the original error is chained as `__cause__`.
    """

    def __init__(self, message: str, *, partial_text: str = "", updates: int = 0) -> None:
        super().__init__(message)
        self.partial_text = partial_text
        self.updates = updates


# Error types and codes a provider gives to failures that may pass: Anthropic's error types,
# OpenAI's error codes (a `failed` response, an `error` event) and OpenAI-style error bodies.
TRANSIENT_ERROR_CODES = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error", "server_error", "rate_limit_exceeded"}
)


class ProviderResponseError(SOMiddlewareError):
    """The server answered, but the answer cannot be used; the same error plain and streaming.

    Raised for a body that is not JSON (an HTML page), not UTF-8, nested too deeply or of an
    unexpected shape (a stream: not an event stream, or an unreadable event); for a chat
    completion without a choice of index 0 (`choices: []` or `null`); and for a failure the
    server reports inside a successful HTTP answer (a `failed` or `cancelled` Responses status,
    an `error` event in a stream). `code` is the provider's error type or code when it gave one;
    `transient` is True when `code` names a failure that may pass (`overloaded_error`,
    `server_error`, ...) or a reported failure gave none: `with_retries` retries those.
    `partial_text` is the text a stream delivered first; the SDK error, when there was one, is
    chained as `__cause__`. An answer that was received but cannot be used (a plain call) is kept:
    `raw_text` holds its body (the first `MAX_RAW_TEXT` characters), `usage` what it reported, and
    `attempts` one `Attempt` with both (a structured-output run puts it after its earlier ones).

    Example:
        try:
            await client.get_response("Hi")
        except ProviderResponseError as error:
            print(error.code, error.transient)
    """

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        reported: bool = False,
        status_code: int | None = None,
        partial_text: str = "",
        updates: int = 0,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status_code = status_code
        self.transient = reported and (code is None or code in TRANSIENT_ERROR_CODES)
        self.partial_text = partial_text
        self.updates = updates
        self.raw_text = ""
        self.usage: UsageDetails | None = None
        self.attempts: list[Attempt] = []

    def with_answer(self, raw_text: str, usage: UsageDetails | None = None) -> ProviderResponseError:
        """Keep the answer this error is about: its body (cut to `MAX_RAW_TEXT` characters) and
        usage, as this error's one attempt; an answer kept before stays (returns self)."""
        if not self.attempts:
            self.raw_text = raw_text[:MAX_RAW_TEXT]
            self.usage = usage
            self.attempts = [Attempt(0, self.raw_text, self, usage)]
        return self


MAX_RAW_TEXT = 64 * 1024  # characters of an unusable answer's body an error keeps


class DeadlineExceededError(SOMiddlewareError, TimeoutError):
    """`with_retries(deadline=...)` ran out while an attempt was still running; it was cancelled.

    `deadline` is the bound in seconds; `partial_text` the text a stream had already delivered to
    the caller. The last failed attempt's error, if any, is chained as `__cause__`.
    """

    def __init__(self, message: str, *, deadline: float, partial_text: str = "") -> None:
        super().__init__(message)
        self.deadline = deadline
        self.partial_text = partial_text


class OutputError(SOMiddlewareError):
    """The model answered, but not with a usable structured value.

    Attributes:
        attempts: one `Attempt` per model call (raw text, error, usage, strategy).
        usage: the usage summed over every attempt.
        response: the last `ChatResponse`, when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: Sequence[Attempt] = (),
        usage: UsageDetails | None = None,
        response: Any = None,
    ) -> None:
        super().__init__(message)
        self.attempts: list[Attempt] = list(attempts)
        self.usage = usage
        self.response = response

    @property
    def raw_texts(self) -> list[str]:
        """The raw text of each attempt, in order."""
        return [attempt.text for attempt in self.attempts]

    def with_attempts(self, attempts: Sequence[Attempt], usage: UsageDetails | None) -> OutputError:
        """Attach the attempts and summed usage (returns self, for `raise err.with_attempts(...)`)."""
        self.attempts = list(attempts)
        self.usage = usage
        return self


class ModelBehaviorError(OutputError):
    """The model's output does not validate against the requested type (after every retry).

    `raw_text` is the offending text; `errors` the pydantic error list (or a one-item list
    describing a JSON error). `str(err)` is a message a model can be re-asked with.
    """

    def __init__(
        self,
        message: str,
        *,
        raw_text: str = "",
        errors: Sequence[Any] = (),
        attempts: Sequence[Attempt] = (),
        usage: UsageDetails | None = None,
        response: Any = None,
    ) -> None:
        super().__init__(message, attempts=attempts, usage=usage, response=response)
        self.raw_text = raw_text
        self.errors: list[Any] = list(errors)


class RefusalError(OutputError):
    """The model refused to answer; `refusal` holds its explanation."""

    def __init__(self, message: str, *, refusal: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.refusal = refusal


class IncompleteOutputError(OutputError):
    """The output was cut off (finish reason `length`, `max_tokens`, `incomplete`)."""


class ContentFilterError(OutputError):
    """The output was withheld or cut by the provider's content filter."""
