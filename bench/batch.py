"""Many inputs: items per second for 1,000 inputs at concurrency 1, 8 and 64, and Ray's overhead.

    python bench/batch.py                 # writes bench/results/batch.json and prints a table
    python bench/batch.py --items 200 --no-ray   # a quick run

The server is a small asyncio HTTP/1.1 server in its own process on 127.0.0.1, answering each
Chat Completions request `item N` with `{"n": N, "word": "wN"}` after `--delay` seconds (a
stand-in for the model's latency). Contenders, each on a fresh SDK client, one after the other:

- `extract_many`: `so_middleware.batch.extract_many(adapter, items, Row, concurrency=c)` (limits,
  retries, structured output and validation; no output file);
- `gather + semaphore`: hand-written `asyncio.gather` over the raw SDK's `create` with a
  `json_schema` response format under an `asyncio.Semaphore(c)`, then `Row.model_validate_json`.

Ray: 200 rows through `extract_dataset` on a local instance (`ray.init(num_cpus=2)`, 2 actors with
8 calls each) against `extract_many` at concurrency 16 on the same rows; `ray.init` is timed apart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


class Row(BaseModel):
    n: int
    word: str


# ---------------------------------------------------------------------------- the loopback server


async def _serve(delay: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                headers = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in headers.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                body = await reader.readexactly(length) if length else b""
                found = re.search(rb"item (\d+)", body)
                n = int(found.group(1)) if found else 0
                await asyncio.sleep(delay)
                completion = {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": json.dumps({"n": n, "word": f"w{n}"})},
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                payload = json.dumps(completion).encode()
                head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n"
                writer.write(head.encode() + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or the server is stopping
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        stdin_closed = asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await asyncio.wait_for(stdin_closed, timeout=3600)  # stops when the parent closes our stdin


def start_server(delay: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--delay", str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}/v1"


# ---------------------------------------------------------------------------- contenders


async def ours(base_url: str, items: int, concurrency: int) -> float:
    import openai

    from so_middleware.batch import extract_many
    from so_middleware.openai import OpenAIChatClient

    async with openai.AsyncOpenAI(base_url=base_url, api_key="bench") as sdk:
        started = time.perf_counter()
        run = extract_many(
            OpenAIChatClient(sdk, "m"), [f"item {n}" for n in range(items)], Row, concurrency=concurrency
        )
        ok = sum([result.ok async for result in run])
        elapsed = time.perf_counter() - started
    assert ok == items, f"{items - ok} failed"
    return items / elapsed


async def gather(base_url: str, items: int, concurrency: int) -> float:
    import openai

    schema = {"type": "json_schema", "json_schema": {"name": "Row", "schema": Row.model_json_schema(), "strict": True}}
    async with openai.AsyncOpenAI(base_url=base_url, api_key="bench") as sdk:
        semaphore = asyncio.Semaphore(concurrency)

        async def one(n: int) -> Row:
            async with semaphore:
                completion = await sdk.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": f"item {n}"}],
                    response_format=schema,  # type: ignore[arg-type]
                )
                return Row.model_validate_json(completion.choices[0].message.content or "")

        started = time.perf_counter()
        rows = await asyncio.gather(*(one(n) for n in range(items)))
        elapsed = time.perf_counter() - started
    assert len(rows) == items
    return items / elapsed


def ray_overhead(base_url: str, rows: int) -> dict[str, float]:
    import ray
    import ray.data

    from so_middleware.batch import extract_many_sync
    from so_middleware.batch.ray import ClientSpec, extract_dataset
    from so_middleware.openai import OpenAIChatClient

    items = [{"id": f"r{n}", "text": f"item {n}"} for n in range(rows)]
    import openai

    started = time.perf_counter()
    direct = sum(
        r.ok
        for r in extract_many_sync(
            OpenAIChatClient(openai.AsyncOpenAI(base_url=base_url, api_key="b"), "m"), items, Row, concurrency=16
        )
    )
    direct_seconds = time.perf_counter() - started
    started = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parent)}},
    )
    init_seconds = time.perf_counter() - started
    try:
        spec = ClientSpec("openai-chat", "m", base_url=base_url, max_concurrency=8)
        started = time.perf_counter()
        done = sum(
            row["ok"]
            for row in extract_dataset(ray.data.from_items(items), spec, Row, actors=2, batch_size=50).take_all()
        )
        ray_seconds = time.perf_counter() - started
    finally:
        ray.shutdown()
    assert direct == done == rows
    return {
        "rows": rows,
        "extract_many_s": direct_seconds,
        "ray_init_s": init_seconds,
        "ray_map_s": ray_seconds,
        "overhead_s": ray_seconds - direct_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.01, help="the server's latency per request, seconds")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.delay))
        return
    sys.path.insert(0, str(ROOT))
    server, base_url = start_server(args.delay)
    results: dict[str, Any] = {"items": args.items, "server_delay_s": args.delay, "items_per_second": {}}
    try:
        asyncio.run(gather(base_url, 50, 8))  # warm-up: imports and connections
        for concurrency in args.concurrency:
            row = {
                "extract_many": asyncio.run(ours(base_url, args.items, concurrency)),
                "gather + semaphore": asyncio.run(gather(base_url, args.items, concurrency)),
            }
            results["items_per_second"][str(concurrency)] = row
            print(
                f"concurrency {concurrency:>3}: extract_many {row['extract_many']:7.1f} items/s, "
                f"gather + semaphore {row['gather + semaphore']:7.1f} items/s",
                flush=True,
            )
        if not args.no_ray:
            results["ray"] = ray_overhead(base_url, 200)
            print("ray, 200 rows: " + ", ".join(f"{k} {v:.2f}" for k, v in results["ray"].items()), flush=True)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "batch.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"written {RESULTS / 'batch.json'}")


if __name__ == "__main__":
    main()
