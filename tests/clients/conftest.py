"""Fixtures of the client tests: the gateway (uvicorn on a loopback port) over the scripted backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted import ScriptedChatBackend

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer


@pytest.fixture
def scripted() -> Iterator[tuple[ScriptedChatBackend, AppServer]]:
    """(backend, gateway): the gateway served over a fresh scripted backend."""
    backend = ScriptedChatBackend()
    with AppServer(backend.app()) as backend_server:
        config = GatewayConfig(backend_url=backend_server.base_url, max_attempts=1)
        with AppServer(create_app(config)) as gateway:
            yield backend, gateway
