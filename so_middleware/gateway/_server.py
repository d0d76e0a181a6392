"""Serving an ASGI app with uvicorn: in a background thread (tests, notebooks, embedding) or blocking."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn

from ._limits import server_options

__all__ = ["AppServer", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _limits_of(app: Any) -> dict[str, Any]:
    """A gateway app is served with its config's connection limits."""
    gateway = getattr(getattr(app, "state", None), "gateway", None)
    return server_options(gateway.config) if gateway is not None else {}


class AppServer:
    """Runs an ASGI app under uvicorn in a thread, on loopback and a free port by default.

    Example:
        with AppServer(create_app(config)) as server:
            OpenAI(base_url=server.base_url, api_key="none").responses.create(...)
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int | None = None, **uvicorn_options: Any) -> None:
        self.host, self.port = host, port or free_port(host)
        options = {"log_level": "warning", "timeout_graceful_shutdown": 5, **_limits_of(app), **uvicorn_options}
        self.server = uvicorn.Server(uvicorn.Config(app, host=self.host, port=self.port, **options))
        self._thread: threading.Thread | None = None

    @property
    def root_url(self) -> str:
        """`http://host:port`."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """`http://host:port/v1`, for an OpenAI SDK client."""
        return f"{self.root_url}/v1"

    def start(self, timeout: float = 30.0) -> AppServer:
        """Start serving; returns once the socket accepts connections (or raises `RuntimeError`)."""
        self._thread = threading.Thread(target=self.server.run, name=f"uvicorn:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server on {self.root_url} did not start")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        """Shut down gracefully (open streams get `timeout_graceful_shutdown` seconds) and join."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
