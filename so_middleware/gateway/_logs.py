"""The gateway's logs: one access line per request, as text or JSON.

`AccessLog` writes one INFO record per HTTP request to the `so_middleware.gateway.access` logger
when the request ends (a stream: when its last byte is sent), and `log_turn` one per WebSocket turn: the client's address, method, path
(as sent, still percent-encoded: a `%0A` cannot start a forged line), status, duration, the
response id and the client key's id. The key's id is the first 12 hex digits of its SHA-256 (the
owner the store records), never the key; no body, query or content is logged. A client that hung
up before its answer is status 499, as nginx logs it. With no handler enabled for INFO it costs
one level check per request.

`logging_config(level, fmt)` is the `logging.config.dictConfig` that `so-middleware gateway` hands
uvicorn: its lines and the gateway's on stderr, as text or one JSON object a line (`JSONFormatter`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from datetime import datetime, timezone
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._response import is_response_id
from ._watch import server_stopping

__all__ = ["ACCESS_LOGGER", "LOG_FORMATS", "LOG_LEVELS", "AccessLog", "JSONFormatter", "log_turn", "logging_config"]

ACCESS_LOGGER = "so_middleware.gateway.access"
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
LOG_FORMATS = ("text", "json")
CLIENT_CLOSED = 499  # nginx's status for a client that hung up before its answer
KEY_ID_DIGITS = 12
_access = logging.getLogger(ACCESS_LOGGER)
_FIELDS = ("client", "method", "path", "status", "duration_ms", "response_id", "key_id")


class AccessLog:
    """ASGI middleware: one access record per HTTP request (see the module's docstring).

    Example:
        app.add_middleware(AccessLog)  # outermost: it sees the guard's 401s and 413s too
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _access.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        state = scope.setdefault("state", {})  # the handler and the guard write the ids here
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except asyncio.CancelledError:
            if not server_stopping():
                raise
            # what uvicorn still runs at the end of its graceful shutdown: a 503 and a line, not a traceback
            if not status:
                status = 503
                with contextlib.suppress(Exception):
                    await send({"type": "http.response.start", "status": 503, "headers": [(b"connection", b"close")]})
                    await send({"type": "http.response.body", "body": b""})
        except BaseException:
            status = status or 500
            raise
        finally:
            _log_request(scope, state, status, time.perf_counter() - started)


def log_turn(scope: Scope, status: int, seconds: float, response_id: str | None) -> None:
    """The access record of one WebSocket turn, as of an HTTP request: its method is
    `response.create`, its status 200 for a turn that streamed its response (whatever its end),
    the error event's status for one refused, 499 for one whose client left."""
    if _access.isEnabledFor(logging.INFO):
        state = {**scope.get("state", {}), "response_id": response_id}
        _log_request({**scope, "method": "response.create"}, state, status, seconds)


def _log_request(scope: Scope, state: dict[str, Any], status: int, seconds: float) -> None:
    client = scope.get("client")
    path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    if not path.isprintable():  # an escape sequence would reach the operator's terminal as it came
        path = path.encode("unicode_escape").decode("ascii")
    response_id = state.get("response_id") or scope.get("path_params", {}).get("id")
    owner = state.get("owner")
    fields = {
        "client": f"{client[0]}:{client[1]}" if client else None,
        "method": scope["method"],
        "path": path,
        "status": status,
        "duration_ms": round(seconds * 1000, 1),
        "response_id": response_id if isinstance(response_id, str) and is_response_id(response_id) else None,
        "key_id": owner[:KEY_ID_DIGITS] if isinstance(owner, str) and owner else None,
    }
    _access.info(
        '%s "%s %s" %d %.1fms id=%s key=%s', fields["client"] or "-", fields["method"], path, status,
        fields["duration_ms"], fields["response_id"] or "-", fields["key_id"] or "-", extra=fields,
    )  # fmt: skip


class JSONFormatter(logging.Formatter):
    """One JSON object a line: `time`, `level`, `logger`, `message`, an access record's fields
    (`client`, `method`, `path`, `status`, `duration_ms`, `response_id`, `key_id`) and, for an
    error, its `exception`."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON line."""
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in _FIELDS:
            if name in record.__dict__:
                line[name] = record.__dict__[name]
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def logging_config(level: str = "info", fmt: str = "text") -> dict[str, Any]:
    """The `logging.config.dictConfig` for uvicorn's and the gateway's loggers: `level` one of
    `LOG_LEVELS`, `fmt` one of `LOG_FORMATS`; both write to stderr."""
    if level not in LOG_LEVELS or fmt not in LOG_FORMATS:
        raise ValueError(f"level must be one of {LOG_LEVELS} and fmt one of {LOG_FORMATS}, got {level!r}, {fmt!r}")
    formatter: dict[str, Any] = (
        {"()": JSONFormatter} if fmt == "json" else {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    )
    logger = {"handlers": ["stderr"], "level": level.upper(), "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"gateway": formatter},
        "handlers": {
            "stderr": {"class": "logging.StreamHandler", "formatter": "gateway", "stream": "ext://sys.stderr"}
        },
        "loggers": {"uvicorn": logger, "so_middleware": logger},
    }
