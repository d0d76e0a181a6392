"""OpenAI-shaped error bodies: `{"error": {"message", "type", "param", "code"}}`.

Every error a request can end with is answered by one table, `ANSWERS`: a backend's status
error keeps its status and, when the backend sent an OpenAI-shaped body, that body (seed 004:
"the gateway forwards the error to the client unchanged"); a timeout is a 504, an unreachable
backend a 502 (its address is not the client's to know). A backend answer the gateway cannot
use is a 502 whose error keeps what the backend said in `raw_text` (key-shaped strings masked),
so the client sees why without access to the gateway's logs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException

from so_middleware import (
    DeadlineExceededError,
    ProviderConnectionError,
    ProviderStatusError,
    ProviderTimeoutError,
    SOMiddlewareError,
    UserError,
)
from so_middleware.core import MAX_RAW_TEXT

from ..core import redact
from ._json import JSONAnswer

__all__ = ["ANSWERS", "BadRequest", "error_response", "to_error_response"]

_log = logging.getLogger("so_middleware.gateway")
_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
          409: "invalid_request_error", 413: "invalid_request_error", 429: "rate_limit_error"}  # fmt: skip


class BadRequest(Exception):
    """A request the gateway refuses (400): `param` names the offending field."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.code = code
        self.headers = headers


def error_response(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONAnswer:
    """An OpenAI-shaped error response (`extra`: more fields of the error object)."""
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": code, **extra}}
    return JSONAnswer(body, status_code=status, headers=headers)


_TIMED_OUT = "The backend did not answer in time: {error}"

ANSWERS: tuple[tuple[type[BaseException], int | None, str | None, str], ...] = (
    # (error type, HTTP status, error code, message): the first row whose type the error is answers it
    (UserError, 400, None, "{error}"),
    (ProviderStatusError, None, "backend_error", "{error}"),  # None: the backend's own status (below 400: 502)
    (ProviderTimeoutError, 504, "backend_timeout", _TIMED_OUT),
    (DeadlineExceededError, 504, "backend_timeout", _TIMED_OUT),
    (ProviderConnectionError, 502, "backend_unreachable", "The backend could not be reached."),
    (SOMiddlewareError, 502, "backend_bad_response", "The backend's answer could not be used: {error}"),
    (TimeoutError, 504, "backend_timeout", _TIMED_OUT),  # Python's own, from a client that is not an adapter
    (ConnectionError, 502, "backend_unreachable", "The backend could not be reached."),
)
"""How the gateway answers each error a backend call ends with."""


def to_error_response(error: BaseException) -> JSONAnswer:
    """The response for an exception raised while serving a request."""
    if isinstance(error, BadRequest):
        return error_response(error.status, error.message, param=error.param, code=error.code, headers=error.headers)
    if isinstance(error, HTTPException):  # the router's own: no such route (404), wrong method (405)
        return error_response(error.status_code, error.detail, headers=error.headers)
    row = next((row for row in ANSWERS if isinstance(error, row[0])), None)
    if row is None:
        _log.exception("unexpected error while serving a request", exc_info=error)
        return error_response(500, f"{type(error).__name__}: {error}")
    _, status, code, message = row
    if isinstance(error, ProviderStatusError):
        body: Any = error.body
        status = error.status_code if error.status_code is not None and error.status_code >= 400 else 502
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            return JSONAnswer({"error": body}, status_code=status)
        return error_response(status, str(body or error), code=code)
    assert status is not None  # only a status error takes the backend's
    text = backend_text(error) if code == "backend_bad_response" else ""
    extra: dict[str, Any] = {"raw_text": text} if text else {}
    return error_response(status, message.format(error=error), code=code, **extra)


def backend_text(error: BaseException) -> str:
    """What the backend answered, as an error after a model call keeps it (the last attempt's
    text, or what a broken stream delivered): at most `MAX_RAW_TEXT` characters, key-shaped
    strings masked."""
    attempts = getattr(error, "attempts", None)
    text = attempts[-1].text if attempts else getattr(error, "partial_text", "")
    return redact(text[:MAX_RAW_TEXT]) if isinstance(text, str) and text else ""
