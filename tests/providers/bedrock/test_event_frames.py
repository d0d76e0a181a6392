"""ConverseStream's events read from the body's frames (`_frames.py`) are botocore's: the same
events for the same bytes however they are split, botocore's errors for bad frames, its
`EventStreamError` for an exception or error message; and botocore's `EventStream` is iterated
when its parts are not there."""

from __future__ import annotations

import binascii
import struct
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from bedrock_server import Answer, event_frame, frame, serving, text_events
from botocore.eventstream import EventStream
from botocore.exceptions import EventStreamError
from botocore.parsers import EventStreamJSONParser

from so_middleware.providers.bedrock import _frames
from so_middleware.providers.bedrock._frames import FrameEvents, frame_events

SERVICE = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
OUTPUT_SHAPE = SERVICE.meta.service_model.operation_model("ConverseStream").output_shape.members["stream"]

EVENTS: list[dict[str, Any]] = [
    *text_events(["Hel", "lo ✓"]),
    {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "t1", "name": "answer"}}, "contentBlockIndex": 1}},
    {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"a": 1'}}, "contentBlockIndex": 1}},
    {"contentBlockDelta": {"delta": {"reasoningContent": {"signature": "sig"}}, "contentBlockIndex": 2}},
    {"messageStop": {"stopReason": "tool_use", "additionalModelResponseFields": {"x": [1, {"y": "z"}]}}},
    {
        "metadata": {
            "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3, "cacheReadInputTokens": 0},
            "metrics": {"latencyMs": 9},
            "trace": {"guardrail": {"modelOutput": ["a"]}},
        }
    },
]
REDACTED = {
    "contentBlockDelta": {"delta": {"reasoningContent": {"redactedContent": "AAEC/w=="}}, "contentBlockIndex": 2}
}


class Body:
    """urllib3's `HTTPResponse` as botocore's `EventStream` uses it: `stream()` gives the chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    def stream(self) -> Iterator[bytes]:
        yield from self.chunks

    def close(self) -> None:
        self.closed = True


def event_stream(chunks: list[bytes]) -> EventStream:
    return EventStream(Body(chunks), OUTPUT_SHAPE, EventStreamJSONParser(), "ConverseStream")


def ours(chunks: list[bytes]) -> list[Any]:
    events = frame_events(event_stream(chunks))
    assert isinstance(events, FrameEvents)
    return list(events)


def botocores(chunks: list[bytes]) -> list[Any]:
    return list(event_stream(chunks))


def raised(read: Any, chunks: list[bytes]) -> BaseException:
    with pytest.raises(Exception) as caught:
        read(chunks)
    return caught.value


def test_every_event_the_stand_in_makes_reads_as_botocore_reads_it() -> None:
    body = b"".join(event_frame(event) for event in [*EVENTS, REDACTED])
    assert ours([body]) == botocores([body]) == [*EVENTS, ours_redacted()]


def ours_redacted() -> dict[str, Any]:
    return {
        "contentBlockDelta": {
            "delta": {"reasoningContent": {"redactedContent": b"\x00\x01\x02\xff"}},
            "contentBlockIndex": 2,
        }
    }


def test_frames_split_at_every_byte_read_the_same() -> None:
    body = b"".join(event_frame(event) for event in text_events(["a", "b"]))
    expected = botocores([body])
    for cut in range(1, len(body)):
        assert ours([body[:cut], body[cut:]]) == expected, cut
    assert ours([body[at : at + 1] for at in range(len(body))]) == expected


def test_a_blob_member_is_bytes() -> None:
    assert ours([event_frame(REDACTED)]) == [ours_redacted()] == botocores([event_frame(REDACTED)])


def test_a_null_member_is_dropped_as_botocore_drops_it() -> None:
    body = event_frame({"messageStop": {"stopReason": "end_turn", "additionalModelResponseFields": None}})
    assert ours([body]) == botocores([body]) == [{"messageStop": {"stopReason": "end_turn"}}]


def test_a_member_the_model_does_not_know_stays() -> None:
    body = event_frame({"contentBlockStop": {"contentBlockIndex": 0, "p": "abcdef"}})
    assert botocores([body]) == [{"contentBlockStop": {"contentBlockIndex": 0}}]
    assert ours([body]) == [{"contentBlockStop": {"contentBlockIndex": 0, "p": "abcdef"}}]


def test_an_event_type_the_model_does_not_know_is_skipped() -> None:
    body = event_frame({"somethingNew": {"a": 1}}) + event_frame({"contentBlockStop": {"contentBlockIndex": 0}})
    assert ours([body]) == botocores([body]) == [{"contentBlockStop": {"contentBlockIndex": 0}}]


def corrupt(at: int) -> bytes:
    body = bytearray(event_frame({"contentBlockStop": {"contentBlockIndex": 0}}))
    body[at] ^= 0x01
    return bytes(body)


@pytest.mark.parametrize(
    "body",
    [
        corrupt(2),  # the total length: the prelude CRC
        corrupt(9),  # the prelude CRC itself
        corrupt(20),  # a header byte: the message CRC
        corrupt(-6),  # a payload byte: the message CRC
        corrupt(-1),  # the message CRC itself
    ],
    ids=["length", "prelude-crc", "header", "payload", "message-crc"],
)
def test_a_bad_crc_raises_botocores_error(body: bytes) -> None:
    theirs, found = raised(botocores, [body]), raised(ours, [body])
    assert type(found) is type(theirs) and str(found) == str(theirs)
    assert type(theirs).__name__ == "ChecksumMismatch"


def test_lengths_past_botocores_limits_raise_its_errors() -> None:
    for total, headers in ((200_000, 130 * 1024), (30_000_000, 10)):
        prelude = struct.pack("!II", total, headers)
        body = prelude + struct.pack("!I", binascii.crc32(prelude))
        theirs, found = raised(botocores, [body]), raised(ours, [body])
        assert type(found) is type(theirs) and str(found) == str(theirs)
        assert type(theirs).__name__ in ("InvalidHeadersLength", "InvalidPayloadLength")


def test_a_duplicate_header_raises_botocores_error() -> None:
    body = _frame_with_headers([(":message-type", "event"), (":event-type", "x"), (":event-type", "x")], b"{}")
    theirs, found = raised(botocores, [body]), raised(ours, [body])
    assert type(found) is type(theirs) and str(found) == str(theirs)
    assert type(theirs).__name__ == "DuplicateHeader"


def _frame_with_headers(headers: list[tuple[str, str]], payload: bytes) -> bytes:
    encoded = b"".join(
        struct.pack("!B", len(n)) + n.encode() + struct.pack("!BH", 7, len(v)) + v.encode() for n, v in headers
    )
    prelude = struct.pack("!II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    message = prelude + struct.pack("!I", binascii.crc32(prelude)) + encoded + payload
    return message + struct.pack("!I", binascii.crc32(message))


def typed_headers_frame() -> bytes:
    """Every header type botocore reads, then an event."""
    encoded = b"".join(
        [
            b"\x01a\x00",  # true
            b"\x01b\x01",  # false
            b"\x01c\x02\xff",  # byte
            b"\x01d\x03\xff\xfe",  # short
            b"\x01e\x04" + struct.pack("!i", -5),  # integer
            b"\x01f\x05" + struct.pack("!q", -6),  # long
            b"\x01g\x06\x00\x02\x00\x01",  # byte array
            b"\x01h\x08" + struct.pack("!q", 1_700_000_000_000),  # timestamp
            b"\x01i\x09" + bytes(range(16)),  # uuid
            b"\x0b:event-type\x07\x00\x10contentBlockStop",
        ]
    )
    payload = b'{"contentBlockIndex": 3}'
    prelude = struct.pack("!II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    message = prelude + struct.pack("!I", binascii.crc32(prelude)) + encoded + payload
    return message + struct.pack("!I", binascii.crc32(message))


def test_every_header_type_is_read_as_botocore_reads_it() -> None:
    body = typed_headers_frame()
    theirs = [message.headers for message in event_stream([body])._create_raw_event_generator()]
    assert [headers for headers, _ in _frames.FrameBuffer().feed(body)] == theirs
    assert ours([body]) == botocores([body]) == [{"contentBlockStop": {"contentBlockIndex": 3}}]


def same_error(found: BaseException, theirs: BaseException) -> None:
    assert type(found) is type(theirs) is EventStreamError
    assert isinstance(found, EventStreamError) and isinstance(theirs, EventStreamError)
    assert str(found) == str(theirs)
    assert found.response == theirs.response and found.operation_name == theirs.operation_name == "ConverseStream"


def test_an_exception_message_raises_botocores_event_stream_error() -> None:
    body = event_frame(EVENTS[0]) + event_frame({"throttlingException": {"message": "slow down"}})
    same_error(raised(ours, [body]), raised(botocores, [body]))
    headers = {":message-type": "exception", ":exception-type": "throttlingException", ":event-type": "messageStop"}
    odd = frame(headers, b'{"message": "slow down"}')  # an event type too: still the exception
    same_error(raised(ours, [odd]), raised(botocores, [odd]))
    found = raised(ours, [body])
    assert isinstance(found, EventStreamError) and found.response["Error"] == {
        "Code": "throttlingException",
        "Message": "slow down",
    }


def test_an_error_message_raises_botocores_event_stream_error() -> None:
    headers = {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "it broke"}
    for body in (frame(headers, b""), frame({**headers, ":event-type": "contentBlockStop"}, b"{}")):
        same_error(raised(ours, [body]), raised(botocores, [body]))
        found = raised(ours, [body])
        assert isinstance(found, EventStreamError) and found.response["Error"]["Code"] == "InternalFailure"


def test_the_event_stream_is_iterated_when_its_parts_are_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = event_stream([event_frame(EVENTS[0])])
    del stream._parser
    assert frame_events(stream) is stream
    double = iter([{"messageStart": {"role": "assistant"}}])
    assert frame_events(double) is double
    started = event_stream([event_frame(EVENTS[0])])
    next(iter(started._event_generator))  # an event read: its buffer is botocore's
    assert frame_events(started) is started


def spied(monkeypatch: pytest.MonkeyPatch, method: str) -> list[Any]:
    """The event types `FrameEvents.<method>` is called with, from now on."""
    read: list[Any] = []
    original = getattr(FrameEvents, method)

    def spy(self: FrameEvents, headers: dict[str, Any], payload: bytes) -> Any:
        read.append(headers[":event-type"])
        return original(self, headers, payload)

    monkeypatch.setattr(FrameEvents, method, spy)
    return read


def test_an_event_type_with_a_timestamp_is_left_to_botocores_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    read = spied(monkeypatch, "_botocores")
    monkeypatch.setattr(_frames, "_PLANS", {})
    plan = _frames._plan

    def with_a_timestamp(shape: Any, seen: frozenset[str] = frozenset()) -> Any:
        if shape is OUTPUT_SHAPE.members["messageStart"].members["role"]:
            raise _frames._Unsupported(shape.name)  # as a timestamp member does
        return plan(shape, seen)

    monkeypatch.setattr(_frames, "_plan", with_a_timestamp)
    body = event_frame({"messageStart": {"role": "assistant"}}) + event_frame(
        {"contentBlockStop": {"contentBlockIndex": 0}}
    )
    list(frame_events(event_stream([body])))
    assert read == ["messageStart"]


def test_closing_closes_the_event_stream_and_the_body_is_the_one_pump_cuts() -> None:
    stream = event_stream([event_frame(EVENTS[0])])
    events = frame_events(stream)
    assert events._raw_stream is stream._raw_stream
    events.close()
    assert stream._raw_stream.closed


def test_a_stream_through_the_stand_in_is_read_from_its_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    read = spied(monkeypatch, "_event")
    with serving() as (server, sdk):
        server.script(Answer(events=EVENTS), Answer(events=EVENTS))
        request = {"modelId": "m", "messages": [{"role": "user", "content": [{"text": "hi"}]}]}
        found = list(frame_events(sdk.converse_stream(**request)["stream"]))
        theirs = list(sdk.converse_stream(**request)["stream"])
    assert found == theirs and len(read) == len(EVENTS)


def test_a_timestamp_member_is_unsupported() -> None:
    timestamp = OUTPUT_SHAPE.members["messageStart"].members["role"]
    with pytest.raises(_frames._Unsupported):
        _frames._plan(type("Shape", (), {"type_name": "timestamp", "name": timestamp.name})())


@pytest.mark.anyio
async def test_the_adapters_stream_reads_the_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    from so_middleware.bedrock import BedrockChatClient

    read = spied(monkeypatch, "_event")
    with serving() as (server, sdk):
        server.script(Answer(events=text_events(["Hel", "lo"])))
        client = BedrockChatClient(sdk, "us.anthropic.claude-haiku-4-5-20251001-v1:0")
        texts = [update.text async for update in client.get_response("Hi", stream=True)]
    assert "".join(texts) == "Hello" and read[0] == "messageStart" and len(read) == 6
