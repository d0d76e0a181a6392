"""Responses API events, both directions: `ResponseWriter` writes a response and its streaming
events from chat updates (a server's side), `StreamReader` reads them back into updates (a
client's side).

`ResponseWriter` turns the chat updates of one run into the documented event sequence
(`response.created`, `response.in_progress`, `response.output_item.added`,
`response.content_part.added`, `response.output_text.delta`/`.done`, ...,
`response.completed`/`.incomplete`/`.failed`), each with its `sequence_number`. A plain
(non-streaming) response is the same writer fed the whole answer at once, so both modes build
their output one way (seed 004 FR-009).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import (
    MAX_RAW_TEXT,
    ChatResponseUpdate,
    Content,
    FinishReason,
    FunctionCallContent,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    TextContent,
    UsageDetails,
    mend_text,
)
from .common import JSONView
from .prefill import EchoFilter
from .responses import (
    SPEC_NAMES,
    STATUS_EVENTS,
    Event,
    finish_reason_from_wire,
    incomplete_reason_to_wire,
    reported_failure,
    usage_from,
    usage_to_wire,
)
from .responses_items import call_item, custom_input, message_item, reasoning_item, text_part

__all__ = ["ResponseWriter", "StreamReader", "new_id", "spec_names"]


def new_id(prefix: str) -> str:
    """A unique id in OpenAI's style: `resp_…`, `msg_…`, `fc_…`."""
    return f"{prefix}_{os.urandom(16).hex()}"  # as random as uuid4's hex, without building a UUID


def _writable(value: str) -> str:
    """`value` as text that can be written: a lone surrogate a backend sent as `"\\ud83d"` (JSON
    allows it, UTF-8 has no spelling for it) becomes U+FFFD, as a UTF-8 decoder would make it;
    kept, it would fail the answer after it was paid for and leave a stored response nobody can read."""
    return mend_text(value)


class ResponseWriter:
    """Builds one response's events and final object from chat updates. Per-run state only."""

    def __init__(self, response: dict[str, Any]) -> None:
        self.response = response
        self.events: list[dict[str, Any]] = []
        self._part: dict[str, Any] | None = None  # the open content part of the open message item
        self._item: dict[str, Any] | None = None  # the open output item
        self._calls: dict[str, dict[str, Any]] = {}
        self._custom = {
            t.get("name") for t in response.get("tools") or () if isinstance(t, dict) and t.get("type") == "custom"
        }
        self._arguments: dict[str, str] = {}  # a custom tool call's arguments, `{"input": ...}`, as they come
        self._finish: FinishReason | None = None
        self._usage: UsageDetails | None = None

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one event (numbered in order) and return it."""
        event = {"type": kind, "sequence_number": len(self.events), **fields}
        self.events.append(event)
        return event

    def start(self) -> list[dict[str, Any]]:
        """`response.created` and `response.in_progress`."""
        self.response["status"] = "in_progress"
        snapshot = _snapshot(self.response)  # the same state twice: one copy (no reader changes an event)
        self.emit(Event.CREATED, response=snapshot)
        self.emit(Event.IN_PROGRESS, response=snapshot)
        return self.events[-2:]

    def feed(self, update: ChatResponseUpdate[Any]) -> list[dict[str, Any]]:
        """The events for one chat update."""
        first = len(self.events)
        for content in update.contents:
            if isinstance(content, (TextContent, RefusalContent)):
                self._text(content)
            elif isinstance(content, FunctionCallContent):
                self._call(content)
            elif isinstance(content, ReasoningContent):
                self._reasoning(content)
        self._finish = update.finish_reason or self._finish
        self._usage = update.usage or self._usage
        return self.events[first:]

    def finish(self, error: str | None = None) -> list[dict[str, Any]]:
        """Close the open items and emit the terminal event (`failed` when `error` is given)."""
        first = len(self.events)
        reason = incomplete_reason_to_wire(self._finish)
        # the last message is the answer unless the response asks for tool results first
        self._close_item("incomplete" if reason or error is not None else "completed", final=not self._calls)
        if error is not None:
            self.response.update(status="failed", error={"code": "server_error", "message": error})
        elif reason:
            self.response.update(status="incomplete", incomplete_details={"reason": reason})
        else:
            self.response.update(status="completed", completed_at=int(time.time()))
        self.response["usage"] = usage_to_wire(self._usage)
        self.emit(STATUS_EVENTS[self.response["status"]], response=_snapshot(self.response))
        return self.events[first:]

    def _text(self, content: TextContent | RefusalContent) -> None:
        kind = "output_text" if isinstance(content, TextContent) else "refusal"
        delta = _writable(content.text if isinstance(content, TextContent) else content.refusal)
        if self._item is None or self._item["type"] != "message":
            self._close_item("completed")
            self._open(message_item(new_id("msg")))
        item = self._item
        assert item is not None
        if self._part is None or self._part["type"] != kind:
            self._close_part()
            self._part = text_part(kind)
            item["content"].append(self._part)
            self.emit(Event.CONTENT_PART_ADDED, **self._where(), part=dict(self._part))
        event = {"type": "", "sequence_number": len(self.events), **self._where(), "delta": delta}  # built once
        if kind == "output_text":
            self._part["text"] += delta
            event["type"], event["logprobs"] = Event.OUTPUT_TEXT_DELTA, []
        else:
            self._part["refusal"] += delta
            event["type"] = Event.REFUSAL_DELTA
        self.events.append(event)

    def _reasoning(self, content: ReasoningContent) -> None:
        if self._item is None or self._item["type"] != "reasoning":
            self._close_item("completed")
            self._open(reasoning_item(new_id("rs")))
        item = self._item
        assert item is not None
        delta = _writable(content.text)
        item["content"][0]["text"] += delta
        self.emit(Event.REASONING_TEXT_DELTA, item_id=item["id"], output_index=self._index(), content_index=0,
                  delta=delta)  # fmt: skip

    def _call(self, content: FunctionCallContent) -> None:
        item = self._calls.get(content.call_id)
        if item is None:
            self._close_item("completed")
            name = _writable(content.name)
            custom = name in self._custom
            item = call_item(new_id("ctc" if custom else "fc"), content.call_id, name, custom=custom)
            self._calls[content.call_id] = item
            self._open(item)
        item["name"] = item["name"] or _writable(content.name)
        if not content.arguments:
            return
        delta = _writable(content.arguments)
        if item["type"] == "custom_tool_call":  # its input is known once the arguments are whole
            self._arguments[item["id"]] = self._arguments.get(item["id"], "") + delta
            return
        item["arguments"] += delta
        index = self._index() if item is self._item else self.response["output"].index(item)  # interleaved calls
        self.emit(Event.FUNCTION_CALL_ARGUMENTS_DELTA, item_id=item["id"], output_index=index, delta=delta)

    def _open(self, item: dict[str, Any]) -> None:
        self._item = item
        self.response["output"].append(item)
        self.emit(Event.OUTPUT_ITEM_ADDED, output_index=self._index(), item=_copy(item))

    def _close_part(self) -> None:
        part = self._part
        if part is None:
            return
        if part["type"] == "output_text":
            self.emit(Event.OUTPUT_TEXT_DONE, **self._where(), text=part["text"], logprobs=[])
        else:
            self.emit(Event.REFUSAL_DONE, **self._where(), refusal=part["refusal"])
        self.emit(Event.CONTENT_PART_DONE, **self._where(), part=dict(part))
        self._part = None

    def _close_item(self, status: str, *, final: bool = False) -> None:
        item = self._item
        if item is None:
            return
        if item["type"] == "message":
            self._close_part()
            item["phase"] = "final_answer" if final else "commentary"  # more output follows: commentary
        elif item["type"] == "reasoning":
            self.emit(Event.REASONING_TEXT_DONE, item_id=item["id"], output_index=self._index(), content_index=0,
                      text=item["content"][0]["text"])  # fmt: skip
        elif item["type"] == "custom_tool_call":
            item["input"] = custom_input(self._arguments.pop(item["id"], ""))
            where = {"item_id": item["id"], "output_index": self._index()}
            self.emit(Event.CUSTOM_TOOL_CALL_INPUT_DELTA, **where, delta=item["input"])
            self.emit(Event.CUSTOM_TOOL_CALL_INPUT_DONE, **where, input=item["input"])
        else:
            self.emit(Event.FUNCTION_CALL_ARGUMENTS_DONE, item_id=item["id"], output_index=self._index(),
                      name=item["name"], arguments=item["arguments"])  # fmt: skip
        item["status"] = status
        self.emit(Event.OUTPUT_ITEM_DONE, output_index=self._index(), item=_copy(item))
        self._item = None

    def _index(self) -> int:
        return len(self.response["output"]) - 1

    def _where(self) -> dict[str, Any]:
        assert self._item is not None and self._part is not None
        return {
            "item_id": self._item["id"],
            "output_index": self._index(),
            "content_index": len(self._item["content"]) - 1,
        }


def _copy(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "content": [dict(p) for p in item["content"]]} if "content" in item else dict(item)


def _snapshot(response: dict[str, Any]) -> dict[str, Any]:
    return {**response, "output": [_copy(item) for item in response["output"]]}


async def spec_names(batches: AsyncIterator[list[dict[str, Any]]]) -> AsyncIterator[list[dict[str, Any]]]:
    """The event batches with the Open Responses spec's names for reasoning deltas
    (`response.reasoning.delta`/`.done`), for a client that asks for the spec: the same events, the
    same sequence numbers. A copy is renamed: the run's own events serve every other reader as they are."""
    async for batch in batches:
        yield [{**e, "type": SPEC_NAMES[e["type"]]} if e["type"] in SPEC_NAMES else e for e in batch]


# ---------------------------------------------------------------- reading events


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
            item_id: str = event.item_id
            call_id = self._calls.get(item_id, item_id)
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
    """A failed response as the JSON it came as (a response of a type the SDK does not know is a
    dict; one read as JSON a `JSONView`; the SDK's own a model)."""
    data = response.to_dict() if isinstance(response, JSONView) else response
    if isinstance(data, Mapping):
        return json.dumps(data, default=str)[:MAX_RAW_TEXT]
    dump = getattr(response, "model_dump_json", None)
    if callable(dump):
        with warnings.catch_warnings(), contextlib.suppress(Exception):  # a shape the model does not expect
            warnings.simplefilter("ignore")
            return str(dump(exclude_unset=True))[:MAX_RAW_TEXT]
    return ""


def _usage(response: Any) -> UsageDetails | None:
    usage = response.get("usage") if isinstance(response, Mapping) else getattr(response, "usage", None)
    if not isinstance(usage, Mapping):
        return usage_from(usage)

    def count(name: str) -> int | None:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return UsageDetails(count("input_tokens"), count("output_tokens"), count("total_tokens"))
