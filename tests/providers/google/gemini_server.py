"""A loopback stand-in for the Gemini API's `generateContent` and `streamGenerateContent`.

It speaks the documented REST wire format (ai.google.dev/api/generate-content: the camelCase
`GenerateContentResponse`, SSE framing with `?alt=sse`, and the `{"error": {"code", "message",
"status"}}` error body of ai.google.dev/gemini-api/docs/troubleshooting), so the real, unmodified
`google-genai` SDK talks to it over a socket. Each request's path and JSON body is kept; each
answer comes from a script given by the test.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from google import genai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from so_middleware.gateway._server import AppServer


@dataclass
class Answer:
    """One scripted answer: a body (or SSE chunks when streamed), a status and headers; `stall`:
    seconds the stream stays open, silent, after its chunks (a server that stopped mid-answer)."""

    body: Any = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0


def text_answer(text: str, *, finish: str = "STOP", model: str = "gemini-2.5-flash") -> dict[str, Any]:
    """A whole `GenerateContentResponse` with one text part."""
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18},
        "modelVersion": model,
        "responseId": "resp-1",
    }


def error_body(code: int, status: str, message: str) -> dict[str, Any]:
    """Google's error body."""
    return {"error": {"code": code, "message": message, "status": status}}


class GeminiServer:
    """The ASGI app and its script: `answers` are served in order; `requests` are what came."""

    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def script(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{version}/models/{call:path}", self._call, methods=["POST"])])

    async def _call(self, request: Request) -> Response:
        body = json.loads(await request.body() or b"{}")
        self.requests.append((request.url.path, body))
        answer = (
            self.answers.popleft()
            if self.answers
            else Answer(error_body(500, "INTERNAL", "no answer scripted"), status=500)
        )
        if answer.status != 200:
            return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)
        if request.url.path.endswith(":streamGenerateContent"):

            async def events() -> Any:
                for chunk in answer.chunks:
                    yield f"data: {json.dumps(chunk)}\r\n\r\n".encode()
                await anyio.sleep(answer.stall)  # cancelled when the client goes away

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse(answer.body, headers=answer.headers)


@contextlib.contextmanager
def serving() -> Iterator[tuple[GeminiServer, genai.Client]]:
    """A stand-in on a free loopback port and a real `genai.Client` pointed at it."""
    server = GeminiServer()
    with AppServer(server.app()) as running:
        yield server, genai.Client(api_key="test-key", http_options={"base_url": running.root_url})
