"""`HttpRecorder`: what an SDK client really sent and received, through httpx2 event hooks."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["HttpRecorder"]


class HttpRecorder:
    """Keeps every request body (parsed JSON) and every response object of an httpx2 client.

    Example:
        recorder = HttpRecorder()
        sdk = AsyncOpenAI(http_client=httpx2.AsyncClient(event_hooks=recorder.hooks(is_async=True)))
        ...
        recorder.bodies[0]["response_format"]   # what went on the wire
        recorder.responses[0].is_closed          # whether the stream was closed
    """

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.responses: list[Any] = []

    def request(self, request: Any) -> None:
        """Sync request hook."""
        self.bodies.append(json.loads(request.content) if request.content else {})

    async def arequest(self, request: Any) -> None:
        """Async request hook."""
        self.request(request)

    def response(self, response: Any) -> None:
        """Sync response hook."""
        self.responses.append(response)

    async def aresponse(self, response: Any) -> None:
        """Async response hook."""
        self.response(response)

    async def __call__(self, request: Any) -> None:
        """Usable as a single async request hook."""
        self.request(request)

    def hooks(self, is_async: bool) -> dict[str, list[Any]]:
        """`event_hooks=` for an `httpx2.AsyncClient` (is_async) or `httpx2.Client`."""
        if is_async:
            return {"request": [self.arequest], "response": [self.aresponse]}
        return {"request": [self.request], "response": [self.response]}
