"""Logging: each call, and what happened inside it, through the standard `logging` module.

    client = with_logging(with_retries(with_structured_output(adapter)), logger=logging.getLogger("llm"))

**Records** (logger `so_middleware` unless `logger=` is given):

| record | level | when |
|---|---|---|
| `chat start` | `DEBUG` (`level` with `include_content=True`) | a call starts: model, stream, server |
| `chat` | `level` (default `INFO`) | a call answered: model (and `response_model` when the answer names another), duration, finish reason, tokens, time to first chunk, cache hit, structured-output strategy and attempts |
| `retry` | `WARNING` | each retry the retry layer records on the response (`so_middleware.retries`) |
| `reask`, `strategy fallback` | `WARNING` | each structured-output attempt that was re-asked, or moved to the next strategy (read from `response.attempts`, or from an `OutputError`'s attempts) |
| `failover` | `WARNING` | each client `with_fallback` passed over (`so_middleware.fallback`, or an error's `fallback_errors`): the error's type, HTTP status and provider code |
| `chat failed` | `ERROR` | the call raised: the error's type, HTTP status (`status`) and provider error code (`code`, e.g. `rate_limit_exceeded`) |
| `chat closed` / `chat cancelled` | `level` | a stream closed before its end, a call cancelled |

Every record also carries its fields as `record.so_middleware` (a dict with `event`), for structured
log handlers.

**Content:** no message text, answer text or model output unless `include_content=True`; so an
error is logged by its type, HTTP status and provider code only, never its message (a provider's
message may quote the request, an `OutputError`'s the model's output), as telemetry records it. Credentials never: userinfo in URLs, `key=`/`token=`-style query
parameters, bearer tokens and `sk-...` keys are replaced with `***` in everything logged.

**Order:** outermost, one `chat` record per logical call sees retries, re-asks and failovers; under
`with_retries` each attempt is a call of its own. Streams are logged when they end.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio

from ...core import (
    ChatClient,
    ChatResponse,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    ResponseStream,
    UserError,
    as_messages,
)
from ._records import error_events, error_fields, redact, redacted, response_events, summary

__all__ = ["LoggingChatClient", "redact", "with_logging"]


class LoggingChatClient(DelegatingChatClient):
    """Logs every call through `logger`; see the module docstring for the records.

    Example:
        client = LoggingChatClient(adapter, logger=logging.getLogger("app.llm"), level=logging.DEBUG)
    """

    def __init__(
        self,
        inner: ChatClient | Any,
        *,
        logger: logging.Logger | logging.LoggerAdapter[Any] | str | None = None,
        level: int | str = logging.INFO,
        include_content: bool = False,
    ) -> None:
        number = logging.getLevelName(level.upper()) if isinstance(level, str) else level
        if isinstance(number, bool) or not isinstance(number, int):
            raise UserError(f"level must be a logging level (logging.INFO or 'INFO'), not {level!r}")
        if logger is None or isinstance(logger, str):
            logger = logging.getLogger(logger or "so_middleware")
        super().__init__(inner)
        self._self_logger = logger
        self._self_level = number
        self._self_include_content = bool(include_content)

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """Call the inner client, logging the call; see the module docstring."""
        return _CallLog(self, call, stream=False).respond(self.passing_on(call))

    def stream(self, call: LayerCall) -> ChatStream:
        """The same, streamed: logged when the stream ends."""
        record = _CallLog(self, call, stream=True)
        return ResponseStream(record.stream(self.passing_on(call)), record.final_response)


class _CallLog:
    """The records of one call; per-call state lives here, the layer holds only its settings."""

    def __init__(self, layer: LoggingChatClient, call: LayerCall, *, stream: bool) -> None:
        self.messages = call.messages
        model = call.options.model or getattr(layer.__wrapped__, "model", None)
        self.logger = layer._self_logger
        self.level = layer._self_level
        self.content = layer._self_include_content
        server = getattr(layer.__wrapped__, "base_url", None)
        self.fields: dict[str, Any] = {"model": model, "stream": stream, "server": str(server) if server else None}
        self.started = time.perf_counter()
        self.inner: ChatStream | None = None

    def log(self, level: int, event: str, **fields: Any) -> None:
        if not self.logger.isEnabledFor(level):
            return
        values = {key: redacted(value) for key, value in fields.items() if value is not None}
        text = " ".join(f"{key}={value}" for key, value in values.items())
        self.logger.log(level, "%s %s", event, text, extra={"so_middleware": {"event": event, **values}})

    def start(self) -> None:
        content = None
        if self.content:
            with contextlib.suppress(UserError):  # bad messages: the inner client raises, logged as the failure
                content = [f"{m.role}: {m.text}" for m in as_messages(self.messages)]
        self.log(self.level if self.content else logging.DEBUG, "chat start", **self.fields, messages=content)

    async def respond(self, call: Callable[..., Any]) -> ChatResponse[Any]:
        self.start()
        try:
            response: ChatResponse[Any] = await call(stream=False)
        except BaseException as error:
            self.failed(error)
            raise
        self.answered(response)
        return response

    async def stream(self, call: Callable[..., Any]) -> AsyncIterator[Any]:
        self.start()
        first_chunk: float | None = None
        updates = 0
        try:
            self.inner = inner = call(stream=True)
            async for update in inner:
                updates += 1
                if first_chunk is None:
                    first_chunk = round(time.perf_counter() - self.started, 3)
                yield update
        except BaseException as error:
            self.failed(error, updates=updates)
            raise
        finally:
            if self.inner is not None and not self.inner.is_complete:
                with anyio.CancelScope(shield=True):
                    await self.inner.aclose()
        try:
            response = await inner.get_final_response()
        except Exception as error:  # raised again by the caller's own get_final_response()
            self.failed(error, updates=updates)
            return
        self.answered(response, first_chunk=first_chunk)

    async def final_response(self, updates: Sequence[Any]) -> ChatResponse[Any]:
        if self.inner is None:
            raise RuntimeError("the stream has not been opened")
        return await self.inner.get_final_response()

    def duration(self) -> float:
        return round(time.perf_counter() - self.started, 3)

    def answered(self, response: ChatResponse[Any], **extra: Any) -> None:
        for level, event, fields in response_events(response, self.content):
            self.log(level, event, **self.fields, **fields)
        chat = summary(response, self.fields["model"], self.content)
        self.log(self.level, "chat", **self.fields, duration=self.duration(), **extra, **chat)

    def failed(self, error: BaseException, **extra: Any) -> None:
        if not isinstance(error, Exception):
            event = "chat closed" if isinstance(error, GeneratorExit) else "chat cancelled"
            self.log(self.level, event, **self.fields, duration=self.duration(), **extra)
            return
        for level, event, fields in error_events(error, self.content):
            self.log(level, event, **self.fields, **fields)
        failure = error_fields(error, self.content)
        self.log(logging.ERROR, "chat failed", **self.fields, duration=self.duration(), **extra, **failure)


def with_logging(
    client: ChatClient | Any,
    *,
    logger: logging.Logger | logging.LoggerAdapter[Any] | str | None = None,
    level: int | str = logging.INFO,
    include_content: bool = False,
) -> LoggingChatClient:
    """Wrap `client` in a `LoggingChatClient`: one record per call, plus retries, re-asks and failovers.

    Example:
        logging.basicConfig(level=logging.INFO)
        client = with_logging(with_retries(with_structured_output(adapter)))
    """
    return LoggingChatClient(client, logger=logger, level=level, include_content=include_content)
