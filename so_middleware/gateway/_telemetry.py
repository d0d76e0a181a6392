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

    def wrap(self, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        """`events` inside the span (closing the result closes `events`); `events` itself when no
        tracer provider is set, where the span would record nothing and be nobody's parent."""
        if trace is None or _untraced(self.tracer_provider):
            return events
        return self._spanned(events)

    async def _spanned(self, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        try:
            tracer = trace.get_tracer("so_middleware.gateway", tracer_provider=self.tracer_provider)
            attributes = {"http.request.method": "POST", "http.route": "/v1/responses"}
            with tracer.start_as_current_span(self.name, kind=trace.SpanKind.SERVER, attributes=attributes):
                async for event in events:
                    yield event
        finally:
            await events.aclose()  # type: ignore[attr-defined]


def _untraced(tracer_provider: Any) -> bool:
    """True when spans from `tracer_provider` (None: the global one) are the API's no-op spans."""
    provider = trace.get_tracer_provider() if tracer_provider is None else tracer_provider
    return isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def server_span(tracer_provider: Any, name: str) -> _ServerSpan:
    """A SERVER span named `name` around a run's events."""
    return _ServerSpan(tracer_provider, name)
