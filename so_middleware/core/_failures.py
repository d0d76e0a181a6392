"""Transport errors: `TransportError` and its three kinds, and `failure_of`, their one reading.

An adapter raises these where an SDK call leaves the SDK (`providers/_sdk_use.py`, the one
boundary), `from` the SDK's own error; retries, fallback, limits, logging, telemetry and the
gateway read them by type, or all alike with `failure_of`. What is read from the server's
answer: its status, its headers (`retry-after-ms`/`retry-after`, `x-should-retry`) and its
error body (`{"error": {"type", "code"}}` or the error object itself), the shapes both official
SDKs document.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from ._exceptions import TRANSIENT_ERROR_CODES, ProviderResponseError, SOMiddlewareError, StreamInterruptedError
from ._redaction import redact_url
from ._retry_after import retry_after_seconds

__all__ = [
    "FailureKind",
    "ProviderConnectionError",
    "ProviderStatusError",
    "ProviderTimeoutError",
    "TransportError",
    "TransportFailure",
    "failure_of",
    "is_transient",
]

FailureKind = Literal["status", "timeout", "connection", "interrupted", "reported", "other"]

_TRANSIENT_STATUS = frozenset({408, 409, 429})
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")  # a code, not a sentence


@dataclasses.dataclass(frozen=True)
class TransportFailure:
    """How a call failed, as retries, fallback, limits, logs and the gateway need it.

    `kind`: `status` (the server answered with an HTTP error status), `timeout`, `connection`
    (not reached, or the connection broke), `interrupted` (a `StreamInterruptedError`),
    `reported` (a `ProviderResponseError`), `other` (anything else: a bug, an output error,
    cancellation). `transient`: trying the same call again may succeed (the default of
    `with_retries` and `with_fallback`). `retry_after`: the seconds the server asked to wait.
    `code`: the provider's error code or type (`rate_limit_exceeded`, `overloaded_error`).
    `body`: the error body the server sent, as the SDK parsed it.

    Example: `failure_of(ProviderStatusError("slow down", status_code=429, headers={"retry-after": "2"}))`
    is `TransportFailure("status", transient=True, status=429, retry_after=2.0)`.
    """

    kind: FailureKind
    transient: bool
    status: int | None = None
    retry_after: float | None = None
    code: str | None = None
    body: Any = dataclasses.field(default=None, compare=False, repr=False)


class TransportError(SOMiddlewareError):
    """A model call failed in transport: the server answered with an error status, did not
    answer in time, or could not be reached. Raised by the adapters `from` the SDK's own error
    (its `__cause__`); over an OpenAI or Anthropic SDK client the error is also that SDK's type
    (`openai.RateLimitError`, `anthropic.APIConnectionError`, ...), so `except openai.APIError`
    still catches it.

    `url`: the address called (a password in it masked, the query left out), or None;
    `status_code`: the HTTP status, or None; `body`: the error body as the SDK parsed it;
    `retry_after`: the seconds the server asked to wait, or None; `transient`: trying the same
    call again may succeed; `failure`: all of it as one `TransportFailure`.

    Example:
        try:
            await client.get_response("Hi")
        except TransportError as error:
            print(error.status_code, error.retry_after, error.transient)
    """

    kind: ClassVar[FailureKind] = "connection"

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status_code: int | None = None,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.describe(url=url, status_code=status_code, headers=headers or {}, body=body)

    def describe(self, *, url: Any, status_code: int | None, headers: Mapping[str, Any], body: Any) -> None:
        """Set the fields from what the server answered (what `__init__` does; the boundary calls
        it on an error made as a copy of the SDK's)."""
        self.url = None if url is None else redact_url(str(url).split("?", 1)[0].split("#", 1)[0])
        self.status_code = status_code
        self.body = body
        self.retry_after = retry_after_seconds(headers)
        self.transient = _transient(self.kind, status_code, headers, body)
        self.failure = TransportFailure(self.kind, self.transient, status_code, self.retry_after, _code_of(body), body)


class ProviderStatusError(TransportError):
    """The server answered with an HTTP error status (or a stream carried an error event):
    `status_code`, `body` and `retry_after` say what it answered.

    Example: `ProviderStatusError("rate limited", status_code=429, headers={"retry-after": "2"}).retry_after` is 2.0.
    """

    kind = "status"


class ProviderTimeoutError(TransportError):
    """The server did not answer within the request's timeout.

    Example: `except ProviderTimeoutError: ...` (also `openai.APITimeoutError` over an OpenAI client).
    """

    kind = "timeout"


class ProviderConnectionError(TransportError):
    """The server could not be reached, or the connection broke; the message names the address.

    Example: `except ProviderConnectionError as error: print(error.url)`.
    """

    kind = "connection"


def failure_of(error: BaseException) -> TransportFailure:
    """What `error` says about the transport: a `TransportError`'s own `failure`; a broken
    stream (`interrupted`), a failure the server reported (`reported`), Python's `TimeoutError`
    and `ConnectionError` (transient), else `other`.

    Example:
        except TransportError as error:
            wait = failure_of(error).retry_after
    """
    if isinstance(error, TransportError):
        return error.failure
    if isinstance(error, StreamInterruptedError):
        return TransportFailure("interrupted", transient=True)
    if isinstance(error, ProviderResponseError):
        return TransportFailure("reported", error.transient, error.status_code, code=error.code)
    if isinstance(error, SOMiddlewareError) or not isinstance(error, Exception):  # ours, or cancellation
        return TransportFailure("other", transient=False)
    if isinstance(error, TimeoutError):
        return TransportFailure("timeout", transient=True)
    if isinstance(error, ConnectionError):
        return TransportFailure("connection", transient=True)
    return TransportFailure("other", transient=False)


def is_transient(error: BaseException) -> bool:
    """True when trying the same call again may succeed: `failure_of(error).transient` (the
    default `retry_if` of `with_retries`, and `on` of `with_fallback`).

    Example: `is_transient(ProviderStatusError("x", status_code=503))` is True, with 400 False.
    """
    return failure_of(error).transient


def _transient(kind: FailureKind, status: int | None, headers: Mapping[str, Any], body: Any) -> bool:
    should_retry = str(headers.get("x-should-retry") or "").lower()
    if should_retry in ("true", "false"):  # the server's own word (OpenAI, Anthropic)
        return should_retry == "true"
    if _error_type(body) in TRANSIENT_ERROR_CODES:  # e.g. Anthropic's overloaded_error inside a 200 stream
        return True
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    return kind in ("timeout", "connection")


def _error_type(body: Any) -> str | None:
    """The error's `type`: Anthropic's `{"type": "error", "error": {"type": ...}}`, OpenAI's error object."""
    if not isinstance(body, Mapping):
        return None
    nested = body.get("error")
    kind = (nested if isinstance(nested, Mapping) else body).get("type")
    return kind if isinstance(kind, str) else None


def _code_of(body: Any) -> str | None:
    """The provider's error code (`code`, else `type`), nested under `error` or not, when it is an identifier."""
    nested = body.get("error") if isinstance(body, Mapping) else None
    for source in (nested, body):
        if isinstance(source, Mapping):
            for key in ("code", "type"):
                code = source.get(key)
                if isinstance(code, str) and _IDENTIFIER.fullmatch(code) and code != "error":
                    return code
    return None
