"""A loopback stand-in for Ollama's native `/api/chat`.

It speaks the documented wire format (docs.ollama.com/api/chat: the JSON answer with `message`,
`done`, `done_reason`, `prompt_eval_count`, `eval_count`; streaming as newline-delimited JSON
objects, the last with `done: true`; errors as `{"error": "..."}` with the HTTP status), so the
real, unmodified `ollama` SDK talks to it over a socket. Each request's JSON body is kept; each
answer comes from a script given by the test.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Answer:
    """One scripted answer: a body (or NDJSON chunks when streamed) and a status; `stall`: seconds
    the stream stays open, silent, after its chunks (a server that stopped mid-answer)."""

    body: Any = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    stall: float = 0.0


def chat_answer(content: str, *, done_reason: str = "stop", **message: Any) -> dict[str, Any]:
    """A whole `/api/chat` answer."""
    return {
        "model": "llama3.2",
        "created_at": "2026-11-28T10:00:00Z",
        "message": {"role": "assistant", "content": content, **message},
        "done": True,
        "done_reason": done_reason,
        "prompt_eval_count": 12,
        "eval_count": 8,
    }


def chunk(content: str) -> dict[str, Any]:
    """One streamed piece of an answer."""
    return {"model": "llama3.2", "created_at": "2026-11-28T10:00:00Z",
            "message": {"role": "assistant", "content": content}, "done": False}  # fmt: skip


class OllamaServer:
    """The ASGI app and its script: `answers` are served in order; `requests` are what came."""

    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.requests: list[dict[str, Any]] = []

    def script(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/api/chat", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(body)
        answer = self.answers.popleft() if self.answers else Answer({"error": "no answer scripted"}, status=500)
        if answer.status != 200:
            return JSONResponse(answer.body, status_code=answer.status)
        if body.get("stream"):

            async def lines() -> Any:
                for piece in answer.chunks:
                    yield (json.dumps(piece) + "\n").encode()
                await anyio.sleep(answer.stall)  # cancelled when the client goes away

            return StreamingResponse(lines(), media_type="application/x-ndjson")
        return JSONResponse(answer.body)
