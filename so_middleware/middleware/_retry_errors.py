"""Which errors a retry may cure: classification by duck typing, no SDK imported.

Retried: connection errors, timeouts, HTTP 408, 409, 429, 5xx (Anthropic's 529 `overloaded_error`
too), `x-should-retry: true`, `StreamInterruptedError`, a `transient` `ProviderResponseError`.
Errors are read by duck typing (`status_code`, `response.headers`, `body`, MRO class names such as
`APIConnectionError`). Anything else (400, 401, 403, 404, 422, `OutputError`) is not transient.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import TRANSIENT_ERROR_CODES, ProviderResponseError, SOMiddlewareError, StreamInterruptedError

__all__ = ["headers_of", "is_transient", "status_code_of"]

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
    should_retry = str(headers_of(error).get("x-should-retry") or "").lower()
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


def headers_of(error: BaseException) -> Mapping[str, Any]:
    """The response headers an SDK error carries (`{}` when none)."""
    headers = getattr(getattr(error, "response", None), "headers", None)
    return headers if isinstance(headers, Mapping) or hasattr(headers, "get") else {}  # type: ignore[return-value]


def _error_type(error: BaseException) -> str | None:
    body = getattr(error, "body", None)  # Anthropic: {"type": "error", "error": {"type": ...}}; OpenAI: the error
    if not isinstance(body, Mapping):
        return None
    nested = body.get("error")
    kind = (nested if isinstance(nested, Mapping) else body).get("type")
    return kind if isinstance(kind, str) else None
