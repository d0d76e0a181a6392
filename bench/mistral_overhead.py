"""Per-call CPU of `MistralChatClient` with structured output, against the raw `mistralai` call.

Both sides run the real SDK client (`Mistral(async_client=...)`) over an in-process mock transport
answering one body in Mistral's documented wire format (docs.mistral.ai API reference: a
`ChatCompletionResponse`; streamed, `data:` chunks ending `data: [DONE]`). The raw call sends the
schema as `response_format` json_schema strict and validates the answer with
`Person.model_validate_json`, the work our layer does too. Calls alternate (raw, ours, raw, ...) so
drift and garbage collection on a busy machine hit both alike; the figure is CPU time (`time.process_time`) per
call, and the ratio is ours over raw, side by side in one run.

    .venv/bin/python bench/mistral_overhead.py [--quick] [--calls]

`--calls` also counts the Python function calls of one call on each side (cProfile over 200 calls):
a figure the machine's load cannot move, to compare checkouts side by side.

`mistral_case(stream)` has the shape of a `bench/provider_overhead.py` case (raw and ours calls).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

import httpx2
from _common import PROMPT, Person, median, mock_transport

ANSWER = '{"name": "Ada Lovelace", "age": 36, "city": "London"}'
PIECES = ['{"name": "Ada', ' Lovelace", ', '"age": 36, ', '"city": "Lon', 'don"}']
MODEL = "mistral-small-latest"
OPTIONS = {"temperature": 0, "seed": 7}

Call = Callable[[], Awaitable[Any]]


def _body(stream: bool) -> tuple[str, bytes]:
    envelope = {"id": "cmpl-1", "model": MODEL, "created": 1767225600}
    usage = {"prompt_tokens": 31, "completion_tokens": 17, "total_tokens": 48}
    if not stream:
        message = {"role": "assistant", "content": ANSWER, "tool_calls": None, "prefix": False}
        body = {**envelope, "object": "chat.completion", "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
        return "application/json", json.dumps(body).encode()
    chunks = [{**envelope, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]} for piece in PIECES]  # fmt: skip
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    chunks[-1]["usage"] = usage
    events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return "text/event-stream", events.encode()


def mistral_case(stream: bool) -> tuple[str, Call, Call]:
    """The SDK's name and version, the raw call and ours (each returns the validated `Person`)."""
    from mistralai.client import Mistral

    from so_middleware import StructuredOutput, with_structured_output
    from so_middleware.mistral import MistralChatClient

    content_type, body = _body(stream)

    def sdk() -> Mistral:
        http = httpx2.AsyncClient(transport=mock_transport(content_type, body))
        return Mistral(api_key="bench", server_url="http://bench.invalid", async_client=http)

    raw_sdk = sdk()
    ours = with_structured_output(MistralChatClient(sdk(), MODEL))
    schema = {"name": "Person", "schema": Person.model_json_schema(), "strict": True}
    request: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}],
                               "response_format": {"type": "json_schema", "json_schema": schema},
                               "temperature": 0, "random_seed": 7}  # fmt: skip

    async def raw() -> Any:
        if not stream:
            answer = await raw_sdk.chat.complete_async(**request)
            return Person.model_validate_json(answer.choices[0].message.content)
        text = []
        async for event in await raw_sdk.chat.stream_async(**request):
            if event.data.choices and event.data.choices[0].delta.content:
                text.append(event.data.choices[0].delta.content)
        return Person.model_validate_json("".join(text))

    async def ours_value() -> Any:
        options = {**OPTIONS, "features": [StructuredOutput(Person, mode="native")]}
        if not stream:
            return (await ours.get_response(PROMPT, options=options)).value
        updates = ours.get_response(PROMPT, options=options, stream=True)
        async for update in updates:
            update.partial_value  # noqa: B018 - reading it is what a streaming caller does
        return (await updates.get_final_response()).value

    return f"mistralai {metadata.version('mistralai')}", raw, ours_value


async def _measure(raw: Call, ours: Call, *, runs: int, per_run: int, warmup: int) -> dict[str, float]:
    first_raw, first_ours = await raw(), await ours()
    assert isinstance(first_ours, Person) and first_raw == first_ours, (first_raw, first_ours)
    for call in (raw, ours):
        for _ in range(warmup):
            await call()
    timings: dict[str, list[float]] = {"raw": [], "ours": []}
    for _ in range(runs):
        # Call by call, alternating: the SDK makes pydantic classes on every call, so garbage
        # collection runs often and unevenly; alternating spreads it over both sides alike.
        spent = {"raw": 0.0, "ours": 0.0}
        for _ in range(per_run):
            for side, call in (("raw", raw), ("ours", ours)):
                start = time.process_time()
                await call()
                spent[side] += time.process_time() - start
        for side in spent:
            timings[side].append(spent[side] / per_run)
    return {side: median(values) for side, values in timings.items()}


async def _calls_per_call(call: Call, calls: int = 200) -> float:
    """Python function calls of one `call`, counted by cProfile over `calls` calls after a warm-up."""
    for _ in range(20):
        await call()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        await call()
    profile.disable()
    return pstats.Stats(profile).total_calls / calls  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs of 40 calls (a smoke run)")
    parser.add_argument("--calls", action="store_true", help="also count Python function calls per call")
    args = parser.parse_args()
    runs, per_run, warmup = (3, 40, 5) if args.quick else (7, 200, 30)
    lines = [
        "| SDK | mode | raw SDK call + validation (µs) | so_middleware SO (µs) | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for stream in (False, True):
        sdk, raw, ours = mistral_case(stream)
        measured = asyncio.run(_measure(raw, ours, runs=runs, per_run=per_run, warmup=warmup))
        mode = "stream" if stream else "plain"
        print(json.dumps({"mode": mode, "runs": runs, "calls_per_run": per_run, **measured}))
        raw_us, ours_us = measured["raw"] * 1e6, measured["ours"] * 1e6
        lines.append(f"| {sdk} | {mode} | {raw_us:,.0f} | {ours_us:,.0f} | {ours_us / raw_us:.2f}× |")
        if args.calls:
            counted = [asyncio.run(_calls_per_call(call)) for call in (raw, ours)]
            print(f"{mode}: Python calls per call: raw {counted[0]:,.0f}, ours {counted[1]:,.0f} "
                  f"({counted[1] / counted[0]:.2f}×)")  # fmt: skip
    print("\n".join(lines))


if __name__ == "__main__":
    main()
