"""Streaming partial parsing: our incremental parser against re-parsing the buffer per chunk.

Streams a wrapped `list[Order]` document (nested objects, lists, ~1 KB strings) of 64 KB, 256 KB
and 1 MB in 16-byte chunks and measures CPU time (`time.process_time`, median of 3 runs):

- ours: `OutputSchema(list[Order]).partial_parser()`; after every chunk that changed the value
  it reads `.value` and pops completed items (each validated as an `Order`).
- baseline: what the SDKs and other libraries do, `pydantic_core.from_json(buffer,
  allow_partial="trailing-strings")` on the whole buffer after every chunk (untyped dicts).

The baseline is quadratic, so a size whose three runs are predicted to take over a minute is
measured once; `--extrapolate` skips a run predicted over a minute and extrapolates it instead.
The output says which was done for each size. Usage: `python bench/partial_parsing.py [--out bench/results/partial_parsing.json]`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pydantic_core
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from so_middleware.schema import OutputSchema

CHUNK = 16
SIZES = (64 * 1024, 256 * 1024, 1024 * 1024)
RUNS = 3
ONE_RUN_BUDGET_S = 60.0


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


def build_document(target: int) -> str:
    """A `{"response": [order, ...]}` document of about `target` characters."""
    orders: list[str] = []
    size = len('{"response": []}')
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
        orders.append(text)
        size += len(text) + 2
        index += 1
    return '{"response": [' + ", ".join(orders) + "]}"


def chunks_of(text: str) -> list[str]:
    return [text[start : start + CHUNK] for start in range(0, len(text), CHUNK)]


def run_ours(chunks: list[str]) -> int:
    parser = OutputSchema(list[Order]).partial_parser()
    completed = 0
    for chunk in chunks:
        if parser.feed(chunk):
            parser.value  # noqa: B018 - reading it is part of what a streaming caller pays for
        completed += len(parser.pop_completed())
    return completed


def run_baseline(chunks: list[str]) -> int:
    buffer = ""
    value: object = None
    for chunk in chunks:
        buffer += chunk
        value = pydantic_core.from_json(buffer, allow_partial="trailing-strings")
    assert isinstance(value, dict)
    return len(value["response"])


def cpu_time(function: Callable[[list[str]], int], chunks: list[str], runs: int) -> list[float]:
    timings = []
    for _ in range(runs):
        start = time.process_time()
        function(chunks)
        timings.append(time.process_time() - start)
    return timings


def exponent(size_a: int, time_a: float, size_b: int, time_b: float) -> float:
    return math.log(time_b / time_a) / math.log(size_b / size_a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--extrapolate", action="store_true", help="extrapolate a baseline run over a minute")
    args = parser.parse_args()

    documents = {size: build_document(size) for size in SIZES}
    # Correctness first: both parsers must agree on the final value.
    sample = documents[SIZES[0]]
    expected = OutputSchema(list[Order]).validate_json(sample)
    assert run_ours(chunks_of(sample)) == len(expected) == run_baseline(chunks_of(sample))

    rows = []
    for size in SIZES:
        chunks = chunks_of(documents[size])
        ours_runs = cpu_time(run_ours, chunks, RUNS)
        row: dict[str, object] = {
            "size_bytes": len(documents[size].encode()),
            "chunks": len(chunks),
            "ours_cpu_s": statistics.median(ours_runs),
            "ours_runs_s": ours_runs,
        }
        previous = rows[-1] if rows else None
        predicted = None
        if previous is not None:
            slope = 2.0 if len(rows) < 2 else max(1.0, float(str(rows[-1]["baseline_exponent"])))
            predicted = float(str(previous["baseline_cpu_s"])) * (size / SIZES[len(rows) - 1]) ** slope
        if predicted is not None and predicted > ONE_RUN_BUDGET_S and args.extrapolate:
            row.update(baseline_cpu_s=predicted, baseline_runs_s=[], baseline_note="extrapolated, not measured")
        else:
            runs = 1 if predicted is not None and predicted > ONE_RUN_BUDGET_S / RUNS else RUNS
            baseline_runs = cpu_time(run_baseline, chunks, runs)
            note = "median of 3 runs" if runs == RUNS else "measured once (one run predicted over 20 s)"
            row.update(
                baseline_cpu_s=statistics.median(baseline_runs), baseline_runs_s=baseline_runs, baseline_note=note
            )
        row["ratio_baseline_over_ours"] = float(str(row["baseline_cpu_s"])) / float(str(row["ours_cpu_s"]))
        if previous is not None:
            row["ours_exponent"] = exponent(
                SIZES[len(rows) - 1], float(str(previous["ours_cpu_s"])), size, float(str(row["ours_cpu_s"]))
            )
            row["baseline_exponent"] = exponent(
                SIZES[len(rows) - 1], float(str(previous["baseline_cpu_s"])), size, float(str(row["baseline_cpu_s"]))
            )
        else:
            row["ours_exponent"] = row["baseline_exponent"] = None
        rows.append(row)
        print(f"measured {size // 1024} KB", file=sys.stderr, flush=True)

    print(f"\nStreaming a wrapped list[Order] in {CHUNK}-byte chunks; CPU seconds (time.process_time)\n")
    print(f"{'size':>8} {'chunks':>7} {'ours':>9} {'baseline':>10} {'ratio':>8} {'ours exp':>9} {'base exp':>9}  note")
    for row in rows:

        def fmt(value: object) -> str:
            return "-" if value is None else f"{float(str(value)):.2f}"

        print(
            f"{int(str(row['size_bytes'])) // 1024:>6}KB {row['chunks']:>7} {float(str(row['ours_cpu_s'])):>9.3f} "
            f"{float(str(row['baseline_cpu_s'])):>10.3f} {float(str(row['ratio_baseline_over_ours'])):>7.1f}x "
            f"{fmt(row['ours_exponent']):>9} {fmt(row['baseline_exponent']):>9}  {row['baseline_note']}"
        )
    print(
        "\nexp = growth exponent, the log-log slope of CPU time against size from the previous row "
        "(1 = linear, 2 = quadratic). ours = median of 3 runs."
    )

    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result = {
            "benchmark": "partial_parsing",
            "chunk_size": CHUNK,
            "python": sys.version.split()[0],
            "pydantic_core": pydantic_core.__version__,
            "baseline": "pydantic_core.from_json(buffer, allow_partial='trailing-strings') per chunk",
            "ours": "OutputSchema(list[Order]).partial_parser(): feed, read .value when changed, pop_completed",
            "rows": rows,
        }
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
