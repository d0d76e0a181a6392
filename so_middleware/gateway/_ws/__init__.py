"""WebSocket mode of the gateway's `/v1/responses` (Open Responses 2026-04-24)."""

from ._sockets import Sockets

__all__ = ["Sockets"]
