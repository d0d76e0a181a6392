"""The Responses gateway: what it adds over calling a Chat Completions backend directly.

A loopback fake Chat Completions backend (an asyncio HTTP/1.1 server in its own process) answers
every streamed request with the same SSE body (a role chunk, 20 text chunks, a finish chunk and a
usage chunk). The gateway (`so-middleware gateway --backend ...`, uvicorn, its own process) sits
in front of it. The load generator (this process, httpx2) streams either directly from the
backend (`POST /v1/chat/completions`, `stream: true`) or through the gateway (`POST
/v1/responses`, `stream: true`, `store: false`), reading every event, with 1, 50 and 200 streams
in flight:

- latency: request start to the last event, p50 and p99, and the gateway's added latency (the
  difference of the two percentiles);
- throughput: streams completed per wall-clock second;
- memory per open stream: the gateway process's RSS with 200 streams held open (the backend sends
  one chunk, then holds), minus its RSS before, divided by 200.

    python bench/gateway.py            # prints JSON; bench/run.py --only gateway writes the section
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
LEVELS = (1, 50, 200)
HELD = 200


def _sse_body(pieces: int = 20) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> str:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if usage is None else []
        payload = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": choices}
        if usage is not None:
            payload["usage"] = usage
        return f"data: {json.dumps(payload)}\n\n"

    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({"content": f'"word{i}", '}) for i in range(pieces)]
    parts += [chunk({}, "stop"), chunk({}, usage={"prompt_tokens": 9, "completion_tokens": pieces, "total_tokens": 29})]
    return ("".join(parts) + "data: [DONE]\n\n").encode()


async def _serve(hold: bool) -> None:
    body = _sse_body()
    if not hold:  # the same keep-alive server as the concurrency section, with this SSE body
        import concurrency

        await concurrency._serve(body, "text/event-stream")
        return
    first = body.split(b"\n\n", 1)[0] + b"\n\n"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # one chunk, then the stream stays open until the client goes
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" + first)
        await writer.drain()
        await reader.read()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin


class _Process:
    """A child process started for the run, stopped at the end however the run ends."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, cwd=ROOT)  # fmt: skip

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _backend(hold: bool) -> tuple[_Process, str]:
    backend = _Process(__file__, "--serve", *(["--hold"] if hold else []))
    assert backend.process.stdout is not None
    return backend, f"http://127.0.0.1:{backend.process.stdout.readline().strip()}/v1"


def _gateway(backend_url: str) -> tuple[_Process, str]:
    from so_middleware.gateway._server import free_port

    port = free_port()
    gateway = _Process(
        "-m", "so_middleware.cli", "gateway", "--backend", backend_url, "--port", str(port), "--log-level", "warning"
    )  # no access line per request on the run's terminal
    import httpx2

    for _ in range(300):
        try:
            httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return gateway, f"http://127.0.0.1:{port}/v1"
        except httpx2.TransportError:
            time.sleep(0.1)
    gateway.stop()
    raise RuntimeError("the gateway did not start")


async def _load(url: str, path: str, body: dict[str, Any], concurrent: int, total: int) -> dict[str, Any]:
    import httpx2

    latencies: list[float] = []
    limits = httpx2.Limits(max_connections=concurrent + 10, max_keepalive_connections=concurrent + 10)
    async with httpx2.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        first_measured: list[float] = []

        async def one(measured: bool) -> None:
            started = time.perf_counter()
            async with client.stream("POST", path, json=body) as reply:
                async for _ in reply.aiter_lines():
                    pass
            if measured:
                first_measured.append(started)
                latencies.append(time.perf_counter() - started)

        async def worker(count: int) -> None:
            await one(measured=False)  # warm-up: its connection opens; no pause after it (keep-alive)
            for _ in range(count):
                await one(measured=True)

        await asyncio.gather(*(worker(total // concurrent) for _ in range(concurrent)))
        wall = time.perf_counter() - min(first_measured)
    ordered = sorted(latencies)
    return {
        "streams": len(ordered),
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "streams_per_s": len(ordered) / wall,
    }


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _held_streams(url: str, pid: int) -> dict[str, Any]:
    import httpx2

    body = {"model": "m", "input": "hi", "stream": True, "store": False}
    limits = httpx2.Limits(max_connections=HELD + 10)
    async with httpx2.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        await asyncio.sleep(0.5)
        before = _rss_kib(pid)
        opened = asyncio.Event()
        count = 0

        async def hold() -> None:
            nonlocal count
            async with client.stream("POST", "/responses", json=body) as reply:
                async for line in reply.aiter_lines():
                    if "output_text.delta" in line or "response.in_progress" in line:
                        count += 1
                        if count == HELD:
                            opened.set()
                        await asyncio.sleep(3600)

        tasks = [asyncio.create_task(hold()) for _ in range(HELD)]
        await asyncio.wait_for(opened.wait(), timeout=120)
        await asyncio.sleep(0.5)
        after = _rss_kib(pid)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"open_streams": HELD, "rss_before_kib": before, "rss_open_kib": after,
            "kib_per_open_stream": (after - before) / HELD}  # fmt: skip


def run(quick: bool = False) -> dict[str, Any]:
    """Measure; returns the result dict (bench/run.py writes it to bench/results/gateway.json)."""
    per_level = {1: 40, 50: 500, 200: 1000} if not quick else {1: 10, 50: 100, 200: 200}
    direct_body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    gateway_body = {"model": "m", "input": "hi", "stream": True, "store": False}
    rows = []
    backend, backend_url = _backend(hold=False)
    gateway, gateway_url = _gateway(backend_url)
    try:
        for level in LEVELS:
            total = per_level[level]
            direct = asyncio.run(_load(backend_url, "/chat/completions", direct_body, level, total))
            through = asyncio.run(_load(gateway_url, "/responses", gateway_body, level, total))
            rows.append({"concurrent": level, "direct": direct, "gateway": through,
                         "added_p50_ms": through["p50_ms"] - direct["p50_ms"],
                         "added_p99_ms": through["p99_ms"] - direct["p99_ms"]})  # fmt: skip
    finally:
        gateway.stop()
        backend.stop()
    holding, holding_url = _backend(hold=True)
    gateway, gateway_url = _gateway(holding_url)
    try:
        memory = asyncio.run(_held_streams(gateway_url, gateway.process.pid))
    finally:
        gateway.stop()
        holding.stop()
    return {"rows": rows, "memory": memory, "events_per_stream": 22, "cpus": os.cpu_count(),
            "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_average": os.getloadavg()}  # fmt: skip


if __name__ == "__main__":
    if "--serve" in sys.argv:
        asyncio.run(_serve(hold="--hold" in sys.argv))
    else:
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
