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
from anyio.streams.memory import MemoryObjectSendStream

from .. import (
    ChatClient,
    LimitsChatClient,
    RetryingChatClient,
    StructuredOutput,
    StructuredOutputChatClient,
    UsageDetails,
    UserError,
    as_chat_client,
    run_sync,
    with_limits,
    with_retries,
    with_structured_output,
)
from ._inputs import InputSource, Item, read_inputs
from ._results import ItemResult, ResultLog
from ._summary import BatchSummary, price_of

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = ["BatchRun", "BatchSummary", "build_client", "extract_many", "extract_many_sync", "prepare", "price_of"]

T = TypeVar("T")


def build_client(
    client: ChatClient | Any,
    *,
    concurrency: int = 8,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    max_attempts: int = 4,
    max_retries: int = 2,
    period: float = 60.0,
) -> ChatClient:
    """`with_structured_output(with_retries(with_limits(client)))`, keeping the layers `client` has.

    Limits sit innermost so every HTTP request, retries and re-asks included, passes them.
    """
    stack = as_chat_client(client)
    has = getattr(stack, "get_service", lambda kind: None)
    if has(LimitsChatClient) is None:
        stack = with_limits(
            stack,
            max_concurrency=concurrency,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            period=period,
        )
    if has(RetryingChatClient) is None:
        stack = with_retries(stack, max_attempts=max_attempts)
    if has(StructuredOutputChatClient) is None:
        stack = with_structured_output(stack, max_retries=max_retries)
    return stack


class BatchRun(Generic[T]):
    """The results of `extract_many` in completion order: `async for` (or `for`, from sync code).

    `summary` is complete once iteration has ended. Cancellation (Ctrl-C) or `aclose()` stops the
    items in flight; every result already written stays in the output file. To leave a loop early,
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
        self._results: AsyncIterator[ItemResult[T]] | None = None
        self.inputs_exhausted = False

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
            with anyio.CancelScope(shield=True), contextlib.suppress(asyncio.CancelledError):
                await producer
            if self._log is not None:
                self._log.close()
            self.summary.seconds = time.monotonic() - started
            model = getattr(self._client, "model", None)
            cost = price_of(self.summary.usage, model, getattr(self._client, "provider_name", None))
            self.summary.cost = None if cost is None else cost * self._price_factor

    async def _produce(self, send: MemoryObjectSendStream[ItemResult[T]]) -> None:
        slots = anyio.Semaphore(self.concurrency)
        try:
            async with send, anyio.create_task_group() as group:
                if self._companion is not None:
                    group.start_soon(self._companion, self)
                for item in self._items:
                    if item.id in self._skip:
                        self.summary.skipped += 1
                        continue
                    await slots.acquire()
                    self.in_flight += 1
                    group.start_soon(self._one, item, send, slots)
                self.inputs_exhausted = True
        except BaseExceptionGroup as errors:  # one failure (a bad input, a failed batch): raised as itself
            if len(errors.exceptions) == 1:
                raise errors.exceptions[0] from None
            raise

    async def _one(self, item: Item, send: MemoryObjectSendStream[ItemResult[T]], slots: anyio.Semaphore) -> None:
        started = time.monotonic()
        try:
            try:
                response = await self._client.get_response(item.text, options=self._options)
                result: ItemResult[Any] = ItemResult(
                    item.id, response.value, None, response.attempts, response.usage, time.monotonic() - started
                )
            except Exception as error:
                result = ItemResult.failed(item.id, error, time.monotonic() - started)
            if self._log is not None:
                self._log.append(result.to_record(self._feature.output_type))
            summary = self.summary
            if result.ok:
                summary.done += 1
            else:
                summary.failed[type(result.error).__name__] += 1
            summary.usage = UsageDetails.total([summary.usage, result.usage])
            await send.send(result)
        finally:
            self.in_flight -= 1
            slots.release()

    def __iter__(self) -> Iterator[ItemResult[T]]:
        iterator = self._iterate()
        while True:
            try:
                yield run_sync(lambda: anext(iterator))
            except StopAsyncIteration:
                return
            except BaseException:
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
    max_retries: int = 2,
    max_attempts: int = 4,
    mode: Any = "auto",
    id_field: str = "id",
    text_field: str = "text",
) -> BatchRun[T]:
    """Extract an `output_type` from every input, `concurrency` at a time; results in completion order.

    `client` is an adapter or SDK client (limits, retries and structured output are added unless
    it has them). `inputs`: an iterable (str, `(id, text)`, dicts, `Item`s), a `.jsonl`/`.csv` file
    or a directory. With `output`, each result is appended to that JSONL file as it finishes, and
    ids already done there are skipped (failed ones too, unless `retry_failed`).

    Example:
        run = extract_many(adapter, "people.jsonl", Person, output="out.jsonl", concurrency=16)
        async for result in run:
            print(result.id, result.value if result.ok else result.error)
        print(run.summary)  # done, failed by type, tokens, cost
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise UserError(f"concurrency must be an int of at least 1, not {concurrency!r}")
    parts = prepare(
        inputs,
        output_type,
        output=output,
        retry_failed=retry_failed,
        instructions=instructions,
        options=options,
        max_retries=max_retries,
        mode=mode,
        id_field=id_field,
        text_field=text_field,
    )
    stack = build_client(
        client,
        concurrency=concurrency,
        requests_per_minute=requests_per_minute,
        tokens_per_minute=tokens_per_minute,
        max_attempts=max_attempts,
        max_retries=max_retries,
    )
    return BatchRun(stack, *parts, concurrency=concurrency)


def prepare(
    inputs: InputSource,
    output_type: Any,
    *,
    output: str | os.PathLike[str] | None,
    retry_failed: bool,
    instructions: str | None,
    options: dict[str, Any] | None,
    max_retries: int,
    mode: Any,
    id_field: str,
    text_field: str,
) -> tuple[Iterator[Item], StructuredOutput[Any], dict[str, Any], ResultLog | None, set[str]]:
    """What every run needs: the items, the feature and options of each call, the output file and
    the ids it already holds. The type is checked here, before any call."""
    feature: StructuredOutput[Any] = StructuredOutput(output_type, mode=mode, max_retries=max_retries)
    call_options = {**(options or {}), "features": [feature]}
    if instructions is not None:
        call_options["instructions"] = instructions
    items = read_inputs(inputs, id_field=id_field, text_field=text_field)
    log = None if output is None else ResultLog(output, retry_failed=retry_failed)
    skip = set() if log is None else log.done | log.failed
    return items, feature, call_options, log, skip


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
