"""A loopback stand-in for Mistral's chat completions, `POST /v1/chat/completions`.

It speaks the documented wire format (docs.mistral.ai API reference, `chat_completion_v1_chat_completions_post`,
and the SDK's models `ChatCompletionResponse`, `CompletionChunk`, `HTTPValidationError`): a JSON answer,
or with `"stream": true` server-sent events `data: <CompletionChunk>` ending with `data: [DONE]`, and
error bodies `{"object": "error", "message", "type", "param", "code"}` (422: `{"detail": [...]}`), so
the real, unmodified `mistralai` SDK talks to it over a socket. Each request's JSON body and headers
are kept; each answer comes from a script given by the test.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from mistralai.client import Mistral
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from so_middleware.gateway._server import AppServer

MODEL = "mistral-small-latest"


@dataclass
class Answer:
    """One scripted answer: a body (or SSE chunks when streamed), a status and headers. `done`: the
    stream ends with `data: [DONE]`; `stall`: seconds to wait before the stream's last chunk."""

    body: Any = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    done: bool = True
    stall: float = 0.0


def chat_answer(
    content: Any = "", *, finish: str = "stop", tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A whole `ChatCompletionResponse` with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "prefix": False}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": MODEL,
        "created": 1767225600,
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def chunk(text: str | None = None, *, finish: str | None = None, usage: bool = False) -> dict[str, Any]:
    """One `CompletionChunk` with a text delta (and the finish reason and usage on the last one)."""
    delta: dict[str, Any] = {"content": text} if text is not None else {}
    body: dict[str, Any] = {
        "id": "cmpl-1",
        "object": "chat.completion.chunk",
        "model": MODEL,
        "created": 1767225600,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
    return body


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """Mistral's error body."""
    return {"object": "error", "message": message, "type": kind, "param": None, "code": code}


class MistralServer:
    """The ASGI app and its script: `answers` are served in order; `requests` are the bodies that came."""

    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def script(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._call, methods=["POST"])])

    async def _call(self, request: Request) -> Response:
        body = json.loads(await request.body() or b"{}")
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        answer = (
            self.answers.popleft()
            if self.answers
            else Answer(error_body("no answer scripted", "internal_error"), status=500)
        )
        if answer.status != 200:
            return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)
        if body.get("stream"):

            async def events() -> Any:
                for i, piece in enumerate(answer.chunks):
                    if answer.stall and i == len(answer.chunks) - 1:
                        await anyio.sleep(answer.stall)
                    yield f"data: {json.dumps(piece)}\n\n".encode()
                if answer.done:
                    yield b"data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse(answer.body, headers=answer.headers)


@contextlib.contextmanager
def serving() -> Iterator[tuple[MistralServer, Mistral]]:
    """A stand-in on a free loopback port and a real `Mistral` client pointed at it."""
    server = MistralServer()
    with AppServer(server.app()) as running:
        yield server, Mistral(api_key="test-key", server_url=running.root_url)
