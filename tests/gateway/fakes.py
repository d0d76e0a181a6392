"""A recording Chat Completions backend on a real loopback socket, for what only a fake can show:
the exact bytes the gateway sent, errors on demand, a slow stream. Its replies follow the
documented Chat Completions wire format (non-streaming body and `chat.completion.chunk` SSE)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class FakeChatBackend:
    """Answers every chat completion with `text`, split into `pieces` chunks when streamed."""

    text: str = '{"name": "Ada Lovelace", "age": 36}'
    replies: list[str] = field(default_factory=list)  # answered first, one per request, before `text`
    pieces: int = 4
    finish_reason: str = "stop"
    chunk_delay: float = 0.0
    error: tuple[int, dict[str, Any]] | None = None  # (status, body) answered instead
    reasoning: str | None = None  # sent first as `reasoning_content` (llama.cpp, vLLM)
    break_after: int | None = None  # text chunks sent before the connection is cut (no finish)
    cut: bool = False  # set while streaming: every open stream's connection is cut at its next chunk
    tool_call: dict[str, str] | None = None  # {"name":..., "arguments":...} answered instead of text
    tool_calls: list[dict[str, str]] = field(default_factory=list)  # parallel calls (ids call_1, call_2, ...)
    raw_bodies: list[bytes] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    streams_closed_early: int = 0
    streams_finished: int = 0
    html: bool = False  # answer a 200 text/html page (a proxy's or a web server's), as a misrouted URL does
    open_streams: int = 0  # streams being sent now
    props: dict[str, Any] | None = None  # answered on GET /props: discovery then takes it for llama-server
    headers: list[dict[str, str]] = field(default_factory=list)  # each chat request's headers
    plain_delay: float = 0.0  # seconds before a plain answer (given up if the caller goes first)
    plain_abandoned: int = 0  # plain answers whose caller hung up while they were delayed
    header_delay: float = 0.0  # seconds before a streamed answer's headers (given up if the caller goes first)
    headers_abandoned: int = 0  # streamed answers whose caller hung up before their headers
    first_byte_delay: float = 0.0  # seconds between a streamed answer's headers and its first byte
    models_delay: float = 0.0  # seconds before the model list (given up if the caller goes first)
    models_asked: int = 0
    models_abandoned: int = 0

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.raw_bodies]

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]),
                                 Route("/v1/models", self.models, methods=["GET"]),
                                 Route("/props", self.server_props, methods=["GET"])])  # fmt: skip

    async def server_props(self, request: Request) -> Response:
        if self.props is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        return JSONResponse(self.props)

    async def models(self, request: Request) -> Response:
        self.models_asked += 1
        if await _left_during(request, self.models_delay):
            self.models_abandoned += 1
            return Response(status_code=499)
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0,
                                                         "owned_by": "tests"}]})  # fmt: skip

    async def chat(self, request: Request) -> Response:
        raw = await request.body()
        self.raw_bodies.append(raw)
        self.authorizations.append(request.headers.get("authorization"))
        self.headers.append(dict(request.headers))
        if self.error is not None:
            return JSONResponse(self.error[1], status_code=self.error[0])
        if self.html:
            return HTMLResponse("<html><body><h1>Welcome to nginx!</h1></body></html>")
        body = json.loads(raw)
        text = self.replies.pop(0) if self.replies else self.text
        usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        if not body.get("stream"):
            if await _left_during(request, self.plain_delay):
                self.plain_abandoned += 1
                return Response(status_code=499)
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if self.reasoning:
                message["reasoning_content"] = self.reasoning
            finish = self.finish_reason
            if self.tool_call or self.tool_calls:
                calls = self.tool_calls or [self.tool_call]
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": f"call_{i + 1}", "type": "function", "function": call} for i, call in enumerate(calls)
                    ],
                }
                finish = "tool_calls"
            answer = {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                      "model": body["model"], "usage": usage, "choices": [
                          {"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip
            # json.dumps escapes what is not text (a lone surrogate: `"\ud83d"`), as a backend's JSON may
            return Response(json.dumps(answer), media_type="application/json")
        if await _left_during(request, self.header_delay):
            self.headers_abandoned += 1
            return Response(status_code=499)
        return StreamingResponse(self._chunks(body["model"], text, usage), media_type="text/event-stream")

    async def _chunks(self, model: str, text: str, usage: dict[str, int]) -> Any:
        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            payload = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}  # fmt: skip
            return f"data: {json.dumps(payload)}\n\n"

        finished = False
        self.open_streams += 1
        try:
            if self.first_byte_delay:  # a hang-up meanwhile cancels this sleep (Starlette watches the connection)
                await asyncio.sleep(self.first_byte_delay)
            yield chunk({"role": "assistant", "content": ""})
            if self.reasoning:
                yield chunk({"reasoning_content": self.reasoning[:5]})
                yield chunk({"reasoning_content": self.reasoning[5:]})
            if self.tool_call or self.tool_calls:
                for i, tool_call in enumerate(self.tool_calls or [self.tool_call]):  # type: ignore[list-item]
                    call = {
                        "index": i,
                        "id": f"call_{i + 1}",
                        "type": "function",
                        "function": {"name": tool_call["name"], "arguments": ""},
                    }
                    yield chunk({"tool_calls": [call]})
                    yield chunk({"tool_calls": [{"index": i, "function": {"arguments": tool_call["arguments"]}}]})
                finish = "tool_calls"
            else:
                size = max(1, -(-len(text) // self.pieces))
                for index, start in enumerate(range(0, len(text), size)):
                    if self.cut or (self.break_after is not None and index == self.break_after):
                        raise RuntimeError("the fake backend cuts the stream")  # the connection is dropped
                    if self.chunk_delay:
                        await asyncio.sleep(self.chunk_delay)
                    yield chunk({"content": text[start : start + size]})
                finish = self.finish_reason
            yield chunk({}, finish)
            payload = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
                       "choices": [], "usage": usage}  # fmt: skip
            yield f"data: {json.dumps(payload)}\n\ndata: [DONE]\n\n"
            finished = True
        finally:
            self.open_streams -= 1
            if finished:
                self.streams_finished += 1
            else:
                self.streams_closed_early += 1


async def _left_during(request: Request, delay: float) -> bool:
    """Wait `delay` seconds; True as soon as the caller hangs up meanwhile."""
    waited = 0.0
    while waited < delay:
        if await request.is_disconnected():
            return True
        await asyncio.sleep(0.05)
        waited += 0.05
    return False


def sdk(server: Any) -> Any:
    """The unmodified OpenAI SDK on a served gateway (no SDK retries: the tests count requests)."""
    import openai

    return openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def running_background(client: Any, backend: FakeChatBackend, *, delay: float = 0.2, pieces: int = 100) -> Any:
    """A background response whose slow backend stream is under way."""
    backend.chunk_delay, backend.pieces = delay, pieces
    started = client.responses.create(model="m", input="hi", background=True)
    while client.responses.retrieve(started.id).status == "queued":
        time.sleep(0.05)
    return started
