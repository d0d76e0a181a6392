"""A loopback stand-in for Amazon Bedrock's `Converse` and `ConverseStream`.

It speaks the documented wire format, as botocore's service model declares it
(`botocore/data/bedrock-runtime/2023-09-30/service-2.json`: `POST /model/{modelId}/converse` and
`/converse-stream`, protocol rest-json; `ConverseResponse`, the `ConverseStreamOutput` events, and
each error's `httpStatusCode`), so the real, unmodified boto3 talks to it over a socket with dummy
credentials. Errors are rest-json's: the status, an `x-amzn-ErrorType` header and `{"message"}`.
A stream is framed as `application/vnd.amazon.eventstream` (docs.aws.amazon.com, "Event stream
encoding": a prelude of total length, headers length and their CRC32, the headers, the payload,
and a CRC32 of the whole message; botocore.eventstream reads it), encoded by `frame` below.
Each request's path and JSON body is kept; each answer comes from a script given by the test.
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import json
import struct
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import boto3
from botocore.config import Config
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from so_middleware.gateway._server import AppServer

SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"  # a dummy: the stand-in checks no signature


@dataclass
class Answer:
    """One scripted answer: a body (or stream events when streamed), a status and headers.

    `stall` seconds of silence after the events (a stalled stream; cut short when the stand-in
    stops); `error_type` names the rest-json error of a status that is not 200."""

    body: Any = None
    events: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error_type: str = ""
    stall: float = 0.0


def text_answer(text: str, *, stop: str = "end_turn") -> dict[str, Any]:
    """A whole `ConverseResponse` with one text block."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": stop,
        "usage": {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18},
        "metrics": {"latencyMs": 5},
    }


def text_events(pieces: list[str], *, stop: str = "end_turn") -> list[dict[str, Any]]:
    """A whole ConverseStream: `messageStart`, a text block in `pieces`, `messageStop`, `metadata`."""
    return [
        {"messageStart": {"role": "assistant"}},
        *({"contentBlockDelta": {"delta": {"text": piece}, "contentBlockIndex": 0}} for piece in pieces),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": stop}},
        {"metadata": {"usage": {"inputTokens": 5, "outputTokens": 9, "totalTokens": 14}, "metrics": {"latencyMs": 3}}},
    ]


def _header(name: str, value: str) -> bytes:
    """One header: name length (1 byte), name, type 7 (string), value length (2 bytes), value."""
    encoded_name, encoded_value = name.encode(), value.encode()
    return (
        struct.pack("!B", len(encoded_name)) + encoded_name + struct.pack("!BH", 7, len(encoded_value)) + encoded_value
    )


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude (total length, headers length, prelude CRC32), headers,
    payload, message CRC32 (big endian throughout)."""
    encoded = b"".join(_header(name, value) for name, value in headers.items())
    prelude = struct.pack("!II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    prelude += struct.pack("!I", binascii.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack("!I", binascii.crc32(message))


def event_frame(event: dict[str, Any]) -> bytes:
    """A `ConverseStreamOutput` member as its frame: an event, or (for an `...Exception` member) an
    exception message."""
    ((name, payload),) = event.items()
    if name.endswith("Exception"):
        headers = {":message-type": "exception", ":exception-type": name, ":content-type": "application/json"}
    else:
        headers = {":message-type": "event", ":event-type": name, ":content-type": "application/json"}
    return frame(headers, json.dumps(payload).encode())


class BedrockServer:
    """The ASGI app and its script: `answers` are served in order; `requests` are what came."""

    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.stopping = threading.Event()

    def script(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/model/{model_id:path}/{operation}", self._call, methods=["POST"])])

    async def _call(self, request: Request) -> Response:
        body = json.loads(await request.body() or b"{}")
        self.requests.append((unquote(request.url.path), body))
        answer = self.answers.popleft() if self.answers else Answer({"message": "no answer scripted"}, status=500)
        if answer.status != 200:
            headers = {"x-amzn-ErrorType": answer.error_type or "InternalServerException", **answer.headers}
            return JSONResponse(answer.body, status_code=answer.status, headers=headers)
        if request.path_params["operation"] == "converse-stream":

            async def frames() -> Any:
                for event in answer.events:
                    yield event_frame(event)
                for _ in range(int(answer.stall * 20)):
                    if self.stopping.is_set():
                        break
                    await asyncio.sleep(0.05)

            return StreamingResponse(frames(), media_type="application/vnd.amazon.eventstream")
        return JSONResponse(answer.body, headers=answer.headers)


def bedrock_client(endpoint_url: str, **config: Any) -> Any:
    """A real boto3 `bedrock-runtime` client on `endpoint_url`, dummy credentials, the SDK's own
    retries off unless `config` says otherwise (the retries layer retries)."""
    settings: dict[str, Any] = {"retries": {"total_max_attempts": 1}, **config}
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=endpoint_url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key=SECRET_KEY,
        config=Config(**settings),
    )


@contextlib.contextmanager
def serving(**config: Any) -> Iterator[tuple[BedrockServer, Any]]:
    """A stand-in on a free loopback port and a real boto3 client pointed at it."""
    server = BedrockServer()
    with AppServer(server.app()) as running:
        try:
            yield server, bedrock_client(running.root_url.rstrip("/"), **config)
        finally:
            server.stopping.set()
