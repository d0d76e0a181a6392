"""Profile the happy path with cProfile: ours only (no instructor), in the test environment.

    python bench/profile_hot.py call        # the full chain, non-streaming, over the recorded body
    python bench/profile_hot.py stream      # the full chain, streaming, over the recorded stream
    python bench/profile_hot.py long 262144 # typed streaming of the orders document of that size
    python bench/profile_hot.py string 262144 # ... of the one-long-string document

Prints the top entries by own time (tottime) and by cumulative time.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    CHAT_FIXTURE,
    PROMPT,
    STREAM_FIXTURE,
    Fixture,
    Person,
    async_sdk,
    chunks,
    first_stream_chunk,
    full_chain,
    mock_transport,
    otel_providers,
    sse_body,
)

from so_middleware import StructuredOutput


async def _calls(kind: str, count: int) -> None:
    fixture = Fixture.load(STREAM_FIXTURE if kind == "stream" else CHAT_FIXTURE)
    tracer_provider, meter_provider, exporter = otel_providers()
    chain = full_chain(
        async_sdk(mock_transport(fixture.content_type, fixture.body)),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    for _ in range(count):
        exporter.clear()
        options = {"temperature": 0, "seed": 7, "features": [StructuredOutput(Person, mode="native")]}
        if kind == "call":
            await chain.get_response(PROMPT, options=options)
        else:
            updates = chain.get_response(PROMPT, options=options, stream=True)
            async for update in updates:
                update.partial_value  # noqa: B018
            await updates.get_final_response()


async def _document(kind: str, size: int) -> None:
    import streaming

    model = streaming.Orders if kind == "long" else streaming.Notes
    document = streaming.build_document(size) if kind == "long" else streaming.build_string_document(size)
    template = first_stream_chunk(Fixture.load(STREAM_FIXTURE).body)
    body = sse_body(template, list(chunks(document, streaming.CHUNK)))
    tracer_provider, meter_provider, _ = otel_providers()
    chain = full_chain(
        async_sdk(mock_transport("text/event-stream", body)),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    updates = chain.get_response("x", options={"features": [StructuredOutput(model, mode="native")]}, stream=True)
    async for update in updates:
        update.partial_value  # noqa: B018
    await updates.get_final_response()


def main() -> None:
    kind = sys.argv[1]
    if kind in ("call", "stream"):
        asyncio.run(_calls(kind, 20))  # warm-up
        run = lambda: asyncio.run(_calls(kind, 400))  # noqa: E731
    else:
        size = int(sys.argv[2])
        run = lambda: asyncio.run(_document(kind, size))  # noqa: E731
    profile = cProfile.Profile()
    profile.runcall(run)
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(18)
    stats.sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
