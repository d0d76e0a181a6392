"""Telemetry of background runs: every poll's span links to the span that started the run.

The run's `ContinuationToken` carries the W3C `traceparent` of the starting span (`trace`), so the
link holds across processes: a poll made elsewhere from the token's string still links back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from opentelemetry.trace import Link, Span, SpanContext, TraceFlags

from ...core import ChatOptions, ContinuationToken

__all__ = ["LINK_KIND", "run_links", "stamp_token"]

LINK_KIND = "so_middleware.link.kind"  # on the link: "background_run"


def run_links(options: ChatOptions) -> Sequence[Link]:
    """A link to the span that started the run this call continues (none for other calls)."""
    token = options.continuation_token
    context = _parse(token.trace) if token is not None and token.trace else None
    return [Link(context, {LINK_KIND: "background_run"})] if context is not None else ()


def stamp_token(result: Any, span: Span) -> None:
    """Give a fresh token (a response's or a stream update's) the trace of the span that started
    the run; a token that already has one (a poll's) keeps it."""
    token: ContinuationToken | None = getattr(result, "continuation_token", None)
    if token is None or token.trace is not None:  # most updates: no span context is read
        return
    context = span.get_span_context()
    if not context.is_valid:
        return
    trace = f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    result.continuation_token = dataclasses.replace(token, trace=trace)


def _parse(traceparent: str) -> SpanContext | None:
    parts = traceparent.split("-")
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except (IndexError, ValueError):
        return None
    context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
    return context if context.is_valid else None
