"""Shared fixtures: the real local model server (once per session), SDK clients on it, cassettes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from so_middleware.local import LocalModelServer
from so_middleware.testing._cassettes import recorder
from so_middleware.testing._faults import Fault, FaultServer

# Property tests are bounded and deterministic in CI; no deadline (CI machines are noisy).
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = ROOT / "cassettes"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def serve() -> Iterator[Callable[[Sequence[Fault]], FaultServer]]:
    """Starts a `FaultServer` answering from a script; every one started is stopped after the test."""
    servers: list[FaultServer] = []

    def start(script: Sequence[Fault]) -> FaultServer:
        servers.append(FaultServer(script).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    """Finished spans, kept in memory."""
    return InMemorySpanExporter()


@pytest.fixture
def tracer_provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """A tracer provider exporting every span to `exporter` at once."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


@pytest.fixture(scope="session")
def local_server() -> Iterator[LocalModelServer]:
    """llama-server with SmolLM2 on a free loopback port; stopped at the end of the session."""
    with LocalModelServer(parallel=2) as server:
        yield server


@pytest.fixture
async def local_sdk(local_server: LocalModelServer) -> Any:
    """`local_sdk(kind)` makes an SDK client on the local server and closes it after the test.

    Kinds: "openai" (sync), "async-openai", "anthropic" (sync), "async-anthropic". The SDK keeps
    its own retries (a kept-alive connection the server has just closed is retried). Closing
    matters: an async client left to the garbage collector closes its pool on a later test's
    event loop.
    """
    made: list[Any] = []

    def make(kind: str = "async-openai", **kwargs: Any) -> Any:
        kwargs.setdefault("api_key", "local")
        if kind.endswith("openai"):
            import openai

            cls: Any = openai.AsyncOpenAI if kind.startswith("async") else openai.OpenAI
            client = cls(base_url=local_server.base_url, **kwargs)
        elif kind.endswith("anthropic"):
            import anthropic

            cls = anthropic.AsyncAnthropic if kind.startswith("async") else anthropic.Anthropic
            client = cls(base_url=local_server.root_url, **kwargs)
        else:
            raise ValueError(kind)
        made.append(client)
        return client

    yield make
    for client in made:
        result = client.close()
        if hasattr(result, "__await__"):
            await result


@pytest.fixture(scope="session")
def vcr() -> Any:
    return recorder(CASSETTES)


@pytest.fixture
def cassette(vcr: Any, request: pytest.FixtureRequest) -> Any:
    """`with cassette("name"):` replays cassettes/<module>/<name>.yaml (recorded once from the local server)."""
    module = Path(str(request.node.fspath)).stem

    def use(name: str) -> Any:
        return vcr.use_cassette(f"{module}/{name}.yaml")

    return use
