"""What the logging, fallback, cache and options layers add to a call, and what a cache hit saves.

Every call goes to a `FakeChatClient` (no HTTP, no model), so the figures are the layers' own
client-side work. Runs are interleaved across the contenders so that drift on a busy machine hits
them alike; each figure is the median per call. Run: `.venv/bin/python bench/small_layers.py`
(add `--quick` for a short run); it prints a Markdown table and writes
`bench/results/small_layers.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import tempfile
import time
from collections.abc import Callable
from typing import Any

from _common import RESULTS, Person, log, median

from so_middleware import (
    MemoryStore,
    StructuredOutput,
    disk_store,
    request_key,
    with_cache,
    with_fallback,
    with_logging,
    with_options,
)
from so_middleware.testing import FakeChatClient, Reply

ANSWER = '{"name": "Ada Lovelace", "age": 36, "city": "London"}'
MESSAGES = ["Ada Lovelace was born in London in 1815 and died at 36. Extract the person."] * 10
SCHEMA = {"name": "Person", "schema": Person.model_json_schema(), "strict": True}
OPTIONS = {"response_format": {"type": "json_schema", "json_schema": SCHEMA}, "temperature": 0}


class NeverHit(MemoryStore):
    """A memory store that stores (copying the entry, as on a real miss) but never answers."""

    def get(self, key: str) -> Any:
        return None


def contenders(directory: str) -> dict[str, Callable[[], Any]]:
    """Each contender makes a fresh client; the cache contenders are warmed by one call first."""
    quiet = logging.getLogger("bench.small_layers")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    quiet.setLevel(logging.DEBUG)  # every record is made and handled (by a handler that drops it)
    fake = lambda: FakeChatClient(Reply(ANSWER, chunk_size=8))  # noqa: E731
    return {
        "bare FakeChatClient": fake,
        "with_options": lambda: with_options(fake(), temperature=0, max_tokens=200),
        "with_logging (records formatted)": lambda: with_logging(fake(), logger=quiet),
        "with_fallback (primary answers)": lambda: with_fallback(fake(), fake()),
        "with_cache miss (memory)": lambda: with_cache(fake(), store=NeverHit()),
        "with_cache hit (memory)": lambda: with_cache(fake()),
        "with_cache hit (disk)": lambda: with_cache(fake(), store=disk_store(directory)),
    }


async def one_call(client: Any, stream: bool) -> float:
    options = OPTIONS
    started = time.perf_counter()
    if stream:
        response_stream = client.get_response(MESSAGES, options=options, stream=True)
        async for _ in response_stream:
            pass
        await response_stream.get_final_response()
    else:
        await client.get_response(MESSAGES, options=options)
    return time.perf_counter() - started


async def measure(runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as directory:
        made = {name: make() for name, make in contenders(directory).items()}
        for stream in (False, True):
            for client in made.values():  # warm-up: fills the caches, imports, first-call costs
                await one_call(client, stream)
            times: dict[str, list[float]] = {name: [] for name in made}
            for _ in range(runs):
                for name, client in made.items():
                    times[name].append(await one_call(client, stream))
            results["stream" if stream else "plain"] = {name: median(values) * 1e6 for name, values in times.items()}
    options = {"features": [StructuredOutput(Person)], "temperature": 0}  # the key also reads the feature's schema
    key_times = []
    for _ in range(runs):
        started = time.perf_counter()
        request_key(MESSAGES, options)
        key_times.append(time.perf_counter() - started)
    results["request_key"] = median(key_times) * 1e6
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    runs = 50 if parser.parse_args().quick else 400
    log(f"small layers: {runs} interleaved runs per contender")
    results = asyncio.run(measure(runs))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "small_layers.json").write_text(json.dumps({"runs": runs, **results}, indent=2) + "\n")
    print("| contender (10 messages, a json_schema response_format, no model) | plain call, µs | streamed call, µs |")
    print("|---|---:|---:|")
    for name in results["plain"]:
        print(f"| {name} | {results['plain'][name]:.0f} | {results['stream'][name]:.0f} |")
    print(f"\n`request_key` of those messages with a StructuredOutput(Person) feature: {results['request_key']:.0f} µs")


if __name__ == "__main__":
    main()
