"""All three layers stacked in both orders over the real local model: structured output still
works, features pass through the layers that do not know them, spans are recorded."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from so_middleware import (
    ChatAgent,
    Feature,
    StructuredOutput,
    with_retries,
    with_structured_output,
    with_telemetry,
)
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient

pytestmark = pytest.mark.anyio


class Person(BaseModel):
    name: str
    age: int


class Passenger(Feature):
    """A feature no layer knows; it must reach the adapter untouched."""


def build(order: str, adapter: Any, provider: TracerProvider) -> Any:
    if order == "telemetry-outside":
        return with_telemetry(with_retries(with_structured_output(adapter)), tracer_provider=provider)
    return with_structured_output(with_retries(with_telemetry(adapter, tracer_provider=provider)))


@pytest.mark.parametrize("order", ["telemetry-outside", "structured-outside"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_three_layers_both_orders(
    local_server: LocalModelServer, local_sdk: Any, order: str, stream: bool
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    adapter = OpenAIChatClient(local_sdk("async-openai"), local_server.model, capabilities=LLAMA_SERVER)
    seen: list[Any] = []
    original = adapter.get_response

    def spy(messages: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("options"))
        return original(messages, **kwargs)

    adapter.get_response = spy  # type: ignore[method-assign]
    client = build(order, adapter, provider)
    feature, passenger = StructuredOutput(Person), Passenger()
    options = {"features": [passenger, feature], "max_tokens": 80, "temperature": 0}
    if stream:
        response_stream = client.get_response("John Smith is 35 years old.", options=options, stream=True)
        response = await response_stream.get_final_response()
    else:
        response = await client.get_response("John Smith is 35 years old.", options=options)
    assert isinstance(response.value, Person) and isinstance(response.value.age, int)
    assert feature.response is response
    assert seen and all(passenger in o.features for o in seen)  # the unknown feature arrived, same object
    assert client.sdk_client is adapter.sdk_client and adapter.sdk_client.max_retries == 2  # never changed by a layer
    assert all(o.sdk_max_retries == 0 for o in seen)  # the retry layer's calls go out without SDK retries
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert len(spans) == 1 and spans[0].attributes is not None
    assert spans[0].attributes["gen_ai.request.model"] == local_server.model
    if order == "telemetry-outside":  # the span sees the whole structured-output run
        assert spans[0].attributes["gen_ai.output.type"] == "json"
        assert spans[0].attributes["so_middleware.structured_output.strategy"] == "native"


async def test_agent_span_parents_chat_spans(local_server: LocalModelServer, local_sdk: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    adapter = OpenAIChatClient(local_sdk("async-openai"), local_server.model, capabilities=LLAMA_SERVER)
    agent = ChatAgent(with_telemetry(with_structured_output(adapter), tracer_provider=provider), name="extractor")
    response = await agent.run("Ada is 36.", output_type=Person, options={"max_tokens": 60, "temperature": 0})
    assert isinstance(response.value, Person)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    chat = next(s for name, s in spans.items() if name.startswith("chat"))
    agent_span = spans["invoke_agent extractor"]
    assert chat.parent is not None and chat.parent.span_id == agent_span.context.span_id
