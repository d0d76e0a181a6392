"""`extract_many`: one typed extraction per input, bounded and paced, results as they finish."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from decimal import Decimal
from typing import Any, Generic, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from typing_extensions import Unpack

from .. import ChatClient, SOMiddlewareError, StructuredOutput, UsageDetails, UserError, failure_of, run_sync
from ..middleware.structured_output import OutputSettings, SettingsKeywords
from ._inputs import InputSource, Item
from ._results import ItemResult, ResultLog, ResultsWriteError
from ._setup import build_client, prepare
from ._summary import BatchSummary, hosted_provider, price_of

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = ["BatchRun", "BatchSummary", "ServerUnreachableError", "extract_many", "extract_many_sync"]

T = TypeVar("T")

# Items in a row that could not reach the server before a run stops: a wrong address or a server
# that is down fails every item the same way, and each would be written as one more failure.
UNREACHABLE_AFTER = 10


class ServerUnreachableError(SOMiddlewareError, ConnectionError):
    """A batch run stopped because item after item could not connect to the server.

    `error` is the last item's connection error (it names the address). The failed items are in
    the output; fix the address (or start the server), then run again with `retry_failed=True`
    (`--retry-failed`) to run them too.
    """

    def __init__(self, failures: int, error: BaseException) -> None:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        super().__init__(
            f"stopped after {failures} items in a row could not connect ({type(error).__name__}: {first_line}): "
            "check the address and that the server runs, then run again with retry_failed=True (--retry-failed)"
        )
        self.failures = failures
        self.error = error


class BatchRun(Generic[T]):
    """The results of `extract_many` in completion order: `async for` (or `for`, from sync code).

    `summary` is complete once iteration has ended. Cancellation (Ctrl-C) or `aclose()` stops the
    items in flight; every result already written stays in the output file. A bad input found as
    the run goes (in a generator), an output that cannot be written (`ResultsWriteError`) or ten
    items in a row that could not connect to the server (`ServerUnreachableError`: a wrong address
    fails every item) stops the run from starting items: the items in flight end and come first,
    then the error is raised.
    To leave a loop early,
    use `async with` (a bare `break` leaves the run going until it is garbage-collected):

        async with extract_many(client, inputs, Person, output="out.jsonl") as run:
            async for result in run:
                if result.error: break
    """

    def __init__(
        self,
        client: ChatClient,
        items: Iterator[Item],
        feature: StructuredOutput[T],
        options: dict[str, Any],
        log: ResultLog | None,
        skip: set[str],
        *,
        concurrency: int,
        companion: Callable[[BatchRun[T]], Coroutine[Any, Any, None]] | None = None,
        price_factor: Decimal = Decimal(1),
    ) -> None:
        self._client, self._items, self._feature, self._options = client, items, feature, options
        self.concurrency, self._log, self._skip = concurrency, log, skip
        self._companion, self._price_factor = companion, price_factor
        self.summary = BatchSummary()
        self.in_flight = 0  # items started and not finished
        self._started: dict[str, float] = {}  # item id -> time.monotonic() when it started, while in flight
        self._results: AsyncIterator[ItemResult[T]] | None = None
        self._sync_results: Iterator[ItemResult[T]] | None = None
        self.inputs_exhausted = False
        self._stopped_by: Exception | None = None  # what stopped the run early, raised at its end
        self._unreachable = 0  # items in a row, in completion order, that could not connect

    def stopped(self) -> bool:
        """Whether the run stopped starting items early (a bad input read as it went, an output
        that could not be written); the error is raised once the items in flight have ended."""
        return self._stopped_by is not None

    def oldest_in_flight(self) -> tuple[str, float] | None:
        """The id of the item that has been in flight longest, and for how many seconds (None when
        none is): a call that runs on long after the others ended shows here."""
        if not self._started:
            return None
        item_id, started = min(self._started.items(), key=lambda pair: pair[1])
        return item_id, time.monotonic() - started

    @property
    def already_done(self) -> int:
        """Ids found in the output file when the run was made (they are skipped)."""
        return len(self._skip)

    def __aiter__(self) -> AsyncIterator[ItemResult[T]]:
        if self._results is None:
            self._results = self._iterate()
        return self._results

    async def aclose(self) -> None:
        """Stop now: cancel the items in flight and close the output (what is written stays)."""
        if self._results is None:
            self._results = self._iterate()
        await self._results.aclose()  # type: ignore[attr-defined]
        if self._log is not None:
            self._log.close()

    async def __aenter__(self) -> BatchRun[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _iterate(self) -> AsyncIterator[ItemResult[T]]:
        started = time.monotonic()
        send, receive = anyio.create_memory_object_stream[ItemResult[T]](self.concurrency)
        producer = asyncio.ensure_future(self._produce(send))
        try:
            async with receive:
                async for result in receive:
                    yield result
            await producer
        finally:
            producer.cancel()
            # its error, if any, was raised above (or the caller is leaving): the output closes either way
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception, asyncio.CancelledError):
                await producer
            if self._log is not None:
                self._log.close()
            self.summary.seconds = time.monotonic() - started
            provider = hosted_provider(self._client)  # a local server's model has no price, whatever its name
            cost = price_of(self.summary.usage, getattr(self._client, "model", None), provider) if provider else None
            self.summary.cost = None if cost is None else cost * self._price_factor

    async def _produce(self, send: MemoryObjectSendStream[ItemResult[T]]) -> None:
        slots = anyio.Semaphore(self.concurrency)
        try:
            async with send, anyio.create_task_group() as group:
                if self._companion is not None:
                    group.start_soon(self._companion, self)
                try:
                    await self._start_items(group, send, slots)
                finally:
                    self.inputs_exhausted = True  # no item starts after this
        except BaseExceptionGroup as errors:  # one failure (a failed batch): raised as itself
            if len(errors.exceptions) == 1:
                failure = errors.exceptions[0]
                raise failure from failure.__cause__  # its own cause (the SDK's error) kept, the group's context not
            raise
        if self._stopped_by is not None:  # raised once the items in flight have ended and been sent
            raise self._stopped_by

    async def _start_items(
        self, group: TaskGroup, send: MemoryObjectSendStream[ItemResult[T]], slots: anyio.Semaphore
    ) -> None:
        """Start each item as a slot frees, until the inputs end or the run is stopped: by a bad
        input read as the run goes (a duplicate id in a generator) or by an output that cannot be
        written. Either way the items in flight end first: their answers are paid for."""
        while not self.stopped():
            try:
                item = next(self._items, None)
            except Exception as error:
                self._stopped_by = error
                return
            if item is None:
                return
            if item.id in self._skip:
                self.summary.skipped += 1
                if self._log is not None and item.id in self._log.failed:
                    self.summary.skipped_failed += 1
                continue
            await slots.acquire()
            if self.stopped():  # while it waited, a write failed
                slots.release()
                return
            self.in_flight += 1
            group.start_soon(self._one, item, send, slots)

    async def _one(self, item: Item, send: MemoryObjectSendStream[ItemResult[T]], slots: anyio.Semaphore) -> None:
        started = self._started[item.id] = time.monotonic()
        try:
            try:
                response = await self._client.get_response(item.text, options=self._options)
                result: ItemResult[Any] = ItemResult(
                    item.id, response.value, None, response.attempts, response.usage, time.monotonic() - started
                )
            except Exception as error:
                result = ItemResult.failed(item.id, error, time.monotonic() - started)
            if self._log is not None:
                try:
                    self._log.append(result.to_record(self._feature.output_type))
                except ResultsWriteError as error:  # the result still goes to the caller
                    if not isinstance(self._stopped_by, ResultsWriteError):
                        self._stopped_by = error
                    self._stopped_by.unwritten.append(item.id)
            self._note_connection(result.error)
            summary = self.summary
            if result.ok:
                summary.done += 1
            else:
                summary.failed[type(result.error).__name__] += 1
            summary.usage = UsageDetails.total([summary.usage, result.usage])
            await send.send(result)
        finally:
            self.in_flight -= 1
            self._started.pop(item.id, None)
            slots.release()

    def _note_connection(self, error: BaseException | None) -> None:
        """Stop starting items once `UNREACHABLE_AFTER` in a row failed to connect."""
        if error is None or failure_of(error).kind != "connection":
            self._unreachable = 0
            return
        self._unreachable += 1
        if self._unreachable >= UNREACHABLE_AFTER and self._stopped_by is None:
            self._stopped_by = ServerUnreachableError(self._unreachable, error)

    def __iter__(self) -> Iterator[ItemResult[T]]:
        # One iterator per run, as `__aiter__` has: a second `for` goes on where the first left off
        # (it never starts the items again), and `it = iter(run); next(it); for r in it` reads on.
        if self._sync_results is None:
            self._sync_results = self._blocking(self.__aiter__())
        return self._sync_results

    def _blocking(self, iterator: AsyncIterator[ItemResult[T]]) -> Iterator[ItemResult[T]]:
        while True:
            try:
                yield run_sync(lambda: anext(iterator))
            except StopAsyncIteration:
                return
            except BaseException:
                with contextlib.suppress(RuntimeError):  # collected at exit, the loop already stopped
                    run_sync(iterator.aclose)  # type: ignore[attr-defined]
                raise


def extract_many(
    client: ChatClient | Any,
    inputs: InputSource,
    output_type: type[T] | Any,
    *,
    output: str | os.PathLike[str] | None = None,
    concurrency: int = 8,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    retry_failed: bool = False,
    instructions: str | None = None,
    options: dict[str, Any] | None = None,
    max_attempts: int = 4,
    id_field: str = "id",
    text_field: str = "text",
    **settings: Unpack[SettingsKeywords],
) -> BatchRun[T]:
    """Extract an `output_type` from every input, `concurrency` at a time; results in completion order.

    `client` is an adapter or SDK client (limits, retries and structured output are added unless
    it has them). `inputs`: an iterable (str, `(id, text)`, dicts, `Item`s), a `.jsonl`/`.csv` file
    or a directory. With `output`, each result is appended to that JSONL file as it finishes, and
    ids already done there are skipped (failed ones too, unless `retry_failed`). `mode`,
    `max_retries`, `strict`, `name` and `description` are `OutputSettings` for every item.

    Before any call, a `UserError` names a bad file, directory or list item (its line for a file
    that is not UTF-8), a duplicate id (both items) or an output that cannot be opened; a
    generator's items are checked as they are read, and a bad one stops the run after the items
    in flight.

    Example:
        run = extract_many(adapter, "people.jsonl", Person, output="out.jsonl", concurrency=16)
        async for result in run:
            print(result.id, result.value if result.ok else result.error)
        print(run.summary)  # done, failed by type, tokens, cost
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise UserError(f"concurrency must be an int of at least 1, not {concurrency!r}")
    chosen = OutputSettings(**settings)
    parts = prepare(
        inputs,
        output_type,
        output=output,
        retry_failed=retry_failed,
        instructions=instructions,
        options=options,
        settings=chosen,
        id_field=id_field,
        text_field=text_field,
    )
    stack = build_client(
        client,
        concurrency=concurrency,
        requests_per_minute=requests_per_minute,
        tokens_per_minute=tokens_per_minute,
        max_attempts=max_attempts,
        settings=chosen,
    )
    return BatchRun(stack, *parts, concurrency=concurrency)


def extract_many_sync(
    client: ChatClient | Any, inputs: InputSource, output_type: type[T] | Any, **kwargs: Any
) -> BatchRun[T]:
    """`extract_many` for scripts: iterate the run with a plain `for` (same arguments).

    Example:
        run = extract_many_sync(adapter, ["Ada, 36", "Bob, 41"], Person)
        values = [result.value for result in run if result.ok]
        print(run.summary)
    """
    return extract_many(client, inputs, output_type, **kwargs)
