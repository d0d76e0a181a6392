"""Provider batch engines: the same extraction over OpenAI's Batch API or Anthropic's Message Batches.

Half the price, no rate limits to fight, results within 24 hours. The whole structured-output
stack runs unchanged: each item calls the adapter as usual, but its SDK client sends through a
transport that holds the HTTP request instead of sending it. When every item in flight is
waiting, the held requests go out as one batch (OpenAI: a JSONL file uploaded to `/v1/files`,
then `/v1/batches`; Anthropic: `/v1/messages/batches`), the engine polls until the batch ends,
and each answer is handed back as that request's HTTP response. The layer validates it as it
would a live one; an invalid answer is re-asked, and the re-asks form the next batch, up to
`max_retries` rounds. A line the provider answered with an error becomes its `ProviderStatusError`
(also the SDK's own error type) for that item; a request the batch never ran (expired, cancelled)
a 408 error naming why; a line that cannot be read a 502 for its item alone (`_batch_results`),
the other lines are used.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

import anyio
from typing_extensions import Unpack

from .. import ChatClient, SOMiddlewareError, StructuredOutputChatClient, UserError, as_chat_client
from ..core import ProviderStatusError, redact_url
from ..middleware.structured_output import OutputSettings, SettingsKeywords
from ..providers import sdk_boundary
from ._batch_results import Answer, BatchAnswers, anthropic_line, openai_line
from ._inputs import InputSource
from ._run import BatchRun
from ._setup import prepare

__all__ = ["BatchJobError", "extract_batch"]

T = TypeVar("T")
_BATCH_PRICE = Decimal("0.5")  # both providers bill batch tokens at half the price


class BatchJobError(SOMiddlewareError):
    """A provider batch failed as a whole (for example its input file did not validate)."""


@dataclass
class _Held:
    path: str
    body: Any
    future: asyncio.Future[Answer]


class _Holding:
    """An httpx2 request handler that holds each request until the engine answers it from a batch."""

    def __init__(self) -> None:
        self.held: dict[str, _Held] = {}
        self._numbers = itertools.count(1)

    async def __call__(self, request: Any) -> Any:
        import httpx2

        if request.method != "POST":  # a server probe (GET /version, ...), not a model call: no batch has it
            message = "not served through a batch"
            return httpx2.Response(404, json={"error": {"message": message, "type": "not_found"}}, request=request)
        body = json.loads(await request.aread())
        body.pop("stream", None)
        key = f"request-{next(self._numbers)}"
        held = self.held[key] = _Held(request.url.path, body, asyncio.get_running_loop().create_future())
        try:
            status, payload = await held.future
        finally:
            self.held.pop(key, None)
        # ASCII JSON, not `json=`: a lone surrogate (or NaN) in an answer goes on as the provider wrote it
        content, headers = json.dumps(payload).encode(), {"content-type": "application/json"}
        return httpx2.Response(status, content=content, headers=headers, request=request)


@contextlib.contextmanager
def _no_batch_api(sdk: Any, request: str) -> Iterator[None]:
    """A server that does not know the batch endpoints (a local or self-hosted one) said so in
    `BatchJobError`, not as a bare 404 of an endpoint the caller never named."""
    try:
        with sdk_boundary(sdk):
            yield
    except ProviderStatusError as error:
        status = error.status_code
        if status not in (404, 405, 501):
            raise
        raise BatchJobError(
            f"the server at {redact_url(str(sdk.base_url))} has no batch API ({request} answered {status}): "
            "use the direct engine there (extract_many; --engine direct on the command line)"
        ) from error


async def _openai_batch(sdk: Any, held: Mapping[str, _Held], poll_interval: float) -> BatchAnswers:
    base_path = sdk.base_url.path.rstrip("/")
    lines = []
    for key, request in held.items():
        url = "/v1" + request.path.removeprefix(base_path)
        lines.append({"custom_id": key, "method": "POST", "url": url, "body": request.body})
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    with _no_batch_api(sdk, "POST /v1/files"):
        uploaded = await sdk.files.create(
            file=("so_middleware_batch.jsonl", data, "application/jsonl"), purpose="batch"
        )
    with _no_batch_api(sdk, "POST /v1/batches"):
        batch = await sdk.batches.create(input_file_id=uploaded.id, endpoint=lines[0]["url"], completion_window="24h")
    while batch.status not in ("completed", "failed", "expired", "cancelled"):
        await anyio.sleep(poll_interval)
        batch = await sdk.batches.retrieve(batch.id)
    if batch.status == "failed":
        raise BatchJobError(f"OpenAI batch {batch.id} failed: {batch.errors}")
    answers = BatchAnswers(held.keys(), anthropic=False, why=batch.status)
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            content = await sdk.files.content(file_id)
            answers.read(content.content, openai_line, f"file {file_id} of batch {batch.id}")
    return answers


async def _anthropic_batch(sdk: Any, held: Mapping[str, _Held], poll_interval: float) -> BatchAnswers:
    requests = [{"custom_id": key, "params": request.body} for key, request in held.items()]
    with _no_batch_api(sdk, "POST /v1/messages/batches"):
        batch = await sdk.messages.batches.create(requests=requests)
    while batch.processing_status != "ended":
        await anyio.sleep(poll_interval)
        batch = await sdk.messages.batches.retrieve(batch.id)
    answers = BatchAnswers(held.keys(), anthropic=True, why="expired")
    # the raw JSONL: the SDK's own decoder stops the whole iteration at the first unreadable line
    results = await sdk.messages.batches.with_raw_response.results(batch.id)
    answers.read(await results.read(), anthropic_line, f"the results of batch {batch.id}")
    return answers


_ENGINES = {"openai": ("openai-batch", _openai_batch), "anthropic": ("anthropic-batch", _anthropic_batch)}


def extract_batch(
    client: ChatClient | Any,
    inputs: InputSource,
    output_type: type[T] | Any,
    *,
    output: str | os.PathLike[str] | None = None,
    retry_failed: bool = False,
    instructions: str | None = None,
    options: dict[str, Any] | None = None,
    poll_interval: float = 30.0,
    batch_size: int = 10_000,
    id_field: str = "id",
    text_field: str = "text",
    **settings: Unpack[SettingsKeywords],
) -> BatchRun[T]:
    """`extract_many` on the provider's batch API: OpenAI (Files + Batches) or Anthropic (Message Batches).

    `client` is an OpenAI or Anthropic adapter (or SDK client) over an async SDK client; up to
    `batch_size` items go in one batch, their re-asks in the next. Results, resume and summary
    are those of `extract_many` (cost at the batch price: half).

    Example:
        run = extract_batch(OpenAIChatClient(AsyncOpenAI(), "gpt-4o-mini"), "in.jsonl", Person, output="out.jsonl")
        async for result in run:
            print(result.id, result.value)
    """
    adapter: Any = as_chat_client(client)  # an SDK adapter, checked below
    engine = _ENGINES.get(getattr(adapter, "provider_name", ""))
    sdk = getattr(adapter, "sdk_client", None)
    if engine is None or sdk is None or not getattr(adapter, "is_async", False):
        raise UserError(
            f"the batch engines need an OpenAI or Anthropic adapter over an async SDK client, not {adapter!r}"
        )
    if not isinstance(batch_size, int) or batch_size < 1:
        raise UserError(f"batch_size must be an int of at least 1, not {batch_size!r}")
    import httpx2  # the SDKs' HTTP client: installed with either

    transport = _Holding()
    # MockTransport is httpx2's transport-from-a-handler: here the handler holds the request for a batch.
    http_client = httpx2.AsyncClient(transport=httpx2.MockTransport(transport))
    holding = adapter.with_sdk_client(sdk.with_options(http_client=http_client, max_retries=0))
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
    submit = engine[1]

    async def send_rounds(run: BatchRun[T]) -> None:
        while not (run.inputs_exhausted and run.in_flight == 0):
            await anyio.sleep(0.005)
            everyone_waits = transport.held and len(transport.held) >= run.in_flight
            if everyone_waits and (run.inputs_exhausted or run.in_flight >= run.concurrency):
                held = dict(transport.held)
                with sdk_boundary(sdk):  # the polls and downloads too: their errors are ours
                    read = await submit(sdk, held, poll_interval)
                run.summary.unattributed_lines.extend(read.unattributed)
                answers = read.finish()
                for key, request in held.items():
                    if not request.future.done():
                        request.future.set_result(answers[key])

    structured = StructuredOutputChatClient(holding, settings=chosen)
    return BatchRun(structured, *parts, concurrency=batch_size, companion=send_rounds, price_factor=_BATCH_PRICE)


def engine_name(client: Any) -> str | None:
    """`openai-batch` or `anthropic-batch` for an adapter of that provider, else None."""
    engine = _ENGINES.get(getattr(as_chat_client(client), "provider_name", ""))
    return None if engine is None else engine[0]
