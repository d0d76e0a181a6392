"""Fixtures of the gateway tests: the gateway served by uvicorn on a loopback port, in front of the
real local llama-server or of a recording fake Chat Completions backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from fakes import FakeChatBackend

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer
from so_middleware.local import LocalModelServer

MODEL = "smollm2"


@pytest.fixture(scope="session")
def local_gateway(local_server: LocalModelServer) -> Iterator[AppServer]:
    """The gateway in front of the real llama-server."""
    with AppServer(create_app(GatewayConfig(backend_url=local_server.base_url))) as server:
        yield server


@pytest.fixture
def gateway_sdk(local_gateway: AppServer) -> Iterator[openai.OpenAI]:
    """The unmodified OpenAI SDK pointed at the gateway."""
    client = openai.OpenAI(base_url=local_gateway.base_url, api_key="none", max_retries=0, timeout=120)
    yield client
    client.close()


@pytest.fixture
def fake_backend() -> Iterator[tuple[FakeChatBackend, AppServer]]:
    """A recording fake Chat Completions backend on loopback."""
    backend = FakeChatBackend()
    with AppServer(backend.app()) as server:
        yield backend, server


@pytest.fixture
def fake_gateway(fake_backend: tuple[FakeChatBackend, AppServer]) -> Iterator[Callable[..., Any]]:
    """`fake_gateway(**config)` serves a gateway over the fake backend; returns (backend, server)."""
    backend, backend_server = fake_backend
    servers: list[AppServer] = []

    def make(**config: Any) -> tuple[FakeChatBackend, AppServer]:
        config.setdefault("max_attempts", 1)
        server = AppServer(create_app(GatewayConfig(backend_url=backend_server.base_url, **config))).start()
        servers.append(server)
        return backend, server

    yield make
    for server in servers:
        server.stop()
