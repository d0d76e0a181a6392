"""One response being generated: the backend call, its events, and background runs.

A `Run` opens the backend stream first (so an error the backend answers at once is forwarded
with its status, streaming or not), then turns updates into Responses events. Its events are
kept, so a background run's stream can be resumed from any sequence number; stopping the
iteration (a client gone, a cancel) closes the backend stream. With a store that several processes
share, a background run's events are shared too (`SharedRuns`), so any process can resume it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from so_middleware import ChatClient, ChatMessage, ChatOptions, ChatResponseUpdate, ChatStream, StructuredOutput
from so_middleware.core import mend_surrogates

from ..wire.responses import TERMINAL_EVENTS, Event
from ..wire.responses_events import ResponseWriter
from ._errors import BadRequest
from ._request import ResponsesRequest
from ._shared import SharedRuns
from ._store import ResponseStore, StoreError

__all__ = ["RETRY_AFTER", "SHUTTING_DOWN", "ResponseRun", "Runs"]

_log = logging.getLogger("so_middleware.gateway")
TERMINAL = ("completed", "incomplete", "failed", "cancelled")
RETRY_AFTER = 2  # seconds, the `retry-after` of a 429 when the background queue is full
SHUTTING_DOWN = "the gateway shut down before this response finished"
UNSAVED = "The response could not be stored: {}"
# what is stored of a response the store refused: the gateway's own fields, none of the request's or model's
_UNSAVED_FIELDS = ("id", "object", "created_at", "completed_at", "status", "background", "error", "store")


class ResponseRun:
    """One response: `events()` runs it (once) and yields its events; `follow()` reads them again."""

    def __init__(
        self,
        client: ChatClient,
        request: ResponsesRequest,
        response: dict[str, Any],
        messages: list[ChatMessage],
        history: list[dict[str, Any]],
        store: ResponseStore,
        validate: bool = False,
        owner: str | None = None,
        shared: SharedRuns | None = None,
    ) -> None:
        self.client, self.request, self.messages, self.history = client, request, messages, history
        self.store, self.validate = store, validate
        self.owner = owner  # who made it (a hash of the client's key): only they see it
        self.writer = ResponseWriter(response)
        self._waiters: list[asyncio.Future[None]] = []  # followers waiting for the next event
        self.task: asyncio.Task[None] | None = None
        self.error: Exception | None = None
        self.published = 0  # events before this index are visible to followers (the stored state is saved)
        self.finished = False
        self.shared = shared  # a background run's events go there too, for followers on other processes
        self._shared_up_to = 0
        self._sharing = asyncio.Lock()

    @property
    def response(self) -> dict[str, Any]:
        """The response object as it stands."""
        return self.writer.response

    @property
    def polled(self) -> dict[str, Any]:
        """The response as a poll sees it: an end whose event is not published yet (its save is under
        way, and may be refused) is not told yet, the run is still `in_progress`."""
        if self.response["status"] in TERMINAL and self.published < len(self.writer.events) and not self.finished:
            return {**self.response, "status": "in_progress"}
        return self.response

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Call the backend and yield the events; backend errors before the first event propagate."""
        updates = self._updates()
        try:
            first = await updates.__anext__()
        except StopAsyncIteration:
            first = None
        try:
            for event in await self._publish(self.writer.start()):
                yield event
            if self.request.background:  # other gateway processes see it running
                await self.save()
            if first is not None:
                for event in await self._publish(self.writer.feed(first)):
                    yield event
                async for update in updates:
                    for event in await self._publish(self.writer.feed(update)):
                        yield event
            self.writer.finish()
        except Exception as error:  # a stream broken mid-way: the response fails, the client is told
            self.writer.finish(error=_reason(error))
        finally:
            await updates.aclose()
        await self.share()  # before the status its followers elsewhere end on
        await self.save_or_fail()  # refused: its end, not seen yet, becomes `failed`
        for event in await self._publish(self.writer.events[self.published :]):
            yield event

    def _updates(self) -> ChatStream | AsyncGenerator[ChatResponseUpdate[Any], None]:
        """The run's updates: the backend's stream itself, or the one update of a plain call."""
        options = self.request.options
        fmt = options.response_format
        if self.validate and fmt is not None and fmt.type == "json_schema" and fmt.schema is not None:
            feature: StructuredOutput[Any] = StructuredOutput(schema=dict(fmt.schema), name=fmt.name, mode="native")
            options = options.with_features([feature])
        elif self.request.stream or self.request.background:  # a background run streams: its followers see it go
            return self.client.get_response(self.messages, options=options, stream=True)
        return self._whole(options)  # validated, or a plain request: a plain call (the backend sees `stream: false`)

    async def _whole(self, options: ChatOptions) -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        response = await self.client.get_response(self.messages, options=options)
        message = response.messages[-1] if response.messages else ChatMessage("assistant", "")
        message = mend_surrogates([message])[0]  # valid JSON, not text: U+FFFD, as the streamed path reads it
        yield ChatResponseUpdate(message.contents, usage=response.usage, finish_reason=response.finish_reason)

    async def _publish(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Make a batch of new events visible to the followers (shared first, when shared); returns it."""
        if events:
            if self.shared is not None:
                await self.share()
            self.published = events[-1]["sequence_number"] + 1
            self._wake()
        return events

    async def share(self) -> None:
        """Hand the events not shared yet to the other processes, in order, each once."""
        if self.shared is None or self._shared_up_to == len(self.writer.events):
            return
        async with self._sharing:  # a shutdown's `error` event must not overtake the run's own
            new = self.writer.events[self._shared_up_to :]
            if new:
                await self.shared.append(self.response["id"], new)
                self._shared_up_to += len(new)

    async def notify(self) -> None:
        """Wake the followers of this run."""
        self._wake()

    def _wake(self) -> None:
        # a future per waiting follower, not a condition's lock round trip per event: nobody waiting costs nothing
        if not self._waiters:
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _changed(self) -> None:
        """Wait for the next wake-up."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter

    async def follow(self, starting_after: int = -1) -> AsyncIterator[list[dict[str, Any]]]:
        """The events after `starting_after`, the stored ones first, then live until the run ends;
        in batches (every event ready at once), so a fast backend costs one write per batch."""
        sent = starting_after
        while True:
            pending = self.writer.events[sent + 1 : self.published]
            if not pending:
                if self.finished:
                    return
                await self._changed()
                continue
            yield pending
            sent = pending[-1]["sequence_number"]

    async def save(self) -> None:
        """Store the response as it stands (when the request asked for it); a `StoreError` when refused."""
        if self.request.store or self.request.background:
            await self.store.put(self.response, self.history, self.owner)

    async def save_or_fail(self) -> None:
        """`save`; a response the store refuses ends `failed` with the reason instead (`fail_unsaved`)."""
        try:
            await self.save()
        except StoreError as error:
            await self.fail_unsaved(error)

    async def fail_unsaved(self, error: StoreError) -> None:
        """End the run `failed` because the store refused it: its terminal event, if nobody has seen it
        yet, becomes `response.failed` with the reason, and what can be stored of it is (its id, status
        and error, not the values refused), so a poll finds it failed too."""
        _log.warning("response %s could not be stored: %s", self.response["id"], error)
        events = self.writer.events
        if events and events[-1]["type"] in TERMINAL_EVENTS and len(events) > max(self.published, self._shared_up_to):
            events.pop()  # an end nobody was told of yet: replaced below
        if events and events[-1]["type"] in TERMINAL_EVENTS:  # its end was seen: the status tells the rest
            self.response.update(status="failed", error={"code": "server_error", "message": UNSAVED.format(error)})
        else:
            self.response.update(completed_at=None, incomplete_details=None)
            self.writer.finish(error=UNSAVED.format(error))
        record: dict[str, Any] = {name: self.response.get(name) for name in _UNSAVED_FIELDS}
        record.update(output=[], metadata={})
        try:
            await self.store.put(record, [], self.owner)
        except StoreError as again:  # nothing can be stored: the answer still says why
            _log.warning("response %s could not be stored as failed either: %s", self.response["id"], again)

    async def end_unsaved(self, error: StoreError) -> None:
        """End a run the store refused before it started (`fail_unsaved`): it never calls the backend,
        and its followers get its `response.failed`."""
        await self.fail_unsaved(error)
        self.published = len(self.writer.events)
        self.finished = True
        await self.notify()

    def start(self, events: AsyncIterator[dict[str, Any]], slots: asyncio.Semaphore | None = None) -> None:
        """Drain `events` (this run's, maybe wrapped in a span) in a task of its own, once one of
        `slots` is free (the run stays `queued` until then)."""
        self.task = asyncio.create_task(self._drain(events, slots))

    async def _drain(self, events: AsyncIterator[dict[str, Any]], slots: asyncio.Semaphore | None) -> None:
        try:
            async with slots or contextlib.nullcontext():
                async for _ in events:
                    pass
        except Exception as error:  # refused before the first event
            self.error = error
            if self.request.background:  # nobody waits on the HTTP answer: the response fails
                self.writer.finish(error=_reason(error))
                await self.share()
                await self.save_or_fail()
        finally:
            self.finished = True
            await self.notify()

    async def started(self) -> None:
        """Wait for the first event; raise the backend's error when it refused the request."""
        while not self.published and not self.finished:
            await self._changed()
        if self.error is not None:
            raise self.error

    async def stop(self) -> None:
        """Stop the run's task (a client gone): the backend stream is closed."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def cancel(self) -> None:
        """Stop a background run: the backend stream is closed and the response is `cancelled`.

        The status is set before the run's task stops: its followers' streams end as it stops,
        and a client that then asks why (a poll) must find `cancelled`, not `in_progress`."""
        if self.response["status"] in TERMINAL:
            await self.stop()
        else:
            self.response["status"] = "cancelled"
            await self.stop()
            await self.save_or_fail()
        self.finished = True
        await self.notify()

    async def shut_down(self) -> None:
        """End the run now (the gateway is stopping) with a terminal event its followers see: a
        background run ends `cancelled` and its stream with an `error` event; a streamed one `failed`.

        The terminal event is published before the task stops: a follower woken by the stop must
        find it, not an ended run with nothing more to send."""
        if self.finished or self.response["status"] in TERMINAL:
            return
        if self.request.background:
            self.response["status"] = "cancelled"
            error = {"code": "server_shutting_down", "message": SHUTTING_DOWN, "param": None}
            # OpenAI's error event has its fields at the top, the spec's under `error`: both, one event
            self.writer.emit(Event.ERROR, **error, error={"type": "server_error", **error})
        else:
            self.writer.finish(error=SHUTTING_DOWN)
        self.published = len(self.writer.events)
        await self.stop()
        await self.share()
        await self.save_or_fail()
        self.finished = True
        await self.notify()


def _reason(error: Exception) -> str:
    """Why a run failed, as its response's error says it."""
    return UNSAVED.format(error) if isinstance(error, StoreError) else f"{type(error).__name__}: {error}"


class Runs:
    """The background runs of this gateway process, by response id: at most `max_running` call the
    backend at once, at most `max_queued` more wait (`queued`); past both, a new one is a 429."""

    def __init__(self, max_running: int = 8, max_queued: int = 64, keep_finished: int = 256) -> None:
        if max_running < 1 or max_queued < 0:
            raise ValueError(f"max_running must be >= 1 and max_queued >= 0, got {max_running} and {max_queued}")
        self._runs: OrderedDict[str, ResponseRun] = OrderedDict()
        self._keep = keep_finished  # finished runs kept for resuming their streams
        self._slots = asyncio.Semaphore(max_running)
        self._limit = max_running + max_queued

    def get(self, response_id: str) -> ResponseRun | None:
        """The live run with this id, if this process runs it."""
        return self._runs.get(response_id)

    def live(self) -> list[str]:
        """The ids of the runs not finished yet (queued or running)."""
        return [key for key, run in self._runs.items() if not run.finished]

    def admit(self, run: ResponseRun) -> None:
        """Count `run` in (before it is first stored); a 429 with `retry-after` when the queue is full."""
        if sum(not kept.finished for kept in self._runs.values()) >= self._limit:
            raise BadRequest(f"This gateway already has {self._limit} background responses queued or running; "
                             "retry later.", None, 429, "too_many_background_runs",
                             headers={"retry-after": str(RETRY_AFTER)})  # fmt: skip
        self._runs[run.response["id"]] = run

    def start(self, run: ResponseRun, events: AsyncIterator[dict[str, Any]]) -> None:
        """Run an admitted run in the background until done or cancelled; kept for
        `GET ...?stream=true` and cancel."""
        run.start(events, self._slots)
        finished = [key for key, kept in self._runs.items() if kept.response["status"] in TERMINAL]
        for key in finished[: max(0, len(finished) - self._keep)]:
            del self._runs[key]

    def forget(self, response_id: str) -> None:
        """Drop a run (its response was deleted)."""
        self._runs.pop(response_id, None)

    async def close(self) -> None:
        """Cancel every run still going (graceful shutdown): each ends `cancelled` in the store, and
        its task has ended (so nothing writes to the store after this returns)."""
        ended = await asyncio.gather(*(run.shut_down() for run in list(self._runs.values())), return_exceptions=True)
        for error in ended:
            if isinstance(error, Exception):  # e.g. the store refused the last write: the others still end
                _log.warning("a background run could not be ended cleanly: %s: %s", type(error).__name__, error)
