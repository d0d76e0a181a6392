"""What `with_logging` reads from responses and errors, as `(level, event, fields)`, redacted with
the core's `redact`.

Pure functions over the data other layers already attach: the retry layer's
`so_middleware.retries`, a structured-output run's `attempts` and `so_middleware.structured_output`,
the fallback layer's `so_middleware.fallback` and `fallback_errors`, the cache's hit mark.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Any

from ...core import (
    CACHE_HIT_KEY,
    FALLBACK_KEY,
    RETRIES_KEY,
    STRUCTURED_OUTPUT_KEY,
    Attempt,
    ChatResponse,
    OutputError,
    failure_of,
    redact,
)

__all__ = [
    "Event",
    "attempt_events",
    "error_events",
    "error_fields",
    "error_text",
    "redact",
    "redacted",
    "response_events",
    "summary",
]

Event = tuple[int, str, dict[str, Any]]


def redacted(value: Any) -> Any:
    """`value` with every string in it (or in a list of them) redacted."""
    if isinstance(value, str):
        return redact(value)
    return [redacted(item) for item in value] if isinstance(value, list) else value


def error_text(error: BaseException | None, content: bool) -> str | None:
    """`Type: message` with `content`, else only the type: a provider's message may quote the
    request, an `OutputError`'s quotes the model's output."""
    if error is None:
        return None
    if not content:
        return type(error).__name__
    return f"{type(error).__name__}: {error}"[:500]


def error_fields(error: BaseException, content: bool) -> dict[str, Any]:
    """`error`, `status` and `code` of a record about a failure."""
    failure = failure_of(error)
    return {"error": error_text(error, content), "status": failure.status, "code": failure.code}


def attempt_events(attempts: Sequence[Attempt], content: bool) -> list[Event]:
    """A `reask` or `strategy fallback` for each structured-output attempt that was followed by another."""
    events: list[Event] = []
    for previous, following in itertools.pairwise(attempts):
        event = "strategy fallback" if previous.strategy != following.strategy else "reask"
        step = {"attempt": previous.index, "strategy": previous.strategy, "next_strategy": following.strategy}
        events.append((logging.WARNING, event, {**step, "error": error_text(previous.error, content)}))
    return events


def response_events(response: ChatResponse[Any], content: bool) -> list[Event]:
    """The retries, re-asks, strategy fallbacks and failovers recorded on a response."""
    properties = response.additional_properties
    events: list[Event] = [(logging.WARNING, "retry", dict(retry)) for retry in properties.get(RETRIES_KEY) or []]
    events += attempt_events(response.attempts, content)
    fallback = properties.get(FALLBACK_KEY) or {}
    for failed in fallback.get("failed") or []:
        error = failed.get("error") if content else failed.get("error_type")
        passed_over = {"client": failed.get("index"), "failed_model": failed.get("model"), "error": error}
        status = {"status": failed.get("status_code")}
        events.append((logging.WARNING, "failover", {**passed_over, **status, "answered_by": fallback.get("index")}))
    return events


def error_events(error: BaseException, content: bool) -> list[Event]:
    """The failovers and structured-output attempts an error carries."""
    earlier = getattr(error, "fallback_errors", None) or []
    events: list[Event] = [
        (logging.WARNING, "failover", {"client": index, **error_fields(failed, content)})
        for index, failed in enumerate(earlier)
    ]
    return events + (attempt_events(error.attempts, content) if isinstance(error, OutputError) else [])


def summary(response: ChatResponse[Any], model: str | None, content: bool) -> dict[str, Any]:
    """The fields of a call's `chat` record."""
    properties = response.additional_properties
    structured = properties.get(STRUCTURED_OUTPUT_KEY) or {}
    usage = response.usage
    return {
        "response_model": response.model_id if response.model_id != model else None,
        "finish": str(response.finish_reason) if response.finish_reason else None,
        "input_tokens": usage.input_tokens if usage else None,
        "output_tokens": usage.output_tokens if usage else None,
        "cache": "hit" if properties.get(CACHE_HIT_KEY) else None,
        "strategy": structured.get("strategy"),
        "attempts": structured.get("attempts"),
        "text": repr(response.text) if content else None,
    }
