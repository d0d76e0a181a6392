"""A Chat Completions backend that plays a tool-using model by rule, on a real loopback socket, so the
clients (not a model) are under test. Its replies follow the documented Chat Completions wire format
(a `chat.completion` body, or `chat.completion.chunk` SSE ending with a usage chunk and `[DONE]`).

The rule, per request:
- a tool result follows the last assistant message: answer `final` (the structured answer) — the round
  trip closed (a client may add a message of its own after the results, as Codex CLI does);
- tools are offered and some of `calls` name them: make those calls, all in one reply (parallel calls);
- otherwise: `final` when a JSON answer is asked for (`response_format`), else `text`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

WEATHER = {"city": "Paris", "temperature_c": 21}  # the structured answer every client parses
USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


@dataclass
class ScriptedChatBackend:
    """Answers by the rule in the module docstring; records every request body."""

    calls: list[tuple[str, str]] = field(
        default_factory=lambda: [("get_weather", '{"city": "Paris"}')]
    )  # (name, arguments)
    final: str = json.dumps(WEATHER)
    text: str = "It is 21 degrees in Paris."
    reasoning: str | None = None  # sent first as `reasoning_content` (llama.cpp, vLLM) in every reply
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # of each request, beside its body

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]),
                                 Route("/v1/models", self.models, methods=["GET"])])  # fmt: skip

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model", "created": 0,
                                                         "owned_by": "tests"}]})  # fmt: skip

    def tool_results(self) -> list[str]:
        """The content of every tool message the backend was sent, in order."""
        return [str(m.get("content")) for body in self.bodies for m in body["messages"] if m.get("role") == "tool"]

    def reply(self, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
        """(text, tool calls) of the rule above."""
        roles = [m.get("role") for m in body.get("messages") or []]
        after_last_answer = roles[len(roles) - roles[::-1].index("assistant") :] if "assistant" in roles else []
        if "tool" in after_last_answer:
            return self.final, []
        offered = [t.get("function", {}).get("name") for t in body.get("tools") or [] if t.get("type") == "function"]
        calls = [{"id": f"call_{len(self.bodies)}_{index}", "type": "function",
                  "function": {"name": name, "arguments": arguments}}
                 for index, (name, arguments) in enumerate(c for c in self.calls if c[0] in offered)]  # fmt: skip
        if calls:
            return None, calls
        return (self.final if body.get("response_format") else self.text), []

    async def chat(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        text, calls = self.reply(body)
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}
            if self.reasoning:
                message["reasoning_content"] = self.reasoning
            return JSONResponse({"id": "chatcmpl-s", "object": "chat.completion", "created": int(time.time()),
                                 "model": body["model"], "usage": USAGE, "choices": [
                                     {"index": 0, "message": message, "finish_reason": finish}]})  # fmt: skip
        return StreamingResponse(self._chunks(body["model"], text, calls, finish), media_type="text/event-stream")

    async def _chunks(self, model: str, text: str | None, calls: list[dict[str, Any]], finish: str) -> Any:
        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
            payload = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}  # fmt: skip
            return f"data: {json.dumps(payload)}\n\n"

        yield chunk({"role": "assistant", "content": ""})
        if self.reasoning:
            half = len(self.reasoning) // 2
            for piece in (self.reasoning[:half], self.reasoning[half:]):
                yield chunk({"reasoning_content": piece})
        for index, call in enumerate(calls):  # name first, then the arguments in two pieces
            arguments = call["function"]["arguments"]
            opening = {"index": index, "id": call["id"], "type": "function",
                       "function": {"name": call["function"]["name"], "arguments": ""}}  # fmt: skip
            yield chunk({"tool_calls": [opening]})
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        if text:
            for start in range(0, len(text), 8):
                yield chunk({"content": text[start : start + 8]})
        yield chunk({}, finish)
        usage = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [],
                 "usage": USAGE}  # fmt: skip
        yield f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n"
