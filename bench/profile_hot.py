"""Profile the happy path with cProfile: ours only (no instructor), in the test environment.

    python bench/profile_hot.py call        # the full chain, non-streaming, over the recorded body
    python bench/profile_hot.py stream      # the full chain, streaming, over the recorded stream
    python bench/profile_hot.py long 262144 # typed streaming of the orders document of that size
    python bench/profile_hot.py string 262144 # ... of the one-long-string document
    python bench/profile_hot.py count [CHECKOUT ...]  # Python function calls per call: raw, structured, chain

Prints the top entries by own time (tottime) and by cumulative time. `count` prints, for the raw
`create`, structured output alone and the full chain of `bench/overhead.py`, how many Python
functions one call runs in all and in so_middleware: a figure the machine's load cannot move, to
compare checkouts: this one, then each one named.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import subprocess
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


async def _count(calls: int = 50) -> None:
    import overhead

    import so_middleware

    ours = str(Path(so_middleware.__file__).resolve().parent)
    contenders = overhead._contenders(False)
    rows = {
        "raw": contenders["raw SDK `create`"],
        "structured": contenders["so_middleware structured output only"],
        "chain": contenders["so_middleware full chain (telemetry+retries+SO)"],
    }
    print(f"so_middleware from {ours}")
    for name, call in rows.items():
        for _ in range(5):  # first-call set-up out of the count
            await call()
        seen = {"all": 0, "ours": 0}

        def count(frame: object, event: str, arg: object, seen: dict[str, int] = seen) -> None:
            if event == "call":  # Python frames only (a resumed coroutine counts again)
                seen["all"] += 1
                seen["ours"] += frame.f_code.co_filename.startswith(ours)  # type: ignore[attr-defined]

        sys.setprofile(count)
        try:
            for _ in range(calls):
                await call()
        finally:
            sys.setprofile(None)
        print(f"{name}: {seen['all'] / calls:.0f} Python calls per call, {seen['ours'] / calls:.0f} in so_middleware")


def main() -> None:
    kind = sys.argv[1]
    if kind == "count-here":
        asyncio.run(_count())
        return
    if kind == "count":  # this checkout, then each one named
        from ab_overhead import in_checkout

        for tree in [None, *(Path(name).resolve() for name in sys.argv[2:])]:
            command, env = in_checkout(tree, sys.executable, __file__, "count-here")
            print(subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout, flush=True)
        return
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
