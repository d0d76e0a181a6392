"""Follow a call's value through so_middleware's functions, from its entry to the HTTP POST.

    python bench/walks.py structured      # `with_structured_output(...).get_response(..., output_type=T)`
    python bench/walks.py gateway         # a `POST /v1/responses` of the gateway, route to backend call
    python bench/walks.py structured -v   # also each call in order, and where it climbs

Run it with the checkout measured first on `PYTHONPATH` (`PYTHONPATH=/tmp/base python bench/walks.py
structured` measures another checkout with this script).

`sys.setprofile` sees every call of a so_middleware function between the entry (`get_response`, or
the gateway's `create`) and the first frame of the HTTP client building or sending the POST of the
chat call (`httpx2` `build_request`/`send`; the gateway's `GET /v1/models` discovery is not the
call). Of those calls, the ones that receive the followed value as an argument count: a
`ChatOptions`, a call object whose `.options` is one, a request dict with a `model` and `messages`
or `input`, a gateway request. "stays" is the number of distinct such functions; "climbs" the
times the sequence goes from a function of a lower layer to one of a higher layer (core 1 < wire,
schema 2 < providers 3 < middleware 4 < agents 5 < the package faces 6 < gateway 7). A coroutine
resumed after an await is a call to the profiler too: an `await` in the SDK before the POST shows
the frames that wait on it again.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import sys
import threading
from types import FrameType
from typing import Any

import httpx2
import openai
import pydantic

import so_middleware
from so_middleware import ChatOptions, with_structured_output
from so_middleware.openai import OpenAIChatClient

RANK = {"core": 1, "wire": 2, "schema": 2, "providers": 3, "middleware": 4, "agents": 5, "gateway": 7}
ROOT = so_middleware.__file__.rsplit("/", 1)[0]
CHAT_PATHS = ("/chat/completions", "/responses", "/messages")
_VAR_POSITIONAL, _VAR_KEYWORDS = 0x04, 0x08  # code flags: *args, **kwargs


def layer(filename: str) -> int:
    """The rank of the package folder `filename` is in (6: a module at the package's top)."""
    head = filename[len(ROOT) + 1 :].split("/", 1)[0]
    return RANK.get(head, 6)


def holds(value: Any) -> bool:
    """True when `value` is, or carries, the call's options or request body."""
    if isinstance(value, ChatOptions) or isinstance(getattr(value, "options", None), ChatOptions):
        return True
    if isinstance(value, dict) and "model" in value and ("messages" in value or "input" in value):
        return True
    return type(value).__name__ == "GatewayRequest"


def posts_the_call(frame: FrameType) -> bool:
    """True for a `build_request(method, url)` or `send(request)` frame that posts a chat call."""
    request = frame.f_locals.get("request")
    method = frame.f_locals.get("method") or getattr(request, "method", "")
    url = str(frame.f_locals.get("url") or getattr(request, "url", ""))
    return str(method).upper() == "POST" and url.endswith(CHAT_PATHS)


def arguments(frame: FrameType) -> list[Any]:
    """The values a frame was called with, keyword arguments included."""
    code = frame.f_code
    named = code.co_argcount + code.co_kwonlyargcount
    values = [frame.f_locals.get(name) for name in code.co_varnames[:named]]
    if code.co_flags & _VAR_KEYWORDS:
        keywords = frame.f_locals.get(code.co_varnames[named + bool(code.co_flags & _VAR_POSITIONAL)])
        if isinstance(keywords, dict):
            values.extend(keywords.values())
            values.append(keywords)
    return values


class Walk:
    """The profiler hook and what it saw: (function, layer rank) per call that held the value."""

    def __init__(self, start: str) -> None:
        self.start = start
        self.on = False
        self.done = False
        self.calls: list[tuple[str, int]] = []

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or self.done:
            return
        filename = frame.f_code.co_filename
        module = frame.f_globals.get("__name__", "")
        if self.on and module.startswith("httpx2") and frame.f_code.co_name in ("build_request", "send"):
            if posts_the_call(frame):
                self.done = True
            return
        if not filename.startswith(ROOT):
            return
        if not self.on and frame.f_code.co_name == self.start:
            self.on = True
        if self.on and any(holds(value) for value in arguments(frame)):
            self.calls.append((f"{filename[len(ROOT) + 1 :]}:{frame.f_code.co_qualname}", layer(filename)))

    def climbs(self) -> list[tuple[str, str]]:
        pairs = zip(self.calls, self.calls[1:], strict=False)
        return [(before, after) for (before, low), (after, high) in pairs if high > low]

    def report(self, verbose: bool) -> None:
        distinct = list(dict.fromkeys(name for name, _ in self.calls))
        shown = [f"{name} ({rank})" for name, rank in self.calls] if verbose else distinct
        for name in shown:
            print("  ", name)
        climbs = self.climbs()
        if verbose:
            for before, after in climbs:
                print("   climb:", before, "->", after)
        print(f"stays in {len(distinct)} functions ({len(self.calls)} calls), climbs back up {len(climbs)} times")


class Person(pydantic.BaseModel):
    name: str


def refuse(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(500, json={"error": {"message": "the walk ends here"}})


async def structured(walk: Walk) -> None:
    """One structured call of an OpenAI Chat adapter over a transport that refuses it."""
    transport = httpx2.MockTransport(refuse)
    sdk = openai.AsyncOpenAI(
        api_key="x", base_url="http://walk.test/v1", max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
    )
    client = with_structured_output(OpenAIChatClient(sdk, "m", discover=False))
    sys.setprofile(walk.profile)
    try:
        await client.get_response("Name a person.", output_type=Person)
    except Exception:  # the refusal: the walk ended before it
        pass
    finally:
        sys.setprofile(None)


class Backend(http.server.BaseHTTPRequestHandler):
    """A loopback Chat Completions stand-in: `GET /v1/models` and one documented answer."""

    def _answer(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer({"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        message = {"role": "assistant", "content": "{}"}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        self._answer({"id": "c", "object": "chat.completion", "model": "m", "choices": [choice]})

    def log_message(self, *args: Any) -> None:
        pass


async def gateway(walk: Walk) -> None:
    """One `POST /v1/responses` through the gateway app, the second one (the first discovers)."""
    from so_middleware.gateway import GatewayConfig, create_app

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    app = create_app(GatewayConfig(backend_url=f"http://127.0.0.1:{server.server_port}/v1", max_attempts=1))
    body = {
        "model": "m",
        "input": "Name a person.",
        "instructions": "Be brief.",
        "temperature": 0,
        "text": {"format": {"type": "json_schema", "name": "p", "schema": {"type": "object"}}},
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "store": False,
    }
    try:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://gw") as client:
                await client.post("/v1/responses", json=body)  # discovers the backend: not measured
                sys.setprofile(walk.profile)
                try:
                    answer = await client.post("/v1/responses", json=body)
                finally:
                    sys.setprofile(None)
                print(answer.status_code, answer.text[:200])
    finally:
        server.shutdown()


def main() -> None:
    modes = {"structured": (structured, "get_response"), "gateway": (gateway, "create")}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        raise SystemExit(__doc__)
    run, start = modes[sys.argv[1]]
    walk = Walk(start)
    asyncio.run(run(walk))
    walk.report(verbose="-v" in sys.argv[2:])


if __name__ == "__main__":
    main()
