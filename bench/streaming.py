"""Streaming partial parsing: CPU time to stream a large JSON answer, per library, and its growth.

A JSON document (an `Orders` object: a list of orders with nested addresses, line items and
~1 KB notes) of 64 KB, 256 KB and 1 MB is cut into 16-byte pieces; each piece is one Chat
Completions SSE event (`delta.content`), and the whole event stream is served by an in-process
`httpx2.MockTransport`. All contenders read the very same bytes through the same SDK client class:

- raw SDK: `create(stream=True)`, concatenating the deltas (the floor: SSE and chunk parsing);
- ours: the full chain, `get_response(..., stream=True, options={features: [StructuredOutput(Orders)]})`,
  reading `update.partial_value` on every update;
- instructor: `create_partial(response_model=Orders)` in `Mode.JSON_SCHEMA`, taking every partial;
- OpenAI SDK helper: `chat.completions.stream(response_format=Orders)`, taking every event.

Each (contender, size) runs in its own subprocess and reports CPU seconds (`time.process_time`)
for the whole stream. A contender that passes the CPU budget is stopped where it is and reported
as "> budget" with how much of the document it had reached.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from _common import (
    MODEL_ALIAS,
    STREAM_FIXTURE,
    Fixture,
    async_sdk,
    chunks,
    first_stream_chunk,
    full_chain,
    log,
    loglog_slope,
    median,
    mock_transport,
    otel_providers,
    sse_body,
)
from pydantic import BaseModel

CHUNK = 16
SIZES = (64 * 1024, 256 * 1024, 1024 * 1024)
QUICK_SIZES = (8 * 1024, 32 * 1024)
CONTENDERS = ("raw SDK stream (floor)", "so_middleware", "instructor create_partial", "OpenAI SDK stream helper")
MAX_RUNS = 3
RUNS_CPU_BUDGET = 20.0  # stop adding runs once this much CPU has been spent on one measurement
PROMPT = "List the orders."


class Address(BaseModel):
    street: str
    city: str
    zip: str


class LineItem(BaseModel):
    sku: str
    qty: int
    price: float


class Order(BaseModel):
    id: int
    customer: str
    note: str
    address: Address
    items: list[LineItem]
    total: float


class Orders(BaseModel):
    orders: list[Order]


def build_document(target: int) -> str:
    """An `Orders` JSON document of about `target` bytes (ASCII)."""
    parts: list[str] = []
    size = len('{"orders": []}')
    index = 0
    while size < target:
        order = {
            "id": index,
            "customer": f"Customer {index}",
            "note": ("Deliver to the back door; call first. " * 26)[:1000],
            "address": {"street": f"{index} Long Street", "city": "Oslo", "zip": f"{index % 10000:04d}"},
            "items": [{"sku": f"SKU-{index}-{line}", "qty": line + 1, "price": 9.99 * (line + 1)} for line in range(4)],
            "total": 99.9,
        }
        text = json.dumps(order)
        parts.append(text)
        size += len(text) + 2
        index += 1
    return '{"orders": [' + ", ".join(parts) + "]}"


class _OverBudget(Exception):
    def __init__(self, reached: int) -> None:
        self.reached = reached


async def _stream_once(contender: str, body: bytes, document_size: int, budget: float) -> int:
    """Consume the whole stream once; returns the number of orders seen in the final value."""
    import instructor

    from so_middleware import StructuredOutput

    sdk = async_sdk(mock_transport("text/event-stream", body))
    messages = [{"role": "user", "content": PROMPT}]
    start = time.process_time()
    seen = 0

    def check(reached: int) -> None:
        if time.process_time() - start > budget:
            raise _OverBudget(reached)

    if contender == "raw SDK stream (floor)":
        events = await sdk.chat.completions.create(model=MODEL_ALIAS, messages=messages, stream=True)
        text: list[str] = []
        async for chunk in events:
            if chunk.choices and chunk.choices[0].delta.content:
                text.append(chunk.choices[0].delta.content)
                seen += len(chunk.choices[0].delta.content)
                check(seen)
        return len(json.loads("".join(text))["orders"])
    if contender == "so_middleware":
        tracer_provider, meter_provider, _ = otel_providers()
        client = full_chain(sdk, tracer_provider=tracer_provider, meter_provider=meter_provider)
        updates = client.get_response(
            PROMPT, options={"features": [StructuredOutput(Orders, mode="native")]}, stream=True
        )
        async for update in updates:
            update.partial_value  # noqa: B018 - what a streaming caller reads
            seen += len(update.text)
            check(seen)
        return len((await updates.get_final_response()).value.orders)
    if contender == "instructor create_partial":
        patched = instructor.from_openai(sdk, mode=instructor.Mode.JSON_SCHEMA)
        last: Any = None
        async for partial in patched.create_partial(
            model=MODEL_ALIAS, messages=messages, response_model=Orders, max_retries=0
        ):
            last = partial
            check(-1)
        return len(last.orders or [])
    if contender == "OpenAI SDK stream helper":
        async with sdk.chat.completions.stream(model=MODEL_ALIAS, messages=messages, response_format=Orders) as events:
            async for event in events:
                if event.type == "content.delta":
                    seen += len(event.delta)
                check(seen)
            final = await events.get_final_completion()
        parsed = final.choices[0].message.parsed
        assert parsed is not None
        return len(parsed.orders)
    raise ValueError(f"unknown contender {contender!r}")


def _one(contender: str, size: int, budget: float) -> dict[str, Any]:
    """Run inside a subprocess: up to MAX_RUNS timed streams of one contender at one size."""
    template = first_stream_chunk(Fixture.load(STREAM_FIXTURE).body)
    document = build_document(size)
    body = sse_body(template, list(chunks(document, CHUNK)))
    expected = len(json.loads(document)["orders"])
    warmup = build_document(4 * 1024)  # imports and first-call set-up stay out of the timed runs
    asyncio.run(_stream_once(contender, sse_body(template, list(chunks(warmup, CHUNK))), len(warmup), budget))
    runs: list[float] = []
    while len(runs) < MAX_RUNS and sum(runs) < RUNS_CPU_BUDGET:
        start = time.process_time()
        try:
            count = asyncio.run(_stream_once(contender, body, len(document), budget))
        except _OverBudget as over:
            return {
                "over_budget": True,
                "budget_s": budget,
                "reached_chars": over.reached,
                "document_chars": len(document),
                "runs_s": runs,
            }
        runs.append(time.process_time() - start)
        assert count == expected, f"{contender} returned {count} orders, expected {expected}"
    return {
        "over_budget": False,
        "cpu_s": median(runs),
        "runs_s": runs,
        "document_chars": len(document),
        "events": len(document) // CHUNK + 1,
        "sse_bytes": len(body),
    }


def _measure(contender: str, size: int, budget: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--one", contender, str(size), str(budget)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=budget * 4 + 60, check=False)
    except subprocess.TimeoutExpired:
        return {"over_budget": True, "budget_s": budget, "reached_chars": None, "note": "wall-clock timeout"}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(*, quick: bool) -> dict[str, Any]:
    """Every contender at every size; a contender over budget at one size skips the larger ones."""
    sizes = QUICK_SIZES if quick else SIZES
    budget = 5.0 if quick else 60.0
    rows: dict[str, list[dict[str, Any]]] = {}
    for contender in CONTENDERS:
        rows[contender] = []
        for size in sizes:
            if rows[contender] and rows[contender][-1].get("over_budget"):
                rows[contender].append({"size": size, "skipped": True, "over_budget": True, "budget_s": budget})
                continue
            log(f"streaming: {contender} at {size // 1024} KB")
            row = _measure(contender, size, budget)
            row["size"] = size
            rows[contender].append(row)
    slopes: dict[str, dict[str, Any]] = {}
    for contender, measured in rows.items():
        done = [r for r in measured if "cpu_s" in r]
        slope = loglog_slope([r["size"] for r in done], [r["cpu_s"] for r in done])
        lower = None
        over = next((r for r in measured if r.get("over_budget") and not r.get("skipped")), None)
        if over is not None and done:
            # the time at the capped size is > budget, so the slope from the last measured size is at least this
            lower = loglog_slope([done[-1]["size"], over["size"]], [done[-1]["cpu_s"], over["budget_s"]])
        slopes[contender] = {"slope_measured": slope, "slope_at_least": lower, "points": len(done)}
    return {
        "chunk_bytes": CHUNK,
        "sizes": list(sizes),
        "cpu_budget_s": budget,
        "max_runs": MAX_RUNS,
        "rows": rows,
        "slopes": slopes,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", nargs=3, metavar=("CONTENDER", "SIZE", "BUDGET"), required=True)
    args = parser.parse_args()
    name, size_text, budget_text = args.one
    print(json.dumps(_one(name, int(size_text), float(budget_text))))
