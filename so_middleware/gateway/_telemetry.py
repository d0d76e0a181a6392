"""The gateway's server spans: each `POST /v1/responses` is a SERVER span, parent of the chat spans
that `with_telemetry` records for the backend calls. Nothing is recorded without opentelemetry-api."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

trace: Any
try:
    from opentelemetry import trace
except ImportError:  # pragma: no cover - exercised without the otel extra
    trace = None

__all__ = ["server_span"]


class _ServerSpan:
    def __init__(self, tracer_provider: Any, name: str) -> None:
        self.tracer_provider, self.name = tracer_provider, name

    async def wrap(self, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        """Yield `events` inside the span; closing this generator closes `events`."""
        try:
            if trace is None:
                async for event in events:
                    yield event
                return
            tracer = trace.get_tracer("so_middleware.gateway", tracer_provider=self.tracer_provider)
            attributes = {"http.request.method": "POST", "http.route": "/v1/responses"}
            with tracer.start_as_current_span(self.name, kind=trace.SpanKind.SERVER, attributes=attributes):
                async for event in events:
                    yield event
        finally:
            await events.aclose()  # type: ignore[attr-defined]


def server_span(tracer_provider: Any, name: str) -> _ServerSpan:
    """A SERVER span named `name` around a run's events."""
    return _ServerSpan(tracer_provider, name)
