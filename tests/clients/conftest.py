"""Fixtures of the client tests: the gateway (uvicorn on a loopback port) over the scripted backend."""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest
from scripted import ScriptedChatBackend
from spec_tap import SpecTap

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keeps each phase's report on the test item, so a fixture's teardown can tell a skipped test."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def scripted(request: pytest.FixtureRequest) -> Iterator[tuple[ScriptedChatBackend, AppServer]]:
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
    call = getattr(request.node, "report_call", None)
    if call is None or call.skipped:  # skipped (no node): there was nothing to check
        return
    assert tap.requests, "no request went through the tap"
    assert tap.problems() == [], "the gateway's answers break the Open Responses OpenAPI"
