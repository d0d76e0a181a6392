"""Background (long-running) runs on the Responses API: poll, resume, cancel.

A request with `background: true` is answered at once with `status` `queued` or `in_progress`;
`GET /v1/responses/{id}` polls it, `GET /v1/responses/{id}?stream=true&starting_after=N` replays
its event stream after event N, `POST /v1/responses/{id}/cancel` stops it. Here these become:

| Responses API                       | so_middleware                                                  |
|-------------------------------------|----------------------------------------------------------------|
| `queued` / `in_progress`            | `finish_reason=LONG_RUNNING`, `continuation_token` (the id)    |
| `completed` / `incomplete`          | the usual response (`stop`, `length`, ...)                     |
| `failed`                            | `ProviderResponseError` with the response's error code         |
| `cancelled`                         | `ProviderResponseError` with `code == "cancelled"`             |
| stream event `sequence_number`      | each update's `continuation_token.sequence_number`             |
| stream ends, run `cancelled`/`failed` | that run's `ProviderResponseError`, not `StreamInterruptedError` |
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...core import (
    RESUMED_KEY,
    ChatResponse,
    ChatResponseUpdate,
    ContinuationToken,
    FinishReason,
    ProviderResponseError,
    UserError,
)
from ...wire.responses import reported_failure, response_from_wire
from ...wire.responses_events import StreamReader

__all__ = [
    "PENDING_STATUSES",
    "RESUMED_KEY",
    "ResumableReader",
    "answer_to_chat",
    "background_to_chat",
    "ended_run_error",
    "final_of_resumed",
]

PENDING_STATUSES = ("queued", "in_progress")


def background_to_chat(
    response: Any, token: ContinuationToken | None = None, *, prefill: str = ""
) -> ChatResponse[Any]:
    """Map a `Response` that may still be running: a pending one is `LONG_RUNNING` with a token
    (`token`, the caller's, kept with its trace; else a new one), a finished one as usual."""
    status = getattr(response, "status", None)
    if status not in PENDING_STATUSES:
        return response_from_wire(response, prefill=prefill)
    response_id = getattr(response, "id", None) or (token.response_id if token else "")
    return ChatResponse(
        usage=None,
        finish_reason=FinishReason.LONG_RUNNING,
        response_id=response_id,
        model_id=getattr(response, "model", None),
        raw_representation=response,
        additional_properties={"status": status},
        continuation_token=token if token is not None else _token_for(response_id),
    )


def answer_to_chat(response: Any, *, prefill: str = "") -> ChatResponse[Any]:
    """Map the answer to a request that started no background run: a pending status there is the
    server's fault (a plain request is answered when it is done), not the caller's."""
    status = getattr(response, "status", None)
    if status in PENDING_STATUSES:
        raise ProviderResponseError(
            f"the server answered a request that started no background run with status {status!r}: "
            "the answer is unfinished; its body is on this error's .attempts"
        )
    return response_from_wire(response, prefill=prefill)


@dataclass
class ResumableReader:
    """A `StreamReader` whose updates carry continuation tokens (the last event's sequence number).

    Over a resumed stream (`resumed=True`) the terminal update also carries the whole response
    (`RESUMED_KEY`), since the deltas before the resume point were delivered by an earlier stream.
    """

    inner: StreamReader
    token: ContinuationToken | None = None  # known from the start when resuming
    resumed: bool = False

    @property
    def text(self) -> list[str]:
        return self.inner.text

    @text.setter
    def text(self, value: list[str]) -> None:
        self.inner.text = value

    @property
    def finished(self) -> bool:
        return self.inner.finished

    @finished.setter
    def finished(self, value: bool) -> None:
        self.inner.finished = value

    def read(self, event: Any) -> ChatResponseUpdate[Any] | None:
        update = self.inner.read(event)
        response = _field(event, "response")
        if self.token is None and isinstance(_field(response, "id"), str):
            self.token = _token_for(_field(response, "id"))  # response.created / queued
        if update is None or self.token is None:
            return update
        update.response_id = update.response_id or self.token.response_id
        if not self.inner.finished:
            update.continuation_token = self.token.after(_field(event, "sequence_number"))
        elif self.resumed:
            update.additional_properties[RESUMED_KEY] = response_from_wire(response)
        return update


def _token_for(response_id: Any) -> ContinuationToken:
    """A token for the id the server gave its run; an id no token can hold ("", "..", a path) is
    the server's fault, not the caller's."""
    try:
        return ContinuationToken(response_id)
    except UserError as error:
        raise ProviderResponseError(
            f"the server named its background run with an id no continuation token can hold: {response_id!r:.60}"
        ) from error


def _field(value: Any, name: str) -> Any:
    """A field of an SDK object or of a plain decoded event."""
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


async def ended_run_error(retrieve: Callable[..., Awaitable[Any]], token: ContinuationToken) -> Exception | None:
    """Why a background stream ended without a terminal event, when the run itself ended: the
    typed error of a `cancelled` or `failed` run (the API sends no event for a cancel). None when
    the run is still going or its state cannot be read (the interruption stands then)."""
    try:
        response = await retrieve(response_id=token.response_id)
    except Exception:  # best effort: the stream's own error is what the caller gets
        return None
    return reported_failure(response)


def final_of_resumed(updates: list[ChatResponseUpdate[Any]]) -> ChatResponse[Any] | None:
    """The whole response of a resumed stream (None for a stream that was not resumed)."""
    whole = updates[-1].additional_properties.get(RESUMED_KEY) if updates else None
    return whole if isinstance(whole, ChatResponse) else None
