"""The SSE framing and event rules of `EventStream`, table-driven, against the SDKs' own decoders.

Each body is fed in every split into two chunks (and byte by byte) and must give the same
events as the SDK's decoder given the whole body at once.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import httpx2
import pytest
from anthropic._streaming import SSEDecoder as AnthropicDecoder
from openai._streaming import SSEDecoder as OpenAIDecoder

from so_middleware import ProviderResponseError
from so_middleware.providers._sse import EventStream, JSONView

BODIES = {
    "lf": b'data: {"a": 1}\n\ndata: {"a": 2}\n\n',
    "crlf": b'data: {"a": 1}\r\n\r\ndata: {"a": 2}\r\n\r\n',
    "cr": b'data: {"a": 1}\r\rdata: {"a": 2}\r\r',
    "comments and unknown fields": b': keep-alive\nid: 7\nretry: 10\nfoo: bar\ndata: {"a": 1}\n\n',
    "multi-line data": b'data: {"a":\ndata: 1}\n\n',
    "no space after colon": b'data:{"a": 1}\n\n',
    "named events": b'event: response.created\ndata: {"type": "x"}\n\nevent: ping\ndata: {"type": "ping"}\n\n',
    "no final blank line": b'data: {"a": 1}\n\ndata: {"a": 2}',
    "unicode": 'data: {"a": "é→😀"}\n\n'.encode(),
}


def feed_all(stream: EventStream, pieces: list[bytes]) -> list[Any]:
    events: list[Any] = []
    for piece in pieces:
        events.extend(stream.feed(piece))
    events.extend(stream.finish())
    return [e.to_dict() if isinstance(e, JSONView) else e for e in events]


def splits(body: bytes) -> list[list[bytes]]:
    return [[body[:i], body[i:]] for i in range(len(body) + 1)] + [[body[i : i + 1] for i in range(len(body))]]


def sdk_events(body: bytes, dialect: str) -> list[Any]:
    """What the SDK's stream would yield for `body` (its decoder and its rules, as in `__stream__`)."""
    decoder = AnthropicDecoder() if dialect == "anthropic" else OpenAIDecoder()
    found = []
    for sse in decoder.iter_bytes(iter([body])):
        if dialect == "anthropic":
            if sse.event in (None, "ping") or not sse.data:
                continue
        elif sse.data.startswith("[DONE]"):
            break
        found.append(sse.json())
    return found


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("name", list(BODIES))
def test_every_split_gives_the_sdks_events(name: str, dialect: str) -> None:
    body = BODIES[name]
    expected = sdk_events(body, dialect)
    for pieces in splits(body):
        stream = EventStream(None, is_async=True, dialect=dialect)
        assert feed_all(stream, pieces) == expected, pieces


def test_openai_stops_at_done_and_reads_nothing_after() -> None:
    stream = EventStream(None, is_async=True, dialect="openai")
    body = b'data: {"a": 1}\n\ndata: [DONE]\n\ndata: {"a": 2}\n\n'
    assert feed_all(stream, [body]) == [{"a": 1}]


def test_openai_error_object_raises_the_reported_error() -> None:
    stream = EventStream(None, is_async=True, dialect="openai")
    body = b'data: {"a": 1}\n\ndata: {"error": {"message": "boom", "type": "server_error"}}\n\n'
    events = stream.feed(body)
    assert next(events).to_dict() == {"a": 1}  # the events before the error come out first
    with pytest.raises(ProviderResponseError, match="server_error") as caught:
        next(events)
    assert caught.value.code == "server_error" and caught.value.transient  # reported: retried like the SDK path


@pytest.mark.parametrize(
    ("data", "code"),
    [(b'{"type": "error", "error": {"type": "overloaded_error"}}', "overloaded_error"), (b"not json", None)],
)
def test_anthropic_error_event_raises_the_reported_error(data: bytes, code: str | None) -> None:
    stream = EventStream(None, is_async=True, dialect="anthropic")
    with pytest.raises(ProviderResponseError, match="inside the stream") as caught:
        feed_all(stream, [b"event: error\ndata: " + data + b"\n\n"])
    assert caught.value.code == code


def test_unreadable_json_raises_the_sdks_decoding_error() -> None:
    stream = EventStream(None, is_async=True, dialect="openai")
    with pytest.raises(ValueError) as caught:
        feed_all(stream, [b"data: {not json\n\n"])
    assert type(caught.value).__name__ == "JSONDecodeError"
    with pytest.raises(UnicodeDecodeError):
        feed_all(EventStream(None, is_async=True, dialect="openai"), [b'data: {"a": "\xff"}\n\n'])


def test_json_view_reads_like_the_sdk_objects() -> None:
    view = JSONView({"choices": [{"delta": {"content": "hi"}, "index": 0}], "usage": None, "x": {"y": 1}})
    assert view.choices[0].delta.content == "hi"
    assert view.choices[0].delta.role is None  # missing reads as None
    assert view.usage is None and view.x.y == 1
    assert "choices" in view and "nope" not in view
    assert view.model_extra is view.to_dict()
    assert copy.deepcopy(view) == view and pickle.loads(pickle.dumps(view)) == view
    with pytest.raises(AttributeError):
        view.__length_hint__  # noqa: B018 - protocol lookups are not fields


def test_sdk_error_wraps_transport_failures_like_the_sdk() -> None:
    import openai

    request = httpx2.Request("POST", "http://local/v1/chat/completions")
    response = httpx2.Response(200, request=request)
    openai_stream = EventStream(response, is_async=True, dialect="openai")
    assert isinstance(openai_stream.sdk_error(httpx2.ReadTimeout("t")), openai.APITimeoutError)
    assert isinstance(openai_stream.sdk_error(httpx2.RemoteProtocolError("cut")), openai.APIConnectionError)
    other = RuntimeError("x")
    assert openai_stream.sdk_error(other) is other
    cut = httpx2.RemoteProtocolError("cut")
    assert EventStream(response, is_async=True, dialect="anthropic").sdk_error(cut) is cut
