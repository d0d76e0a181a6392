"""ConverseStream's events read from the frames of its body, without botocore's event parser.

The body is an `application/vnd.amazon.eventstream`: frames of a prelude (total length, headers
length: big-endian uint32 each; the prelude's CRC32), headers, a payload and the message's CRC32.
botocore decodes them in Python (its `EventStreamBuffer`, header parser and `EventStreamJSONParser`
walking the shapes), some 40% of a streamed call's CPU. `FrameBuffer` decodes them with `struct`
and `binascii.crc32` and raises what botocore raises for the same bytes (`ChecksumMismatch`,
`InvalidHeadersLength`, `InvalidPayloadLength`, `DuplicateHeader`).

`FrameEvents` yields each event as botocore's iteration does, `{event type: payload}`, the payload
read with `loads`, blobs decoded from base64. What it does not read as botocore does is handed to
botocore's own parser: an event type whose shape has a timestamp, a JSON name or an event payload
or header member; a payload that is not a JSON object or holds a `null` (botocore drops null
members); an `exception` or `error` message, which raises botocore's `EventStreamError`. Two
differences are kept, for payloads Bedrock's model does not describe: members the model does not
know (Bedrock pads events with a `"p"` field) and a union member it does not know stay as they
came (botocore drops the first and names the second `SDK_UNKNOWN_MEMBER`), and a union with more
than one member set is read, not refused (botocore raises `ResponseParserError`); the reader
ignores unknown members either way.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterator
from typing import Any

from botocore.eventstream import ChecksumMismatch, DuplicateHeader, InvalidHeadersLength, InvalidPayloadLength
from botocore.exceptions import EventStreamError

from ...wire.common import loads
from .._botocore_privates import EventStreamParts, event_stream_parts

__all__ = ["FrameBuffer", "FrameEvents", "frame_events"]

_PRELUDE = struct.Struct("!III")
_UINT16 = struct.Struct("!H")
_UINT32 = struct.Struct("!I")
_FIXED = {2: struct.Struct("!b"), 3: struct.Struct("!h"), 4: struct.Struct("!i"), 5: struct.Struct("!q")}
_FIXED[8] = _FIXED[5]  # a timestamp: milliseconds as an int64, as botocore reads it
_MAX_HEADERS_LENGTH = 128 * 1024  # botocore's limits
_MAX_PAYLOAD_LENGTH = 24 * 1024 * 1024


class FrameBuffer:
    """The messages in the bytes fed to it, a frame possibly split anywhere across feeds.

    Example:
        buffer = FrameBuffer()
        for chunk in body.stream():
            for headers, payload in buffer.feed(chunk): ...
    """

    def __init__(self) -> None:
        self._data = b""
        self._checked = False  # whether the prelude at the start of `_data` was checked

    def feed(self, chunk: bytes) -> list[tuple[dict[str, Any], bytes]]:
        data = self._data + chunk if self._data else chunk
        messages = []
        start, size = 0, len(data)
        while size - start >= 12:
            total, headers_length, prelude_crc = _PRELUDE.unpack_from(data, start)
            if not self._checked:
                _check(data[start : start + 8], prelude_crc, 0)
                if headers_length > _MAX_HEADERS_LENGTH:
                    raise InvalidHeadersLength(headers_length)
                if total - headers_length - 16 > _MAX_PAYLOAD_LENGTH:
                    raise InvalidPayloadLength(total - headers_length - 16)
                self._checked = True
            if size - start < total:
                break
            payload_end = start + total - 4
            _check(data[start + 8 : payload_end], _UINT32.unpack_from(data, payload_end)[0], prelude_crc)
            headers_end = start + 12 + headers_length
            messages.append((_headers(data[start + 12 : headers_end]), data[headers_end:payload_end]))
            start += total
            self._checked = False
        self._data = data[start:] if start else data
        return messages


def _check(data: bytes, expected: int, crc: int) -> None:
    calculated = binascii.crc32(data, crc) & 0xFFFFFFFF
    if calculated != expected:
        raise ChecksumMismatch(expected, calculated)


def _headers(data: bytes) -> dict[str, Any]:
    """The headers of one message, typed as botocore's `EventStreamHeaderParser` types them."""
    headers: dict[str, Any] = {}
    at, end = 0, len(data)
    while at < end:
        length = data[at]
        name = data[at + 1 : at + 1 + length].decode("utf-8")
        kind = data[at + 1 + length]
        at += 2 + length
        value: Any
        if kind == 7 or kind == 6:
            (length,) = _UINT16.unpack_from(data, at)
            value = data[at + 2 : at + 2 + length]
            if kind == 7:
                value = value.decode("utf-8")
            at += 2 + length
        elif kind <= 1:
            value = kind == 0
        elif kind == 9:
            value, at = data[at : at + 16], at + 16
        else:
            unpacker = _FIXED[kind]  # another kind: a KeyError, as botocore's type map raises
            (value,) = unpacker.unpack_from(data, at)
            at += unpacker.size
        if name in headers:
            raise DuplicateHeader(name)
        headers[name] = value
    return headers


class _Unsupported(Exception):
    """A shape `FrameEvents` leaves to botocore's parser."""


def _plan(shape: Any, seen: frozenset[str] = frozenset()) -> Any:
    """What reading a JSON value of `shape` as botocore does changes in it: None (nothing), "blob",
    ("struct", {member: plan}), ("list", plan), ("map", plan); `_Unsupported` for a timestamp, or a
    member whose JSON name is not its own."""
    kind = shape.type_name
    if kind == "blob":
        return "blob"
    if kind == "timestamp":
        raise _Unsupported(shape.name)
    if shape.name in seen:
        return None  # a recursive shape: botocore's models have none on these paths
    seen = seen | {shape.name}
    if kind == "structure":
        if getattr(shape, "is_document_type", False):
            return None
        members = {}
        for name, member in shape.members.items():
            if member.serialization.get("name", name) != name:
                raise _Unsupported(name)
            plan = _plan(member, seen)
            if plan is not None:
                members[name] = plan
        return ("struct", members) if members else None
    if kind in ("list", "map"):
        plan = _plan(shape.member if kind == "list" else shape.value, seen)
        return None if plan is None else (kind, plan)
    return None


def _event_plans(output_shape: Any) -> dict[str, Any]:
    """Each event type `FrameEvents` reads itself, with its plan."""
    plans = {}
    for name, shape in output_shape.members.items():
        if not shape.serialization.get("event") or shape.type_name != "structure":
            continue
        if any(
            m.serialization.get("eventpayload") or m.serialization.get("eventheader") for m in shape.members.values()
        ):
            continue
        try:
            plans[name] = _plan(shape)
        except _Unsupported:
            continue
    return plans


def _convert(value: Any, plan: Any) -> Any:
    if plan == "blob":
        return base64.b64decode(value)
    kind, inner = plan
    if kind == "struct":
        for name, member in inner.items():
            if name in value:
                value[name] = _convert(value[name], member)
        return value
    if kind == "list":
        return [_convert(item, inner) for item in value]
    return {key: _convert(item, inner) for key, item in value.items()}


_PLANS: dict[int, tuple[Any, dict[str, Any]]] = {}  # id(output shape) -> (the shape, its plans)


class FrameEvents:
    """The events of a botocore `EventStream`, read from its body's frames.

    `_raw_stream` is the body (urllib3's `HTTPResponse`), as on botocore's `EventStream`: `EventPump`
    cuts a read under way by shutting it. `close()` closes the stream.
    """

    def __init__(self, stream: Any, parts: EventStreamParts) -> None:
        self._stream = stream
        self._parts = parts
        self._raw_stream = parts.body
        shape = parts.output_shape
        cached = _PLANS.get(id(shape))
        if cached is None or cached[0] is not shape:
            cached = _PLANS[id(shape)] = (shape, _event_plans(shape))
        self._plans = cached[1]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = FrameBuffer()
        for chunk in self._raw_stream.stream():
            for headers, payload in buffer.feed(chunk):
                event = self._event(headers, payload)
                if event:
                    yield event

    def _event(self, headers: dict[str, Any], payload: bytes) -> dict[str, Any]:
        message_type = headers.get(":message-type")
        if message_type != "error" and message_type != "exception":
            event_type = headers.get(":event-type")
            plans = self._plans
            if event_type in plans and b"null" not in payload:
                try:
                    value = loads(payload) if payload else {}
                except ValueError:
                    value = None
                if type(value) is dict:
                    plan = plans[event_type]
                    return {event_type: value if plan is None else _convert(value, plan)}
        return self._botocores(headers, payload)

    def _botocores(self, headers: dict[str, Any], payload: bytes) -> dict[str, Any]:
        """The message as botocore's `EventStream` reads it (`_parse_event`)."""
        parts = self._parts
        message_type = headers.get(":message-type")
        status = 400 if message_type == "error" or message_type == "exception" else 200
        parsed: dict[str, Any] = parts.parser.parse(
            {"status_code": status, "headers": headers, "body": payload}, parts.output_shape
        )
        if status == 200:
            return parsed
        raise EventStreamError(parsed, parts.operation_name)

    def close(self) -> None:
        self._stream.close()


def frame_events(stream: Any) -> Any:
    """`stream` (a botocore `EventStream`) read from its frames, or `stream` itself when its parts
    are not there to read (another botocore, a test double)."""
    parts = event_stream_parts(stream)
    return stream if parts is None else FrameEvents(stream, parts)
