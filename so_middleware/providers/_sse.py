"""Reading an SDK's event stream ourselves: SSE framing and `jiter` for each event's JSON.

The SDK still makes the request (auth, base URL, headers, retries, HTTP errors as its typed
errors); its raw-response twin of `create` hands back the unread HTTP response, and `EventStream`
turns the body into events. This skips the SDK's per-event pydantic construction, which costs
more than everything else a streaming call does. Each event is a `JSONView`: the event's JSON,
read by attribute like the SDK's objects (a missing field reads as None).

The two SDKs' stream rules are kept: OpenAI ends at `data: [DONE]` and raises for an event whose
JSON carries `error`; Anthropic skips `ping` and unnamed events and raises for an `error` event.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import jiter

from ..core import ProviderResponseError
from ..wire.common import JSONView
from ..wire.common import view_of as _view
from ._bridge import failure_from_body

__all__ = ["EventStream", "JSONView"]


class EventStream:
    """The events of one streamed HTTP response, in the `openai` or `anthropic` SDK's dialect.

    `iterate_sdk_stream` reads `response`'s body and hands each chunk to `feed`, which yields the
    events it completes (`finish` at the end of the body); `close()` closes the response (a
    coroutine for an async one).
    """

    def __init__(self, response: Any, *, is_async: bool, dialect: str) -> None:
        self.response = response
        self._is_async = is_async
        self._anthropic = dialect == "anthropic"
        self._decoder = _Decoder(anthropic=self._anthropic)

    def feed(self, chunk: bytes) -> Iterator[JSONView]:
        """The events `chunk` completes; nothing once the stream said it was done (the rest of the
        body is still read, so the connection can be reused)."""
        return iter(()) if self._decoder.done else self._decoder.feed(chunk)

    def finish(self) -> Iterator[JSONView]:
        """The end of the body: an unfinished event is dropped (the SSE rule, and the SDKs')."""
        return self._decoder.finish()

    def sdk_error(self, error: BaseException) -> BaseException:
        """What the SDK's own stream raises when reading its body fails with `error`: OpenAI's
        wraps transport failures in `APITimeoutError` / `APIConnectionError`, Anthropic's does not."""
        if self._anthropic or not isinstance(error, (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)):
            return error
        import openai

        if isinstance(error, httpx2.TimeoutException):
            return openai.APITimeoutError(request=self.response.request)
        return openai.APIConnectionError(request=self.response.request)

    def close(self) -> Any:
        """Close the HTTP response (a coroutine for an async response)."""
        return self.response.aclose() if self._is_async else self.response.close()


class _Decoder:
    """SSE framing (lines ending in LF, CRLF or CR; `event` and `data` fields; comments and other
    fields ignored), then each event's JSON by the SDK's rules."""

    def __init__(self, *, anthropic: bool) -> None:
        self._anthropic = anthropic
        self._rest = b""
        self._event: bytes | None = None
        self._data: list[bytes] = []
        self.done = False  # OpenAI's `[DONE]` came

    def feed(self, chunk: bytes) -> Iterator[JSONView]:
        buffer = self._rest + chunk if self._rest else chunk
        lines = buffer.splitlines(keepends=True)
        self._rest = b""
        if lines and (not lines[-1].endswith((b"\n", b"\r")) or lines[-1].endswith(b"\r")):
            self._rest = lines.pop()  # unfinished, or a CR whose LF may come next
        return self._lines(lines)

    def finish(self) -> Iterator[JSONView]:
        if self.done:
            return iter(())
        rest, self._rest = self._rest, b""
        return self._lines([rest] if rest else [])  # an event without its blank line is dropped, as by the SDKs

    def _lines(self, lines: list[bytes]) -> Iterator[JSONView]:
        """The events these lines complete, one at a time (an error event raises when reached)."""
        for line in lines:
            line = line.rstrip(b"\r\n")
            if not line:
                if self._data or self._event is not None:
                    event = self._dispatch(self._event, b"\n".join(self._data))
                    self._event, self._data = None, []
                    if self.done:
                        return
                    if event is not None:
                        yield event
                continue
            name, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                self._data.append(value)
            elif name == b"event":
                self._event = value

    def _dispatch(self, event: bytes | None, data: bytes) -> Any:
        """The event (a `JSONView`, or whatever other JSON value the data holds), or None."""
        if self._anthropic:
            if event is None or event == b"ping":
                return None
            if event == b"error":
                raise _anthropic_error(data)
            if not data:
                return None
            return _view(_parse(data))
        if data.startswith(b"[DONE]"):
            self.done = True
            return None
        parsed = _parse(data)
        if isinstance(parsed, dict):  # a chunk, nearly always
            if parsed.get("error"):
                raise failure_from_body(parsed["error"])
            return JSONView(parsed)
        return _view(parsed)


def _parse(data: bytes) -> Any:
    try:
        return jiter.from_json(data, cache_mode="keys")
    except ValueError:  # the same error the SDK's decoding raises (JSONDecodeError or UnicodeDecodeError)
        return json.loads(data.decode("utf-8"))


def _anthropic_error(data: bytes) -> ProviderResponseError:
    try:
        body: Any = json.loads(data.decode("utf-8"))
    except ValueError:
        body = data.decode("utf-8", "replace")
    return failure_from_body(body)
