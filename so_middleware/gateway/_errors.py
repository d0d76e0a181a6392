"""OpenAI-shaped error bodies: `{"error": {"message", "type", "param", "code"}}`.

A backend error keeps its status and, when the backend sent an OpenAI-shaped body, that body
(seed 004: "the gateway forwards the error to the client unchanged"). A backend answer the
gateway cannot use is a 502 whose error keeps what the backend said in `raw_text` (key-shaped
strings masked), so the client sees why without access to the gateway's logs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException

from so_middleware import DeadlineExceededError, SOMiddlewareError, UserError, failure_of
from so_middleware.core import MAX_RAW_TEXT

from ..core import redact
from ._json import JSONAnswer

__all__ = ["BadRequest", "error_response", "to_error_response"]

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


def to_error_response(error: BaseException) -> JSONAnswer:
    """The response for an exception raised while serving a request."""
    if isinstance(error, BadRequest):
        return error_response(error.status, error.message, param=error.param, code=error.code, headers=error.headers)
    if isinstance(error, HTTPException):  # the router's own: no such route (404), wrong method (405)
        return error_response(error.status_code, error.detail, headers=error.headers)
    if isinstance(error, SOMiddlewareError):
        return _own_error_response(error)
    failure = failure_of(error)
    if failure.kind == "status" and failure.status is not None:
        body: Any = failure.body
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            return JSONAnswer({"error": body}, status_code=failure.status)
        return error_response(failure.status, str(body or error), code="backend_error")
    if failure.kind == "timeout":
        return error_response(504, f"The backend did not answer in time: {error}", code="backend_timeout")
    if failure.kind == "connection":  # its message names the backend's address: not the client's
        return error_response(502, "The backend could not be reached.", code="backend_unreachable")
    _log.exception("unexpected error while serving a request", exc_info=error)
    return error_response(500, f"{type(error).__name__}: {error}")


def _own_error_response(error: SOMiddlewareError) -> JSONAnswer:
    if isinstance(error, UserError):
        return error_response(400, str(error))
    if isinstance(error, DeadlineExceededError):
        return error_response(504, f"The backend did not answer in time: {error}", code="backend_timeout")
    # an answer that could not be read (HTML, a broken stream) or used (text where a call was required)
    message = f"The backend's answer could not be used: {error}"
    text = backend_text(error)
    if not text:
        return error_response(502, message, code="backend_bad_response")
    return error_response(502, message, code="backend_bad_response", raw_text=text)


def backend_text(error: BaseException) -> str:
    """What the backend answered, as an error after a model call keeps it (the last attempt's
    text, or what a broken stream delivered): at most `MAX_RAW_TEXT` characters, key-shaped
    strings masked."""
    attempts = getattr(error, "attempts", None)
    text = attempts[-1].text if attempts else getattr(error, "partial_text", "")
    return redact(text[:MAX_RAW_TEXT]) if isinstance(text, str) and text else ""
