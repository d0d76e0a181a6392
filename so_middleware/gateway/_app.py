"""The gateway's ASGI app: the OpenAI Responses API in front of a Chat Completions backend.

The backend is called through the library's own chain: `OpenAIChatClient` (the one translation
to the Chat Completions wire), wrapped by `with_retries` and `with_telemetry`, and with
`validate=True` by `with_structured_output` (beyond seed 004, which forbids touching output).
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import openai
from openai import AsyncOpenAI
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from so_middleware import ChatClient, SOMiddlewareError, with_retries, with_structured_output, with_telemetry
from so_middleware.openai import OPENAI_COMPATIBLE, OpenAIChatClient

from ._errors import BadRequest, error_response, to_error_response
from ._open_store import open_store
from ._routes import Gateway
from ._store import ResponseStore

__all__ = ["GatewayConfig", "create_app"]


@dataclass(frozen=True)
class GatewayConfig:
    """What the gateway serves and how.

    Example:
        app = create_app(GatewayConfig(backend_url="http://127.0.0.1:8080/v1"))
    """

    backend_url: str
    backend_api_key: str | None = None
    api_keys: Sequence[str] = ()  # empty: no key needed
    store: str | None = None  # a SQLite file, a postgresql:// URL, or None (SQLite in memory)
    max_body_bytes: int = 16 * 1024 * 1024
    default_model: str | None = None  # used when a request names no model
    validate: bool = False  # re-ask a backend that ignores json_schema (beyond seed 004)
    max_attempts: int = 3  # with_retries, for transient backend failures
    max_background_runs: int = 8  # background runs calling the backend at once; more wait `queued`
    max_queued_runs: int = 64  # background runs waiting for a slot; past both, a 429 with retry-after
    backend_timeout: float = 600.0
    tracer_provider: Any = None
    meter_provider: Any = None


def backend_client(config: GatewayConfig) -> tuple[AsyncOpenAI, ChatClient]:
    """The SDK client on the backend and the chain the gateway calls."""
    sdk = AsyncOpenAI(base_url=config.backend_url, api_key=config.backend_api_key or "none",
                      timeout=config.backend_timeout)  # fmt: skip
    # Formats are forwarded, never judged: the adapter must not drop one it thinks unsupported.
    chain: Any = with_retries(OpenAIChatClient(sdk, capabilities=OPENAI_COMPATIBLE), max_attempts=config.max_attempts)
    chain = with_telemetry(chain, tracer_provider=config.tracer_provider, meter_provider=config.meter_provider)
    if config.validate:
        chain = with_structured_output(chain)
    return sdk, chain


def create_app(config: GatewayConfig, *, store: ResponseStore | None = None) -> Starlette:
    """The Starlette app. `store` overrides `config.store` (any `ResponseStore`).

    Example:
        app = create_app(GatewayConfig(backend_url="http://127.0.0.1:8080/v1", store="responses.db"))
        uvicorn.run(app, host="127.0.0.1", port=8000)
    """
    sdk, chain = backend_client(config)
    gateway = Gateway(config, sdk, chain, store or open_store(config.store))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await gateway.store.open()
        try:
            yield
        finally:  # graceful shutdown: background runs end `cancelled` (their tasks ended), then the
            await gateway.runs.close()  # store closes once its pending writes are done
            await gateway.store.close()
            await sdk.close()

    routes = [
        Route("/health", gateway.health, methods=["GET"]),
        Route("/v1/models", gateway.models, methods=["GET"]),
        Route("/v1/responses", gateway.create, methods=["POST"]),
        Route("/v1/responses/{id}", gateway.retrieve, methods=["GET"]),
        Route("/v1/responses/{id}", gateway.delete, methods=["DELETE"]),
        Route("/v1/responses/{id}/cancel", gateway.cancel, methods=["POST"]),
        Route("/v1/responses/{id}/input_items", gateway.input_items, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=_HANDLERS)
    app.add_middleware(_Guard, api_keys=tuple(config.api_keys), max_body_bytes=config.max_body_bytes)
    app.state.gateway = gateway
    return app


async def _on_error(request: Request, error: Exception) -> Response:
    return to_error_response(error)


# Expected errors by type (answered quietly); anything else is a logged 500.
_HANDLERS: Any = {BadRequest: _on_error, HTTPException: _on_error, openai.APIError: _on_error,
                  SOMiddlewareError: _on_error, Exception: _on_error}  # fmt: skip


class _Guard:
    """API keys (compared in constant time; 401) and the request body size limit (413)."""

    def __init__(self, app: ASGIApp, api_keys: tuple[str, ...], max_body_bytes: int) -> None:
        self.app, self.api_keys, self.max_body_bytes = app, tuple(k.encode() for k in api_keys), max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/health":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if self.api_keys and not self._authorized(headers.get(b"authorization", b"")):
            response = error_response(401, "Incorrect or missing API key.", code="invalid_api_key")
            await response(scope, receive, send)
            return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large()(scope, receive, send)
            return
        await self.app(scope, self._limited(receive), send)

    def _authorized(self, header: bytes) -> bool:
        token = header[7:] if header[:7].lower() == b"bearer " else b""
        # every key is compared, so the time taken does not tell which one nearly matched
        return sum(hmac.compare_digest(token, key) for key in self.api_keys) > 0

    def _too_large(self) -> Response:
        return error_response(
            413, f"The request body is larger than {self.max_body_bytes} bytes.", code="body_too_large"
        )

    def _limited(self, receive: Receive) -> Receive:
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body_bytes:
                raise BadRequest(
                    f"The request body is larger than {self.max_body_bytes} bytes.", None, 413, "body_too_large"
                )
            return message

        return limited
