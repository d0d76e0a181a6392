"""The gateway's route handlers: one `Gateway` holding the backend chain, the store and the runs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from openai import AsyncOpenAI
from starlette.requests import Request
from starlette.responses import Response

from so_middleware import ChatClient, __version__

from ..providers import sdk_boundary
from ..wire.responses_events import spec_names
from ..wire.responses_items import as_listed_item, items_to_messages
from ._compaction._compact import compact, resolved
from ._errors import BadRequest, error_response
from ._json import JSONAnswer
from ._request import read_json, read_request
from ._response import is_response_id, new_id, response_skeleton
from ._runs import TERMINAL, ResponseRun, Runs
from ._shared import shared_runs
from ._store import ResponseStore, StoreError
from ._telemetry import server_span
from ._vision import ImageCheck
from ._watch import event_stream, unless_disconnected

if TYPE_CHECKING:
    from ._config import GatewayConfig

__all__ = ["SPEC_HEADER", "Gateway", "reads_spec_names"]

SPEC_HEADER = "openresponses-version"  # any value: the client reads the Open Responses spec's event names


def reads_spec_names(headers: Mapping[str, str]) -> bool:
    """Whether a client reads the Open Responses spec's event names for reasoning deltas
    (`response.reasoning.delta`), not OpenAI's (`response.reasoning_text.delta`).

    The spec defines no header for a client to send, so a client that does not say what it is (the
    spec's compliance runner, curl) gets the spec's names. OpenAI's clients say what they are, and
    the OpenAI SDK for Node throws on an event it does not know: the OpenAI SDKs (`X-Stainless-*`
    headers), Codex CLI (`originator`) and the Vercel AI SDK (`ai-sdk` in its user agent)
    get OpenAI's. `OpenResponses-Version` (any value) asks for the spec's names whoever sends it.
    """
    if SPEC_HEADER in headers:
        return True
    if "x-stainless-lang" in headers or "originator" in headers:
        return False
    return "ai-sdk" not in headers.get("user-agent", "")


class Gateway:
    """Route handlers over one backend chain and one response store."""

    def __init__(self, config: GatewayConfig, sdk: AsyncOpenAI, client: ChatClient, store: ResponseStore) -> None:
        self.config, self.sdk, self.client, self.store = config, sdk, client, store
        self.runs = Runs(config.max_background_runs, config.max_queued_runs)
        self.images = ImageCheck(client)  # an image for a backend that cannot see is the client's 400
        self.shared = shared_runs(store)  # other processes on the same store see, cancel and delete our runs
        if self.shared is not None:
            self.shared.attach(self.runs.live, self._stop_run)

    async def health(self, request: Request) -> Response:
        """`GET /health`: the gateway is up (the backend is not asked), and says what it is, so
        adapters that discover their server's capabilities recognise it."""
        return JSONAnswer({"status": "ok", "service": "so-middleware-gateway", "version": __version__})

    async def models(self, request: Request) -> Response:
        """`GET /v1/models`: the backend's model list, as the backend gives it."""
        pages: list[Any] = []

        async def fetch() -> None:
            with sdk_boundary(self.sdk):
                pages.append(await self.sdk.models.list())

        if not await unless_disconnected(fetch(), request.receive):  # a client gone stops the backend call
            return _gone()
        data = [model.model_dump(exclude_unset=True) for model in pages[0].data]
        return JSONAnswer({"object": "list", "data": data})

    async def create(self, request: Request) -> Response:
        """`POST /v1/responses`: plain, `stream: true`, or `background: true`."""
        parsed = read_request(await request.body(), default_model=self.config.default_model)
        owner = _owner(request)
        await self.images.check(parsed.items)
        history: list[dict[str, Any]] = []
        if parsed.previous_response_id:
            known = is_response_id(parsed.previous_response_id)  # else it cannot exist: not asked for
            previous = await self.store.get(parsed.previous_response_id, owner) if known else None
            if previous is None:
                raise BadRequest(f"Previous response with id '{parsed.previous_response_id}' not found.",
                                 "previous_response_id", 404)  # fmt: skip
            history = previous.input_items + previous.response["output"]
        history = history + await self._resolved(parsed.items, owner)
        status = "queued" if parsed.background else "in_progress"
        run = ResponseRun(self.client, parsed, response_skeleton(parsed.frame, new_id("resp"), status),
                          items_to_messages(history), history, self.store, self.config.validate, owner,
                          self.shared if parsed.background else None)  # fmt: skip
        request.scope["state"]["response_id"] = run.response["id"]  # for the access log
        events = server_span(self.config.tracer_provider, "POST /v1/responses").wrap(run.events())
        if parsed.background:
            self.runs.admit(run)  # a 429 when the queue is full
            try:
                await run.save()
            except StoreError as error:  # refused (a value the store cannot hold): failed, never run
                await run.end_unsaved(error)
            except BaseException:
                self.runs.forget(run.response["id"])
                raise
            else:
                self.runs.start(run, events)
            return event_stream(run, _named(request, run.follow())) if parsed.stream else JSONAnswer(run.response)
        if not parsed.stream:  # one task runs it (the span's context stays in one task); a client gone stops it
            if not await unless_disconnected(_drain(events), request.receive):
                return _gone()
            return JSONAnswer(run.response)
        run.start(events)
        try:  # a backend that refuses the request at once: its status, not a stream
            started = await unless_disconnected(run.started(), request.receive)
        finally:  # a client gone before the backend's first byte, or the server stopping, stops the call
            if not run.published:
                await run.stop()
        if not started:
            return _gone()
        return event_stream(run, _named(request, run.follow()), on_close=run.stop)

    async def compact(self, request: Request) -> Response:
        """`POST /v1/responses/compact`: the window as one `compaction` item (see `_compact`)."""
        return JSONAnswer(await compact(read_json(await request.body()), _owner(request), self.store))

    async def retrieve(self, request: Request) -> Response:
        """`GET /v1/responses/{id}` (with `?stream=true&starting_after=N`, the run's events from N on)."""
        response_id, owner = _response_id(request), _owner(request)
        run = self._run(response_id, owner)
        if request.query_params.get("stream") in ("true", "1"):
            after = _int_param(request.query_params.get("starting_after", "-1"), "starting_after")
            if after < 0 and "starting_after" in request.query_params:  # -3 would slice from the end
                raise BadRequest(f"starting_after must be a sequence number (>= 0), got {after}", "starting_after")
            if run is not None:
                return event_stream(run, _named(request, run.follow(after)))
            if self.shared is not None and await self._background(response_id, owner):  # run by another process
                return event_stream(None, _named(request, self.shared.follow(response_id, after)))
            raise BadRequest(f"Response '{response_id}' has no event stream on this gateway.", "stream", 404)
        if run is not None and self.shared is None:
            return JSONAnswer(run.polled)
        stored = await self.store.get(response_id, owner)  # shared: deleted elsewhere a moment ago is gone
        if stored is None:
            return _not_found(response_id)
        return JSONAnswer(run.polled if run is not None else stored.response)

    async def delete(self, request: Request) -> Response:
        """`DELETE /v1/responses/{id}`."""
        response_id, owner = _response_id(request), _owner(request)
        run = self._run(response_id, owner)
        if run is not None:
            await run.cancel()
            self.runs.forget(response_id)
        if not await self.store.delete(response_id, owner):
            return _not_found(response_id)
        return JSONAnswer({"id": response_id, "object": "response.deleted", "deleted": True})

    async def cancel(self, request: Request) -> Response:
        """`POST /v1/responses/{id}/cancel`: stops a background run (a finished one is returned as is;
        a response not created with `background: true` cannot be cancelled: 400)."""
        response_id, owner = _response_id(request), _owner(request)
        run = self._run(response_id, owner)
        if run is not None:
            await run.cancel()
            return JSONAnswer(run.response)
        stored = await self.store.get(response_id, owner)
        if stored is None:
            return _not_found(response_id)
        if not stored.response.get("background"):  # as the API: only background responses can be cancelled
            return error_response(
                400, "Only responses created with background=true can be cancelled.", param="response_id"
            )
        if stored.response["status"] not in TERMINAL:
            if self.shared is None:
                return error_response(409, "This response runs on another gateway process; cancel it there.")
            if not await self.shared.cancel(response_id):  # its process stops it, or its lease runs out
                return error_response(409, "The gateway process running this response did not stop it in time; "
                                      "retry the cancel.")  # fmt: skip
            stored = await self.store.get(response_id, owner)
            if stored is None:  # deleted meanwhile
                return _not_found(response_id)
        return JSONAnswer(stored.response)

    async def input_items(self, request: Request) -> Response:
        """`GET /v1/responses/{id}/input_items`: the items the model saw, newest first by default."""
        response_id = _response_id(request)
        stored = await self.store.get(response_id, _owner(request))
        if stored is None:
            return _not_found(response_id)
        items = [as_listed_item(item, f"{response_id}_in_{i}") for i, item in enumerate(stored.input_items)]
        if request.query_params.get("order", "desc") == "desc":
            items.reverse()
        limit = _int_param(request.query_params.get("limit", "20"), "limit")
        page = items[: max(1, min(limit, 100))]
        return JSONAnswer({
            "object": "list", "data": page, "has_more": len(items) > len(page),
            "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None,
        })  # fmt: skip

    async def _resolved(self, items: list[dict[str, Any]], owner: str) -> list[dict[str, Any]]:
        return await resolved(items, owner, self.store)

    async def _background(self, response_id: str, owner: str) -> bool:
        stored = await self.store.get(response_id, owner)
        return stored is not None and bool(stored.response.get("background"))

    async def _stop_run(self, response_id: str, deleted: bool) -> None:
        """Another process cancelled or deleted a run of ours: stop it (a deleted one is forgotten)."""
        run = self.runs.get(response_id)
        if run is not None:
            await run.cancel()
        if deleted:
            self.runs.forget(response_id)

    def _run(self, response_id: str, owner: str) -> ResponseRun | None:
        """The live run with this id, unless another key made it (then, as for any stranger, none)."""
        run = self.runs.get(response_id)
        return run if run is not None and run.owner == owner else None


def _owner(request: Request) -> str:
    """Who is asking: the hash of the key the guard accepted ("" on a gateway without keys)."""
    return str(request.scope["state"]["owner"])


def _named(request: Request, batches: AsyncIterator[list[dict[str, Any]]]) -> AsyncIterator[list[dict[str, Any]]]:
    """A stream's events under the Open Responses spec's names where they differ from OpenAI's
    (reasoning deltas), or OpenAI's for a client that reads those (see `reads_spec_names`)."""
    return spec_names(batches) if reads_spec_names(request.headers) else batches


async def _drain(events: AsyncIterator[dict[str, Any]]) -> None:
    async for _ in events:
        pass


def _gone() -> Response:
    """The answer to a client that hung up: never sent, but what the access log shows (nginx's
    "client closed request")."""
    return Response(status_code=499)


def _response_id(request: Request) -> str:
    """The path's id; one that no response can have is a 404 here, never a question to the store."""
    response_id: str = request.path_params["id"]
    if not is_response_id(response_id):
        raise BadRequest(f"No response found with id {response_id[:200]!r}.", "response_id", 404)
    return response_id


def _int_param(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise BadRequest(f"{name} must be an integer, got {value!r}", name) from None


def _not_found(response_id: str) -> Response:
    return error_response(404, f"No response found with id '{response_id}'.", param="response_id")
