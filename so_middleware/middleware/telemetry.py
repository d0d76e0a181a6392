"""Telemetry: OpenTelemetry GenAI spans and metrics for every model call.

    client = with_telemetry(with_retries(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini")))

**Spans.** Each call is a `chat {model}` span (kind CLIENT) with the GenAI semantic-convention
attributes (operation, provider from the client's `provider_name`, request model and parameters,
`gen_ai.output.type` = `json` for structured output, `server.address`/`port` from its `base_url`;
then response id, model, finish reasons, token usage) and `so_middleware.structured_output.*` when
a structured-output layer reports its run (on the response, or on an `OutputError`). A failure sets
`error.type` and status ERROR and is re-raised unchanged. `so_middleware.call.end` is `complete`,
`error`, `closed` (a stream closed early) or `cancelled`.

**Metrics.** `gen_ai.client.operation.duration` (s), `gen_ai.client.token.usage` (`gen_ai.token.type`
input/output), and `gen_ai.client.operation.time_to_first_chunk` for streams.

**Streams.** The span starts when iteration starts, dated from the call, and ends when the stream
ends, fails, is closed or cancelled; `gen_ai.response.time_to_first_chunk` counts from the call. The
span is current only around each pull from the inner stream, never across a `yield`.

**Content** (messages, instructions, output) is recorded only with `capture_content=True` or
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (read when the layer is built); keys,
headers and `additional_properties` values never are. Without it, a failure is recorded by its
type and HTTP status only (`error.type`, `http.response.status_code`, an `exception` event with
`exception.type`): no exception message, which for a provider's error may quote the request. A failing exporter, processor or meter is
logged at debug, never raised.

**Order.** Outside `with_retries`: one span per logical call, each retry a `so_middleware.retry`
event on it. Inside: one span per attempt. `agent_span(name)` parents chat spans under an
`invoke_agent {name}` span. Without `opentelemetry-api` the layer passes calls through and logs once.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from importlib import metadata
from typing import Any
from urllib.parse import urlsplit

import anyio

from ..core import (
    AgentSpans,
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatStream,
    ContentFilterError,
    DelegatingChatClient,
    IncompleteOutputError,
    MessageInput,
    OptionsInput,
    OutputError,
    RefusalError,
    ResponseStream,
    UserError,
)
from . import _otel_names as names
from .retries import status_code_of

try:
    from opentelemetry import metrics as otel_metrics
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import Span, SpanKind, StatusCode

    HAVE_OTEL = True
except ImportError:  # pragma: no cover - telemetry is an optional extra
    HAVE_OTEL = False

__all__ = ["TelemetryChatClient", "with_telemetry"]

logger = logging.getLogger("so_middleware")
_OUTCOMES = {RefusalError: "refusal", IncompleteOutputError: "incomplete", ContentFilterError: "content_filter"}


@functools.cache
def _log_telemetry_off() -> None:
    logger.info("telemetry is off: opentelemetry-api is not installed (pip install 'so-middleware[otel]')")


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Recording never breaks a call: a fault in a processor, exporter or meter is logged at debug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception:
            logger.debug("so_middleware telemetry: recording failed in %s", fn.__name__, exc_info=True)
            return None

    return wrapper


class TelemetryChatClient(DelegatingChatClient, AgentSpans):
    """Records each call as an OpenTelemetry GenAI `chat` span plus duration and token metrics.

    Example:
        client = TelemetryChatClient(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"), capture_content=True)
        with client.agent_span("planner"):
            await client.get_response("Plan my day")  # a `chat gpt-4o-mini` span under `invoke_agent planner`
    """

    def __init__(
        self,
        inner: ChatClient | Any,
        *,
        capture_content: bool = False,
        tracer_provider: Any = None,
        meter_provider: Any = None,
    ) -> None:
        super().__init__(inner)
        env = os.environ.get(names.CAPTURE_CONTENT_ENV, "").strip().lower() == "true"
        self._self_capture_content = bool(capture_content) or env
        self._self_instruments: _Instruments | None = None
        if HAVE_OTEL:
            self._self_instruments = _Instruments(tracer_provider, meter_provider)
        else:  # pragma: no cover - exercised in a subprocess without opentelemetry
            _log_telemetry_off()

    def process(
        self, messages: MessageInput, *, options: OptionsInput, stream: bool, output_type: Any
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Call the inner client inside a `chat` span; see the module docstring."""
        instruments = self._self_instruments
        if instruments is None:
            return self.__wrapped__.get_response(  # type: ignore[no-any-return]
                messages, options=options, stream=stream, output_type=output_type
            )
        call = functools.partial(self.__wrapped__.get_response, messages, options=options, output_type=output_type)
        recorder = _ChatCall(
            instruments,
            self._request_attributes(options, stream, output_type),
            time.perf_counter(),
            time.time_ns(),
            self._self_capture_content,
        )
        if self._self_capture_content:
            recorder.input_content(messages, options)
        if stream:
            return ResponseStream(recorder.stream(call), recorder.final_response)
        return recorder.respond(call)

    @contextlib.contextmanager
    def agent_span(self, agent_name: str | None, *, model: str | None = None) -> Iterator[Any]:
        """An `invoke_agent {agent_name}` span, current while the block runs: chat spans nest under it.

        Example:
            with client.agent_span("researcher", model="gpt-4o") as span:
                response = await client.get_response(question)
        """
        instruments = self._self_instruments
        if instruments is None:
            yield None
            return
        attributes = {
            names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
            names.GEN_AI_AGENT_NAME: agent_name,
            names.GEN_AI_PROVIDER_NAME: self._provider_name(),
            names.GEN_AI_REQUEST_MODEL: model or getattr(self.__wrapped__, "model", None),
        }
        name = f"{names.OPERATION_INVOKE_AGENT} {agent_name}" if agent_name else names.OPERATION_INVOKE_AGENT
        span = instruments.start_span(name, SpanKind.INTERNAL, attributes, None)
        with otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            try:
                yield span
            except Exception as error:
                _record_error(span, error, self._self_capture_content)
                raise
            finally:
                _guarded(span.end)()

    def _provider_name(self) -> str:
        return str(getattr(self.__wrapped__, "provider_name", None) or "unknown")

    def _request_attributes(self, options: OptionsInput, stream: bool, output_type: Any) -> dict[str, Any]:
        chat_options = _coerce(options)
        response_format = chat_options.response_format
        structured = output_type is not None or (response_format is not None and response_format.type != "text")
        structured = structured or any(hasattr(feature, "output_type") for feature in chat_options.features)
        attributes = {
            names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
            names.GEN_AI_PROVIDER_NAME: self._provider_name(),
            names.GEN_AI_REQUEST_MODEL: chat_options.model or getattr(self.__wrapped__, "model", None),
            names.GEN_AI_REQUEST_TEMPERATURE: chat_options.temperature,
            names.GEN_AI_REQUEST_MAX_TOKENS: chat_options.max_tokens,
            names.GEN_AI_REQUEST_TOP_P: chat_options.top_p,
            names.GEN_AI_REQUEST_SEED: chat_options.seed,
            names.GEN_AI_REQUEST_STOP_SEQUENCES: list(chat_options.stop) if chat_options.stop else None,
            names.GEN_AI_REQUEST_STREAM: stream,
            names.GEN_AI_OUTPUT_TYPE: "json" if structured else "text",
        }
        base_url = getattr(self.__wrapped__, "base_url", None)
        if isinstance(base_url, str) and base_url:
            parts = urlsplit(base_url)
            attributes[names.SERVER_ADDRESS] = parts.hostname
            attributes[names.SERVER_PORT] = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
        return attributes


class _Instruments:
    """The tracer and histograms of one layer, made once at construction."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        try:
            version: str | None = metadata.version("so-middleware")
        except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
            version = None
        self.tracer = otel_trace.get_tracer("so_middleware", version, tracer_provider)
        meter = otel_metrics.get_meter("so_middleware", version or "", meter_provider)
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

    def start_span(self, name: str, kind: SpanKind, attributes: dict[str, Any], start_time: int | None) -> Span:
        try:
            clean = {key: value for key, value in attributes.items() if value is not None}
            return self.tracer.start_span(name, kind=kind, attributes=clean, start_time=start_time)
        except Exception:
            logger.debug("so_middleware telemetry: could not start span %r", name, exc_info=True)
            return otel_trace.INVALID_SPAN


class _ChatCall:
    """Per-call recording: one span, its attributes, and the metrics recorded when it ends."""

    def __init__(
        self,
        instruments: _Instruments,
        attributes: dict[str, Any],
        started: float,
        started_ns: int,
        capture_content: bool,
    ) -> None:
        self.instruments = instruments
        self.attributes = attributes
        self.started = started
        self.started_ns = started_ns
        self.capture_content = capture_content
        self.inner_stream: ChatStream | None = None

    def start(self) -> Span:
        model = self.attributes.get(names.GEN_AI_REQUEST_MODEL)
        name = f"{names.OPERATION_CHAT} {model}" if model else names.OPERATION_CHAT
        return self.instruments.start_span(name, SpanKind.CLIENT, self.attributes, self.started_ns)

    async def respond(self, call: Callable[..., Any]) -> ChatResponse[Any]:
        span = self.start()
        try:
            with otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                response: ChatResponse[Any] = await call(stream=False)
        except BaseException as error:
            self.end(span, error)
            raise
        self.end(span, None, response)
        return response

    async def stream(self, call: Callable[..., Any]) -> AsyncIterator[Any]:
        span = self.start()
        ending: BaseException | None = None
        response: ChatResponse[Any] | None = None
        try:
            with otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                self.inner_stream = inner = call(stream=True)
            first = True
            while True:
                with otel_trace.use_span(
                    span, end_on_exit=False, record_exception=False, set_status_on_exception=False
                ):
                    try:
                        update = await inner.__anext__()
                    except StopAsyncIteration:
                        break
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

    @_guarded
    def first_chunk(self, span: Span) -> None:
        elapsed = time.perf_counter() - self.started
        span.set_attribute(names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, elapsed)
        self.instruments.first_chunk.record(elapsed, self.metric_attributes())

    @_guarded
    def input_content(self, messages: MessageInput, options: OptionsInput) -> None:
        self.attributes[names.GEN_AI_INPUT_MESSAGES] = names.input_messages_json(messages)
        instructions = _coerce(options).instructions
        if instructions:
            self.attributes[names.GEN_AI_SYSTEM_INSTRUCTIONS] = names.instructions_json(instructions)

    @_guarded
    def end(self, span: Span, error: BaseException | None, response: ChatResponse[Any] | None = None) -> None:
        try:
            if response is not None:
                self.record_response(span, response)
            if isinstance(error, GeneratorExit):
                span.set_attribute(names.SO_CALL_END, "closed")
            elif error is not None and not isinstance(error, Exception):
                self.attributes[names.ERROR_TYPE] = "cancelled"
                span.set_attribute(names.SO_CALL_END, "cancelled")
            elif error is not None:
                self.attributes[names.ERROR_TYPE] = type(error).__name__
                _record_error(span, error, self.capture_content)
            else:
                span.set_attribute(names.SO_CALL_END, "complete")
        finally:
            _guarded(span.end)()
            self.instruments.duration.record(time.perf_counter() - self.started, self.metric_attributes())

    def record_response(self, span: Span, response: ChatResponse[Any]) -> None:
        values: dict[str, Any] = {
            names.GEN_AI_RESPONSE_MODEL: response.model_id,
            names.GEN_AI_RESPONSE_ID: response.response_id,
            names.GEN_AI_RESPONSE_FINISH_REASONS: [str(response.finish_reason)] if response.finish_reason else None,
            names.SO_RETRY_COUNT: len(response.additional_properties.get(names.RETRIES_KEY) or []) or None,
        }
        self.attributes[names.GEN_AI_RESPONSE_MODEL] = response.model_id
        usage = response.usage
        if usage is not None:
            values[names.GEN_AI_USAGE_INPUT_TOKENS] = usage.input_tokens
            values[names.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
            counts = ((names.TOKEN_TYPE_INPUT, usage.input_tokens), (names.TOKEN_TYPE_OUTPUT, usage.output_tokens))
            for token_type, count in counts:
                if count is not None:
                    self.instruments.tokens.record(
                        count, {**self.metric_attributes(), names.GEN_AI_TOKEN_TYPE: token_type}
                    )
        values.update(_structured_attributes(response.additional_properties.get(names.STRUCTURED_OUTPUT_KEY)))
        if self.capture_content:
            values[names.GEN_AI_OUTPUT_MESSAGES] = names.output_messages_json(response)
        span.set_attributes({key: value for key, value in values.items() if value is not None})

    def metric_attributes(self) -> dict[str, Any]:
        return {key: self.attributes[key] for key in names.METRIC_ATTRIBUTES if self.attributes.get(key) is not None}


def _coerce(options: OptionsInput) -> ChatOptions:
    try:
        return ChatOptions.coerce(options)  # a new object for a dict; the caller's options stay as they are
    except UserError:  # the inner client raises it, inside the span
        return ChatOptions()


def _record_error(span: Span, error: BaseException, capture_content: bool) -> None:
    span.set_attribute(names.ERROR_TYPE, type(error).__name__)
    span.set_attribute(names.SO_CALL_END, "error")
    span.set_status(StatusCode.ERROR, type(error).__name__)
    if isinstance(error, OutputError):
        span.set_attributes(_structured_attributes(_structured_info(error)))
    status = status_code_of(error)
    if status is not None:
        span.set_attribute(names.HTTP_RESPONSE_STATUS_CODE, status)
    if capture_content:
        span.record_exception(error)
    else:  # a provider's message may quote the request, an output error's the model's output
        span.add_event("exception", {"exception.type": f"{type(error).__module__}.{type(error).__qualname__}"})


def _structured_info(error: OutputError) -> dict[str, Any]:
    response_info = getattr(error.response, "additional_properties", {}).get(names.STRUCTURED_OUTPUT_KEY)
    info = dict(response_info) if isinstance(response_info, dict) else {}
    strategies = [attempt.strategy for attempt in error.attempts if attempt.strategy]
    info.setdefault("attempts", len(error.attempts) or None)
    info.setdefault("strategy", strategies[-1] if strategies else None)
    info.setdefault("outcome", next((o for kind, o in _OUTCOMES.items() if isinstance(error, kind)), "invalid"))
    return info


def _structured_attributes(info: Any) -> dict[str, Any]:
    if not isinstance(info, dict):
        return {}
    values = {
        names.SO_SCHEMA_NAME: info.get("name"),
        names.SO_STRATEGY: info.get("strategy"),
        names.SO_ATTEMPTS: info.get("attempts"),
        names.SO_OUTCOME: info.get("outcome"),
    }
    return {
        key: value for key, value in values.items() if isinstance(value, (str, int)) and not isinstance(value, bool)
    }


def with_telemetry(
    client: ChatClient | Any, *, capture_content: bool = False, tracer_provider: Any = None, meter_provider: Any = None
) -> TelemetryChatClient:
    """Wrap `client` in a `TelemetryChatClient` (a pass-through when opentelemetry-api is missing).

    Example:
        client = with_telemetry(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"), tracer_provider=provider)
    """
    return TelemetryChatClient(
        client, capture_content=capture_content, tracer_provider=tracer_provider, meter_provider=meter_provider
    )
