"""The cost of a bare passthrough: our gateway against a floor and two peers, side by side in one run.

One loopback Chat Completions backend (an asyncio HTTP/1.1 server in its own process, as in
bench/gateway.py) answers a streamed request with the same SSE body (a role chunk, 50 text chunks,
a finish chunk and a usage chunk), a plain one with one JSON completion, and a request for model
`hold` with one chunk, then holds the stream open. In front of it, each in its own process:

- floor: the least a Responses passthrough does (a Starlette route here: httpx2 to the backend,
  each chunk parsed with jiter, SSE bytes written by hand; a plain request is one JSON call);
- gateway: `so-middleware gateway --backend ...`, default settings;
- litellm: LiteLLM's proxy, `/v1/responses` (its Chat Completions bridge), in `.venv-peers`;
- open-responses-server: its FastAPI app under uvicorn, in `.venv-peers`.

`.venv-peers` is created by this bench (pinned versions, `PEERS`) when missing. Every row runs its
contenders interleaved round by round (each round: every contender in turn), and reads each
server's own CPU time (utime + stime from /proc) before and after, divided by the requests:

- CPU per streamed request at 1 and 64 concurrent streams; CPU per plain request (8 at once);
- memory per open stream: the server's RSS with 200 `hold` streams open, minus before, / 200;
- RSS over many streamed requests with default settings (no `store` field: our default store
  keeps them): RSS after the first 10% of them and at the end (100,000 for the gateway; the floor
  and the peers, 2,000).

    python bench/gateway_passthrough.py [--quick] [--rss-requests N] [--rows stream_1,stream_64,plain,memory,rss]
    # writes bench/results/gateway_passthrough.json; with --rows, only those rows are measured again, the
    # others kept from the file (each row's time and load average are in `row_measured`)
    python bench/gateway_passthrough.py --base CHECKOUT [CHECKOUT ...] [--pairs 3]
    # this checkout's gateway and others', side by side: CPU per request as ratios to the floor
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
PEERS_VENV = ROOT / ".venv-peers"
# litellm[proxy] pins litellm-proxy, which the registry does not have: its proxy's other requirements, by hand
PEERS = ["litellm==1.110.2", "open-responses-server==0.4.1", "fastapi", "uvicorn", "orjson", "apscheduler",
         "backoff", "pyyaml", "python-multipart", "cryptography", "email-validator", "websockets", "rq", "semver",
         "pyjwt", "pynacl", "uvloop", "rich", "tomlkit", "restrictedpython", "expression", "litellm-enterprise==0.1.83",
         "backports-zstd", "fastapi-sso", "soundfile", "polars", "pyroscope-io", "mcp>=2.3.0,<3", "boto3",
         "azure-identity", "azure-storage-blob"]  # fmt: skip
PIECES = 50
# litellm 1.110.2 sends /v1/responses on to the backend's own /v1/responses for the openai/ and hosted_vllm/
# providers (seen in this bench); a provider with no Responses config of its own, such as custom_openai/,
# bridges it through /v1/chat/completions (LiteLLM's docs, "Native /v1/responses Passthrough")
LITELLM_SKIPPED = "left out (--no-litellm)"
HELD = 200
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- the backend


def _bodies() -> tuple[bytes, bytes, bytes]:
    from gateway import _sse_body

    stream = _sse_body(PIECES)
    plain = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "word " * PIECES},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 9, "completion_tokens": PIECES, "total_tokens": 59}}).encode()  # fmt: skip
    return stream, plain, b"\n\n".join(stream.split(b"\n\n", 2)[:2]) + b"\n\n"  # the role chunk and a text one


async def _serve_backend() -> None:
    stream, plain, first = _bodies()

    def head(content_type: str, length: int | None) -> bytes:
        size = f"content-length: {length}\r\n" if length is not None else ""
        return f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n{size}connection: keep-alive\r\n\r\n".encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                headers = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in headers.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                request = json.loads(body or b"{}")
                if headers.startswith(b"GET"):
                    models = b'{"object":"list","data":[{"id":"m","object":"model","created":0,"owned_by":"b"}]}'
                    writer.write(head("application/json", len(models)) + models)
                elif str(request.get("model", "")).endswith("hold"):  # one chunk, then silence until the client goes
                    writer.write(head("text/event-stream", None) + first)
                    await writer.drain()
                    await reader.read()
                    return
                elif request.get("stream"):
                    writer.write(head("text/event-stream", len(stream)) + stream)
                else:
                    writer.write(head("application/json", len(plain)) + plain)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin


# ---------------------------------------------------------------- the floor


def _floor_app(backend: str) -> Any:
    """A Responses passthrough with nothing more than the job: the floor the others are measured against."""
    import httpx2
    import jiter
    import orjson
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    client = httpx2.AsyncClient(base_url=backend, timeout=120, limits=httpx2.Limits(max_connections=1000))

    async def responses(request: Request) -> Response:
        body = jiter.from_json(await request.body())
        chat = {"model": body["model"], "messages": [{"role": "user", "content": body["input"]}],
                "stream": bool(body.get("stream"))}  # fmt: skip
        if not chat["stream"]:
            answer = jiter.from_json((await client.post("/chat/completions", json=chat)).content)
            text = answer["choices"][0]["message"]["content"]
            return Response(orjson.dumps({"id": "resp_1", "object": "response", "status": "completed", "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}]}),
                media_type="application/json")  # fmt: skip

        async def events() -> AsyncIterator[bytes]:
            yield b'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n'
            number = 1
            async with client.stream("POST", "/chat/completions", json=chat) as reply:
                async for line in reply.aiter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    chunk = jiter.from_json(line[6:].encode())
                    for choice in chunk.get("choices") or ():
                        delta = choice["delta"].get("content")
                        if delta:
                            event = {"type": "response.output_text.delta", "sequence_number": number, "delta": delta}
                            number += 1
                            yield b"event: response.output_text.delta\ndata: " + orjson.dumps(event) + b"\n\n"
            yield b'event: response.completed\ndata: {"type":"response.completed"}\n\n'

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])


# ---------------------------------------------------------------- the contenders


def _peers_python() -> Path | None:
    python = PEERS_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
        installed = subprocess.run([str(python), "-m", "pip", "install", "-q", *PEERS])
        if installed.returncode != 0:
            return None
    return python


class _Server:
    def __init__(
        self, name: str, args: list[str], port: int, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        self.name, self.port = name, port
        # open-responses-server serves `/responses`, not `/v1/responses`
        self.url = f"http://127.0.0.1:{port}" + ("" if name == "open-responses-server" else "/v1")
        home = PEERS_VENV / "run" / name  # where a peer writes its logs
        home.mkdir(parents=True, exist_ok=True)
        cwd = cwd or (home if name not in ("floor", "gateway") else ROOT)
        self.process = subprocess.Popen(args, cwd=cwd, env={**os.environ, **(env or {})}, stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def wait_ready(self) -> bool:
        import httpx2

        body = {"model": "m", "input": "hi", "stream": False}
        for _ in range(1500):  # LiteLLM takes minutes to import on a busy machine
            if self.process.poll() is not None:
                return False
            try:
                if httpx2.post(f"{self.url}/responses", json=body, timeout=5).status_code == 200:
                    return True
            except httpx2.TransportError:
                pass
            time.sleep(0.2)
        return False

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def rss_kib(self) -> int:
        from gateway import _rss_kib

        return _rss_kib(self.process.pid)

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _contenders(backend: str, peers: Path | None) -> tuple[list[_Server], dict[str, str]]:
    from so_middleware.gateway._server import free_port

    servers = [
        _Server("floor", [sys.executable, __file__, "--floor", backend, str(port := free_port())], port),
        _Server("gateway", [sys.executable, "-m", "so_middleware.cli", "gateway", "--backend", backend,
                            "--port", str(port := free_port()), "--log-level", "warning"], port),  # as the peers
    ]  # fmt: skip
    missing: dict[str, str] = {}
    if peers is None:
        missing = {"litellm": "not installed", "open-responses-server": "not installed"}
        return servers, missing
    # custom_openai/: an OpenAI-compatible server without a Responses config of LiteLLM's, so /v1/responses
    # goes through its Chat Completions bridge (openai/ and hosted_vllm/ send it to the backend's /v1/responses)
    config = ROOT / ".venv-peers" / "litellm.yaml"
    config.write_text("model_list:\n" + "".join(
        f"  - model_name: {name}\n    litellm_params:\n      model: custom_openai/{name}\n      api_base: {backend}\n"
        "      api_key: none\n" for name in ("m", "hold")))  # fmt: skip
    port = free_port()
    if "--no-litellm" in sys.argv:
        missing["litellm"] = LITELLM_SKIPPED
    else:
        servers.append(_Server("litellm", [str(peers.parent / "litellm"), "--config", str(config), "--port", str(port)],
                               port, {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
                                "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"}))  # fmt: skip
    port = free_port()
    servers.append(_Server("open-responses-server", [str(peers), "-m", "uvicorn",
                           "open_responses_server.api_controller:app", "--port", str(port), "--log-level", "warning"],
                           port, {"OPENAI_BASE_URL_INTERNAL": backend.removesuffix("/v1"),
                                  "OPENAI_BASE_URL": f"http://127.0.0.1:{port}"}))  # fmt: skip
    return servers, missing


# ---------------------------------------------------------------- the load


async def _requests(url: str, body: dict[str, Any], concurrent: int, total: int) -> int:
    """`total` requests, `concurrent` at once, every byte read; returns how many answered 200 in full."""
    import httpx2

    ok = 0
    limits = httpx2.Limits(max_connections=concurrent + 10, max_keepalive_connections=concurrent + 10)
    async with httpx2.AsyncClient(base_url=url, limits=limits, timeout=120) as client:

        async def one() -> None:
            nonlocal ok
            async with client.stream("POST", "/responses", json=body) as reply:
                data = b"".join([chunk async for chunk in reply.aiter_bytes()])
            streamed = body.get("stream")
            if reply.status_code == 200 and (b"response.completed" in data if streamed else b'"output"' in data):
                ok += 1

        async def worker(count: int) -> None:
            for _ in range(count):
                await one()

        await asyncio.gather(*(worker(total // concurrent) for _ in range(concurrent)))
    return ok


def _cpu_row(
    servers: list[_Server], body: dict[str, Any], concurrent: int, per_round: int, rounds: int
) -> dict[str, Any]:
    cpu = dict.fromkeys((s.name for s in servers), 0.0)
    done = dict.fromkeys(cpu, 0)
    failed = dict.fromkeys(cpu, 0)
    for server in servers:  # warm-up: connections, imports, caches
        asyncio.run(_requests(server.url, body, min(concurrent, 8), min(concurrent, 8) * 2))
    for _ in range(rounds):
        for server in servers:
            before = server.cpu_s()
            ok = asyncio.run(_requests(server.url, body, concurrent, per_round))
            cpu[server.name] += server.cpu_s() - before
            done[server.name] += per_round
            failed[server.name] += per_round - ok
    return {name: {"cpu_ms_per_request": 1000 * cpu[name] / done[name], "requests": done[name],
                   "failed": failed[name]} for name in cpu}  # fmt: skip


async def _held(server: _Server) -> dict[str, Any]:
    import httpx2

    body = {"model": "hold", "input": "hi", "stream": True, "store": False}
    limits = httpx2.Limits(max_connections=HELD + 10)
    async with httpx2.AsyncClient(base_url=server.url, limits=limits, timeout=120) as client:
        await asyncio.sleep(0.5)
        before = server.rss_kib()
        opened = asyncio.Event()
        count = 0

        async def hold() -> None:
            nonlocal count
            async with client.stream("POST", "/responses", json=body) as reply:
                async for _ in reply.aiter_bytes():  # the first bytes: the stream is open
                    count += 1
                    if count == HELD:
                        opened.set()
                    await asyncio.sleep(3600)

        tasks = [asyncio.create_task(hold()) for _ in range(HELD)]
        try:
            await asyncio.wait_for(opened.wait(), timeout=120)
        except (TimeoutError, asyncio.TimeoutError):
            return {"kib_per_open_stream": None, "note": f"only {count} of {HELD} streams sent a first byte"}
        finally:
            await asyncio.sleep(0.5)
            after = server.rss_kib()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return {"rss_before_kib": before, "rss_open_kib": after, "kib_per_open_stream": (after - before) / HELD}


def _rss_row(servers: list[_Server], total: int, peer_total: int, result: dict[str, Any]) -> dict[str, Any]:
    """RSS after each tenth of the requests (saved as it goes: a long run cut short keeps its trend)."""
    body = {"model": "m", "input": "hi", "stream": True}  # no `store`: the default settings
    rows: dict[str, Any] = result.setdefault("rss_progress", {})
    for server in sorted(servers, key=lambda s: s.name == "gateway"):  # the long one last
        count = total if server.name == "gateway" else peer_total
        steps: list[tuple[int, int]] = []
        for _ in range(10):
            asyncio.run(_requests(server.url, body, 16, count // 10))
            steps.append(((len(steps) + 1) * (count // 10), server.rss_kib()))
            early, late = steps[0][1], steps[-1][1]
            rows[server.name] = {"requests": steps[-1][0], "rss_after_10pct_kib": early, "rss_end_kib": late,
                                 "growth": (late - early) / early, "steps": steps}  # fmt: skip
            _save(result)
    return rows


def _save(result: dict[str, Any]) -> None:
    from _common import write_json

    write_json("gateway_passthrough.json", {**result, "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                            "load_average": os.getloadavg(), "cpus": os.cpu_count()})  # fmt: skip


def _peer_versions(peers: Path | None) -> dict[str, str]:
    if peers is None:
        return {}
    code = "import importlib.metadata as m; print(m.version('litellm'), m.version('open-responses-server'))"
    found = subprocess.run([str(peers), "-c", code], capture_output=True, text=True).stdout.split()
    return dict(zip(("litellm", "open-responses-server"), found, strict=False))


def run(
    quick: bool = False,
    rss_requests: int = 100_000,
    only: set[str] | None = None,
    previous: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Measure every row (or the rows in `only`, kept beside `previous`'s others); returns the result dict."""
    peers = _peers_python()
    backend = subprocess.Popen([sys.executable, __file__, "--backend"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, cwd=ROOT)  # fmt: skip
    assert backend.stdout is not None
    backend_url = f"http://127.0.0.1:{backend.stdout.readline().strip()}/v1"
    servers, missing = _contenders(backend_url, peers)
    try:
        ready = []
        for server in servers:
            if server.wait_ready():
                ready.append(server)
            else:
                missing[server.name] = "did not start or did not answer a plain request"
                server.stop()
        rounds = 2 if quick else 5
        streamed = {"model": "m", "input": "hi", "stream": True, "store": False}
        plain = {"model": "m", "input": "hi", "store": False}
        result: dict[str, Any] = {**(previous or {}), "not_run": missing}
        rows = {
            "stream_1": lambda: _cpu_row(ready, streamed, 1, 20 if quick else 100, rounds),
            "stream_64": lambda: _cpu_row(ready, streamed, 64, 128 if quick else 320, rounds),
            "plain": lambda: _cpu_row(ready, plain, 8, 40 if quick else 400, rounds),
            "memory": lambda: {server.name: asyncio.run(_held(server)) for server in ready},
            "rss": lambda: _rss_row(ready, rss_requests, min(rss_requests, 2_000), result),
        }
        for name, measure in rows.items():  # each row is written as soon as it is measured
            if only is not None and name not in only:
                continue
            result[name] = measure()
            when = {"at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_average": os.getloadavg()}
            result.setdefault("row_measured", {})[name] = when
            _save(result)
    finally:
        for server in servers:
            server.stop()
        if backend.stdin is not None:
            backend.stdin.close()
        backend.terminate()
    return {**result, "not_run": missing, "pieces_per_stream": PIECES, "held_streams": HELD,
            "peer_versions": _peer_versions(peers), "cpus": os.cpu_count(),
            "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_average": os.getloadavg()}  # fmt: skip


NAMES = ("floor", "gateway", "litellm", "open-responses-server")
TARGETS = {"stream_1": 1.3, "stream_64": 1.3, "plain": 1.3}


def table(data: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md table of a result: one row per measure, one column per contender."""

    def cpu(row: str, name: str) -> str:
        found = data[row].get(name)
        if found is None:
            return f"not run ({data['not_run'].get(name, 'absent')})"
        if found["failed"]:
            return f"cannot ({found['failed']} of {found['requests']} not answered in full)"
        ratio = found["cpu_ms_per_request"] / data[row]["floor"]["cpu_ms_per_request"]
        return f"{found['cpu_ms_per_request']:.2f} ms ({ratio:.2f}x)"

    def memory(name: str) -> str:
        found = data["memory"].get(name)
        if found is None:
            return "not run"
        return found.get("note") or f"{found['kib_per_open_stream']:.0f} KiB"

    def rss(name: str) -> str:
        found = (data.get("rss") or data.get("rss_progress", {})).get(name)  # a run cut short: its progress
        if found is None:
            return "not run"
        return (f"{found['growth']:+.1%} over {found['requests']:,} ({found['rss_after_10pct_kib'] / 1024:.1f} to "
                f"{found['rss_end_kib'] / 1024:.1f} MiB)")  # fmt: skip

    lines = ["| measure | " + " | ".join(NAMES) + " | target (gateway) |", "|---|" + "---:|" * (len(NAMES) + 1)]
    labels = {"stream_1": "CPU per streamed request, 1 stream", "stream_64": "CPU per streamed request, 64 streams",
              "plain": "CPU per plain request (8 at once)"}  # fmt: skip
    for row, label in labels.items():
        lines.append(f"| {label} | " + " | ".join(cpu(row, n) for n in NAMES) + f" | <= {TARGETS[row]}x the floor |")
    lines.append("| memory per open stream | " + " | ".join(memory(n) for n in NAMES) + " | <= 48 KiB |")
    lines.append("| RSS growth, from 10% of the requests to the end | " + " | ".join(rss(n) for n in NAMES) +
                 " | within 5% |")  # fmt: skip
    return lines


def side_by_side(trees: dict[str, Path], pairs: int) -> None:
    """Checkouts side by side (`--base`): the floor and one gateway per checkout (run from it) in
    front of one backend; per pair, each row's rounds go through every server in turn (the order
    turns between pairs); the gateways' CPU per request as a ratio to the floor's."""
    from so_middleware.gateway._server import free_port

    backend = subprocess.Popen([sys.executable, __file__, "--backend"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, cwd=ROOT)  # fmt: skip
    assert backend.stdout is not None
    backend_url = f"http://127.0.0.1:{backend.stdout.readline().strip()}/v1"
    servers = [_Server("floor", [sys.executable, __file__, "--floor", backend_url, str(port := free_port())], port)]
    for name, tree in trees.items():
        command = [sys.executable, "-m", "so_middleware.cli", "gateway", "--backend", backend_url,
                   "--port", str(port := free_port()), "--log-level", "warning"]  # fmt: skip
        servers.append(_Server(name, command, port, {"PYTHONPATH": str(tree)}, cwd=tree))
    streamed = {"model": "m", "input": "hi", "stream": True, "store": False}
    plain = {"model": "m", "input": "hi", "store": False}
    rows = {"streamed, 64 at once": (streamed, 64, 320), "plain, 8 at once": (plain, 8, 400)}
    print("| pair | row | floor CPU ms/request | " + " | ".join(f"{name} ÷ floor" for name in trees) + " |")
    print("|---|---|---|" + "---|" * len(trees))
    try:
        if not all(server.wait_ready() for server in servers):
            raise SystemExit("a server did not start")
        for pair in range(pairs):
            turn = pair % len(servers)
            order = servers[turn:] + servers[:turn]
            for row, (body, concurrent, per_round) in rows.items():
                found = _cpu_row(order, body, concurrent, per_round, 1)
                floor = found["floor"]["cpu_ms_per_request"]
                ratios = " | ".join(f"{found[name]['cpu_ms_per_request'] / floor:.2f}×" for name in trees)
                print(f"| {pair + 1} | {row} | {floor:.2f} | {ratios} |", flush=True)
    finally:
        for server in servers:
            server.stop()
        backend.terminate()
        backend.wait(timeout=20)


if __name__ == "__main__":
    if "--base" in sys.argv:  # --base CHECKOUT [CHECKOUT ...] [--pairs N]
        bases = sys.argv[sys.argv.index("--base") + 1 :]
        pairs = int(bases[bases.index("--pairs") + 1]) if "--pairs" in bases else 3
        bases = bases[: bases.index("--pairs")] if "--pairs" in bases else bases
        side_by_side({"head": ROOT, **{base: Path(base).resolve() for base in bases}}, pairs)
        sys.exit(0)
    if "--table" in sys.argv:
        print("\n".join(table(json.loads((ROOT / "bench" / "results" / "gateway_passthrough.json").read_text()))))
        sys.exit(0)
    if "--backend" in sys.argv:
        asyncio.run(_serve_backend())
    elif "--floor" in sys.argv:
        import uvicorn

        at = sys.argv.index("--floor")
        uvicorn.run(_floor_app(sys.argv[at + 1]), host="127.0.0.1", port=int(sys.argv[at + 2]), log_level="warning")
    else:
        count = int(sys.argv[sys.argv.index("--rss-requests") + 1]) if "--rss-requests" in sys.argv else 100_000
        only = set(sys.argv[sys.argv.index("--rows") + 1].split(",")) if "--rows" in sys.argv else None
        saved = ROOT / "bench" / "results" / "gateway_passthrough.json"
        previous = json.loads(saved.read_text()) if only is not None and saved.exists() else None
        data = run(quick="--quick" in sys.argv, rss_requests=count, only=only, previous=previous)
        from _common import write_json

        print(
            write_json(
                "gateway_passthrough.json" if "--quick" not in sys.argv else "gateway_passthrough_quick.json", data
            )
        )
        print(json.dumps(data, indent=2))
