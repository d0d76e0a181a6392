"""Recording one call: the layer's instruments, and the span and metrics of each call.

`CallRecording` starts the `chat` span (dated from the call), keeps it current only around pulls from
the inner client, and ends it with the response or the error. Recording never breaks a call: a
fault in a processor, exporter or meter is logged at debug.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib import metadata
from typing import Any

import anyio
from opentelemetry import _logs as otel_logs
from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from ...core import ChatOptions, ChatResponse, ChatStream, MessageInput, OutputError, failure_of
from . import _names as names
from ._attributes import response_attributes, structured_attributes, structured_info
from ._background import stamp_token
from ._content import ContentCapture, as_json, input_messages, instructions_parts, output_messages

__all__ = ["CallRecording", "Instruments", "end_span", "guarded", "record_error"]

_SILENT_METER_PROVIDERS: tuple[type, ...] = (otel_metrics.NoOpMeterProvider,)
try:  # the global meter provider before one is set: a proxy, by a private name
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    _SILENT_METER_PROVIDERS += (_ProxyMeterProvider,)
except ImportError:  # pragma: no cover - a future API that moves it: calls are recorded
    pass

logger = logging.getLogger("so_middleware")


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Recording never breaks a call: a fault in a processor, exporter or meter is logged at debug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception:
            logger.debug("so_middleware telemetry: recording failed in %s", fn.__name__, exc_info=True)
            return None

    return wrapper


@guarded
def end_span(span: Span) -> None:
    """`span.end()`, never raising (a wrapper made once, not per call)."""
    span.end()


class Instruments:
    """The tracer, histograms and event logger of one layer, made once at construction."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, logger_provider: Any = None) -> None:
        try:
            version: str | None = metadata.version("so-middleware")
        except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
            version = None
        self.tracer_provider, self.meter_provider = tracer_provider, meter_provider
        # both providers given: whether they record is known now, not asked on every call
        self.always_silent = None if tracer_provider is None or meter_provider is None else self.silent()
        self.tracer = otel_trace.get_tracer("so_middleware", version, tracer_provider)
        meter = otel_metrics.get_meter("so_middleware", version or "", meter_provider)
        self.events = otel_logs.get_logger("so_middleware", version or "", logger_provider)
        self.duration = meter.create_histogram(
            names.METRIC_OPERATION_DURATION,
            "s",
            "GenAI operation duration",
            explicit_bucket_boundaries_advisory=names.DURATION_BUCKETS,
        )
        self.tokens = meter.create_histogram(
            names.METRIC_TOKEN_USAGE,
            "{token}",
            "Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=names.TOKEN_BUCKETS,
        )
        self.first_chunk = meter.create_histogram(
            names.METRIC_TIME_TO_FIRST_CHUNK,
            "s",
            "Time to the first streamed chunk",
            explicit_bucket_boundaries_advisory=names.DURATION_BUCKETS,
        )

    def silent(self) -> bool:
        """True when no span and no metric of a call would go anywhere: the tracer provider and the
        meter provider (given, or else the global ones) are the API's no-op ones or its unset
        proxies. Asked per call: a provider set globally later is used from the next call."""
        tracer_provider = self.tracer_provider or otel_trace.get_tracer_provider()
        if not isinstance(tracer_provider, (otel_trace.ProxyTracerProvider, otel_trace.NoOpTracerProvider)):
            return False
        meter_provider = self.meter_provider or otel_metrics.get_meter_provider()
        return isinstance(meter_provider, _SILENT_METER_PROVIDERS)

    def start_span(
        self, name: str, kind: SpanKind, attributes: dict[str, Any], start_time: int | None, links: Any = None
    ) -> Span:
        try:
            clean = (
                attributes
                if None not in attributes.values()
                else {k: v for k, v in attributes.items() if v is not None}
            )
            return self.tracer.start_span(name, kind=kind, attributes=clean, start_time=start_time, links=links)
        except Exception:
            logger.debug("so_middleware telemetry: could not start span %r", name, exc_info=True)
            return otel_trace.INVALID_SPAN


class CallRecording:
    """Per-call recording: one span, its attributes, and the metrics recorded when it ends."""

    __slots__ = (
        "attributes",
        "capture_content",
        "content",
        "event_attributes",
        "inner_stream",
        "instruments",
        "links",
        "response_metric_attributes",
        "started",
        "started_ns",
    )

    def __init__(
        self,
        instruments: Instruments,
        attributes: dict[str, Any],
        started: float,
        started_ns: int,
        content: ContentCapture,
    ) -> None:
        self.instruments = instruments
        self.attributes = attributes
        self.started = started
        self.started_ns = started_ns
        self.content = content
        self.capture_content = content.on_span
        self.event_attributes: dict[str, Any] = {}  # what only the details event carries
        self.inner_stream: ChatStream | None = None
        self.links: Sequence[Any] = ()  # to the span that started the background run this call continues
        self.response_metric_attributes: dict[str, Any] | None = None  # once the response is recorded

    def start(self) -> Span:
        model = self.attributes.get(names.GEN_AI_REQUEST_MODEL)
        name = f"{names.OPERATION_CHAT} {model}" if model else names.OPERATION_CHAT
        return self.instruments.start_span(name, SpanKind.CLIENT, self.attributes, self.started_ns, self.links)

    async def respond(self, call: Callable[[], Awaitable[ChatResponse[Any]]]) -> ChatResponse[Any]:
        span = self.start()
        token = otel_context.attach(otel_trace.set_span_in_context(span))  # what use_span does, without its generator
        try:
            response = await call()
        except BaseException as error:
            otel_context.detach(token)
            self.end(span, error)
            raise
        otel_context.detach(token)
        if getattr(response, "continuation_token", None) is not None:  # a background run's
            stamp_token(response, span)
        self.end(span, None, response)
        return response

    async def stream(self, call: Callable[..., Any]) -> AsyncIterator[Any]:
        span = self.start()
        ending: BaseException | None = None
        response: ChatResponse[Any] | None = None
        try:
            span_context = otel_trace.set_span_in_context(span)
            opening = otel_context.attach(span_context)  # what use_span does, without its generator
            try:
                self.inner_stream = inner = call(stream=True)
            finally:
                otel_context.detach(opening)
            first = True
            # a span with no trace (no tracer provider is set) is no parent: nothing to make current, nothing
            # to stamp on a token; the updates pass through as they come
            traced = span.get_span_context().is_valid
            while True:
                # what use_span does, without its generator per update
                token = otel_context.attach(span_context) if traced else None
                try:
                    update = await inner.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    if token is not None:
                        otel_context.detach(token)
                if traced and getattr(update, "continuation_token", None) is not None:  # a background run's
                    stamp_token(update, span)
                if first:
                    first = False
                    self.first_chunk(span)
                yield update
            try:
                response = await inner.get_final_response()
            except Exception as error:  # raised again by the caller's own get_final_response()
                ending = error
        except BaseException as error:
            ending = error
            raise
        finally:
            if self.inner_stream is not None and not self.inner_stream.is_complete:
                with anyio.CancelScope(shield=True):
                    await self.inner_stream.aclose()
            self.end(span, ending, response)

    async def final_response(self, updates: Sequence[Any]) -> ChatResponse[Any]:
        if self.inner_stream is None:
            raise RuntimeError("the stream has not been opened")
        return await self.inner_stream.get_final_response()

    @guarded
    def first_chunk(self, span: Span) -> None:
        elapsed = time.perf_counter() - self.started
        span.set_attribute(names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, elapsed)
        self.instruments.first_chunk.record(elapsed, self.metric_attributes())

    @guarded
    def input_content(self, messages: MessageInput, options: ChatOptions) -> None:
        content = {names.GEN_AI_INPUT_MESSAGES: input_messages(messages)}
        instructions = options.instructions
        if instructions:
            content[names.GEN_AI_SYSTEM_INSTRUCTIONS] = instructions_parts(instructions)
        self.add_content(content)

    def add_content(self, content: dict[str, Any]) -> None:
        """Content as JSON on the span, as objects in the event, as the capture settings say."""
        if self.content.on_span:
            self.attributes.update({key: as_json(value) for key, value in content.items()})
        if self.content.in_event:
            self.event_attributes.update(content)

    @guarded
    def emit_event(self, span: Span) -> None:
        """The `gen_ai.client.inference.operation.details` event: the call's attributes (and content)."""
        attributes = {
            key: value
            for key, value in self.attributes.items()
            if value is not None and key not in names.CONTENT_ATTRIBUTES  # content only as event content
        }
        attributes.update({key: value for key, value in self.event_attributes.items() if value is not None})
        context = otel_trace.set_span_in_context(span)
        record = otel_logs.LogRecord(event_name=names.EVENT_INFERENCE_DETAILS, attributes=attributes, context=context)
        self.instruments.events.emit(record)

    def end(self, span: Span, error: BaseException | None, response: ChatResponse[Any] | None = None) -> None:
        """Record the call's end on `span` and in the metrics, then end it; never raises. Each step
        is guarded on its own (a fault in one still ends the span and records the duration), inline:
        this runs on every call."""
        metric_attributes: dict[str, Any] | None = None
        try:
            if response is not None and error is None:  # the common path: one attribute update
                self.record_response(span, response, _COMPLETE)
                metric_attributes = self.response_metric_attributes  # what the token counts were recorded with
            else:
                self.record_failure(span, error, response)
        except Exception:
            logger.debug("so_middleware telemetry: recording failed in end", exc_info=True)
        if self.content.emit_event:
            self.emit_event(span)
        try:
            span.end()
        except Exception:
            logger.debug("so_middleware telemetry: recording failed in end_span", exc_info=True)
        try:
            elapsed = time.perf_counter() - self.started
            self.instruments.duration.record(elapsed, metric_attributes or self.metric_attributes())
        except Exception:
            logger.debug("so_middleware telemetry: recording failed in end", exc_info=True)

    def record_failure(self, span: Span, error: BaseException | None, response: ChatResponse[Any] | None) -> None:
        """A call that did not complete: closed early, cancelled or failed (with what it answered)."""
        if response is not None:
            self.record_response(span, response)
        if isinstance(error, GeneratorExit):
            span.set_attribute(names.SO_CALL_END, "closed")
        elif error is not None and not isinstance(error, Exception):
            self.attributes[names.ERROR_TYPE] = "cancelled"
            span.set_attribute(names.SO_CALL_END, "cancelled")
        elif error is not None:
            self.attributes[names.ERROR_TYPE] = type(error).__name__
            record_error(span, error, self.capture_content)
        else:
            span.set_attribute(names.SO_CALL_END, "complete")

    def record_response(self, span: Span, response: ChatResponse[Any], more: dict[str, Any] | None = None) -> None:
        values = response_attributes(response)  # only the values that are set
        attributes = self.attributes
        model = values.get(names.GEN_AI_RESPONSE_MODEL)
        if model is not None:
            attributes[names.GEN_AI_RESPONSE_MODEL] = model
        # built once, shared by the token records and the duration
        metric_attributes = self.response_metric_attributes = self.metric_attributes()
        usage = response.usage
        if usage is not None:
            tokens = self.instruments.tokens
            if usage.input_tokens is not None:
                tokens.record(
                    usage.input_tokens, {**metric_attributes, names.GEN_AI_TOKEN_TYPE: names.TOKEN_TYPE_INPUT}
                )
            if usage.output_tokens is not None:
                tokens.record(
                    usage.output_tokens, {**metric_attributes, names.GEN_AI_TOKEN_TYPE: names.TOKEN_TYPE_OUTPUT}
                )
        content = self.content
        if content.emit_event:  # only the details event reads them
            self.event_attributes.update(values)
        if more:
            values.update(more)
        if content.on_span:
            values[names.GEN_AI_OUTPUT_MESSAGES] = as_json(output_messages(response))
        if content.in_event:
            self.event_attributes[names.GEN_AI_OUTPUT_MESSAGES] = output_messages(response)
        span.set_attributes(values)

    def metric_attributes(self) -> dict[str, Any]:
        attributes = self.attributes
        found: dict[str, Any] = {}
        for key in names.METRIC_ATTRIBUTES:  # a loop, not a comprehension: no frame of its own
            value = attributes.get(key)
            if value is not None:
                found[key] = value
        return found


_COMPLETE = {names.SO_CALL_END: "complete"}  # read, never changed


def record_error(span: Span, error: BaseException, capture_content: bool) -> None:
    """Mark `span` failed by `error`: its type and HTTP status, and its message only with content
    capture (a provider's message may quote the request, an output error's the model's output)."""
    span.set_attribute(names.ERROR_TYPE, type(error).__name__)
    span.set_attribute(names.SO_CALL_END, "error")
    span.set_status(StatusCode.ERROR, type(error).__name__)
    if isinstance(error, OutputError):
        span.set_attributes(structured_attributes(structured_info(error)))
    status = failure_of(error).status
    if status is not None:
        span.set_attribute(names.HTTP_RESPONSE_STATUS_CODE, status)
    if capture_content:
        span.record_exception(error)
    else:
        span.add_event("exception", {"exception.type": f"{type(error).__module__}.{type(error).__qualname__}"})
