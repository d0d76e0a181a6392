"""`GatewayConfig`: what the gateway serves and how, checked at construction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from so_middleware import UserError

from ._store import MEMORY_MAX_AGE, MEMORY_MAX_PER_KEY, MEMORY_MAX_RESPONSES, check_store_path

__all__ = ["GatewayConfig"]


@dataclass(frozen=True)
class GatewayConfig:
    """What the gateway serves and how. `max_connections` and `header_timeout` are the server's:
    `so-middleware gateway` applies them, `uvicorn.run(app, **server_options(config))` too.

    Example:
        app = create_app(GatewayConfig(backend_url="http://127.0.0.1:8080/v1"))
    """

    backend_url: str
    backend_api_key: str | None = None
    api_keys: Sequence[str] = ()  # empty: no key needed
    store: str | None = None  # a SQLite file, a postgresql:// URL, or None (SQLite in memory)
    memory_store_size: int = MEMORY_MAX_RESPONSES  # the in-memory store keeps this many newest responses
    memory_store_age: float = MEMORY_MAX_AGE  # ... for this many seconds after their last write
    memory_store_per_key: int = MEMORY_MAX_PER_KEY  # ... and at most this many of one client key's
    max_body_bytes: int = 16 * 1024 * 1024
    default_model: str | None = None  # used when a request names no model
    validate: bool = False  # re-ask a backend that ignores json_schema (beyond seed 004)
    max_attempts: int = 3  # with_retries, for transient backend failures
    max_background_runs: int = 8  # background runs calling the backend at once; more wait `queued`
    max_queued_runs: int = 64  # background runs waiting for a slot; past both, a 429 with retry-after
    backend_timeout: float = 600.0
    tracer_provider: Any = None
    meter_provider: Any = None
    max_connections: int = 400  # open client connections; one more is answered 503 and closed
    header_timeout: float = 10.0  # seconds to send a request's headers, from connecting or the previous answer
    body_timeout: float = 60.0  # seconds to send a request's body, once its headers are in (then 408)
    max_websockets: int = 200  # WebSocket connections open at once; one more is refused (429)
    max_websockets_per_key: int = 16  # ... of one client key
    websocket_idle_timeout: float = 300.0  # seconds a socket may wait for its next `response.create`
    websocket_max_age: float = (
        3600.0  # the Open Responses limit on a connection (then `websocket_connection_limit_reached`)
    )
    emulated_call_repeats: int = 2  # emulated tools: after this many identical answered calls, the model must answer
    run_lease: float = 10.0  # PostgreSQL store: seconds a background run outlives its process's last heartbeat

    def __post_init__(self) -> None:
        """Refuse, at construction, what would open the gateway or refuse every request."""
        if isinstance(self.api_keys, (str, bytes)):  # tuple("key") would make each letter a key
            raise UserError("api_keys must be a list of keys, not one string")
        for number, key in enumerate(self.api_keys, 1):
            if not isinstance(key, str):
                raise UserError(f"API key {number} of {len(self.api_keys)} is a {type(key).__name__}, not a string")
            if not key.strip():
                raise UserError(f"API key {number} of {len(self.api_keys)} is empty: it would let anyone in")
            if key != key.strip():  # HTTP strips a header's surrounding spaces: this key could never match
                raise UserError(f"API key {number} of {len(self.api_keys)} starts or ends with whitespace")
        for name in ("max_body_bytes", "max_connections", "max_attempts", "header_timeout", "body_timeout",
                     "max_background_runs", "run_lease", "max_websockets", "max_websockets_per_key",
                     "websocket_idle_timeout", "websocket_max_age", "memory_store_size", "memory_store_age", "memory_store_per_key",
                     "emulated_call_repeats"):  # fmt: skip
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise UserError(f"{name} must be a positive number, got {value!r}")
        for name in ("memory_store_size", "memory_store_per_key", "emulated_call_repeats"):  # counts
            if not isinstance(getattr(self, name), int):
                raise UserError(f"{name} must be a whole number, got {getattr(self, name)!r}")
        queued = self.max_queued_runs
        if isinstance(queued, bool) or not isinstance(queued, int) or queued < 0:  # 0: no run waits, a 429 at once
            raise UserError(f"max_queued_runs must be a whole number of 0 or more, got {queued!r}")
        if self.store and not self.store.startswith(("postgres://", "postgresql://")):
            check_store_path(self.store)
