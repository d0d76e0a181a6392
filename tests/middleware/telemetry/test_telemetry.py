"""with_telemetry with the OTel SDK's in-memory exporter and reader; stacking with with_retries."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any, ClassVar

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from so_middleware import (
    Attempt,
    BaseChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    DelegatingChatClient,
    Feature,
    FunctionCallContent,
    ModelBehaviorError,
    RefusalError,
    ResponseFormat,
    ResponseStream,
    TextContent,
    UsageDetails,
    UserError,
)
from so_middleware.middleware.retries import with_retries
from so_middleware.middleware.telemetry import TelemetryChatClient, with_telemetry
from so_middleware.testing import FakeChatClient, Reply, StatusError

pytestmark = pytest.mark.anyio

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["respond", "stream"])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meter_provider(reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    provider = MeterProvider(metric_readers=[reader])
    yield provider
    provider.shutdown()


@pytest.fixture
def instrument(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> Any:
    def wrap(client: Any, **kwargs: Any) -> TelemetryChatClient:
        return with_telemetry(client, tracer_provider=tracer_provider, meter_provider=meter_provider, **kwargs)

    return wrap


class Tagging(Feature):
    """A feature no layer knows."""


class HostedFake(FakeChatClient):
    provider_name: ClassVar[str] = "openai"
    base_url = "https://api.example.com:8443/v1"


async def call(client: Any, stream: bool, messages: Any = "hi", **kwargs: Any) -> ChatResponse[Any]:
    if stream:
        response_stream = client.get_response(messages, stream=True, **kwargs)
        async for _ in response_stream:
            pass
        return await response_stream.get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(messages, **kwargs)  # type: ignore[no-any-return]


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    points: dict[str, list[Any]] = {}
    for resource_metrics in data.resource_metrics if data else []:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    return points


def all_attribute_text(exporter: InMemorySpanExporter) -> str:
    texts = []
    for span in exporter.get_finished_spans():
        texts.append(json.dumps(dict(span.attributes or {}), default=str))
        texts.extend(json.dumps(dict(event.attributes or {}), default=str) for event in span.events)
    return "\n".join(texts)


# ---------------------------------------------------------------- the chat span


@STREAM
async def test_chat_span_carries_genai_request_and_response_attributes(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter
) -> None:
    client = instrument(HostedFake("Hello there", model="gpt-x"))
    options = {"temperature": 0.2, "max_tokens": 50, "top_p": 0.9, "seed": 7, "stop": ["END"]}

    await call(client, stream, options=options)

    span = only_span(exporter)
    assert span.name == "chat gpt-x"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    attributes = dict(span.attributes or {})
    expected = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 50,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.seed": 7,
        "gen_ai.request.stop_sequences": ("END",),
        "gen_ai.request.stream": stream,
        "gen_ai.output.type": "text",
        "gen_ai.response.model": "gpt-x",
        "gen_ai.response.id": "fake-1",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "server.address": "api.example.com",
        "server.port": 8443,
        "so_middleware.call.end": "complete",
    }
    assert {key: attributes.get(key) for key in expected} == expected
    assert ("gen_ai.response.time_to_first_chunk" in attributes) is stream


async def test_request_model_from_options_names_the_span(instrument: Any, exporter: InMemorySpanExporter) -> None:
    client = instrument(FakeChatClient("ok", model="default-model"))

    await client.get_response("hi", options={"model": "other-model"})

    span = only_span(exporter)
    assert span.name == "chat other-model"
    assert span.attributes is not None and span.attributes["gen_ai.request.model"] == "other-model"
    assert span.attributes["gen_ai.provider.name"] == "fake"


async def test_server_port_defaults_from_the_scheme(instrument: Any, exporter: InMemorySpanExporter) -> None:
    fake = FakeChatClient("ok")
    fake.base_url = "https://api.openai.com/v1"
    await instrument(fake).get_response("hi")

    attributes = dict(only_span(exporter).attributes or {})
    assert (attributes["server.address"], attributes["server.port"]) == ("api.openai.com", 443)


class ModelNamingChatClient(DelegatingChatClient):
    """A layer that answers `model` itself (and passes `base_url` and `provider_name` on)."""

    @property
    def model(self) -> str:
        return "named-by-the-layer"


@STREAM
async def test_client_attributes_are_read_where_they_are_answered_on_every_call(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter
) -> None:
    """Through layers: a layer's own `model` wins; a value changed after the stack was built, or
    on a copy of the stack, shows in that stack's next span."""
    fake = HostedFake("ok")
    client = instrument(with_retries(fake))
    named = instrument(with_retries(ModelNamingChatClient(HostedFake("ok"))))
    await call(client, stream)
    await call(named, stream)
    client.get_service(HostedFake).model = "changed-model"
    client.get_service(HostedFake).base_url = "http://elsewhere.example:9000/v1"
    await call(client, stream)
    clone = copy.copy(client)
    clone.get_service(HostedFake).model = "model-of-the-copy"
    await call(clone, stream)
    await call(client, stream)
    seen = [
        (span.attributes["gen_ai.request.model"], span.attributes["server.address"], span.attributes["server.port"])
        for span in exporter.get_finished_spans()
        if span.attributes is not None
    ]
    assert seen == [
        ("fake-model", "api.example.com", 8443),
        ("named-by-the-layer", "api.example.com", 8443),
        ("changed-model", "elsewhere.example", 9000),
        ("model-of-the-copy", "elsewhere.example", 9000),
        ("changed-model", "elsewhere.example", 9000),
    ]
    assert {span.attributes["gen_ai.provider.name"] for span in exporter.get_finished_spans() if span.attributes} == {
        "openai"
    }


class SpanSeeingChatClient(DelegatingChatClient):
    """A layer below that reads the current span as a call reaches it and as each update is pulled
    (what an instrumented HTTP client does to parent its own spans)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._self_seen: list[Any] = []

    def respond(self, call: Any) -> Any:
        self._self_seen.append(trace.get_current_span())
        return super().respond(call)

    def stream(self, call: Any) -> Any:
        self._self_seen.append(trace.get_current_span())
        inner = super().stream(call)

        async def updates() -> AsyncIterator[Any]:
            async for update in inner:
                self._self_seen.append(trace.get_current_span())
                yield update

        return ResponseStream(updates(), lambda _updates: inner.get_final_response())


@STREAM
async def test_the_chat_span_is_current_where_the_call_reaches_the_client_below(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter
) -> None:
    below = SpanSeeingChatClient(FakeChatClient(Reply("ok", chunk_size=1)))
    await call(instrument(below), stream)
    chat = only_span(exporter)
    seen = below._self_seen
    assert len(seen) >= 3 if stream else len(seen) == 1  # a stream: as it opened, then each update
    assert all(span.get_span_context().span_id == chat.context.span_id for span in seen)
    assert not trace.get_current_span().get_span_context().is_valid  # and not current after the call


class OutputTypeFeature(Feature):
    output_type = int


class DropOutputType(DelegatingChatClient):
    """Stands in for a structured-output layer: takes output_type off before the fake."""

    def get_response(self, messages: Any, *, options: Any = None, stream: bool = False, output_type: Any = None) -> Any:
        return super().get_response(messages, options=options, stream=stream)


@pytest.mark.parametrize(
    "request_kwargs",
    [
        {"output_type": int},
        {"options": {"response_format": {"type": "json_object"}}},
        {"options": ChatOptions(response_format=ResponseFormat.json_schema({"type": "object"}, name="P"))},
        {"options": {"features": [OutputTypeFeature()]}},
    ],
    ids=["output_type", "json_object", "json_schema", "feature"],
)
async def test_structured_requests_are_marked_json(
    request_kwargs: dict[str, Any], instrument: Any, exporter: InMemorySpanExporter
) -> None:
    await instrument(DropOutputType(FakeChatClient("{}"))).get_response("hi", **request_kwargs)

    assert dict(only_span(exporter).attributes or {})["gen_ai.output.type"] == "json"


@STREAM
async def test_failure_sets_error_type_and_status_and_reraises(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    error = StatusError(500)
    client = instrument(FakeChatClient([error]))

    with pytest.raises(StatusError) as raised:
        await call(client, stream)

    assert raised.value is error
    span = only_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None and span.attributes["error.type"] == "StatusError"
    assert span.attributes["so_middleware.call.end"] == "error"
    assert [event.name for event in span.events] == ["exception"]
    (duration,) = metric_points(reader)["gen_ai.client.operation.duration"]
    assert duration.attributes["error.type"] == "StatusError"


@STREAM
async def test_bad_options_fail_at_the_entry_with_no_span(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter
) -> None:
    """Options are coerced once, where the call enters the stack: a call refused there never
    started, so it has no span."""
    fake = FakeChatClient("ok")
    with pytest.raises(UserError, match="unknown option 'temprature'"):
        instrument(fake).get_response("hi", options={"temprature": 0}, stream=stream)
    assert exporter.get_finished_spans() == () and fake.calls == []


# ---------------------------------------------------------------- structured-output attributes


class ReportingStructuredOutput(DelegatingChatClient):
    """Stands in for the structured-output layer: reports its run the way that layer does."""

    def get_response(self, messages: Any, *, options: Any = None, stream: bool = False, output_type: Any = None) -> Any:
        info = {"name": "Person", "strategy": "native", "attempts": 2, "outcome": "valid"}
        if stream:
            inner = super().get_response(messages, options=options, stream=True)

            async def final(updates: Any) -> ChatResponse[Any]:
                response: ChatResponse[Any] = await inner.get_final_response()
                response.additional_properties["so_middleware.structured_output"] = info
                return response

            async def forward() -> AsyncIterator[Any]:
                async for update in inner:
                    yield update

            return ResponseStream(forward(), final)

        async def respond() -> ChatResponse[Any]:
            response: ChatResponse[Any] = await super(ReportingStructuredOutput, self).get_response(
                messages, options=options
            )
            response.additional_properties["so_middleware.structured_output"] = info
            response.additional_properties["secret"] = "sk-do-not-record"
            return response

        return respond()


@STREAM
async def test_structured_output_info_from_the_response_is_recorded(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter
) -> None:
    await call(instrument(ReportingStructuredOutput(FakeChatClient('{"name": "Ada"}'))), stream)

    attributes = dict(only_span(exporter).attributes or {})
    assert {k: v for k, v in attributes.items() if k.startswith("so_middleware.structured_output")} == {
        "so_middleware.structured_output.schema_name": "Person",
        "so_middleware.structured_output.strategy": "native",
        "so_middleware.structured_output.attempts": 2,
        "so_middleware.structured_output.outcome": "valid",
    }
    assert "sk-do-not-record" not in all_attribute_text(exporter)


@STREAM
@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (
            ModelBehaviorError(
                "bad: secret output text", attempts=[Attempt(0, "x", strategy="tool"), Attempt(1, "y", strategy="tool")]
            ),
            "invalid",
        ),
        (RefusalError("no", refusal="I can't", attempts=[Attempt(0, "", strategy="native")]), "refusal"),
    ],
    ids=["invalid", "refusal"],
)
async def test_structured_output_info_from_an_output_error_is_recorded(
    stream: bool, error: Exception, outcome: str, instrument: Any, exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(type(error)):
        await call(instrument(FakeChatClient([error])), stream)

    span = only_span(exporter)
    attributes = dict(span.attributes or {})
    assert attributes["so_middleware.structured_output.outcome"] == outcome
    assert attributes["so_middleware.structured_output.attempts"] == len(error.attempts)  # type: ignore[attr-defined]
    assert attributes["so_middleware.structured_output.strategy"] in ("tool", "native")
    assert attributes["error.type"] == type(error).__name__
    # the message may quote model output: without capture_content only the type is recorded
    assert [(event.name, set(event.attributes or {})) for event in span.events] == [("exception", {"exception.type"})]


# ---------------------------------------------------------------- metrics


@STREAM
async def test_duration_and_token_usage_histograms(stream: bool, instrument: Any, reader: InMemoryMetricReader) -> None:
    await call(instrument(FakeChatClient("ok")), stream)

    points = metric_points(reader)
    (duration,) = points["gen_ai.client.operation.duration"]
    assert duration.count == 1
    assert duration.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fake",
        "gen_ai.request.model": "fake-model",
        "gen_ai.response.model": "fake-model",
    }
    tokens = {point.attributes["gen_ai.token.type"]: point.sum for point in points["gen_ai.client.token.usage"]}
    assert tokens == {"input": 10, "output": 5}
    assert ("gen_ai.client.operation.time_to_first_chunk" in points) is stream


async def test_without_a_tracer_provider_a_stream_still_records_its_metrics_and_passes_every_update(
    meter_provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    """No tracer provider set (the API's no-op spans): the updates pass through untouched, in order,
    and the metrics, which do not need a span, are still recorded."""
    from opentelemetry.trace import NoOpTracerProvider

    inner = FakeChatClient(Reply("one two three", chunk_size=4))
    client = with_telemetry(inner, tracer_provider=NoOpTracerProvider(), meter_provider=meter_provider)
    stream = client.get_response("hi", stream=True)
    texts = [update.text async for update in stream]
    assert "".join(texts) == "one two three" and len(texts) >= 3
    assert (await stream.get_final_response()).text == "one two three"
    points = metric_points(reader)
    assert [p.count for p in points["gen_ai.client.operation.duration"]] == [1]
    assert [p.count for p in points["gen_ai.client.operation.time_to_first_chunk"]] == [1]


@pytest.mark.parametrize("stream", [False, True])
async def test_with_no_tracer_and_no_meter_provider_a_call_passes_straight_through(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing would be recorded (no-op providers): no per-call recording is made at all."""
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    import so_middleware.middleware.telemetry as telemetry

    def no_recording(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a call recorded with nothing to record it to")

    monkeypatch.setattr(telemetry, "CallRecording", no_recording)
    inner = FakeChatClient(Reply("one two three", chunk_size=4))
    client = with_telemetry(inner, tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
    assert (await call(client, stream)).text == "one two three"
    assert len(inner.calls) == 1


def test_a_global_provider_set_after_the_layer_is_built_records_from_the_next_call() -> None:
    """No provider anywhere: the call passes through. Then the process sets a global tracer and
    meter provider (as an agent's instrumentation may, after start-up): the next call is recorded."""
    script = """
import asyncio
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from so_middleware.middleware.telemetry import with_telemetry
from so_middleware.testing import FakeChatClient

client = with_telemetry(FakeChatClient("hi"))
assert asyncio.run(client.get_response("a")).text == "hi"
exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
traces = TracerProvider()
traces.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(traces)
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
assert asyncio.run(client.get_response("b")).text == "hi"
names = [m.name for r in reader.get_metrics_data().resource_metrics for s in r.scope_metrics for m in s.metrics]
print([span.name for span in exporter.get_finished_spans()], "gen_ai.client.operation.duration" in names)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "['chat fake-model'] True"  # one span: the second call's


# ---------------------------------------------------------------- streams: end, close, cancel


async def test_stream_span_ends_when_the_stream_ends(instrument: Any, exporter: InMemorySpanExporter) -> None:
    stream = instrument(FakeChatClient("Hello world")).get_response("hi", stream=True)

    async for _ in stream:
        assert exporter.get_finished_spans() == ()  # still open while updates flow
    assert only_span(exporter).attributes["so_middleware.call.end"] == "complete"  # type: ignore[index]


async def test_stream_never_iterated_makes_no_span(instrument: Any, exporter: InMemorySpanExporter) -> None:
    fake = FakeChatClient("hi")
    stream = instrument(fake).get_response("hi", stream=True)
    await stream.aclose()

    assert exporter.get_finished_spans() == ()
    assert fake.calls == []


async def test_closing_a_stream_mid_way_ends_the_span_and_the_inner_stream(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    fake = FakeChatClient("Hello world, a long answer")
    stream = instrument(fake).get_response("hi", stream=True)

    async for _ in stream:
        break
    await stream.aclose()

    span = only_span(exporter)
    assert span.attributes is not None and span.attributes["so_middleware.call.end"] == "closed"
    assert "gen_ai.response.time_to_first_chunk" in span.attributes
    assert span.status.status_code is StatusCode.UNSET
    assert fake.closed_streams == 1


class HangingClient(BaseChatClient):
    """Streams one update, then waits forever (until cancelled)."""

    provider_name: ClassVar[str] = "hanging"

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        yield ChatResponseUpdate([TextContent("first")], role="assistant")
        await anyio.sleep_forever()


async def test_cancelling_the_consumer_ends_the_span_as_cancelled(
    instrument: Any, exporter: InMemorySpanExporter, reader: InMemoryMetricReader
) -> None:
    stream = instrument(HangingClient()).get_response("hi", stream=True)

    with anyio.CancelScope() as scope:
        async for _ in stream:
            scope.cancel()  # delivered inside the next pull, in the hanging inner stream

    span = only_span(exporter)
    assert span.attributes is not None and span.attributes["so_middleware.call.end"] == "cancelled"
    (duration,) = metric_points(reader)["gen_ai.client.operation.duration"]
    assert duration.attributes["error.type"] == "cancelled"


async def test_cancelling_a_non_streaming_call_ends_the_span_as_cancelled(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    class Hanging(BaseChatClient):
        async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    client = instrument(Hanging())
    async with anyio.create_task_group() as group:
        group.start_soon(client.get_response, "hi")
        await anyio.wait_all_tasks_blocked()
        group.cancel_scope.cancel()

    assert only_span(exporter).attributes["so_middleware.call.end"] == "cancelled"  # type: ignore[index]


# ---------------------------------------------------------------- agents


@STREAM
async def test_agent_span_parents_the_chat_spans(stream: bool, instrument: Any, exporter: InMemorySpanExporter) -> None:
    client = instrument(FakeChatClient("ok"))

    with client.agent_span("planner", model="big-model") as agent:
        await call(client, stream)
        await call(client, stream)

    spans = {span.name: span for span in exporter.get_finished_spans()}
    chats = [span for span in exporter.get_finished_spans() if span.name.startswith("chat")]
    agent_span = spans["invoke_agent planner"]
    assert agent is not None and agent_span.context.span_id == agent.get_span_context().span_id
    assert len(chats) == 2
    assert all(chat.parent is not None and chat.parent.span_id == agent_span.context.span_id for chat in chats)
    assert agent_span.attributes is not None and agent_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent_span.attributes["gen_ai.agent.name"] == "planner"
    assert agent_span.attributes["gen_ai.request.model"] == "big-model"


async def test_agent_span_records_a_failure(instrument: Any, exporter: InMemorySpanExporter) -> None:
    client = instrument(FakeChatClient("ok"))

    with pytest.raises(RuntimeError), client.agent_span(None):
        raise RuntimeError("tool broke")

    span = only_span(exporter)
    assert span.name == "invoke_agent"
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None and span.attributes["error.type"] == "RuntimeError"


# ---------------------------------------------------------------- content


@STREAM
async def test_no_content_by_default(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    client = instrument(FakeChatClient("the secret answer"))
    options = ChatOptions(instructions="be terse", additional_properties={"api_key": "sk-live-123"})

    await call(client, stream, "the secret question", options=options)

    text = all_attribute_text(exporter)
    for secret in ("the secret answer", "the secret question", "be terse", "sk-live-123"):
        assert secret not in text
    assert not any(
        key.startswith(("gen_ai.input", "gen_ai.output.messages", "gen_ai.system"))
        for key in only_span(exporter).attributes or {}
    )


@STREAM
@pytest.mark.parametrize("switch", ["argument", "environment"])
async def test_content_when_asked(
    stream: bool, switch: str, instrument: Any, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    if switch == "environment":
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    client = instrument(FakeChatClient("the answer"), capture_content=switch == "argument")
    options = ChatOptions(instructions="be terse", additional_properties={"api_key": "sk-live-123"})

    await call(client, stream, [ChatMessage("user", "the question")], options=options)

    attributes = dict(only_span(exporter).attributes or {})
    assert json.loads(attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "the question"}]}
    ]
    assert json.loads(attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "the answer"}], "finish_reason": "stop"}
    ]
    assert json.loads(attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "be terse"}]
    assert "sk-live-123" not in all_attribute_text(exporter)


# ---------------------------------------------------------------- faults in telemetry never break a call


class RaisingExporter(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        raise RuntimeError("collector is down")


class RaisingProcessor(SpanProcessor):
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("processor broke on start")

    def on_end(self, span: Any) -> None:
        raise RuntimeError("processor broke on end")


class RaisingMeterProvider:
    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("meter broke")

        histogram = SimpleNamespace(record=record)
        return SimpleNamespace(create_histogram=lambda *args, **kwargs: histogram)


@STREAM
@pytest.mark.parametrize("fault", ["exporter", "processor"])
async def test_a_failing_exporter_processor_or_meter_never_breaks_the_call(
    stream: bool, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(RaisingExporter()) if fault == "exporter" else RaisingProcessor())
    client = with_telemetry(FakeChatClient("ok"), tracer_provider=provider, meter_provider=RaisingMeterProvider())

    with caplog.at_level("CRITICAL"):  # SimpleSpanProcessor logs the exporter's error itself
        response = await call(client, stream)
        with client.agent_span("a"):
            await call(client, stream)

    assert response.text == "ok"
    provider.shutdown()


# ---------------------------------------------------------------- order with retries


@STREAM
async def test_telemetry_outside_retries_one_span_per_call_with_retry_events(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter
) -> None:
    async def no_sleep(seconds: float) -> None:
        return None

    fake = FakeChatClient([StatusError(503), StatusError(429), "ok"])
    client = instrument(with_retries(fake, sleep=no_sleep))
    feature = Tagging()

    response = await call(client, stream, options={"features": [feature]})

    assert response.text == "ok"
    span = only_span(exporter)
    assert span.status.status_code is StatusCode.UNSET
    events = [event for event in span.events if event.name == "so_middleware.retry"]
    assert [(e.attributes or {}).get("status_code") for e in events] == [503, 429]
    assert [(e.attributes or {}).get("attempt") for e in events] == [1, 2]
    assert span.attributes is not None and span.attributes["so_middleware.retry.count"] == 2
    assert len(fake.calls) == 3 and all(c.options.features[0] is feature for c in fake.calls)


@STREAM
async def test_telemetry_inside_retries_one_span_per_attempt(
    stream: bool, instrument: Any, exporter: InMemorySpanExporter
) -> None:
    async def no_sleep(seconds: float) -> None:
        return None

    fake = FakeChatClient([StatusError(503), StatusError(429), "ok"])
    client = with_retries(instrument(fake), sleep=no_sleep)
    feature = Tagging()

    response = await call(client, stream, options={"features": [feature]})

    assert response.text == "ok"
    assert [r["status_code"] for r in response.additional_properties["so_middleware.retries"]] == [503, 429]
    spans = sorted(exporter.get_finished_spans(), key=lambda span: span.start_time or 0)
    assert [span.status.status_code for span in spans] == [StatusCode.ERROR, StatusCode.ERROR, StatusCode.UNSET]
    assert [(span.attributes or {}).get("error.type") for span in spans] == ["StatusError", "StatusError", None]
    assert all(not span.events or span.events[0].name == "exception" for span in spans)
    assert len(fake.calls) == 3 and all(c.options.features[0] is feature for c in fake.calls)


# ---------------------------------------------------------------- the proxy and optional dependency


async def test_proxy_contract(instrument: Any) -> None:
    fake = FakeChatClient("ok")
    before = set(vars(fake))
    client = instrument(fake)
    await client.get_response("hi")

    assert set(vars(fake)) == before
    assert {"_self_instruments", "_self_capture_content"} <= set(client.__self_dict__)
    assert client.get_service(TelemetryChatClient) is client
    async with client as entered:
        assert entered is client


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)


def test_without_opentelemetry_the_layer_passes_through_and_says_what_to_install() -> None:
    result = run_python(
        "import sys, logging, asyncio\n"
        "sys.modules['opentelemetry'] = None\n"
        "logging.basicConfig(level=logging.INFO, format='%(name)s %(message)s')\n"
        "from so_middleware.middleware.telemetry import with_telemetry\n"
        "from so_middleware.middleware.retries import with_retries\n"
        "from so_middleware.testing import FakeChatClient\n"
        "client = with_telemetry(with_retries(FakeChatClient('ok')))\n"
        "with_telemetry(FakeChatClient('ok'))\n"
        "async def main():\n"
        "    with client.agent_span('a') as span:\n"
        "        assert span is None\n"
        "        print((await client.get_response('hi')).text)\n"
        "        print((await client.get_response('hi', stream=True).get_final_response()).text)\n"
        "asyncio.run(main())\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", "ok"]
    assert result.stderr.count("so-middleware[otel]") == 1  # logged once
    assert result.stderr.startswith("so_middleware ")


def test_middleware_modules_import_without_either_sdk() -> None:
    result = run_python(
        "import sys\n"
        "sys.modules['openai'] = None\n"
        "sys.modules['anthropic'] = None\n"
        "import so_middleware.middleware.retries, so_middleware.middleware.telemetry\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'httpx2') and sys.modules[m]))\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# ---------------------------------------------------------------- usage details, conversation, content modes


@STREAM
async def test_cache_and_reasoning_token_counts(stream: bool, instrument: Any, exporter: InMemorySpanExporter) -> None:
    usage = UsageDetails(
        input_tokens=30, output_tokens=9, cached_input_tokens=20, reasoning_tokens=4, cache_creation_input_tokens=6
    )
    await call(instrument(FakeChatClient(Reply("ok", usage=usage))), stream)
    attributes = dict(only_span(exporter).attributes or {})
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 20
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 6
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 4
    assert attributes["gen_ai.usage.input_tokens"] == 30  # cache reads and writes included, as reported


async def test_unreported_token_details_are_left_out(instrument: Any, exporter: InMemorySpanExporter) -> None:
    await call(instrument(FakeChatClient(Reply("ok", usage=UsageDetails(3, 2, 5)))), False)
    attributes = dict(only_span(exporter).attributes or {})
    assert not any(key.startswith(("gen_ai.usage.cache", "gen_ai.usage.reasoning")) for key in attributes)


class ConversationClient(BaseChatClient):
    """Answers like a Responses API backend that stored the turn in a conversation."""

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        raw = SimpleNamespace(conversation=SimpleNamespace(id="conv_from_response"))
        return ChatResponse(ChatMessage("assistant", "ok"), raw_representation=raw)


async def test_conversation_id_from_the_request_and_from_the_response(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    await call(instrument(FakeChatClient("ok")), False, options={"extra_body": {"conversation": "conv_asked"}})
    await call(instrument(FakeChatClient("ok")), True, options={"extra_body": {"conversation": {"id": "conv_obj"}}})
    await call(instrument(ConversationClient()), False)
    await call(instrument(FakeChatClient("ok")), False)
    ids = [dict(span.attributes or {}).get("gen_ai.conversation.id") for span in exporter.get_finished_spans()]
    assert ids == ["conv_asked", "conv_obj", "conv_from_response", None]


class SdkAnswerClient(BaseChatClient):
    """Answers with an OpenAI SDK object as its raw representation, as the adapters do."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        return ChatResponse(ChatMessage("assistant", "ok"), raw_representation=self.raw)


async def test_conversation_id_from_sdk_answers_declared_or_extra(
    instrument: Any, exporter: InMemorySpanExporter
) -> None:
    """A Responses API answer declares `conversation`; a Chat Completion does not, but keeps one a
    server sent among its extra fields."""
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response
    from openai.types.responses.response import Conversation

    completion = {"id": "c1", "choices": [], "created": 1, "model": "m", "object": "chat.completion"}
    answers = [
        Response.model_construct(id="r1", conversation=Conversation(id="conv_declared")),
        ChatCompletion.model_validate({**completion, "conversation": {"id": "conv_extra"}}),
        ChatCompletion.model_validate(completion),
    ]
    for raw in answers:
        await call(instrument(SdkAnswerClient(raw)), False)
    ids = [dict(span.attributes or {}).get("gen_ai.conversation.id") for span in exporter.get_finished_spans()]
    assert ids == ["conv_declared", "conv_extra", None]


@STREAM
async def test_tool_call_arguments_are_an_object(stream: bool, instrument: Any, exporter: InMemorySpanExporter) -> None:
    history = [
        ChatMessage("user", "weather?"),
        ChatMessage("assistant", [FunctionCallContent("c0", "cut", '{"city": "Par')]),  # cut off: stays text
    ]
    client = instrument(
        FakeChatClient(Reply(tool_calls=[("lookup", '{"city": "Paris", "days": 2}')])), capture_content=True
    )
    await call(client, stream, history)
    attributes = dict(only_span(exporter).attributes or {})
    [output] = json.loads(attributes["gen_ai.output.messages"])
    assert output["parts"] == [
        {"type": "tool_call", "id": "call_0", "name": "lookup", "arguments": {"city": "Paris", "days": 2}}
    ]
    inputs = json.loads(attributes["gen_ai.input.messages"])
    assert inputs[1]["parts"][0]["arguments"] == '{"city": "Par'


@pytest.fixture
def logs() -> Iterator[tuple[LoggerProvider, InMemoryLogRecordExporter]]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


EXPERIMENTAL = "http,gen_ai_latest_experimental"
# (opt-in, capture variable, emit-event variable) -> (content on the span, event emitted, content in the event)
CONTENT_MODES = [
    ("", "true", "", (True, False, False)),  # the stable behaviour: a boolean
    ("", "SPAN_AND_EVENT", "", (False, False, False)),  # modes only count with the opt-in
    (EXPERIMENTAL, "", "", (False, False, False)),
    (EXPERIMENTAL, "NO_CONTENT", "", (False, False, False)),
    (EXPERIMENTAL, "span_only", "", (True, False, False)),
    (EXPERIMENTAL, "EVENT_ONLY", "", (False, True, True)),
    (EXPERIMENTAL, "SPAN_AND_EVENT", "", (True, True, True)),
    (EXPERIMENTAL, "SPAN_ONLY", "true", (True, True, False)),  # the event without content
    (EXPERIMENTAL, "EVENT_ONLY", "false", (False, False, True)),
    (EXPERIMENTAL, "true", "", (False, False, False)),  # not a mode: no content (and a warning)
]


@STREAM
@pytest.mark.parametrize(("opt_in", "capture", "emit", "expected"), CONTENT_MODES)
async def test_semconv_stability_opt_in_content_modes(
    stream: bool,
    opt_in: str,
    capture: str,
    emit: str,
    expected: tuple[bool, bool, bool],
    tracer_provider: TracerProvider,
    exporter: InMemorySpanExporter,
    logs: tuple[LoggerProvider, InMemoryLogRecordExporter],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in (
        ("OTEL_SEMCONV_STABILITY_OPT_IN", opt_in),
        ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", capture),
        ("OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT", emit),
    ):
        monkeypatch.setenv(name, value)
    logger_provider, log_exporter = logs
    client = with_telemetry(
        FakeChatClient("the answer"), tracer_provider=tracer_provider, logger_provider=logger_provider
    )
    await call(client, stream, "the question", options={"instructions": "be terse", "temperature": 0.5})

    on_span, emitted, in_event = expected
    span = only_span(exporter)
    attributes = dict(span.attributes or {})
    assert ("gen_ai.input.messages" in attributes) is on_span
    assert ("gen_ai.output.messages" in attributes) is on_span
    records = [r.log_record for r in log_exporter.get_finished_logs()]
    assert len(records) == int(emitted)
    if emitted:
        [record] = records
        event = dict(record.attributes or {})
        assert record.event_name == "gen_ai.client.inference.operation.details"
        assert record.span_id == span.context.span_id  # correlated with the chat span
        assert event["gen_ai.request.temperature"] == 0.5 and event["gen_ai.usage.output_tokens"] == 5
        assert ("gen_ai.input.messages" in event) is in_event
        if in_event:  # objects, not JSON text
            assert event["gen_ai.input.messages"][0]["parts"][0]["content"] == "the question"
            assert event["gen_ai.output.messages"][0]["parts"][0]["content"] == "the answer"
            assert event["gen_ai.system_instructions"][0]["content"] == "be terse"
        else:
            assert "the question" not in json.dumps(event, default=str)


def test_an_unknown_content_mode_is_no_content_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from so_middleware.middleware.telemetry._content import ContentCapture, content_capture

    environ = {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "loud",
    }
    with caplog.at_level("WARNING", logger="so_middleware"):
        assert content_capture(False, environ) == ContentCapture()
    assert "loud" in caplog.text and "SPAN_AND_EVENT" in caplog.text
    assert content_capture(True, environ) == ContentCapture(on_span=True)  # the argument still wins
