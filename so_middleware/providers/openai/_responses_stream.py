"""Reading a Responses API event stream: `StreamReader` turns events into updates."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core import (
    MAX_RAW_TEXT,
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    TextContent,
    UsageDetails,
)
from ...wire.prefill import EchoFilter
from ...wire.responses import Event, finish_reason_from_wire, reported_failure, usage_from
from .._bridge import kept_body

__all__ = ["StreamReader"]


@dataclass
class StreamReader:
    """Turns Responses stream events into updates; keeps what spans events (call ids, text).

    `read(event)` returns an update or None (events that carry nothing for the caller), and
    raises `ProviderResponseError` for `error` and `response.failed` events. `finished` turns True on
    `response.completed` / `response.incomplete`.
    """

    prefill: str = ""
    text: list[str] = field(default_factory=list)
    finished: bool = False
    _calls: dict[str, str] = field(default_factory=dict)  # item id -> call id
    _arguments_seen: set[str] = field(default_factory=set)
    _called: bool = False
    _refused: bool = False
    _echo: EchoFilter | None = None

    def __post_init__(self) -> None:
        self._echo = EchoFilter(self.prefill) if self.prefill else None

    def read(self, event: Any) -> ChatResponseUpdate[Any] | None:
        kind = getattr(event, "type", None)
        contents: list[Content] = []
        if kind == Event.OUTPUT_TEXT_DELTA:
            piece = self._echo.feed(event.delta) if self._echo else event.delta
            if piece:
                contents.append(TextContent(piece))
        elif kind == Event.REFUSAL_DELTA:
            self._refused = True
            contents.append(RefusalContent(event.delta))
        elif kind in (Event.REASONING_SUMMARY_TEXT_DELTA, Event.REASONING_TEXT_DELTA):
            contents.append(ReasoningContent(event.delta))
        elif kind == Event.OUTPUT_ITEM_ADDED and getattr(event.item, "type", None) == "function_call":
            self._called = True
            self._calls[event.item.id or event.item.call_id] = event.item.call_id
            contents.append(FunctionCallContent(event.item.call_id, event.item.name, event.item.arguments or ""))
            if event.item.arguments:
                self._arguments_seen.add(event.item.call_id)
        elif kind == Event.FUNCTION_CALL_ARGUMENTS_DELTA:
            call_id = self._calls.get(event.item_id, event.item_id)
            self._arguments_seen.add(call_id)
            contents.append(FunctionCallContent(call_id, "", event.delta))
        elif kind == Event.OUTPUT_ITEM_DONE and getattr(event.item, "type", None) == "function_call":
            if event.item.call_id not in self._arguments_seen:  # a server that sends whole calls only
                self._called = True
                self._arguments_seen.add(event.item.call_id)
                contents.append(FunctionCallContent(event.item.call_id, event.item.name, event.item.arguments or ""))
        elif kind in (Event.COMPLETED, Event.INCOMPLETE):
            self.finished = True
            if self._echo:
                rest = self._echo.flush()
                if rest:
                    contents.append(TextContent(rest))
            response = event.response
            self.text.extend(c.text for c in contents if isinstance(c, TextContent))
            return ChatResponseUpdate(
                contents,
                role="assistant",
                usage=usage_from(getattr(response, "usage", None)),
                finish_reason=finish_reason_from_wire(response, called=self._called, refused=self._refused),
                response_id=getattr(response, "id", None),
                model_id=getattr(response, "model", None),
                raw_representation=event,
            )
        elif kind in (Event.FAILED, Event.CANCELLED):
            failure = reported_failure(event.response) or ProviderResponseError("the response failed", reported=True)
            # paid for, as a plain call's failed response is: the text so far (else the response) and its usage
            raise failure.with_answer("".join(self.text) or _body(event.response), _usage(event.response))
        elif kind == Event.ERROR:
            code = getattr(event, "code", None)
            code = code if isinstance(code, str) else None
            raise ProviderResponseError(f"error event: {code or 'no error code given'}", code=code, reported=True)
        elif kind == Event.CREATED:
            response = event.response
            return ChatResponseUpdate(
                role="assistant",
                response_id=getattr(response, "id", None),
                model_id=getattr(response, "model", None),
                raw_representation=event,
            )
        if not contents:
            return None
        self.text.extend(c.text for c in contents if isinstance(c, TextContent))
        return ChatResponseUpdate(contents, role="assistant", raw_representation=event)


def _body(response: Any) -> str:
    """A failed response as the JSON it came as (a response of a type the SDK does not know is a dict)."""
    return json.dumps(response, default=str)[:MAX_RAW_TEXT] if isinstance(response, Mapping) else kept_body(response)


def _usage(response: Any) -> UsageDetails | None:
    usage = response.get("usage") if isinstance(response, Mapping) else getattr(response, "usage", None)
    if not isinstance(usage, Mapping):
        return usage_from(usage)

    def count(name: str) -> int | None:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return UsageDetails(count("input_tokens"), count("output_tokens"), count("total_tokens"))
