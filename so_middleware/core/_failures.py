"""`TransportFailure`: what a failed call says about the transport, read once for every consumer.

An adapter classifies each SDK error where it leaves the SDK (`classified`, at its boundary) and
raises the SDK's own exception with the record on it; retries, fallback, limits, logging,
telemetry and the gateway read it with `failure_of`, never the exception's attributes. An error
that never crossed an adapter (one a user's own `ChatClient` raises, a test fake) is classified
by the same function when first asked.

What is read: our own errors by type; an HTTP status error by its status (`.status_code`, or the
`.response` it carries), headers (`retry-after-ms`/`retry-after`, `x-should-retry`) and error
body (`{"error": {"type", "code"}}` or the error object itself), the shape both official SDKs
(and httpx's `HTTPStatusError`) document; a timeout or a broken connection by its class:
Python's `TimeoutError`/`ConnectionError`, the SDKs' `APITimeoutError`/`APIConnectionError`,
httpx's `TimeoutException`/`NetworkError`/`RemoteProtocolError` (matched by name: no SDK, no
httpx imported here).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Literal

from ._carry import carry
from ._exceptions import TRANSIENT_ERROR_CODES, ProviderResponseError, SOMiddlewareError, StreamInterruptedError
from ._retry_after import retry_after_seconds

__all__ = ["FailureKind", "TransportFailure", "classified", "failure_of", "is_transient"]

FailureKind = Literal["status", "timeout", "connection", "interrupted", "reported", "other"]

_TRANSIENT_STATUS = frozenset({408, 409, 429})
_TIMEOUT_CLASSES = frozenset({"APITimeoutError", "TimeoutException"})
_CONNECTION_CLASSES = frozenset({"APIConnectionError", "NetworkError", "RemoteProtocolError"})
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")  # a code, not a sentence
_RECORD = "so_middleware_failure"  # the attribute `classified` sets on the exception, once


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

    Example: `failure_of(openai.RateLimitError(...))` is
    `TransportFailure("status", transient=True, status=429, retry_after=2.0, code="rate_limit_exceeded")`.
    """

    kind: FailureKind
    transient: bool
    status: int | None = None
    retry_after: float | None = None
    code: str | None = None
    body: Any = dataclasses.field(default=None, compare=False, repr=False)


def failure_of(error: BaseException) -> TransportFailure:
    """The `TransportFailure` of `error`: the one its adapter recorded, else read from it now.

    Example:
        except openai.RateLimitError as error:
            wait = failure_of(error).retry_after
    """
    record = getattr(error, _RECORD, None)
    return record if isinstance(record, TransportFailure) else _classify(error)


def is_transient(error: BaseException) -> bool:
    """True when trying the same call again may succeed: `failure_of(error).transient` (the
    default `retry_if` of `with_retries`, and `on` of `with_fallback`).

    Example: `is_transient(openai.RateLimitError(...))` is True, `is_transient(openai.BadRequestError(...))` False.
    """
    return failure_of(error).transient


def classified(error: BaseException) -> BaseException:
    """`error` with its `TransportFailure` recorded on it (once: a record already there stays);
    what an adapter raises. An exception that takes no attributes is returned as it is (and
    `failure_of` reads it each time)."""
    if isinstance(getattr(error, _RECORD, None), TransportFailure):
        return error
    return carry(error, so_middleware_failure=_classify(error))  # named by _RECORD


def _classify(error: BaseException) -> TransportFailure:
    if not isinstance(error, Exception):  # cancellation, GeneratorExit: never retried
        return TransportFailure("other", transient=False)
    if isinstance(error, StreamInterruptedError):
        return TransportFailure("interrupted", transient=True)
    if isinstance(error, ProviderResponseError):
        return TransportFailure("reported", error.transient, error.status_code, code=error.code)
    status, headers, body = _status_of(error), _headers_of(error), getattr(error, "body", None)
    kind = _kind_of(error, status)
    record = TransportFailure(kind, False, status, retry_after_seconds(headers), _code_of(body), body)
    if isinstance(error, SOMiddlewareError):
        return record
    return dataclasses.replace(record, transient=_transient(kind, status, headers, body))


def _kind_of(error: Exception, status: int | None) -> FailureKind:
    names = {cls.__name__ for cls in type(error).__mro__}
    if isinstance(error, SOMiddlewareError):
        return "other"
    if status is not None:
        return "status"
    if isinstance(error, TimeoutError) or names & _TIMEOUT_CLASSES:
        return "timeout"
    if isinstance(error, ConnectionError) or names & _CONNECTION_CLASSES:
        return "connection"
    return "other"


def _transient(kind: FailureKind, status: int | None, headers: Mapping[str, Any], body: Any) -> bool:
    should_retry = str(headers.get("x-should-retry") or "").lower()
    if should_retry in ("true", "false"):  # the server's own word (OpenAI, Anthropic)
        return should_retry == "true"
    if _error_type(body) in TRANSIENT_ERROR_CODES:  # e.g. Anthropic's overloaded_error inside a 200 stream
        return True
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    return kind in ("timeout", "connection")


def _status_of(error: BaseException) -> int | None:
    for status in (getattr(error, "status_code", None), getattr(getattr(error, "response", None), "status_code", None)):
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def _headers_of(error: BaseException) -> Mapping[str, Any]:
    headers = getattr(getattr(error, "response", None), "headers", None)
    return headers if isinstance(headers, Mapping) or hasattr(headers, "get") else {}  # type: ignore[return-value]


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
