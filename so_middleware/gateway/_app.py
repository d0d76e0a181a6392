"""The gateway's ASGI app: the OpenAI Responses API in front of a Chat Completions backend.

The backend is called through the library's own chain: `OpenAIChatClient` (the one translation
to the Chat Completions wire; its requests sent on the SDK client's HTTP client, `http_client=`),
wrapped by `with_retries` and `with_telemetry`, and with `validate=True` by
`with_structured_output` (beyond seed 004, which forbids touching output).
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import AsyncIterator
from typing import Any

import anyio
import openai
from openai import AsyncOpenAI
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from so_middleware import ChatClient, SOMiddlewareError, with_retries, with_structured_output, with_telemetry
from so_middleware.openai import OpenAIChatClient

from ._config import GatewayConfig
from ._errors import BadRequest, error_response, to_error_response
from ._logs import AccessLog
from ._open_store import open_store
from ._routes import Gateway
from ._secrets import RedactingClient, owner_of, url_password
from ._store import ResponseStore
from ._ws import Sockets

__all__ = ["GatewayConfig", "create_app"]


def backend_client(config: GatewayConfig) -> tuple[AsyncOpenAI, ChatClient]:
    """The SDK client on the backend and the chain the gateway calls."""
    # what the backend may quote back in an error is masked before anything reads it
    secrets = [secret for secret in (config.backend_api_key, url_password(config.backend_url)) if secret]
    http = RedactingClient(secrets)
    sdk = AsyncOpenAI(base_url=config.backend_url, api_key=config.backend_api_key or "none",
                      timeout=config.backend_timeout, http_client=http)  # fmt: skip
    # The backend's profile is discovered on the first call (formats are forwarded whatever it
    # says): on a backend that ignores function tools, the adapter emulates them.
    chain: Any = with_retries(
        OpenAIChatClient(sdk, http_client=http, emulated_call_repeats=config.emulated_call_repeats),
        max_attempts=config.max_attempts,
    )
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
    if store is None:
        store = open_store(config.store, lease=config.run_lease, max_responses=config.memory_store_size,
                           max_age=config.memory_store_age, max_per_key=config.memory_store_per_key)  # fmt: skip
    gateway = Gateway(config, sdk, chain, store)

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
        Route("/v1/responses/compact", gateway.compact, methods=["POST"]),
        WebSocketRoute("/v1/responses", Sockets(gateway).serve),  # the spec's WebSocket mode, same resource
        Route("/v1/responses/{id}", gateway.retrieve, methods=["GET"]),
        Route("/v1/responses/{id}", gateway.delete, methods=["DELETE"]),
        Route("/v1/responses/{id}/cancel", gateway.cancel, methods=["POST"]),
        Route("/v1/responses/{id}/input_items", gateway.input_items, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=_HANDLERS)
    app.add_middleware(_Guard, api_keys=tuple(config.api_keys), max_body_bytes=config.max_body_bytes,
                       body_timeout=config.body_timeout)  # fmt: skip
    app.add_middleware(AccessLog)  # outermost: the guard's refusals are logged too
    app.state.gateway = gateway
    return app


async def _on_error(request: Request, error: Exception) -> Response:
    response = to_error_response(error)
    if response.status_code in (408, 413):  # the rest of the body stays unread: the connection is done
        response.headers["connection"] = "close"
    return response


async def _on_hang_up(request: Request, error: Exception) -> Response:
    """A client that hung up while sending its body: nothing was asked of the backend, nobody reads
    the answer; the access log shows 499, not a 500 with a traceback."""
    return Response(status_code=499)


# Expected errors by type (answered quietly); anything else is a logged 500.
_HANDLERS: Any = {BadRequest: _on_error, HTTPException: _on_error, openai.APIError: _on_error,
                  SOMiddlewareError: _on_error, ClientDisconnect: _on_hang_up, Exception: _on_error}  # fmt: skip


class _Guard:
    """API keys (compared in constant time; 401), who is asking (the key's hash: `scope["state"]["owner"]`),
    the request body size limit (413) and the time to send the body (408)."""

    def __init__(self, app: ASGIApp, api_keys: tuple[str, ...], max_body_bytes: int, body_timeout: float) -> None:
        self.app, self.api_keys, self.max_body_bytes = app, tuple(k.encode() for k in api_keys), max_body_bytes
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] == "/health":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        token = self._token(headers.get(b"authorization", b""))
        if self.api_keys and token is None:
            response = error_response(401, "Incorrect or missing API key.", code="invalid_api_key")
            await response(scope, receive, send)
            return
        # the responses one key stores are that key's: the others get 404 (a single key or none: everyone's)
        scope.setdefault("state", {})["owner"] = owner_of(token) if token is not None else ""
        if scope["type"] == "websocket":  # no body: its messages are bounded by the WebSocket server
            await self.app(scope, receive, send)
            return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large()(scope, receive, send)
            return
        await self.app(scope, self._limited(receive), send)

    def _token(self, header: bytes) -> bytes | None:
        """The bearer token when it is one of the keys (None without keys)."""
        token = header[7:] if header[:7].lower() == b"bearer " else b""
        # every key is compared, so the time taken does not tell which one nearly matched
        matched = sum(hmac.compare_digest(token, key) for key in self.api_keys) > 0
        return token if matched else None

    def _too_large(self) -> Response:
        message = f"The request body is larger than {self.max_body_bytes} bytes."
        response = error_response(413, message, code="body_too_large")
        response.headers["connection"] = "close"  # its body is not read
        return response

    def _limited(self, receive: Receive) -> Receive:
        seen, done = 0, False
        deadline = anyio.current_time() + self.body_timeout

        async def limited() -> Any:
            nonlocal seen, done
            if done:  # the body is in: what follows is the wait for a disconnect, as long as the answer
                return await receive()
            with anyio.move_on_after(deadline - anyio.current_time()) as timer:
                message = await receive()
            if timer.cancelled_caught:  # a client that stalls mid-body (slowloris) holds the connection no longer
                raise BadRequest(f"The request body did not arrive within {self.body_timeout:g} seconds.", None,
                                 408, "request_timeout")  # fmt: skip
            done = message["type"] != "http.request" or not message.get("more_body", False)
            seen += len(message.get("body", b""))
            if seen > self.max_body_bytes:
                raise BadRequest(
                    f"The request body is larger than {self.max_body_bytes} bytes.", None, 413, "body_too_large"
                )
            return message

        return limited
