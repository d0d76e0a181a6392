"""Connection limits uvicorn does not have: a cap on open connections and a deadline for a request's
headers. Without them, a thousand idle or half-sent requests (slowloris) hold a file descriptor
each until accept fails with EMFILE and nobody is served. The body's deadline is the app's
(`body_timeout`, in `_app`): it is sent after the headers, to the app. The protocol is always
uvicorn's h11 one (uvicorn's own choice when httptools is not installed)."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    from ._config import GatewayConfig

__all__ = ["LimitedH11Protocol", "server_options"]


def _busy(max_connections: int) -> bytes:
    error = {"message": f"The gateway has {max_connections} open connections, its limit; retry later.",
             "type": "server_error", "param": None, "code": "too_many_connections"}  # fmt: skip
    body = json.dumps({"error": error}).encode()
    head = ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
            f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n")  # fmt: skip
    return head.encode() + body


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with `max_connections` (one more is answered 503 and closed at once,
    before it can hold anything) and `header_timeout` (a connection whose next request's headers
    are not all in that many seconds after it opened or after its previous answer is closed)."""

    max_connections = 400
    header_timeout = 10.0
    _header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Count the connection; refuse it past the cap; start its header deadline."""
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.write(_busy(self.max_connections))
            transport.close()
            return
        self._start_header_deadline()

    def on_response_complete(self) -> None:
        """The answer is sent: the next request's headers are due within `header_timeout`."""
        super().on_response_complete()
        # a pipelined request may already be running (its headers are in): no deadline then
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._start_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadline with the connection."""
        if self._header_deadline is not None:
            self._header_deadline.cancel()
        super().connection_lost(exc)

    def _start_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
        self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_late, self.cycle)

    def _headers_late(self, cycle_then: Any) -> None:
        # a new cycle is a request whose headers came in time; the same one: none came
        # an upgraded connection is the WebSocket protocol's now: its own limits hold it, not this deadline
        upgraded = self.transport.get_protocol() is not self
        if self.cycle is cycle_then and not self.transport.is_closing() and not upgraded:
            self.transport.close()


def server_options(config: GatewayConfig) -> dict[str, Any]:
    """uvicorn options that apply `config`'s connection limits.

    Example: `uvicorn.run(create_app(config), port=8000, **server_options(config))`.
    """
    limits = {"max_connections": config.max_connections, "header_timeout": config.header_timeout}
    return {"http": type("LimitedH11Protocol", (LimitedH11Protocol,), limits)}
