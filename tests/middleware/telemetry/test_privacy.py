"""What is recorded about a call never shows the prompt or the credentials in a base URL.

A validating gateway's 400 and a rate limiter's 429 often quote the request back; only a mock can
send those, so `httpx2.MockTransport` answers with OpenAI-shaped error bodies (the documented
`{"error": {"message", "type", "code"}}`) that quote the prompt. Base URLs carry `user:password@`.
"""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from so_middleware import with_fallback, with_logging, with_retries, with_telemetry
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.core import redact_url
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

pytestmark = pytest.mark.anyio

PROMPT = "my secret diagnosis is 42"
QUOTING = {"error": {"message": f"Invalid request: '{PROMPT}' is not allowed", "type": "invalid_request_error",
                     "code": None, "param": None}}  # fmt: skip
COMPLETION = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}  # fmt: skip


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def chat_client(*answers: httpx2.Response, base_url: str = "http://mock/v1") -> OpenAIChatClient:
    queue = list(answers)

    def answer(request: httpx2.Request) -> httpx2.Response:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    return OpenAIChatClient(
        openai.AsyncOpenAI(api_key="x", base_url=base_url, http_client=http, max_retries=0), "m", discover=False
    )


def recorded_text(exporter: InMemorySpanExporter) -> str:
    """Every attribute and event of every finished span, as one string."""
    parts: list[str] = []
    for span in exporter.get_finished_spans():
        parts.append(repr(dict(span.attributes or {})))
        parts.append(repr(span.status.description))
        for event in span.events:
            parts.append(event.name + repr(dict(event.attributes or {})))
    return "\n".join(parts)


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "stream"])
async def test_a_provider_error_quoting_the_prompt_is_recorded_by_type_and_status_only(
    streaming: bool, tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    client = with_telemetry(chat_client(httpx2.Response(400, json=QUOTING)), tracer_provider=tracer_provider)
    with pytest.raises(openai.BadRequestError):
        if streaming:
            await client.get_response(PROMPT, stream=True).get_final_response()
        else:
            await client.get_response(PROMPT)
    text = recorded_text(exporter)
    assert "secret diagnosis" not in text
    (span,) = exporter.get_finished_spans()
    assert (span.attributes or {})["error.type"] == "BadRequestError"
    assert (span.attributes or {})["http.response.status_code"] == 400
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        ("exception", {"exception.type": "openai.BadRequestError"})
    ]


async def test_with_content_capture_the_error_message_is_recorded(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    client = with_telemetry(
        chat_client(httpx2.Response(400, json=QUOTING)), tracer_provider=tracer_provider, capture_content=True
    )
    with pytest.raises(openai.BadRequestError):
        await client.get_response(PROMPT)
    assert "secret diagnosis" in recorded_text(exporter)


async def test_retry_records_and_events_name_the_error_type_and_status_only(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    limited = httpx2.Response(429, json={**QUOTING, "error": {**QUOTING["error"], "type": "rate_limit_error"}})
    inner = with_retries(chat_client(limited, httpx2.Response(200, json=COMPLETION)), base_delay=0)
    response = await with_telemetry(inner, tracer_provider=tracer_provider).get_response(PROMPT)
    assert response.additional_properties["so_middleware.retries"] == [
        {"attempt": 1, "error": "RateLimitError", "status_code": 429, "wait": 0.0}
    ]
    (span,) = exporter.get_finished_spans()
    (event,) = [e for e in span.events if e.name == "so_middleware.retry"]
    assert dict(event.attributes or {}) == {"attempt": 1, "error": "RateLimitError", "status_code": 429, "wait": 0.0}
    assert "secret diagnosis" not in recorded_text(exporter)


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "stream"])
async def test_log_records_name_the_error_type_status_and_code_only(
    streaming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """`with_logging(include_content=False)` records a provider error the way telemetry does."""
    limited = httpx2.Response(503, json={**QUOTING, "error": {**QUOTING["error"], "code": "server_overloaded"}})
    failing = with_fallback(chat_client(limited), chat_client(httpx2.Response(400, json=QUOTING)))
    caplog.set_level(logging.DEBUG, logger="so_middleware")
    with pytest.raises(openai.BadRequestError):
        if streaming:
            await with_logging(failing).get_response(PROMPT, stream=True).get_final_response()
        else:
            await with_logging(failing).get_response(PROMPT)
    records = {r.so_middleware["event"]: r.so_middleware for r in caplog.records}  # type: ignore[attr-defined]
    assert "secret diagnosis" not in caplog.text and "secret diagnosis" not in repr(records)
    failover, failed = records["failover"], records["chat failed"]
    fields = ("error", "status", "code")
    assert [failover[f] for f in fields] == ["InternalServerError", 503, "server_overloaded"]
    assert [failed[f] for f in fields] == ["BadRequestError", 400, "invalid_request_error"]


# ------------------------------------------------------------ credentials in base URLs


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://me:hunter2@proxy.local:8080/v1", "http://***@proxy.local:8080/v1"),
        ("https://token@gateway.example/v1?x=1", "https://***@gateway.example/v1?x=1"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    ],
)
def test_redact_url_hides_userinfo_only(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize("adapter", ["chat", "responses", "messages"])
def test_an_adapter_never_shows_the_password_of_its_base_url(adapter: str) -> None:
    if adapter == "messages":
        client: Any = AnthropicChatClient(anthropic.Anthropic(api_key="x", base_url="http://me:hunter2@h:1"), "m")
    else:
        sdk = openai.OpenAI(api_key="x", base_url="http://me:hunter2@h:1/v1")
        client = (OpenAIChatClient if adapter == "chat" else OpenAIResponsesClient)(sdk, "m")
    for shown in (repr(client), str(client.base_url), repr(with_retries(with_telemetry(client)))):
        assert "hunter2" not in shown and "me:" not in shown
    assert "***@h:1" in repr(client)


async def test_span_attributes_never_show_the_password_of_a_base_url(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    client = chat_client(httpx2.Response(200, json=COMPLETION), base_url="http://me:hunter2@mock:8080/v1")
    await with_telemetry(client, tracer_provider=tracer_provider).get_response("hi")
    (span,) = exporter.get_finished_spans()
    assert (span.attributes or {})["server.address"] == "mock"
    assert "hunter2" not in recorded_text(exporter)
