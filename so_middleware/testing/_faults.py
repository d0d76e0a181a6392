"""`FaultServer`: a loopback HTTP server that answers OpenAI-style requests from a script of faults.

For testing retries and stream handling through the real SDKs, without a network or a model.
Each request takes the next script entry (the last one repeats): an error status with headers, a
connection reset before the first byte, an SSE stream cut mid-way, a server that stalls (before its
headers or after some events) until the client hangs up, or a valid chat completion (JSON or SSE).
Every request is recorded; `open_connections` counts the connections still being served.

Example:
    script = [status(429, headers={"retry-after": "2"}), reset(), completion("Hello")]
    with FaultServer(script) as server:
        sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        ...
    assert len(server.requests) == 3
"""

from __future__ import annotations

import functools
import json
import socket
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

__all__ = ["Fault", "FaultServer", "RecordedRequest", "completion", "reset", "stall", "status", "stream"]


@dataclass(frozen=True)
class Fault:
    """One scripted answer; build it with `status`, `reset`, `completion` or `stream`."""

    kind: Literal["status", "reset", "json", "sse", "stall"]
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    events: Sequence[Any] = ()
    cut_after: int | None = None  # sse: close the connection after this many events


def status(
    code: int,
    *,
    headers: Mapping[str, str] | None = None,
    error_type: str = "server_error",
    message: str = "scripted failure",
) -> Fault:
    """An error response with an OpenAI-shaped error body, e.g. `status(429, headers={"retry-after": "1"})`."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
    return Fault("status", code, dict(headers or {}), body)


def reset() -> Fault:
    """Read the request, then reset the connection before sending a byte."""
    return Fault("reset")


def stall(events: Sequence[Any] = (), *, before_headers: bool = False, hold: float = 60.0) -> Fault:
    """Send these SSE events (a dict, a raw data string, or an `(event_name, dict)` pair), then go
    silent until the client closes the connection (at most `hold` seconds); with
    `before_headers=True` nothing at all is sent."""
    return Fault("stall", status=0 if before_headers else 200, events=list(events), body=hold)


def completion(text: str = "Hello", *, model: str = "m", finish_reason: str = "stop") -> Fault:
    """A valid Chat Completions JSON response carrying `text`."""
    body = {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Fault("json", body=body)


def stream(text: str = "Hello world", *, chunk_size: int = 4, model: str = "m", cut_after: int | None = None) -> Fault:
    """A Chat Completions SSE stream of `text`; with `cut_after=n` the connection drops after n chunks."""

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {
            "id": "chatcmpl-fault",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": choices,
            "usage": usage,
        }

    pieces = [text[i : i + chunk_size] for i in range(0, len(text), chunk_size)]
    events: list[Any] = [chunk({"role": "assistant", "content": piece}) for piece in pieces]
    events.append(chunk({}, "stop"))
    events.append(
        {**chunk({}), "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    )
    events.append("[DONE]")
    return Fault("sse", events=events, cut_after=cut_after)


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received: method, path, headers (lower-cased names) and the JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FaultServer:
    """A threaded HTTP server on 127.0.0.1 and a free port, answering from `script`.

    Use it as a context manager (or `start()`/`stop()`); `base_url` is the `/v1` root to give an
    SDK client, `requests` what it received.
    """

    def __init__(self, script: Sequence[Fault] | Fault = ()) -> None:
        self._script: list[Fault] = [script] if isinstance(script, Fault) else list(script) or [completion()]
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._serving = 0

    @property
    def open_connections(self) -> int:
        """How many connections the server is still serving (a stalled one until the client closes it)."""
        with self._lock:
            return self._serving

    def serving(self, change: int) -> None:
        with self._lock:
            self._serving += change

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`, for `openai.AsyncOpenAI(base_url=...)`."""
        return f"http://127.0.0.1:{self.port}/v1"

    def next_fault(self, request: RecordedRequest) -> Fault:
        with self._lock:
            self.requests.append(request)
            return self._script[min(len(self.requests), len(self._script)) - 1]

    def start(self) -> FaultServer:
        serve = functools.partial(self._server.serve_forever, poll_interval=0.02)  # a quick stop()
        self._thread = threading.Thread(target=serve, name="fault-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _handler_for(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def handle(self) -> None:
            server.serving(+1)
            try:
                super().handle()
            finally:
                server.serving(-1)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {name.lower(): value for name, value in self.headers.items()}
            fault = server.next_fault(RecordedRequest(self.command, self.path, headers, body))
            if fault.kind == "reset":
                self._reset()
            elif fault.kind == "sse":
                self._stream(fault)
            elif fault.kind == "stall":
                self._stall(fault)
            else:
                self._send_json(fault.status, fault.body, fault.headers)

        do_GET = do_POST

        def _send_json(self, code: int, body: Any, headers: Mapping[str, str]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, fault: Fault) -> None:
            self._stream_head()
            for index, event in enumerate(fault.events):
                if fault.cut_after is not None and index >= fault.cut_after:
                    self.wfile.flush()
                    self._reset()  # no terminating chunk: the client sees a broken body
                    return
                self._event(event)
            self.wfile.write(b"0\r\n\r\n")

        def _stream_head(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()

        def _event(self, event: Any) -> None:
            name, data = event if isinstance(event, tuple) else (None, event)
            data = data if isinstance(data, str) else json.dumps(data)
            piece = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
            raw = piece.encode()
            self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            self.wfile.flush()

        def _stall(self, fault: Fault) -> None:
            if fault.status:
                self._stream_head()
                for event in fault.events:
                    self._event(event)
            self.close_connection = True
            self.connection.settimeout(float(fault.body))
            try:  # silent until the client hangs up: recv returns b"" (or fails) when it does
                while self.connection.recv(1024):
                    pass
            except OSError:
                pass

        def _reset(self) -> None:
            # SO_LINGER 0: close() sends RST instead of FIN, the way a crashed proxy looks.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler
