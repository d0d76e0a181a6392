"""WebSocket mode of `/v1/responses` (Open Responses 2026-04-24): `response.create` messages, one
response at a time, each streamed as the same events an HTTP stream carries.

The newest response of a socket stays in the socket's memory, so a `store: false` chain continues on
the socket that made it and nowhere else; a failed continuation forgets the response it continued.
Sockets are counted per key and in all, idle ones are closed, and none outlives `socket_max_age`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import ObjectReceiveStream
from starlette.websockets import WebSocket, WebSocketDisconnect

from ...wire.common import dumps
from ...wire.responses import SPEC_NAMES
from ...wire.responses_items import items_to_messages
from .._errors import BadRequest, error_response, to_error_response
from .._logs import CLIENT_CLOSED, log_turn
from .._request import is_reference, parse_request, read_json
from .._response import is_response_id, new_id, response_skeleton
from .._routes import reads_spec_names
from .._runs import ResponseRun

if TYPE_CHECKING:
    from .._routes import Gateway

__all__ = ["Sockets"]

_TRANSPORT_FIELDS = ("stream", "stream_options", "background")  # HTTP's own: the spec forbids them here
_QUEUED_MESSAGES = 8  # messages read ahead of the turn in progress; past it the client waits


class Sockets:
    """The WebSocket endpoint over a `Gateway`: admits sockets within the bounds, then serves turns."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway, self.config = gateway, gateway.config
        self.open: Counter[str] = Counter()  # open sockets per owner

    async def serve(self, websocket: WebSocket) -> None:
        """One socket: admitted within the bounds (else a 429 to the upgrade), then its turns."""
        owner = str(websocket.scope["state"]["owner"])
        refusal = self._refusal(owner)
        if refusal is not None:  # an HTTP answer to the upgrade, as on any other refused request
            await websocket.send_denial_response(error_response(429, refusal, code="too_many_websockets"))
            return
        self.open[owner] += 1
        try:
            await websocket.accept()
            await self._serve(websocket, owner)
        finally:
            self.open[owner] -= 1
            if not self.open[owner]:
                del self.open[owner]

    def _refusal(self, owner: str) -> str | None:
        if self.open.total() >= self.config.max_websockets:
            return f"The gateway has {self.config.max_websockets} WebSocket connections open; retry later."
        if self.open[owner] >= self.config.max_websockets_per_key:
            return f"This API key has {self.config.max_websockets_per_key} WebSocket connections open; close one."
        return None

    async def _serve(self, websocket: WebSocket, owner: str) -> None:
        """Read messages in one task and run turns in another: a client gone stops the turn in progress."""
        sender, receiver = anyio.create_memory_object_stream[str](_QUEUED_MESSAGES)
        gone, reason = False, ""

        async def read() -> None:
            nonlocal gone
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":  # the client left, or the server shuts down
                    gone = True
                    tasks.cancel_scope.cancel()
                    return
                text = message.get("text")
                await sender.send(text if text is not None else message.get("bytes", b"").decode("utf-8", "replace"))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            try:
                with anyio.move_on_after(self.config.websocket_max_age) as limit:
                    reason = await self._turns(websocket, owner, receiver)
                if limit.cancelled_caught:
                    message = f"WebSocket connections are limited to {self.config.websocket_max_age:g} seconds; open a new one."
                    await _send_error(websocket, 400, message, "websocket_connection_limit_reached")
                    reason = "connection limit reached"
            except WebSocketDisconnect:
                gone = True
            tasks.cancel_scope.cancel()
        if not gone:
            await websocket.close(1000, reason)

    async def _turns(self, websocket: WebSocket, owner: str, messages: ObjectReceiveStream[str]) -> str:
        """Serve turns until the socket idles out; the reason it closes."""
        spec_names = reads_spec_names(websocket.headers)
        latest: tuple[str, list[dict[str, Any]]] | None = None  # the socket's newest response: id, its items
        while True:
            raw: str | None = None
            with anyio.move_on_after(self.config.websocket_idle_timeout):  # a turn in progress is not idle
                raw = await messages.receive()
            if raw is None:
                return "idle timeout"
            latest = await self._turn(websocket, owner, raw, latest, spec_names)

    async def _turn(
        self, websocket: WebSocket, owner: str, raw: str, latest: tuple[str, list[dict[str, Any]]] | None,
        spec_names: bool,
    ) -> tuple[str, list[dict[str, Any]]] | None:  # fmt: skip
        """One `response.create`: its events, or an error envelope; returns the socket's newest response."""
        previous_id: str | None = None
        started, status, response_id = time.perf_counter(), CLIENT_CLOSED, None
        try:
            body = read_json(raw.encode())
            if not isinstance(body, dict) or body.get("type") != "response.create":
                raise BadRequest("Each WebSocket message must be a JSON object with type 'response.create'.", "type")
            for name in _TRANSPORT_FIELDS:
                if name in body:
                    raise BadRequest(f"'{name}' is not sent on a WebSocket: every response streams on it.", name)
            request = {key: value for key, value in body.items() if key != "type"}
            parsed = parse_request({**request, "stream": True}, default_model=self.config.default_model)
            previous_id = parsed.previous_response_id
            await self.gateway.images.check(parsed.items)
            history = await self._history(previous_id, latest, owner)
            items = await self._resolved(parsed.items, owner)
            _check_outputs(history, items)
            history = history + items
            run = ResponseRun(self.gateway.client, parsed, response_skeleton(parsed.frame, new_id("resp"), "in_progress"),
                              items_to_messages(history), history, self.gateway.store, self.config.validate, owner)  # fmt: skip
            response_id = run.response["id"]
            async with contextlib.aclosing(
                cast("AsyncGenerator[dict[str, Any], None]", run.events())
            ) as events:  # a client gone closes the backend call
                async for event in events:
                    if spec_names and event["type"] in SPEC_NAMES:
                        event = {**event, "type": SPEC_NAMES[event["type"]]}
                    await websocket.send_text(dumps(event).decode())
            status = 200
        except WebSocketDisconnect:
            raise
        except Exception as error:  # a refused request or a backend's refusal: the spec's error envelope
            answer = to_error_response(error)
            status = answer.status_code
            await websocket.send_text(_envelope(answer.status_code, json.loads(bytes(answer.body))))
            return _evicted(latest, previous_id)
        finally:
            log_turn(websocket.scope, status, time.perf_counter() - started, response_id)
        if run.response["status"] == "failed":  # a failed continuation forgets what it continued
            return _evicted(latest, previous_id)
        return run.response["id"], history + run.response["output"]

    async def _resolved(self, items: list[dict[str, Any]], owner: str) -> list[dict[str, Any]]:
        """Each `item_reference` replaced by the item it names from this key's stored responses, as on HTTP."""
        resolved = list(items)
        for index, item in enumerate(items):
            if is_reference(item):
                found = await self.gateway.store.find_item(item["id"], owner)
                if found is None:
                    raise BadRequest(f"Item with id '{item['id'][:200]}' not found.", f"input[{index}].id")
                resolved[index] = found
        return resolved

    async def _history(
        self, previous_id: str | None, latest: tuple[str, list[dict[str, Any]]] | None, owner: str
    ) -> list[dict[str, Any]]:
        """The items `previous_id` continues: the socket's own newest response, else this key's stored one."""
        if previous_id is None:
            return []
        if latest is not None and latest[0] == previous_id:
            return latest[1]
        stored = await self.gateway.store.get(previous_id, owner) if is_response_id(previous_id) else None
        if stored is None:  # a `store: false` response of another socket (or before a reconnect) is gone
            raise BadRequest(f"Previous response with id '{previous_id[:200]}' not found.", "previous_response_id",
                             400, "previous_response_not_found")  # fmt: skip
        items: list[dict[str, Any]] = stored.input_items + stored.response["output"]
        return items


def _check_outputs(history: list[dict[str, Any]], items: list[dict[str, Any]]) -> None:
    """A tool output answers a call the conversation made: one for no call is refused, naming it."""
    calls = {item.get("call_id") for item in history if item.get("type") == "function_call"}
    for index, item in enumerate(items):
        if item.get("type") == "function_call":
            calls.add(item.get("call_id"))
        elif item.get("type") == "function_call_output" and item.get("call_id") not in calls:
            raise BadRequest(f"No tool call found for function call output with call_id "
                             f"'{str(item.get('call_id'))[:200]}'.", f"input[{index}].call_id")  # fmt: skip


def _evicted(
    latest: tuple[str, list[dict[str, Any]]] | None, previous_id: str | None
) -> tuple[str, list[dict[str, Any]]] | None:
    """The socket's newest response after a failed turn: gone when the turn continued it."""
    return None if latest is not None and latest[0] == previous_id else latest


def _envelope(status: int, body: dict[str, Any]) -> str:
    return dumps({"type": "error", "status": status, **body}).decode()


async def _send_error(websocket: WebSocket, status: int, message: str, code: str) -> None:
    body = json.loads(bytes(error_response(status, message, code=code).body))
    await websocket.send_text(_envelope(status, body))
