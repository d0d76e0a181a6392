"""Fixtures of the client tests: the gateway (uvicorn on a loopback port) over the scripted backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted import ScriptedChatBackend
from spec_tap import SpecTap

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer


@pytest.fixture
def scripted() -> Iterator[tuple[ScriptedChatBackend, AppServer]]:
    """(backend, gateway): the gateway served over a fresh scripted backend; `gateway.app` is the
    `SpecTap` around it. Every answer of its Responses routes is checked against the Open Responses
    OpenAPI when the test ends."""
    backend = ScriptedChatBackend()
    with AppServer(backend.app()) as backend_server:
        config = GatewayConfig(backend_url=backend_server.base_url, max_attempts=1)
        tap = SpecTap(create_app(config))
        with AppServer(tap) as gateway:
            gateway.app = tap
            yield backend, gateway
    assert tap.requests, "no request went through the tap"
    assert tap.problems() == [], "the gateway's answers break the Open Responses OpenAPI"
