"""Concurrency: 200 structured calls in flight at once against a loopback HTTP server.

The server is a tiny asyncio HTTP/1.1 server in its own process on 127.0.0.1 that answers every
request with the recorded llama-server body (the model itself is far too slow for 200 calls).
Each contender runs in a process of its own, so memory figures are its own, and the processes
take turns round by round (raw SDK, then each library, then the raw SDK again...), so a slow
spell of a shared machine falls on every contender alike:

- throughput: 200 calls started together with `asyncio.gather`, calls per wall-clock second,
  median over several rounds (after a warm-up round);
- tracemalloc peak: Python allocations at the peak of a round, above what was allocated before
  it; the median of 5 more rounds (tracemalloc slows calls, so these rounds are not timed);
- RSS: the process's peak resident set (VmHWM) after all rounds, minus its resident set after
  the warm-up round.

`python bench/concurrency.py --base CHECKOUT [CHECKOUT ...] [--pairs 3]` runs this checkout and
others side by side instead (raw SDK, structured output and full chain of each, in turns), and
prints each one's throughputs as ratios to its own raw SDK row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    CHAT_FIXTURE,
    MODEL_ALIAS,
    PROMPT,
    Fixture,
    Person,
    env_label,
    full_chain,
    log,
    median,
    otel_providers,
    python_for,
)
from ab_overhead import in_checkout

CONCURRENT = 200
TRACEMALLOC_ROUNDS = 5
CONTENDERS = (
    "raw SDK `create`",
    "so_middleware structured output only",
    "so_middleware full chain",
    "raw SDK `create` (instructor's env)",
    "instructor JSON_SCHEMA",
)


# ---------------------------------------------------------------------------- the loopback server


async def _serve(body: bytes, content_type: str) -> None:
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
        "connection: keep-alive\r\n\r\n"
    ).encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                headers = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in headers.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                writer.write(head + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        # stop by itself after an hour at most, or as soon as the parent closes our stdin
        loop = asyncio.get_running_loop()
        stdin_closed = loop.run_in_executor(None, sys.stdin.read)
        try:
            await asyncio.wait_for(stdin_closed, timeout=3600)
        except TimeoutError:
            os._exit(0)  # the stdin reader thread would keep the process alive


class LoopbackServer:
    """The server process; a context manager that gives its port."""

    def __init__(self, fixture: Fixture) -> None:
        self.fixture = fixture
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> LoopbackServer:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(CHAT_FIXTURE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


# ---------------------------------------------------------------------------- one contender


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def _contender_run(contender: str, port: int) -> dict[str, Any]:
    """Warm up, say `ready`, run a timed round per `round` line on stdin, then the tracemalloc round."""
    from so_middleware import StructuredOutput

    fixture = Fixture.load(CHAT_FIXTURE)
    import openai

    # the SDK's own client, every phase bounded well past a round on a loaded machine (its default
    # connect bound, 5 s, fails 200 connections opened at once under tracemalloc): measured, not lost
    sdk = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="bench", max_retries=0, timeout=900)
    messages = [{"role": "user", "content": PROMPT}]
    response_format = fixture.request["response_format"]
    before_round: Callable[[], None] = lambda: None  # noqa: E731
    options = {"temperature": 0, "seed": 7}
    if contender.startswith("raw SDK `create`"):

        async def call() -> Any:
            completion = await sdk.chat.completions.create(
                model=MODEL_ALIAS, messages=messages, response_format=response_format, **options
            )
            return completion.choices[0].message.content
    elif contender == "so_middleware structured output only":
        from so_middleware import with_structured_output
        from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient

        structured = with_structured_output(OpenAIChatClient(sdk, MODEL_ALIAS, capabilities=LLAMA_SERVER))

        async def call() -> Any:
            feature = StructuredOutput(Person, mode="native")
            return (await structured.get_response(PROMPT, options={**options, "features": [feature]})).value
    elif contender == "so_middleware full chain":
        tracer_provider, meter_provider, exporter = otel_providers()
        before_round = exporter.clear  # exported spans are let go each round, as a real exporter ships them
        chain = full_chain(sdk, tracer_provider=tracer_provider, meter_provider=meter_provider)

        async def call() -> Any:
            feature = StructuredOutput(Person, mode="native")
            return (await chain.get_response(PROMPT, options={**options, "features": [feature]})).value
    elif contender == "instructor JSON_SCHEMA":
        import instructor

        patched = instructor.from_openai(sdk, mode=instructor.Mode.JSON_SCHEMA)

        async def call() -> Any:
            return await patched.create(
                model=MODEL_ALIAS, messages=messages, response_model=Person, max_retries=2, **options
            )
    else:
        raise ValueError(contender)

    async def one_round() -> float:
        before_round()
        start = time.perf_counter()
        results = await asyncio.gather(*(call() for _ in range(CONCURRENT)))
        elapsed = time.perf_counter() - start
        assert all(result for result in results)
        return elapsed

    await one_round()  # warm-up: connections opened, code paths imported
    rss_before = _rss_kib("VmRSS")
    rounds_s: list[float] = []
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "round":  # the parent's turn
        rounds_s.append(await one_round())
        print(rounds_s[-1], flush=True)
    rss_peak = _rss_kib("VmHWM")
    tracemalloc.start()
    peaks_kib = []
    for _ in range(TRACEMALLOC_ROUNDS):
        baseline, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        await one_round()
        peaks_kib.append((tracemalloc.get_traced_memory()[1] - baseline) / 1024)
    tracemalloc.stop()
    return {
        "rounds_s": rounds_s,
        "calls_per_s": CONCURRENT / median(rounds_s),
        "tracemalloc_peaks_kib": peaks_kib,
        "tracemalloc_peak_kib": median(peaks_kib),
        "rss_after_warmup_kib": rss_before,
        "rss_peak_kib": rss_peak,
        "rss_growth_kib": rss_peak - rss_before,
    }


class _Contender:
    """A contender's process, run round by round from here."""

    def __init__(self, contender: str, port: int, tree: Path | None = None) -> None:
        self.name = contender
        command, env = in_checkout(tree, python_for(contender), __file__, "--contender", contender, str(port))
        self.stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 - open for the process's life; its last line names a failure
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env
        )
        self.error: str | None = None
        self._expect("ready")

    def _expect(self, what: str | None) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line or (what is not None and line != what):
            code = self.process.wait(timeout=60)
            self.stderr.seek(0)
            lines = self.stderr.read().strip().splitlines()
            self.error = self.error or (lines[-1] if lines else f"exit {code}")
        return line

    def round(self) -> None:
        if self.error is None:
            self._send("round")
            self._expect(None)

    def finish(self) -> dict[str, Any]:
        if self.error is None:
            self._send("done")
            line = self._expect(None)
            if self.error is None:
                self.process.wait(timeout=600)
                return dict(json.loads(line))
        self.process.kill()
        return {"error": self.error}

    def _send(self, command: str) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            self.error = self.error or "the process ended"


def run(*, quick: bool) -> dict[str, Any]:
    """Each contender in its own process against one loopback server, the rounds taken in turns."""
    rounds = 2 if quick else 7
    rows = []
    with LoopbackServer(Fixture.load(CHAT_FIXTURE)) as server:
        log(
            f"concurrency: {len(CONTENDERS)} contenders, {rounds} rounds each of {CONCURRENT} concurrent calls, in turns"
        )
        contenders = [_Contender(contender, server.port) for contender in CONTENDERS]
        for _ in range(rounds):
            for contender in contenders:
                contender.round()
        for contender in contenders:  # the untimed tracemalloc round, one process at a time
            row = {"contender": contender.name, "environment": env_label(python_for(contender.name))}
            rows.append({**row, **contender.finish()})
    raw_of: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["contender"].startswith("raw SDK"):
            raw_of.setdefault(python_for(row["contender"]), row)
    for row in rows:  # each against the raw SDK of its own environment
        base = raw_of[python_for(row["contender"])]
        if "calls_per_s" in row and "calls_per_s" in base:
            row["throughput_ratio_to_raw"] = row["calls_per_s"] / base["calls_per_s"]
            row["tracemalloc_ratio_to_raw"] = row["tracemalloc_peak_kib"] / base["tracemalloc_peak_kib"]
    return {"concurrent_calls": CONCURRENT, "rounds": rounds, "tracemalloc_rounds": TRACEMALLOC_ROUNDS, "rows": rows}


def side_by_side(trees: dict[str, Path], pairs: int, rounds: int = 3) -> None:
    """Checkouts side by side (`--base`): per pair, each checkout's raw SDK, structured output and
    full chain processes take `rounds` rounds in turns with the other checkouts' (the order turns
    between pairs); a markdown row per checkout and pair, its throughputs as ratios to its raw row."""
    contenders = CONTENDERS[:3]
    print("| pair | checkout | raw calls/s | structured output ÷ raw | full chain ÷ raw |")
    print("|---|---|---|---|---|")
    names = list(trees)
    with LoopbackServer(Fixture.load(CHAT_FIXTURE)) as server:
        for pair in range(pairs):
            order = names[1:] + names[:1]
            order = order[pair % len(order) :] + order[: pair % len(order)]
            running = {name: [_Contender(c, server.port, trees[name]) for c in contenders] for name in order}
            for _ in range(rounds):
                for name in order:
                    for process in running[name]:
                        process.round()
            for name in order:
                raw, structured, chain = (process.finish() for process in running[name])
                if "error" in raw or "error" in structured or "error" in chain:
                    print(
                        f"| {pair + 1} | {name} | {raw.get('error') or structured.get('error') or chain.get('error')} |"
                    )
                    continue
                print(
                    f"| {pair + 1} | {name} | {raw['calls_per_s']:.0f} | {structured['calls_per_s'] / raw['calls_per_s']:.2f}× "
                    f"| {chain['calls_per_s'] / raw['calls_per_s']:.2f}× |",
                    flush=True,
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", metavar="FIXTURE")
    parser.add_argument("--contender", nargs=2, metavar=("NAME", "PORT"))
    parser.add_argument("--base", type=Path, nargs="+", help="checkouts to run side by side with this one")
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    if args.base:
        here = Path(__file__).resolve().parent.parent
        side_by_side({"head": here, **{str(tree): tree.resolve() for tree in args.base}}, args.pairs)
    elif args.serve:
        loaded = Fixture.load(Path(args.serve))
        asyncio.run(_serve(loaded.body, loaded.content_type))
    elif args.contender:
        name, port_text = args.contender
        print(json.dumps(asyncio.run(_contender_run(name, int(port_text)))))
