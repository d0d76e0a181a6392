"""Per-call CPU of each native adapter with structured output, against its raw SDK call.

One case per provider, in `CASES`: a function that builds the provider's raw SDK client and our
adapter (wrapped in `with_structured_output`), both over an in-process mock transport answering
with one body in the provider's documented wire format, and returns the two calls. The raw call
sends the schema in the provider's own spelling and validates the answer with
`Person.model_validate_json`, the work our layer does too. Runs are interleaved (run 1 of every
contender, then run 2, ...) so that drift on a busy machine hits all of them alike; the figure is
CPU time (`time.process_time`) per call, and the ratio is ours over the raw call of the same case.

    .venv/bin/python bench/provider_overhead.py [--quick] [--only openai,gemini] [--instructions | --solo]

With `--instructions` (valgrind installed), each contender is counted instead: machine instructions
per call by callgrind (both threads of a call that runs on a worker thread), collected around 50
calls after 30 uncounted ones, each contender in a process of its own. The load of a shared
machine moves CPU time, not these counts. With `--solo`, each contender is timed in processes of
its own (raw and ours alternating): in one process the contenders share a heap, the caches and the
garbage collector, and a streamed contender came out up to 0.08 higher than alone.

Adding a provider is one function `def _<name>(stream: bool) -> Case` and one line in `CASES`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import httpx
import httpx2
from _common import (
    CHAT_FIXTURE,
    COUNTED_CALLS,
    MODEL_ALIAS,
    PROMPT,
    STREAM_FIXTURE,
    Fixture,
    Person,
    callgrind_count,
    count_under_callgrind,
    median,
    mock_transport,
)

Call = Callable[[], Awaitable[Any]]

ANSWER = '{"name": "Ada Lovelace", "age": 36, "city": "London"}'
PIECES = ['{"name": "Ada', ' Lovelace", ', '"age": 36, ', '"city": "Lon', 'don"}']  # the streamed answer
SCHEMA = Person.model_json_schema()
OPTIONS = {"temperature": 0, "seed": 7}


@dataclass(frozen=True)
class Case:
    """One provider's contenders: its SDK's name and version, the raw call and ours (each returns
    the validated `Person`)."""

    sdk: str
    raw: Call
    ours: Call


def _version(package: str) -> str:
    return f"{package} {metadata.version(package)}"


def _structured() -> dict[str, Any]:
    from so_middleware import StructuredOutput

    return {**OPTIONS, "features": [StructuredOutput(Person, mode="native")]}


async def _ours_value(client: Any, stream: bool) -> Any:
    """What a caller of our layer does: the value, or the stream read to its end, then the value."""
    if not stream:
        return (await client.get_response(PROMPT, options=_structured())).value
    updates = client.get_response(PROMPT, options=_structured(), stream=True)
    async for update in updates:
        update.partial_value  # noqa: B018 - reading it is what a streaming caller does
    return (await updates.get_final_response()).value


def _httpx_mock(content_type: str, body: bytes) -> httpx.MockTransport:
    """`mock_transport` for the SDKs on `httpx` (google-genai, ollama); the OpenAI and Anthropic SDKs use `httpx2`."""
    return httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": content_type}, content=body)
    )


# ---------------------------------------------------------------------------- OpenAI (Chat Completions)


def _openai(stream: bool) -> Case:
    """The llama-server body recorded by `bench/overhead.py` (its fixture), through `openai.AsyncOpenAI`."""
    from _common import async_sdk

    from so_middleware import with_structured_output
    from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient

    fixture = Fixture.load(STREAM_FIXTURE if stream else CHAT_FIXTURE)
    raw_sdk = async_sdk(mock_transport(fixture.content_type, fixture.body))
    ours = with_structured_output(
        OpenAIChatClient(async_sdk(mock_transport(fixture.content_type, fixture.body)), MODEL_ALIAS,
                         capabilities=LLAMA_SERVER)
    )  # fmt: skip
    request = {"model": MODEL_ALIAS, "messages": [{"role": "user", "content": PROMPT}],
               "response_format": fixture.request["response_format"], **OPTIONS}  # fmt: skip

    async def raw() -> Any:
        if not stream:
            completion = await raw_sdk.chat.completions.create(**request)
            return Person.model_validate_json(completion.choices[0].message.content)
        text = []
        async for chunk in await raw_sdk.chat.completions.create(**request, stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                text.append(chunk.choices[0].delta.content)
        return Person.model_validate_json("".join(text))

    return Case(_version("openai"), raw, lambda: _ours_value(ours, stream))


# ---------------------------------------------------------------------------- Anthropic (Messages)


def _anthropic_body(stream: bool) -> tuple[str, bytes]:
    """A Messages answer as docs.anthropic.com/en/api/messages documents it (streamed: the events of
    docs.anthropic.com/en/api/messages-streaming)."""
    usage = {"input_tokens": 31, "output_tokens": 17}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5"}
    if not stream:
        body = {**message, "content": [{"type": "text", "text": ANSWER}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": usage}  # fmt: skip
        return "application/json", json.dumps(body).encode()
    events = [("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None,
                                                                       "usage": {**usage, "output_tokens": 1}}}),
              ("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})]  # fmt: skip
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})
        for p in PIECES
    ]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": 17}}),
               ("message_stop", {"type": "message_stop"})]  # fmt: skip
    text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return "text/event-stream", text.encode()


def _anthropic(stream: bool) -> Case:
    """`anthropic.AsyncAnthropic` with `output_config.format` (json_schema)."""
    import anthropic

    from so_middleware import with_structured_output
    from so_middleware.anthropic import ANTHROPIC_API, AnthropicChatClient

    content_type, body = _anthropic_body(stream)

    def sdk() -> Any:
        client = httpx2.AsyncClient(transport=mock_transport(content_type, body))
        return anthropic.AsyncAnthropic(base_url="http://bench.invalid", api_key="bench", max_retries=0,
                                        http_client=client)  # fmt: skip

    raw_sdk = sdk()
    ours = with_structured_output(
        AnthropicChatClient(sdk(), "claude-haiku-4-5", capabilities=ANTHROPIC_API, discover=False)
    )
    request = {"model": "claude-haiku-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": PROMPT}],
               "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}}  # fmt: skip

    async def raw() -> Any:
        if not stream:
            message = await raw_sdk.messages.create(**request)
            return Person.model_validate_json(message.content[0].text)
        text = []
        async for event in await raw_sdk.messages.create(**request, stream=True):
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                text.append(event.delta.text)
        return Person.model_validate_json("".join(text))

    return Case(_version("anthropic"), raw, lambda: _ours_value(ours, stream))


# ---------------------------------------------------------------------------- Gemini (generateContent)


def _gemini_body(stream: bool) -> tuple[str, bytes]:
    """A `GenerateContentResponse` as ai.google.dev/api/generate-content documents it (streamed: its
    `streamGenerateContent?alt=sse` events, usage on the last)."""
    usage = {"promptTokenCount": 31, "candidatesTokenCount": 17, "totalTokenCount": 48}
    envelope = {"modelVersion": "gemini-2.5-flash", "responseId": "resp-1"}

    def chunk(text: str, last: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
        return {"candidates": [{**candidate, "finishReason": "STOP"} if last else candidate],
                **({"usageMetadata": usage} if last else {}), **envelope}  # fmt: skip

    if not stream:
        return "application/json", json.dumps(chunk(ANSWER, True)).encode()
    events = [chunk(piece, i == len(PIECES) - 1) for i, piece in enumerate(PIECES)]
    return "text/event-stream", "".join(f"data: {json.dumps(e)}\r\n\r\n" for e in events).encode()


def _gemini(stream: bool) -> Case:
    """`google.genai.Client` with `response_json_schema`, on its async side (`client.aio`)."""
    from google import genai

    from so_middleware import with_structured_output
    from so_middleware.google import GeminiChatClient

    content_type, body = _gemini_body(stream)

    def sdk() -> genai.Client:
        http = httpx.AsyncClient(transport=_httpx_mock(content_type, body))
        return genai.Client(api_key="bench", http_options={"base_url": "http://bench.invalid/",
                                                           "httpx_async_client": http})  # fmt: skip

    raw_sdk = sdk()
    ours = with_structured_output(GeminiChatClient(sdk(), "gemini-2.5-flash"))
    config = {"response_mime_type": "application/json", "response_json_schema": SCHEMA, **OPTIONS}

    async def raw() -> Any:
        if not stream:
            response = await raw_sdk.aio.models.generate_content(model="gemini-2.5-flash", contents=PROMPT,
                                                                 config=config)  # fmt: skip
            return Person.model_validate_json(response.text or "")
        text = []
        chunks = await raw_sdk.aio.models.generate_content_stream(model="gemini-2.5-flash", contents=PROMPT,
                                                                  config=config)  # fmt: skip
        async for chunk in chunks:
            text.append(chunk.text or "")
        return Person.model_validate_json("".join(text))

    return Case(_version("google-genai"), raw, lambda: _ours_value(ours, stream))


# ---------------------------------------------------------------------------- Ollama (/api/chat)


def _ollama_body(stream: bool) -> tuple[str, bytes]:
    """An `/api/chat` answer as docs.ollama.com/api/chat documents it (streamed: NDJSON objects, the
    last with `done: true` and the counts)."""
    envelope = {"model": "llama3.2", "created_at": "2026-11-28T10:00:00Z"}
    last = {"done": True, "done_reason": "stop", "total_duration": 4_883_583_458, "load_duration": 1_334_875,
            "prompt_eval_count": 31, "prompt_eval_duration": 342_546_000, "eval_count": 17,
            "eval_duration": 4_535_599_000}  # fmt: skip
    if not stream:
        body = {**envelope, "message": {"role": "assistant", "content": ANSWER}, **last}
        return "application/json", json.dumps(body).encode()
    lines = [{**envelope, "message": {"role": "assistant", "content": piece}, "done": False} for piece in PIECES]
    lines.append({**envelope, "message": {"role": "assistant", "content": ""}, **last})
    return "application/x-ndjson", "".join(json.dumps(line) + "\n" for line in lines).encode()


def _ollama(stream: bool) -> Case:
    """`ollama.AsyncClient` with `format` (the schema object)."""
    import ollama

    from so_middleware import with_structured_output
    from so_middleware.ollama import OllamaChatClient

    content_type, body = _ollama_body(stream)

    def sdk() -> ollama.AsyncClient:
        return ollama.AsyncClient(host="http://bench.invalid", transport=_httpx_mock(content_type, body))

    raw_sdk = sdk()
    ours = with_structured_output(OllamaChatClient(sdk(), "llama3.2"))
    messages = [{"role": "user", "content": PROMPT}]

    async def raw() -> Any:
        if not stream:
            answer = await raw_sdk.chat(model="llama3.2", messages=messages, format=SCHEMA, options=OPTIONS)
            return Person.model_validate_json(answer.message.content or "")
        text = []
        async for chunk in await raw_sdk.chat(model="llama3.2", messages=messages, format=SCHEMA, options=OPTIONS,
                                              stream=True):  # fmt: skip
            text.append(chunk.message.content or "")
        return Person.model_validate_json("".join(text))

    return Case(_version("ollama"), raw, lambda: _ours_value(ours, stream))


# ---------------------------------------------------------------------------- Amazon Bedrock (Converse)


def _bedrock_body(stream: bool) -> tuple[str, bytes]:
    """A `ConverseResponse` as botocore's bedrock-runtime service model declares it (streamed: the
    `ConverseStreamOutput` events, framed as application/vnd.amazon.eventstream)."""
    import sys

    from _common import ROOT

    sys.path.insert(0, str(ROOT / "tests" / "providers" / "bedrock"))  # the stand-in's bodies and framing
    from bedrock_server import event_frame, text_answer, text_events

    if not stream:
        return "application/json", json.dumps(text_answer(ANSWER)).encode()
    return "application/vnd.amazon.eventstream", b"".join(event_frame(event) for event in text_events(PIECES))


class _Raw:
    """The socket side of a botocore response: the whole body in one piece."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        return iter([self.body])

    def close(self) -> None:
        pass


def _bedrock(stream: bool) -> Case:
    """boto3's `bedrock-runtime` client with `outputConfig.textFormat`; boto3 is synchronous, so the
    raw call runs on a worker thread as an async caller must (as our adapter does). The answer comes
    from botocore's documented `before-send` hook, in place of the socket."""
    import anyio
    import boto3
    from botocore.awsrequest import AWSResponse

    from so_middleware import StructuredOutput, with_structured_output
    from so_middleware.bedrock import BEDROCK_NATIVE, BedrockChatClient

    content_type, body = _bedrock_body(stream)
    model = "us.anthropic.claude-haiku-4-5-20251001-v1:0"

    def sdk() -> Any:
        client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="bench",
                              aws_secret_access_key="bench")  # fmt: skip
        answer = lambda request, **_: AWSResponse(request.url, 200, {"content-type": content_type}, _Raw(body))  # noqa: E731
        client.meta.events.register("before-send.bedrock-runtime.*", answer)
        return client

    raw_sdk = sdk()
    ours = with_structured_output(BedrockChatClient(sdk(), model, capabilities=BEDROCK_NATIVE))
    text_format = {"type": "json_schema", "structure": {"jsonSchema": {"schema": json.dumps(SCHEMA), "name": "Person"}}}
    request = {"modelId": model, "messages": [{"role": "user", "content": [{"text": PROMPT}]}],
               "inferenceConfig": {"temperature": 0}, "outputConfig": {"textFormat": text_format}}  # fmt: skip
    options = {"temperature": 0, "features": [StructuredOutput(Person, mode="native")]}  # Converse has no seed

    def converse_stream_text() -> str:
        events = raw_sdk.converse_stream(**request)["stream"]
        return "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e)

    async def raw() -> Any:
        if not stream:
            answer = await anyio.to_thread.run_sync(lambda: raw_sdk.converse(**request))
            return Person.model_validate_json(answer["output"]["message"]["content"][0]["text"])
        return Person.model_validate_json(await anyio.to_thread.run_sync(converse_stream_text))

    async def mine() -> Any:
        if not stream:
            return (await ours.get_response(PROMPT, options=options)).value
        updates = ours.get_response(PROMPT, options=options, stream=True)
        async for update in updates:
            update.partial_value  # noqa: B018 - reading it is what a streaming caller does
        return (await updates.get_final_response()).value

    return Case(_version("boto3"), raw, mine)


CASES: dict[str, Callable[[bool], Case]] = {
    "OpenAI": _openai,
    "Anthropic": _anthropic,
    "Gemini": _gemini,
    "Ollama": _ollama,
    "Bedrock": _bedrock,
}
"""Provider -> its case (a function of `stream`). Each provider's row measures only its own SDK."""


# ---------------------------------------------------------------------------- measuring


async def _measure(cases: dict[str, Case], *, runs: int, per_run: int, warmup: int) -> dict[str, dict[str, float]]:
    """Median CPU seconds per call of each contender, runs interleaved across every case."""
    calls = {(name, side): getattr(case, side) for name, case in cases.items() for side in ("raw", "ours")}
    for name, case in cases.items():  # both sides read the same answer, typed
        raw, ours = await case.raw(), await case.ours()
        assert isinstance(ours, Person) and raw == ours, f"{name}: {raw!r} != {ours!r}"
    for call in calls.values():
        for _ in range(warmup):
            await call()
    timings: dict[tuple[str, str], list[float]] = {key: [] for key in calls}
    for _ in range(runs):
        for key, call in calls.items():
            start = time.process_time()
            for _ in range(per_run):
                await call()
            timings[key].append((time.process_time() - start) / per_run)
    result: dict[str, dict[str, float]] = {name: {} for name in cases}
    for (name, side), values in timings.items():
        result[name][side] = median(values)
    return result


def run(*, quick: bool, only: list[str] | None = None) -> dict[str, Any]:
    """Both modes for every case (or `only` these); the JSON-ready result."""
    runs, per_run, warmup = (3, 40, 5) if quick else (5, 300, 30)
    names = only or list(CASES)
    result: dict[str, Any] = {"runs": runs, "calls_per_run": per_run, "warmup_calls": warmup, "modes": {}}
    for stream in (False, True):
        cases = {name: CASES[name](stream) for name in names}
        measured = asyncio.run(_measure(cases, runs=runs, per_run=per_run, warmup=warmup))
        result["modes"]["stream" if stream else "plain"] = {
            name: {"sdk": cases[name].sdk, **measured[name]} for name in names
        }
    return result


def table(result: dict[str, Any]) -> str:
    """The Markdown table of a result: µs per call of each side and the ratio, per provider and mode."""
    lines = ["| provider | SDK | mode | raw SDK call + validation (µs) | so_middleware SO (µs) | ratio |",
             "|---|---|---|---:|---:|---:|"]  # fmt: skip
    for mode, rows in result["modes"].items():
        for name, row in rows.items():
            raw, ours = row["raw"] * 1e6, row["ours"] * 1e6
            lines.append(f"| {name} | {row['sdk']} | {mode} | {raw:,.0f} | {ours:,.0f} | {ours / raw:.2f}× |")
    return "\n".join(lines)


def _counted_child(name: str, mode: str, side: str) -> None:
    count_under_callgrind(getattr(CASES[name](mode == "stream"), side))


def _instructions(name: str, mode: str, side: str) -> float:
    """Machine instructions per call of one contender, counted in a process of its own."""
    command = [sys.executable, os.path.abspath(__file__), "--child-counted", f"{name},{mode},{side}"]
    return callgrind_count(command)[0]


def instruction_table(names: list[str]) -> str:
    """The Markdown table of instructions per call of each side and the ratio, per provider and mode."""
    lines = [f"machine instructions per call (callgrind, {COUNTED_CALLS} calls counted)", "",
             "| provider | mode | raw SDK call + validation | so_middleware SO | ratio |", "|---|---|---:|---:|---:|"]  # fmt: skip
    for mode in ("plain", "stream"):
        for name in names:
            raw, ours = _instructions(name, mode, "raw"), _instructions(name, mode, "ours")
            lines.append(f"| {name} | {mode} | {raw:,.0f} | {ours:,.0f} | {ours / raw:.3f}× |")
    return "\n".join(lines)


SOLO_ROUNDS = 6
"""Processes per contender in `--solo` (raw and ours alternating)."""


def _timed_child(name: str, mode: str, side: str) -> None:
    """In a process of its own: one contender's median CPU seconds per call, printed (5 runs of
    300 calls after 200 warm-up calls)."""
    call = getattr(CASES[name](mode == "stream"), side)

    async def timed() -> float:
        for _ in range(200):
            await call()
        runs = []
        for _ in range(5):
            start = time.process_time()
            for _ in range(300):
                await call()
            runs.append((time.process_time() - start) / 300)
        return median(runs)

    print(asyncio.run(timed()))


def solo_table(names: list[str]) -> str:
    """The Markdown table of CPU time per call with each contender timed in a process of its own
    (`SOLO_ROUNDS` processes each, raw and ours alternating): no contender shares a heap, a cache or
    a collector with another. The figure is the median over the processes."""
    lines = [f"CPU time per call, each contender in {SOLO_ROUNDS} processes of its own", "",
             "| provider | mode | raw SDK call + validation (µs) | so_middleware SO (µs) | ratio |", "|---|---|---:|---:|---:|"]  # fmt: skip
    for mode in ("plain", "stream"):
        for name in names:
            times: dict[str, list[float]] = {"raw": [], "ours": []}
            for _ in range(SOLO_ROUNDS):
                for side in ("raw", "ours"):
                    command = [sys.executable, os.path.abspath(__file__), "--child-timed", f"{name},{mode},{side}"]
                    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
                    times[side].append(float(done.stdout.split()[-1]))
            raw, ours = median(times["raw"]) * 1e6, median(times["ours"]) * 1e6
            lines.append(f"| {name} | {mode} | {raw:,.0f} | {ours:,.0f} | {ours / raw:.3f}× |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs of 40 calls (a smoke run)")
    parser.add_argument("--only", help="comma-separated providers, of: " + ", ".join(CASES))
    parser.add_argument("--instructions", action="store_true", help="count instructions per call (valgrind)")
    parser.add_argument("--solo", action="store_true", help="time each contender in processes of its own")
    parser.add_argument("--child-counted", help=argparse.SUPPRESS)
    parser.add_argument("--child-timed", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_counted:
        _counted_child(*args.child_counted.split(","))
        return
    if args.child_timed:
        _timed_child(*args.child_timed.split(","))
        return
    only = [name.strip() for name in args.only.split(",")] if args.only else None
    if only:
        by_name = {name.lower(): name for name in CASES}
        only = [by_name[name.lower()] for name in only]
    if args.instructions:
        print(instruction_table(only or list(CASES)))
        return
    if args.solo:
        print(solo_table(only or list(CASES)))
        return
    result = run(quick=args.quick, only=only)
    print(json.dumps(result, indent=2))
    print(table(result))


if __name__ == "__main__":
    main()
