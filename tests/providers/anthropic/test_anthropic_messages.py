"""The Anthropic Messages adapter against the real local llama-server, through the official SDK.

Sync (`Anthropic`) and async (`AsyncAnthropic`) clients, streaming and not; usage (cache reads
counted as input) and stop reasons mapped; the echoed prefill removed; cancelling a stream closes
the HTTP response; one exchange is replayed from a cassette. Shapes the local server cannot
produce (`refusal` and `max_tokens` from Anthropic's API, tool use, a 429, broken streams) use
`httpx2.MockTransport` with bodies from the documented wire format (provider-apis.md §3).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pytest

from so_middleware import (
    ChatMessage,
    ChatOptions,
    DelegatingChatClient,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderResponseError,
    ReasoningContent,
    ResponseFormat,
    StreamInterruptedError,
    UserError,
    as_chat_client,
)
from so_middleware.anthropic import (
    ANTHROPIC_API,
    ANTHROPIC_COMPATIBLE,
    DEFAULT_MAX_TOKENS,
    LLAMA_SERVER_MESSAGES,
    AnthropicChatClient,
)
from so_middleware.local import LocalModelServer
from so_middleware.testing import HttpRecorder

pytestmark = pytest.mark.anyio

PREFILL = '{"name": "'
PERSON_PROMPT = "John Smith is 35. Give JSON."


def local_client(
    server: LocalModelServer, local_sdk: Any, recorder: HttpRecorder, *, is_async: bool = True
) -> AnthropicChatClient:
    http: Any = (httpx2.AsyncClient if is_async else httpx2.Client)(event_hooks=recorder.hooks(is_async))
    sdk = local_sdk("async-anthropic" if is_async else "anthropic", http_client=http)
    return AnthropicChatClient(sdk, server.model, capabilities=LLAMA_SERVER_MESSAGES)


# --------------------------------------------------------------- the real server


@pytest.mark.parametrize("is_async", [True, False], ids=["AsyncAnthropic", "Anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_real_server_messages(
    local_server: LocalModelServer, local_sdk: Any, is_async: bool, stream: bool
) -> None:
    recorder = HttpRecorder()
    client = local_client(local_server, local_sdk, recorder, is_async=is_async)
    options = {"max_tokens": 8, "temperature": 0, "instructions": "Be brief.", "features": [object()]}
    messages = [ChatMessage("system", "You are polite."), ChatMessage("user", "Say hello.")]
    if stream:
        stream_obj = client.get_response(messages, options=options, stream=True)
        updates = [update async for update in stream_obj]
        response = await stream_obj.get_final_response()
        assert len([u for u in updates if u.text]) > 1
        assert recorder.bodies[0]["stream"] is True
    else:
        response = await client.get_response(messages, options=options)
    assert response.text.strip()
    assert response.finish_reason in (FinishReason.STOP, FinishReason.LENGTH)
    usage = response.usage
    assert usage is not None and usage.output_tokens and usage.output_tokens <= 8
    assert usage.input_tokens and usage.input_tokens > 8  # the cache reads count as input
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    body = recorder.bodies[0]
    assert body["system"] == "Be brief.\n\nYou are polite."
    assert body["messages"] == [{"role": "user", "content": "Say hello."}]
    assert body["max_tokens"] == 8 and body["temperature"] == 0
    assert "features" not in json.dumps(body)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_echoed_prefill_is_removed(local_server: LocalModelServer, local_sdk: Any, stream: bool) -> None:
    client = local_client(local_server, local_sdk, HttpRecorder())
    messages = [ChatMessage("user", PERSON_PROMPT), ChatMessage("assistant", PREFILL)]
    options = {"max_tokens": 8, "temperature": 0}
    if stream:
        response = await client.get_response(messages, options=options, stream=True).get_final_response()
    else:
        response = await client.get_response(messages, options=options)
    assert response.text.startswith("John") and not response.text.startswith(PREFILL)
    assert (PREFILL + response.text).startswith('{"name": "John')


async def test_prefill_stream_replayed_from_cassette(
    local_server: LocalModelServer, local_sdk: Any, cassette: Any
) -> None:
    """Recorded once from the real server: its text starts with the prefill; ours does not."""
    recorder = HttpRecorder()
    client = local_client(local_server, local_sdk, recorder)
    messages = [ChatMessage("user", PERSON_PROMPT), ChatMessage("assistant", PREFILL)]
    with cassette("prefill_stream"):
        stream = client.get_response(messages, options={"max_tokens": 12, "temperature": 0}, stream=True)
        response = await stream.get_final_response()
    raw_text = "".join(
        e.delta.text for e in response.raw_representation if getattr(e, "type", "") == "content_block_delta"
    )
    assert raw_text.startswith(PREFILL)
    assert response.text == raw_text[len(PREFILL) :]
    assert recorder.bodies[0]["messages"][-1] == {"role": "assistant", "content": PREFILL}


async def test_cancelling_a_stream_closes_the_http_response(local_server: LocalModelServer, local_sdk: Any) -> None:
    recorder = HttpRecorder()
    client = local_client(local_server, local_sdk, recorder)
    stream = client.get_response("Count from 1 to 200.", options={"max_tokens": 400}, stream=True)
    async for update in stream:
        if update.text:
            break
    await stream.aclose()
    assert recorder.responses and recorder.responses[0].is_closed


def test_raw_sdk_clients_become_adapters() -> None:
    raw = anthropic.AsyncAnthropic(api_key="x")
    adapter = as_chat_client(raw, model="claude-haiku-4-5")
    assert isinstance(adapter, AnthropicChatClient) and adapter.is_async
    assert adapter.capabilities == ANTHROPIC_API.replace(assistant_prefill=True)  # Haiku 4.5 continues a prefill
    assert adapter.max_tokens == DEFAULT_MAX_TOKENS == 1024
    assert isinstance(DelegatingChatClient(anthropic.Anthropic(api_key="x")).__wrapped__, AnthropicChatClient)
    local = as_chat_client(anthropic.Anthropic(api_key="x", base_url="http://127.0.0.1:9"), model="m", max_tokens=64)
    assert (
        isinstance(local, AnthropicChatClient) and local.max_tokens == 64 and local.capabilities == ANTHROPIC_COMPATIBLE
    )
    assert local.get_service(anthropic.Anthropic) is local.sdk_client
    assert local.sdk_for(ChatOptions(sdk_max_retries=0)).max_retries == 0
    assert local.sdk_client.max_retries == 2 and local.sdk_for(ChatOptions()) is local.sdk_client
    assert local.provider_name == "anthropic" and local.base_url == "http://127.0.0.1:9"
    with pytest.raises(UserError, match="AsyncOpenAI"):
        import openai

        AnthropicChatClient(openai.AsyncOpenAI(api_key="x"))  # type: ignore[arg-type]


# --------------------------------------------------------------- wire mapping (no server)


def request_for(messages: list[ChatMessage], options: dict[str, Any], **client_options: Any) -> dict[str, Any]:
    client_options.setdefault("capabilities", ANTHROPIC_API)
    client = AnthropicChatClient(anthropic.Anthropic(api_key="x"), "claude-haiku-4-5", **client_options)
    return client.request_for(messages, ChatOptions.coerce(options))


def test_request_mapping_of_blocks_tools_and_results() -> None:
    messages = [
        ChatMessage("system", "Rules."),
        ChatMessage("user", "weather in Oslo and Rome?"),
        ChatMessage(
            "assistant",
            [
                ReasoningContent("think", "sig"),
                ReasoningContent("unsigned"),
                FunctionCallContent("t1", "weather", '{"city": "Oslo"}'),
                FunctionCallContent("t2", "weather", ""),
            ],
        ),
        ChatMessage("tool", [FunctionResultContent("t1", {"temp": 3})]),
        ChatMessage("tool", [FunctionResultContent("t2", "boom", is_error=True)]),
    ]
    tool = FunctionTool("weather", {"type": "object"}, "Weather", strict=True)
    request = request_for(
        messages, {"tools": [tool], "tool_choice": {"name": "weather"}, "stop": "END", "seed": 3, "top_p": 0.5}
    )
    assert request["system"] == "Rules."
    assert request["messages"] == [
        {"role": "user", "content": "weather in Oslo and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "think", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "t2", "name": "weather", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": '{"temp": 3}', "is_error": False},
                {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True},
            ],
        },
    ]
    assert request["tools"] == [
        {"name": "weather", "input_schema": {"type": "object"}, "description": "Weather", "strict": True}
    ]
    assert request["tool_choice"] == {"type": "tool", "name": "weather"}
    assert request["stop_sequences"] == ["END"] and request["max_tokens"] == 1024
    assert request["extra_body"] == {"top_p": 0.5} and "seed" not in json.dumps(request)


@pytest.mark.parametrize(
    ("choice", "wire"), [("auto", {"type": "auto"}), ("required", {"type": "any"}), ("none", {"type": "none"})]
)
def test_tool_choice_modes(choice: str, wire: dict[str, Any]) -> None:
    assert request_for([ChatMessage("user", "x")], {"tool_choice": choice})["tool_choice"] == wire


def test_forced_tool_becomes_auto_with_thinking() -> None:
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    request = request_for([ChatMessage("user", "x")], {"tool_choice": "required", "extra_body": thinking})
    assert request["tool_choice"] == {"type": "auto"} and request["extra_body"] == thinking


def test_json_schema_goes_to_output_config_merged_with_the_callers() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    fmt = ResponseFormat.json_schema(schema, name="A", strict=True)
    request = request_for(
        [ChatMessage("user", "x")], {"response_format": fmt, "extra_body": {"output_config": {"effort": "low"}}}
    )
    assert request["output_config"] == {"effort": "low", "format": {"type": "json_schema", "schema": schema}}
    assert "extra_body" not in request


def test_formats_the_backend_does_not_enforce_warn() -> None:
    with pytest.warns(UserWarning, match="json_object response format has no Anthropic form"):
        request = request_for([ChatMessage("user", "x")], {"response_format": {"type": "json_object"}})
    assert "output_config" not in request
    schema_format = ResponseFormat.json_schema({"type": "object"})
    with pytest.warns(UserWarning, match="not enforced by 'llama-server-messages'"):
        request = request_for(
            [ChatMessage("user", "x")], {"response_format": schema_format}, capabilities=LLAMA_SERVER_MESSAGES
        )
    assert request["output_config"]["format"]["type"] == "json_schema"  # sent anyway: harmless, and honest in logs


# --------------------------------------------------------------- documented shapes (MockTransport)

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": '{"a": 1}'}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 1},
}


def mock_client(handler: Any, **client_options: Any) -> AnthropicChatClient:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    sdk = anthropic.AsyncAnthropic(api_key="x", base_url="http://mock", http_client=http, max_retries=0)
    client_options.setdefault("capabilities", ANTHROPIC_API)
    return AnthropicChatClient(sdk, "claude-haiku-4-5", **client_options)


def sse(*events: dict[str, Any] | bytes) -> bytes:
    parts = [e if isinstance(e, bytes) else f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return b"".join(parts)


def streaming(body: bytes | Any) -> Any:
    return lambda request: httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})


START = {
    "type": "message_start",
    "message": {**MESSAGE, "content": [], "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}},
}
TEXT_START = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}


def text_delta(text: str, index: int = 0) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}


def message_delta(stop_reason: str, output_tokens: int = 7, **delta: Any) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None, **delta},
        "usage": {"input_tokens": 5, "output_tokens": output_tokens},
    }


STOP = {"type": "message_stop"}


async def test_usage_counts_cache_reads_and_writes_as_input() -> None:
    response = await mock_client(lambda request: httpx2.Response(200, json=MESSAGE)).get_response("x")
    assert response.text == '{"a": 1}' and response.finish_reason == FinishReason.STOP
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.cached_input_tokens, response.usage.total_tokens) == (9, 5, 11)
    assert response.usage.cache_creation_input_tokens == 1  # cache writes, for gen_ai.usage.cache_creation.*


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("end_turn", FinishReason.STOP),
        ("stop_sequence", FinishReason.STOP),
        ("max_tokens", FinishReason.LENGTH),
        ("model_context_window_exceeded", FinishReason.LENGTH),
        ("tool_use", FinishReason.TOOL_CALLS),
        ("refusal", FinishReason.REFUSAL),
    ],
)
async def test_stop_reasons_are_mapped(stop_reason: str, expected: FinishReason) -> None:
    body = {**MESSAGE, "stop_reason": stop_reason}
    assert (
        await mock_client(lambda request: httpx2.Response(200, json=body)).get_response("x")
    ).finish_reason == expected
    stream_body = sse(START, TEXT_START, text_delta("hi"), message_delta(stop_reason), STOP)
    streamed = await mock_client(streaming(stream_body)).get_response("x", stream=True).get_final_response()
    assert streamed.finish_reason == expected
    assert streamed.usage is not None and (streamed.usage.input_tokens, streamed.usage.output_tokens) == (5, 7)


async def test_refusal_with_stop_details() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "This looks like malware."}
    body = {**MESSAGE, "content": [], "stop_reason": "refusal", "stop_details": details}
    response = await mock_client(lambda request: httpx2.Response(200, json=body)).get_response("x")
    assert response.finish_reason == FinishReason.REFUSAL and response.refusal == "This looks like malware."
    stream_body = sse(START, message_delta("refusal", stop_details=details), STOP)
    streamed = await mock_client(streaming(stream_body)).get_response("x", stream=True).get_final_response()
    assert streamed.finish_reason == FinishReason.REFUSAL and streamed.refusal == "This looks like malware."


async def test_tool_use_and_thinking_streamed() -> None:
    body = sse(
        START,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Need the tool."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "emit", "input": {}},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"a"'}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ": 1}"}},
        {"type": "content_block_stop", "index": 1},
        message_delta("tool_use"),
        STOP,
    )
    response = await mock_client(streaming(body)).get_response("x", stream=True).get_final_response()
    assert response.messages[0].function_calls == [FunctionCallContent("toolu_1", "emit", '{"a": 1}')]
    assert response.text == "" and response.finish_reason == FinishReason.TOOL_CALLS
    assert [c.text for c in response.messages[0].contents if isinstance(c, ReasoningContent)] == ["Need the tool."]
    plain = {
        **MESSAGE,
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "emit", "input": {"a": 1}}],
    }
    called = await mock_client(lambda request: httpx2.Response(200, json=plain)).get_response("x")
    assert called.messages[0].function_calls[0].parsed_arguments() == {"a": 1}


async def test_rate_limit_with_retry_after_is_the_sdk_error() -> None:
    error = {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit."},
    }
    client = mock_client(lambda request: httpx2.Response(429, json=error, headers={"retry-after": "7"}))
    for stream in (False, True):
        with pytest.raises(anthropic.RateLimitError) as caught:
            if stream:
                await client.get_response("x", stream=True).get_final_response()
            else:
                await client.get_response("x")
        assert caught.value.response.headers["retry-after"] == "7"


@pytest.mark.parametrize(
    ("tail", "error"),
    [
        (b"", StreamInterruptedError),  # the server vanished: no message_stop
        (sse(message_delta("end_turn")), StreamInterruptedError),  # a stop reason, but still no message_stop
        (b"event: content_block_delta\ndata: {not json\n\n", ProviderResponseError),  # malformed SSE
        (sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), ProviderResponseError),
    ],
    ids=["no-terminal-event", "no-message-stop", "malformed", "error-event"],
)
async def test_broken_streams_raise_with_partial_text(tail: bytes, error: type[Exception]) -> None:
    stream = mock_client(streaming(sse(START, TEXT_START, text_delta('{"name": "Jo')) + tail)).get_response(
        "x", stream=True
    )
    with pytest.raises(error) as caught:
        async for _ in stream:
            pass
    assert caught.value.partial_text == '{"name": "Jo'


async def test_connection_cut_mid_stream_raises_with_partial_text() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield sse(START, TEXT_START, text_delta("Hel"), text_delta("lo"))
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    with pytest.raises(StreamInterruptedError) as caught:
        await mock_client(streaming(body())).get_response("x", stream=True).get_final_response()
    assert caught.value.partial_text == "Hello"


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (['{"name": "Jo', "hn"], "John"),
        (["{", '"na', 'me": "', "John"], "John"),
        (['{"name": "'], ""),
        (["{", '"nick'], '{"nick'),  # not an echo after all: nothing is lost
        (["{"], "{"),  # ended while it still looked like an echo
    ],
)
async def test_echo_removed_however_the_stream_splits_it(pieces: list[str], expected: str) -> None:
    body = sse(START, TEXT_START, *(text_delta(p) for p in pieces), message_delta("end_turn"), STOP)
    messages = [ChatMessage("user", "x"), ChatMessage("assistant", PREFILL)]
    echoing = mock_client(streaming(body), capabilities=LLAMA_SERVER_MESSAGES)
    assert (await echoing.get_response(messages, stream=True).get_final_response()).text == expected
    official = mock_client(streaming(body), capabilities=ANTHROPIC_API)  # Anthropic never echoes: nothing is removed
    assert (await official.get_response(messages, stream=True).get_final_response()).text == "".join(pieces)
