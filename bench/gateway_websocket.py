"""The cost of a WebSocket turn: CPU per `response.create` on a socket beside the same gateway's HTTP
streamed request and the floor's (bench/gateway_passthrough.py's backend, floor and servers, each in
its own process), and the gateway's RSS over many socket turns.

- CPU: one client, one turn at a time (a socket kept open for the WebSocket contender; a keep-alive
  HTTP connection for the others), each turn the backend's 50-chunk stream; contenders interleaved
  round by round, each server's own CPU time (utime + stime) divided by the turns it answered.
- RSS: 16 sockets at once, each opened for 100 turns then closed and opened again (so a socket's
  setup and teardown are in the count too), every turn `store: false` continuing the socket's previous
  response (the socket-local state is used and replaced); RSS after each tenth of the turns.

    python bench/gateway_websocket.py [--quick] [--turns 10000]
    # writes bench/results/gateway_websocket.json
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import gateway_passthrough as passthrough  # noqa: E402

TURNS_PER_SOCKET = 100
SOCKETS = 16


async def _socket_turns(url: str, turns: int, chain: bool = False) -> int:
    """`turns` turns on sockets of `TURNS_PER_SOCKET` turns each; returns how many completed."""
    from websockets.asyncio.client import connect

    ok = 0
    while turns > 0:
        async with connect(url, max_size=None) as ws:
            previous: str | None = None
            for _ in range(min(turns, TURNS_PER_SOCKET)):
                body: dict[str, Any] = {"type": "response.create", "model": "m", "input": "hi", "store": False}
                if chain and previous:
                    body["previous_response_id"] = previous
                await ws.send(json.dumps(body))
                while True:
                    event = json.loads(await ws.recv())
                    if event["type"] in ("response.completed", "response.failed", "error"):
                        break
                if event["type"] == "response.completed":
                    ok += 1
                    previous = event["response"]["id"]
                turns -= 1
    return ok


def _ws_url(server: Any) -> str:
    return f"ws://127.0.0.1:{server.port}/v1/responses"


def run(quick: bool = False, turns: int = 10_000) -> dict[str, Any]:
    """Measure both rows; returns the result dict."""
    backend = subprocess.Popen([sys.executable, passthrough.__file__, "--backend"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
    assert backend.stdout is not None
    backend_url = f"http://127.0.0.1:{backend.stdout.readline().strip()}/v1"
    servers, _ = passthrough._contenders(backend_url, None)
    floor, gateway = servers
    try:
        for server in servers:
            assert server.wait_ready(), f"{server.name} did not start"
        streamed = {"model": "m", "input": "hi", "stream": True, "store": False}
        per_round, rounds = (20, 2) if quick else (100, 5)
        contenders = {
            "floor (HTTP)": (floor, lambda: asyncio.run(passthrough._requests(floor.url, streamed, 1, per_round))),
            "gateway (HTTP)": (gateway, lambda: asyncio.run(passthrough._requests(gateway.url, streamed, 1, per_round))),
            "gateway (WebSocket)": (gateway, lambda: asyncio.run(_socket_turns(_ws_url(gateway), per_round))),
        }  # fmt: skip
        cpu = dict.fromkeys(contenders, 0.0)
        failed = dict.fromkeys(contenders, 0)
        for _, measure in contenders.values():  # warm-up
            measure()
        for _ in range(rounds):
            for name, (server, measure) in contenders.items():
                before = server.cpu_s()
                failed[name] += per_round - measure()
                cpu[name] += server.cpu_s() - before
        cpu_row = {name: {"cpu_ms_per_turn": 1000 * cpu[name] / (per_round * rounds), "turns": per_round * rounds,
                          "failed": failed[name]} for name in cpu}  # fmt: skip
        steps: list[tuple[int, int]] = []
        total = 1_000 if quick else turns
        for _ in range(10):

            async def tenth() -> int:
                shares = [total // 10 // SOCKETS] * SOCKETS
                return sum(await asyncio.gather(*(_socket_turns(_ws_url(gateway), n, chain=True) for n in shares)))

            asyncio.run(tenth())
            steps.append(((len(steps) + 1) * (total // 10 // SOCKETS * SOCKETS), gateway.rss_kib()))
        early, late = steps[0][1], steps[-1][1]
        rss = {"turns": steps[-1][0], "rss_after_10pct_kib": early, "rss_end_kib": late,
               "growth": (late - early) / early, "steps": steps}  # fmt: skip
    finally:
        for server in servers:
            server.stop()
        if backend.stdin is not None:
            backend.stdin.close()
        backend.terminate()
    result = {"cpu": cpu_row, "rss": rss, "pieces_per_stream": passthrough.PIECES, "cpus": os.cpu_count(),
              "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_average": os.getloadavg()}  # fmt: skip
    from _common import write_json

    write_json("gateway_websocket.json", result)
    return result


if __name__ == "__main__":
    turns = int(sys.argv[sys.argv.index("--turns") + 1]) if "--turns" in sys.argv else 10_000
    print(json.dumps(run(quick="--quick" in sys.argv, turns=turns), indent=1))
