"""Telemetry: OpenTelemetry GenAI spans and metrics for every model call.

    client = with_telemetry(with_retries(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini")))

**Spans.** Each call is a `chat {model}` span (kind CLIENT) with the GenAI semantic-convention
attributes (operation, provider from the client's `provider_name`, request model and parameters,
`gen_ai.output.type` = `json` for structured output, `server.address`/`port` from its `base_url`,
`gen_ai.conversation.id` for a Responses API conversation; then response id, model, finish
reasons, token usage with cache reads, cache writes and reasoning tokens) and `so_middleware.structured_output.*` when
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
headers and `additional_properties` values never are. With `OTEL_SEMCONV_STABILITY_OPT_IN=
gen_ai_latest_experimental` the variable takes the GenAI utilities' modes (`NO_CONTENT`,
`SPAN_ONLY`, `EVENT_ONLY`, `SPAN_AND_EVENT`): event modes emit a `gen_ai.client.inference.operation
.details` log event per call (through `logger_provider`), with the content as objects. Without
content capture, a failure is recorded by its type and HTTP status only (`error.type`,
`http.response.status_code`, an `exception` event with `exception.type`): no exception message,
which for a provider's error may quote the request. A failing exporter, processor or meter is
logged at debug, never raised.

**Background runs.** Each poll or resumed stream of a background run is a span of its own, linked
(an OpenTelemetry span link) to the span that started the run, whose `traceparent` the run's
`ContinuationToken` carries.

**Order.** Outside `with_retries`: one span per logical call, each retry a `so_middleware.retry`
event on it. Inside: one span per attempt. `agent_span(name)` parents chat spans under an
`invoke_agent {name}` span. Without `opentelemetry-api` the layer passes calls through and logs once.
With no tracer provider and no meter provider, given or set globally (and no content events), it
passes calls through too: nothing would be recorded. A provider set globally later is used from the
next call.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Iterator
from typing import Any

from ...core import (
    AgentSpans,
    ChatClient,
    ChatResponse,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    ResponseStream,
)
from . import _names as names
from ._attributes import ClientReads, request_attributes
from ._content import content_capture

try:
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import SpanKind

    from ._background import run_links
    from ._call import CallRecording, Instruments, end_span, record_error

    HAVE_OTEL = True
except ImportError:  # pragma: no cover - telemetry is an optional extra
    HAVE_OTEL = False

__all__ = ["TelemetryChatClient", "with_telemetry"]

logger = logging.getLogger("so_middleware")


@functools.cache
def _log_telemetry_off() -> None:
    logger.info("telemetry is off: opentelemetry-api is not installed (pip install 'so-middleware[otel]')")


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
        logger_provider: Any = None,
    ) -> None:
        super().__init__(inner)
        self._self_reads = ClientReads(self.__wrapped__)
        self._self_capture_content = content_capture(bool(capture_content))
        self._self_instruments: Instruments | None = None
        if HAVE_OTEL:
            self._self_instruments = Instruments(tracer_provider, meter_provider, logger_provider)
        else:  # pragma: no cover - exercised in a subprocess without opentelemetry
            _log_telemetry_off()

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """Call the inner client inside a `chat` span; see the module docstring."""
        recorder = self._recording(call, stream=False)
        if recorder is None:
            return super().respond(call)
        return recorder.respond(functools.partial(super().respond, call))  # made inside the span

    def stream(self, call: LayerCall) -> ChatStream:
        """The same, streamed: the span lasts from the call to the stream's end."""
        recorder = self._recording(call, stream=True)
        if recorder is None:
            return super().stream(call)
        return ResponseStream(recorder.stream(self.passing_on(call)), recorder.final_response)

    def _recording(self, call: LayerCall, *, stream: bool) -> CallRecording | None:
        """The recording of this call; None when nothing would be recorded."""
        instruments = self._self_instruments
        capture = self._self_capture_content
        if instruments is None:
            return None
        silent = instruments.always_silent
        if not capture.emit_event and (instruments.silent() if silent is None else silent):
            return None
        options = call.options
        recorder = CallRecording(
            instruments,
            request_attributes(self._self_reads, options, stream, call.output_type),
            time.perf_counter(),
            time.time_ns(),
            capture,
        )
        if options.continuation_token is not None:  # a poll of a background run: linked to the span that started it
            recorder.links = run_links(options)
        if capture.on_span or capture.in_event:
            recorder.input_content(call.messages, options)
        return recorder

    def __copy__(self) -> TelemetryChatClient:
        clone: TelemetryChatClient = super().__copy__()  # type: ignore[assignment]
        clone._self_reads = ClientReads(clone.__wrapped__)  # the copy's own clients, not this stack's
        return clone

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
            names.GEN_AI_PROVIDER_NAME: self._self_reads.provider_name(),
            names.GEN_AI_REQUEST_MODEL: model or getattr(self._self_reads.model, "model", None),
        }
        name = f"{names.OPERATION_INVOKE_AGENT} {agent_name}" if agent_name else names.OPERATION_INVOKE_AGENT
        span = instruments.start_span(name, SpanKind.INTERNAL, attributes, None)
        with otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            try:
                yield span
            except Exception as error:
                record_error(span, error, self._self_capture_content.on_span)
                raise
            finally:
                end_span(span)


def with_telemetry(
    client: ChatClient | Any,
    *,
    capture_content: bool = False,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    logger_provider: Any = None,
) -> TelemetryChatClient:
    """Wrap `client` in a `TelemetryChatClient` (a pass-through when opentelemetry-api is missing).

    Example:
        client = with_telemetry(OpenAIChatClient(AsyncOpenAI(), model="gpt-4o-mini"), tracer_provider=provider)
    """
    return TelemetryChatClient(
        client,
        capture_content=capture_content,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
    )
