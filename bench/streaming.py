"""Streaming partial parsing: CPU time to stream a large JSON answer, per library, and its growth.

Two JSON documents: `Orders` (a list of orders with nested addresses, line items and ~1 KB
notes) and `Notes` (one long string field), each of 64 KB, 256 KB, 1 MB and 2 MB, are cut into 16-byte pieces; each piece is one Chat
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

`python bench/streaming.py --base CHECKOUT [CHECKOUT ...] [--pairs 3] [--size 262144]` runs this
checkout and others side by side instead: the raw SDK floor and so_middleware of each, per
document, so_middleware's CPU time as a ratio to its own floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from _common import (
    MODEL_ALIAS,
    STREAM_FIXTURE,
    Fixture,
    async_sdk,
    chunks,
    env_label,
    first_stream_chunk,
    full_chain,
    log,
    loglog_slope,
    median,
    mock_transport,
    otel_providers,
    python_for,
    sse_body,
)
from ab_overhead import in_checkout
from pydantic import BaseModel

CHUNK = 16
SIZES = (64 * 1024, 256 * 1024, 1024 * 1024, 2048 * 1024)
DOCUMENTS = ("orders", "long string")
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


class Notes(BaseModel):
    title: str
    notes: str


def build_string_document(target: int) -> str:
    """A `Notes` JSON document of about `target` bytes, nearly all of it one string (`notes`)."""
    line = "Deliver to the back door; call first. "
    text = (line * (target // len(line) + 1))[: max(target - 40, 0)]
    return json.dumps({"title": "Delivery notes", "notes": text})


def document_of(kind: str, target: int) -> tuple[str, type[BaseModel], int]:
    """(the JSON text, its model, the count the final value must show) for a document kind."""
    if kind == "orders":
        text = build_document(target)
        return text, Orders, len(json.loads(text)["orders"])
    text = build_string_document(target)
    return text, Notes, len(json.loads(text)["notes"])


def _count(value: Any) -> int:
    return len(value["orders"] if "orders" in value else value["notes"]) if isinstance(value, dict) else 0


def _count_model(value: Any) -> int:
    return len(value.orders) if isinstance(value, Orders) else len(value.notes)


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


async def _stream_once(contender: str, body: bytes, model: type[BaseModel], budget: float) -> int:
    """Consume the whole stream once; returns the count of the final value (orders, or characters of notes)."""
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
        return _count(json.loads("".join(text)))
    if contender == "so_middleware":
        tracer_provider, meter_provider, _ = otel_providers()
        client = full_chain(sdk, tracer_provider=tracer_provider, meter_provider=meter_provider)
        updates = client.get_response(
            PROMPT, options={"features": [StructuredOutput(model, mode="native")]}, stream=True
        )
        async for update in updates:
            update.partial_value  # noqa: B018 - what a streaming caller reads
            seen += len(update.text)
            check(seen)
        return _count_model((await updates.get_final_response()).value)
    if contender == "instructor create_partial":
        import instructor

        patched = instructor.from_openai(sdk, mode=instructor.Mode.JSON_SCHEMA)
        last: Any = None
        async for partial in patched.create_partial(
            model=MODEL_ALIAS, messages=messages, response_model=model, max_retries=0
        ):
            last = partial
            check(-1)
        return _count_model(last) if last is not None else 0
    if contender == "OpenAI SDK stream helper":
        async with sdk.chat.completions.stream(model=MODEL_ALIAS, messages=messages, response_format=model) as events:
            async for event in events:
                if event.type == "content.delta":
                    seen += len(event.delta)
                check(seen)
            final = await events.get_final_completion()
        parsed = final.choices[0].message.parsed
        assert parsed is not None
        return _count_model(parsed)
    raise ValueError(f"unknown contender {contender!r}")


def _one(contender: str, kind: str, size: int, budget: float) -> dict[str, Any]:
    """Run inside a subprocess: up to MAX_RUNS timed streams of one contender at one size."""
    template = first_stream_chunk(Fixture.load(STREAM_FIXTURE).body)
    document, model, expected = document_of(kind, size)
    body = sse_body(template, list(chunks(document, CHUNK)))
    warmup = document_of(kind, 4 * 1024)[0]  # imports and first-call set-up stay out of the timed runs
    asyncio.run(_stream_once(contender, sse_body(template, list(chunks(warmup, CHUNK))), model, budget))
    runs: list[float] = []
    while len(runs) < MAX_RUNS and sum(runs) < RUNS_CPU_BUDGET:
        start = time.process_time()
        try:
            count = asyncio.run(_stream_once(contender, body, model, budget))
        except _OverBudget as over:
            return {
                "over_budget": True,
                "budget_s": budget,
                "reached_chars": over.reached,
                "document_chars": len(document),
                "runs_s": runs,
            }
        runs.append(time.process_time() - start)
        assert count == expected, f"{contender} returned a count of {count}, expected {expected}"
    return {
        "over_budget": False,
        "cpu_s": median(runs),
        "runs_s": runs,
        "document_chars": len(document),
        "events": len(document) // CHUNK + 1,
        "sse_bytes": len(body),
    }


def _measure(contender: str, kind: str, size: int, budget: float, tree: Path | None = None) -> dict[str, Any]:
    command, env = in_checkout(tree, python_for(contender), __file__, "--one", contender, kind, str(size), str(budget))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=budget * 4 + 60, check=False, env=env)
    except subprocess.TimeoutExpired:
        return {"over_budget": True, "budget_s": budget, "reached_chars": None, "note": "wall-clock timeout"}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(*, quick: bool) -> dict[str, Any]:
    """Every contender at every size; a contender over budget at one size skips the larger ones."""
    sizes = QUICK_SIZES if quick else SIZES
    budget = 5.0 if quick else 30.0
    documents: dict[str, Any] = {}
    environments = {contender: env_label(python_for(contender)) for contender in CONTENDERS}
    for kind in DOCUMENTS:
        documents[kind] = _document_rows(kind, sizes, budget)
    return {
        "chunk_bytes": CHUNK,
        "sizes": list(sizes),
        "cpu_budget_s": budget,
        "max_runs": MAX_RUNS,
        "environments": environments,
        "documents": documents,
        # the first document's table under the names older reports read
        "rows": documents[DOCUMENTS[0]]["rows"],
        "slopes": documents[DOCUMENTS[0]]["slopes"],
    }


def _document_rows(kind: str, sizes: tuple[int, ...], budget: float) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {}
    for contender in CONTENDERS:
        rows[contender] = []
        for size in sizes:
            if rows[contender] and rows[contender][-1].get("over_budget"):
                rows[contender].append({"size": size, "skipped": True, "over_budget": True, "budget_s": budget})
                continue
            log(f"streaming: {contender}, {kind} document at {size // 1024} KB")
            row = _measure(contender, kind, size, budget)
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
    return {"rows": rows, "slopes": slopes}


def side_by_side(trees: dict[str, Path], pairs: int, size: int) -> None:
    """Checkouts side by side (`--base`): per pair and document, the raw SDK floor and so_middleware
    of each checkout, one after the other (the order turns between pairs); a markdown row each."""
    print(f"| pair | checkout | document ({size // 1024} KB) | raw floor CPU s | so_middleware ÷ raw |")
    print("|---|---|---|---|---|")
    names = list(trees)
    for pair in range(pairs):
        order = names[1:] + names[:1]
        order = order[pair % len(order) :] + order[: pair % len(order)]
        for kind in DOCUMENTS:
            for name in order:
                raw, ours = (_measure(c, kind, size, 30.0, trees[name]) for c in CONTENDERS[:2])
                if "cpu_s" not in raw or "cpu_s" not in ours:
                    print(f"| {pair + 1} | {name} | {kind} | {raw} | {ours} |")
                    continue
                ratio = ours["cpu_s"] / raw["cpu_s"]
                print(f"| {pair + 1} | {name} | {kind} | {raw['cpu_s']:.3f} | {ratio:.2f}× |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", nargs=4, metavar=("CONTENDER", "DOCUMENT", "SIZE", "BUDGET"))
    parser.add_argument("--base", type=Path, nargs="+", help="checkouts to run side by side with this one")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--size", type=int, default=256 * 1024, help="the documents' size with --base")
    args = parser.parse_args()
    if args.base:
        here = Path(__file__).resolve().parent.parent
        side_by_side({"head": here, **{str(tree): tree.resolve() for tree in args.base}}, args.pairs, args.size)
        raise SystemExit(0)
    if args.one is None:
        parser.error("--one or --base is required")
    name, kind, size_text, budget_text = args.one
    print(json.dumps(_one(name, kind, int(size_text), float(budget_text))))
