"""The Gemini API and Ollama's native chat API in front of the local model, for the docs' blocks.

The blocks of the Gemini and Ollama pages build the real SDK clients (`genai.Client()`,
`ollama.AsyncClient()`), which find these servers by the environment (`GOOGLE_GEMINI_BASE_URL`,
`OLLAMA_HOST`). Each server reads a request with the protocol's codec (`request_from_wire`), asks
the local llama-server over Chat Completions, and writes the answer with the same codec
(`response_to_wire`); a streamed request gets the whole answer as its one, last chunk. Fields of
the protocol's own (`keep_alive`, `thinkingConfig`, ...) are not passed on.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from so_middleware import ChatResponse
from so_middleware.gateway._server import AppServer
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient
from so_middleware.wire import gemini, ollama


def _app(backend: str) -> Starlette:
    async def answer(messages: list[Any], options: Any) -> ChatResponse[Any]:
        options = options.replace(extra_body=None)  # the protocol's own fields (`stream`, `keep_alive`, ...)
        async with openai.AsyncOpenAI(base_url=backend, api_key="local", max_retries=0) as sdk:
            return await OpenAIChatClient(sdk, "local", capabilities=LLAMA_SERVER).get_response(
                messages, options=options
            )

    async def generate(request: Request) -> Response:
        model, _, method = request.path_params["call"].partition(":")
        messages, options = gemini.request_from_wire(json.loads(await request.body()), model=model)
        body = gemini.response_to_wire(await answer(messages, options))
        if method == "streamGenerateContent":
            return StreamingResponse(_once(f"data: {json.dumps(body)}\r\n\r\n"), media_type="text/event-stream")
        return JSONResponse(body)

    async def chat(request: Request) -> Response:
        wire = json.loads(await request.body())
        messages, options = ollama.request_from_wire(wire)
        body = ollama.response_to_wire(await answer(messages, options))
        if wire.get("stream", True):
            return StreamingResponse(_once(json.dumps(body) + "\n"), media_type="application/x-ndjson")
        return JSONResponse(body)

    return Starlette(
        routes=[
            Route("/{version}/models/{call:path}", generate, methods=["POST"]),
            Route("/api/chat", chat, methods=["POST"]),
        ]
    )


async def _once(text: str) -> AsyncIterator[bytes]:
    yield text.encode()


@contextlib.contextmanager
def native_backends(server: LocalModelServer) -> Iterator[str]:
    """One loopback server speaking both protocols in front of `server`; its root URL."""
    with AppServer(_app(server.base_url)) as running:
        yield running.root_url
