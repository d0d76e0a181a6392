"""A loopback stand-in for the Gemini API's `generateContent` and `streamGenerateContent`.

It speaks the documented REST wire format (ai.google.dev/api/generate-content: the camelCase
`GenerateContentResponse`, SSE framing with `?alt=sse`, and the `{"error": {"code", "message",
"status"}}` error body of ai.google.dev/gemini-api/docs/troubleshooting), so the real, unmodified
`google-genai` SDK talks to it over a socket, on the Gemini Developer API's paths
(`/v1beta/models/...`) and Vertex AI's (`/v1beta1/projects/.../locations/.../publishers/.../models/...`,
cloud.google.com/vertex-ai/generative-ai/docs/reference/rest). Each request's path and JSON body is
kept, and as it came (`sent`: path and query, headers, body bytes); each answer comes from a script
given by the test.
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


@dataclass(frozen=True)
class Sent:
    """One request as it came: path and query, headers (lower-case names), body bytes."""

    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    """One scripted answer: a body (or SSE chunks when streamed), a status and headers; `stall`:
    seconds the stream stays open, silent, after its chunks (a server that stopped mid-answer);
    `drop`: the connection is cut after the chunks, the response left unfinished."""

    body: Any = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0
    drop: bool = False


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
        self.sent: list[Sent] = []

    def script(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def app(self) -> Starlette:
        vertex = "/{version}/projects/{project}/locations/{location}/publishers/{publisher}/models/{call:path}"
        return Starlette(
            routes=[Route(path, self._call, methods=["POST"]) for path in ("/{version}/models/{call:path}", vertex)]
        )

    async def _call(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw or b"{}")
        self.requests.append((request.url.path, body))
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        self.sent.append(Sent(target, dict(request.headers), raw))
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
                if answer.drop:
                    raise ConnectionAbortedError("the stand-in cuts the connection")

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse(answer.body, headers=answer.headers)


@contextlib.contextmanager
def serving(*, vertex: bool = False) -> Iterator[tuple[GeminiServer, genai.Client]]:
    """A stand-in on a free loopback port and a real `genai.Client` pointed at it: of the Gemini
    Developer API (an API key), or with `vertex` of Vertex AI (a project, a location and OAuth
    credentials holding a token, sent as a bearer token)."""
    server = GeminiServer()
    with AppServer(server.app()) as running:
        http_options = {"base_url": running.root_url}
        if vertex:
            from google.oauth2.credentials import Credentials

            credentials = Credentials(token="test-token")  # type: ignore[no-untyped-call]
            client = genai.Client(
                vertexai=True, project="test-project", location="us-central1", credentials=credentials,
                http_options=http_options,
            )  # fmt: skip
        else:
            client = genai.Client(api_key="test-key", http_options=http_options)
        yield server, client
