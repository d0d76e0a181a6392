"""Per-call overhead: the same recorded call through the raw SDK, our chain and instructor.

Every contender talks to an in-process `httpx2.MockTransport` that answers with a body recorded
once from the real llama-server (`record_fixtures`), so the figures measure client-side work
only: building the request, the SDK's parsing, and whatever a library adds on top. The
contenders share one `openai.AsyncOpenAI` client class and one transport kind, and the runs are
interleaved (run 1 of every contender, then run 2, ...) so that drift on a busy machine hits
all of them alike.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
from _common import (
    CHAT_FIXTURE,
    MODEL_ALIAS,
    PROMPT,
    STREAM_FIXTURE,
    Fixture,
    Person,
    async_sdk,
    env_label,
    full_chain,
    log,
    median,
    mock_transport,
    otel_providers,
    python_for,
)

Call = Callable[[], Awaitable[Any]]


class _RecordingTransport(httpx2.AsyncBaseTransport):
    """Passes requests to the real server and keeps each request body and response body."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.exchanges: list[tuple[bytes, str, bytes]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        self.exchanges.append((request.content, response.headers.get("content-type", ""), body))
        return httpx2.Response(response.status_code, headers=response.headers, content=body)


def record_fixtures(base_url: str) -> None:
    """Record one structured call and one structured stream from the real llama-server at `base_url`."""
    import json

    from so_middleware import StructuredOutput

    async def record() -> None:
        transport = _RecordingTransport()
        client = full_chain(async_sdk(transport, base_url=base_url))
        options = {
            "temperature": 0,
            "seed": 7,
            "max_tokens": 128,
            "features": [StructuredOutput(Person, mode="native")],
        }
        await client.get_response(PROMPT, options=options)
        request, content_type, body = transport.exchanges[-1]
        note = "recorded by bench/overhead.py from the local llama-server (SmolLM2-135M), native strategy"
        Fixture(json.loads(request), content_type, body).save(CHAT_FIXTURE, note=note)
        options["features"] = [StructuredOutput(Person, mode="native")]
        stream = client.get_response(PROMPT, options=options, stream=True)
        async for _ in stream:
            pass
        await stream.get_final_response()
        request, content_type, body = transport.exchanges[-1]
        Fixture(json.loads(request), content_type, body).save(STREAM_FIXTURE, note=note + ", streamed")

    asyncio.run(record())
    log(f"recorded {CHAT_FIXTURE.name} and {STREAM_FIXTURE.name}")


# ---------------------------------------------------------------------------- contenders


def _response_format(request: dict[str, Any]) -> dict[str, Any]:
    return dict(request["response_format"])


INSTRUCTOR_ROWS = {
    False: ("raw SDK `create` (instructor's env)", "instructor JSON_SCHEMA `create`"),
    True: ("raw SDK `create(stream=True)` (instructor's env)", "instructor JSON_SCHEMA `create_partial`"),
}


def _contenders(stream: bool, *, instructor_env: bool = False) -> dict[str, Call]:
    """name -> a zero-argument coroutine function making one call (each with its own SDK client).

    `instructor_env`: instructor and the raw SDK only (run in instructor's environment, whose
    openai is older); otherwise every other contender (run in the test environment)."""
    from so_middleware import StructuredOutput, with_structured_output
    from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient

    fixture = Fixture.load(STREAM_FIXTURE if stream else CHAT_FIXTURE)
    messages = [{"role": "user", "content": PROMPT}]
    response_format = _response_format(fixture.request)

    def sdk() -> Any:
        return async_sdk(mock_transport(fixture.content_type, fixture.body))

    raw = sdk()
    raw_validated = sdk()
    tracer_provider, meter_provider, exporter = otel_providers()
    chain = full_chain(sdk(), tracer_provider=tracer_provider, meter_provider=meter_provider)
    structured_only = with_structured_output(OpenAIChatClient(sdk(), MODEL_ALIAS, capabilities=LLAMA_SERVER))
    patched: Any = None
    if instructor_env:
        import instructor

        patched = instructor.from_openai(sdk(), mode=instructor.Mode.JSON_SCHEMA)
    helper = sdk()
    options = {"temperature": 0, "seed": 7}

    def ours_options() -> dict[str, Any]:
        return {**options, "features": [StructuredOutput(Person, mode="native")]}

    if not stream:

        async def raw_call() -> Any:
            return await raw.chat.completions.create(
                model=MODEL_ALIAS, messages=messages, response_format=response_format, **options
            )

        async def raw_validated_call() -> Any:
            completion = await raw_validated.chat.completions.create(
                model=MODEL_ALIAS, messages=messages, response_format=response_format, **options
            )
            return Person.model_validate_json(completion.choices[0].message.content)

        async def chain_call() -> Any:
            exporter.clear()
            return (await chain.get_response(PROMPT, options=ours_options())).value

        async def structured_call() -> Any:
            return (await structured_only.get_response(PROMPT, options=ours_options())).value

        async def instructor_call() -> Any:
            return await patched.create(
                model=MODEL_ALIAS, messages=messages, response_model=Person, max_retries=2, **options
            )

        if instructor_env:
            return dict(zip(INSTRUCTOR_ROWS[stream], (raw_call, instructor_call), strict=True))
        return {
            "raw SDK `create`": raw_call,
            "raw SDK `create` + `model_validate_json`": raw_validated_call,
            "so_middleware structured output only": structured_call,
            "so_middleware full chain (telemetry+retries+SO)": chain_call,
        }

    async def raw_stream() -> Any:
        events = await raw.chat.completions.create(
            model=MODEL_ALIAS, messages=messages, response_format=response_format, stream=True, **options
        )
        count = 0
        async for _ in events:
            count += 1
        return count

    async def raw_validated_stream() -> Any:
        events = await raw_validated.chat.completions.create(
            model=MODEL_ALIAS, messages=messages, response_format=response_format, stream=True, **options
        )
        text = []
        async for chunk in events:
            if chunk.choices and chunk.choices[0].delta.content:
                text.append(chunk.choices[0].delta.content)
        return Person.model_validate_json("".join(text))

    async def chain_stream() -> Any:
        exporter.clear()
        updates = chain.get_response(PROMPT, options=ours_options(), stream=True)
        async for update in updates:
            update.partial_value  # noqa: B018 - reading it is what a streaming caller does
        return (await updates.get_final_response()).value

    async def structured_stream() -> Any:
        updates = structured_only.get_response(PROMPT, options=ours_options(), stream=True)
        async for update in updates:
            update.partial_value  # noqa: B018
        return (await updates.get_final_response()).value

    async def instructor_stream() -> Any:
        last = None
        async for partial in patched.create_partial(
            model=MODEL_ALIAS, messages=messages, response_model=Person, max_retries=2, **options
        ):
            last = partial
        return last

    async def helper_stream() -> Any:
        async with helper.chat.completions.stream(
            model=MODEL_ALIAS, messages=messages, response_format=Person, **options
        ) as events:
            async for _ in events:
                pass
            final = await events.get_final_completion()
        return final.choices[0].message.parsed

    if instructor_env:
        return dict(zip(INSTRUCTOR_ROWS[stream], (raw_stream, instructor_stream), strict=True))
    return {
        "raw SDK `create(stream=True)`": raw_stream,
        "raw SDK stream + `model_validate_json`": raw_validated_stream,
        "so_middleware structured output only": structured_stream,
        "so_middleware full chain (telemetry+retries+SO)": chain_stream,
        "OpenAI SDK `chat.completions.stream` helper": helper_stream,
    }


async def _measure(calls: dict[str, Call], *, runs: int, per_run: int, warmup: int) -> dict[str, list[float]]:
    """CPU seconds per call of each run, for each contender (runs interleaved across contenders)."""
    for call in calls.values():
        result = None
        for _ in range(warmup):
            result = await call()
        assert result is not None
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            start = time.process_time()  # CPU time: what the call costs, robust to a loaded machine
            for _ in range(per_run):
                await call()
            timings[name].append((time.process_time() - start) / per_run)
    return timings


def _instructor_timings(stream: bool, runs: int, per_run: int, warmup: int) -> dict[str, list[float]]:
    """instructor's rows, measured in its own environment (a subprocess of BENCH_PYTHON)."""
    command = [python_for("instructor"), __file__, str(int(stream)), str(runs), str(per_run), str(warmup)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        log(f"overhead: instructor's environment failed: {done.stderr.strip()[-500:]}")
        return {}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(*, quick: bool) -> dict[str, Any]:
    """Measure both modes; returns the JSON-ready result."""
    runs, per_run, warmup = (3, 40, 5) if quick else (5, 400, 30)
    result: dict[str, Any] = {
        "runs": runs,
        "calls_per_run": per_run,
        "warmup_calls": warmup,
        "modes": {},
        "environments": {"test": env_label(sys.executable), "instructor": env_label(python_for("instructor"))},
    }
    for stream in (False, True):
        mode = "streaming" if stream else "non-streaming"
        log(f"overhead: {mode}, {runs} runs x {per_run} calls per contender")
        timings = asyncio.run(_measure(_contenders(stream), runs=runs, per_run=per_run, warmup=warmup))
        names = list(timings)
        base = median(timings[names[0]])
        theirs = _instructor_timings(stream, runs, per_run, warmup)
        rows = []
        for name in names + list(theirs):
            own_env = name in timings
            per_call = median(timings[name] if own_env else theirs[name])
            raw = base if own_env else median(theirs[INSTRUCTOR_ROWS[stream][0]])
            rows.append(
                {
                    "contender": name,
                    "environment": "test" if own_env else "instructor",
                    "median_us_per_call": per_call * 1e6,
                    "calls_per_s": 1.0 / per_call,
                    "overhead_us_vs_raw": (per_call - raw) * 1e6,
                    "ratio_to_raw": per_call / raw,
                    "runs_us_per_call": [t * 1e6 for t in (timings[name] if own_env else theirs[name])],
                }
            )
        result["modes"][mode] = rows
    fixture = Fixture.load(STREAM_FIXTURE)
    result["stream_events"] = fixture.body.decode().count("data: ")
    result["chat_body_bytes"] = len(Fixture.load(CHAT_FIXTURE).body)
    return result


if __name__ == "__main__":  # instructor's rows, in its environment: STREAM RUNS PER_RUN WARMUP
    stream_flag, runs_text, per_run_text, warmup_text = sys.argv[1:5]
    calls = _contenders(bool(int(stream_flag)), instructor_env=True)
    found = asyncio.run(_measure(calls, runs=int(runs_text), per_run=int(per_run_text), warmup=int(warmup_text)))
    print(json.dumps(found))
