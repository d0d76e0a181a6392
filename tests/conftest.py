"""Shared fixtures: the real local model server (once per session), SDK clients on it, cassettes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from so_middleware.local import LocalModelServer
from so_middleware.testing._cassettes import recorder

# Property tests are bounded and deterministic in CI; no deadline (CI machines are noisy).
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = ROOT / "cassettes"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def local_server() -> Iterator[LocalModelServer]:
    """llama-server with SmolLM2 on a free loopback port; stopped at the end of the session."""
    with LocalModelServer(parallel=2) as server:
        yield server


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
