"""Fixtures of the gateway tests: the gateway served by uvicorn on a loopback port, in front of the
real local llama-server or of a recording fake Chat Completions backend."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from fakes import FakeChatBackend

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer, free_port
from so_middleware.local import LocalModelServer
from so_middleware.openai import reset_discovery

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
        # discovery is cached per server root for the process: a port an earlier backend had is a new server now
        reset_discovery()
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


def _pg_bindir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return candidates[-1].parent if candidates else None


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server in a temporary directory (initdb + pg_ctl), on a free loopback port.

    `make test` installs Debian's postgresql when it is missing; without it this fixture skips.
    """
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (initdb not found); `make test` installs it with apt-get where it can")
    root = Path(tempfile.mkdtemp(prefix="so-middleware-pg-"))  # not under pytest's 0700 tmp: postgres must enter it
    data = root / "data"
    port = free_port()
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root: the cluster belongs to the postgres user
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
        as_user = ["runuser", "-u", "postgres", "--"]
        root.chmod(0o777)
    subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    options = f"-p {port} -k {data} -h 127.0.0.1 -c fsync=off"
    subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data / "log"), "-w",
                    "start"], check=True, capture_output=True, timeout=120)  # fmt: skip
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                       capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
