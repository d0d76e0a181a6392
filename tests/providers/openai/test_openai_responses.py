"""The Responses API adapter against the real local llama-server, through the official SDK.

Sync (`OpenAI`) and async (`AsyncOpenAI`) clients, streaming and not; usage and finish reasons
mapped; the request carries `instructions`, `max_output_tokens`, `text.format` and (llama-server
profile) the passthrough `response_format`; cancelling a stream closes the HTTP response; one
exchange is replayed from a cassette. Shapes the local server cannot produce (a refusal,
`response.incomplete`, a failed response, a 429, broken streams) use `httpx2.MockTransport`
with bodies from the documented wire format (provider-apis.md §2).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai
import pytest
from responses_shapes import RESPONSE, delta, sse

from so_middleware import (
    ChatMessage,
    ChatOptions,
    DelegatingChatClient,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderResponseError,
    ResponseFormat,
    StreamInterruptedError,
    UserError,
    as_chat_client,
)
from so_middleware.local import LocalModelServer
from so_middleware.openai import (
    LLAMA_SERVER_RESPONSES,
    OPENAI_API,
    OPENAI_API_RESPONSES,
    OpenAIChatClient,
    OpenAIResponsesClient,
)
from so_middleware.testing import HttpRecorder
from so_middleware.wire.chat import response_format_to_wire

pytestmark = pytest.mark.anyio

ZEBRA = {"type": "object", "properties": {"zebra_count": {"type": "integer"}}, "required": ["zebra_count"]}


def local_client(
    server: LocalModelServer, local_sdk: Any, recorder: HttpRecorder, *, is_async: bool = True
) -> OpenAIResponsesClient:
    http: Any = (httpx2.AsyncClient if is_async else httpx2.Client)(event_hooks=recorder.hooks(is_async))
    sdk = local_sdk("async-openai" if is_async else "openai", http_client=http)
    return OpenAIResponsesClient(sdk, server.model, capabilities=LLAMA_SERVER_RESPONSES)


class Tag:
    """A feature object no layer knows."""


# --------------------------------------------------------------- the real server


@pytest.mark.parametrize("is_async", [True, False], ids=["AsyncOpenAI", "OpenAI"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_real_server_responses(
    local_server: LocalModelServer, local_sdk: Any, is_async: bool, stream: bool
) -> None:
    recorder = HttpRecorder()
    client = local_client(local_server, local_sdk, recorder, is_async=is_async)
    options = {"max_tokens": 8, "temperature": 0, "features": [Tag()], "instructions": "Be brief."}
    messages = [ChatMessage("system", "You are polite."), ChatMessage("user", "Say hello.")]
    if stream:
        stream_obj = client.get_response(messages, options=options, stream=True)
        updates = [update async for update in stream_obj]
        response = await stream_obj.get_final_response()
        assert len([u for u in updates if u.text]) > 1  # really streamed, piece by piece
        assert recorder.bodies[0]["stream"] is True
    else:
        response = await client.get_response(messages, options=options)
    assert response.text.strip()
    # llama-server reports status "completed" even when max_output_tokens cut the answer.
    assert response.finish_reason == FinishReason.STOP
    assert response.usage is not None and response.usage.input_tokens and response.usage.output_tokens
    assert response.usage.output_tokens <= 8
    assert response.response_id and response.model_id
    body = recorder.bodies[0]
    assert body["instructions"] == "Be brief.\n\nYou are polite."
    assert body["input"] == [{"type": "message", "role": "user", "content": "Say hello."}]
    assert body["max_output_tokens"] == 8 and body["temperature"] == 0
    assert "features" not in json.dumps(body) and "additional_properties" not in json.dumps(body)


async def test_json_schema_stream_replayed_from_cassette(
    local_server: LocalModelServer, local_sdk: Any, cassette: Any
) -> None:
    """Recorded once from the real server: text.format plus the passthrough key, enforced."""
    recorder = HttpRecorder()
    client = local_client(local_server, local_sdk, recorder)
    fmt = ResponseFormat.json_schema(ZEBRA, name="Zebras", strict=True)
    with cassette("json_schema_stream"):
        stream = client.get_response(
            "What is 2 + 4?", options={"response_format": fmt, "max_tokens": 30, "temperature": 0}, stream=True
        )
        response = await stream.get_final_response()
    body = recorder.bodies[0]
    assert body["text"] == {"format": {"type": "json_schema", "name": "Zebras", "schema": ZEBRA, "strict": True}}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Zebras", "schema": ZEBRA, "strict": True},
    }
    assert isinstance(json.loads(response.text)["zebra_count"], int)
    assert response.finish_reason == FinishReason.STOP and response.usage is not None


async def test_cancelling_a_stream_closes_the_http_response(local_server: LocalModelServer, local_sdk: Any) -> None:
    recorder = HttpRecorder()
    client = local_client(local_server, local_sdk, recorder)
    stream = client.get_response("Count from 1 to 200.", options={"max_tokens": 400}, stream=True)
    async for update in stream:
        if update.text:
            break
    await stream.aclose()
    assert recorder.responses and recorder.responses[0].is_closed


async def test_sdk_client_reachable_and_retries_set_per_call(local_server: LocalModelServer, local_sdk: Any) -> None:
    client = local_client(local_server, local_sdk, HttpRecorder())
    assert client.get_service(openai.AsyncOpenAI) is client.sdk_client
    assert client.get_service(OpenAIResponsesClient) is client
    assert client.sdk_for(ChatOptions(sdk_max_retries=0)).max_retries == 0
    assert client.sdk_client.max_retries == 2 and client.sdk_for(ChatOptions()) is client.sdk_client
    assert client.provider_name == "openai" and client.base_url == local_server.base_url + "/"


# --------------------------------------------------------------- raw SDK clients


def test_raw_sdk_clients_become_adapters() -> None:
    sync = openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1")
    responses = as_chat_client(sync, model="m", api="responses")
    assert isinstance(responses, OpenAIResponsesClient) and not responses.is_async and responses.model == "m"
    assert isinstance(as_chat_client(openai.AsyncOpenAI(api_key="x"), api="responses"), OpenAIResponsesClient)
    assert isinstance(as_chat_client(sync), OpenAIChatClient)
    assert isinstance(DelegatingChatClient(sync).__wrapped__, OpenAIChatClient)
    assert as_chat_client(sync, api="responses").capabilities.name == "openai-compatible"
    assert as_chat_client(openai.OpenAI(api_key="x"), api="responses").capabilities == OPENAI_API_RESPONSES
    assert OpenAIChatClient(openai.OpenAI(api_key="x"), "gpt-4o").capabilities == OPENAI_API
    with pytest.raises(UserError, match="unknown OpenAI api"):
        as_chat_client(sync, api="assistants")


# --------------------------------------------------------------- wire mapping (no server)


def request_for(messages: list[ChatMessage], options: dict[str, Any], **client_options: Any) -> dict[str, Any]:
    client = OpenAIResponsesClient(openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1"), "m", **client_options)
    return client.request_for(messages, ChatOptions.coerce(options))


def test_request_mapping_of_tools_and_tool_results() -> None:
    messages = [
        ChatMessage("user", "weather?"),
        ChatMessage("assistant", [FunctionCallContent("c1", "weather", '{"city": "Oslo"}')]),
        ChatMessage("tool", [FunctionResultContent("c1", {"temp": 3})]),
        ChatMessage("tool", [FunctionResultContent("c2", "boom", is_error=True)]),
        ChatMessage("assistant", "It is 3 degrees."),
    ]
    tools = [FunctionTool("weather", {"type": "object"}, "Weather", True), FunctionTool("plain", {"type": "object"})]
    request = request_for(messages, {"tools": tools, "tool_choice": {"name": "weather"}})
    assert request["input"] == [
        {"type": "message", "role": "user", "content": "weather?"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "c1", "output": '{"temp": 3}'},
        {"type": "function_call_output", "call_id": "c2", "output": "Error: boom"},
        {"type": "message", "role": "assistant", "content": "It is 3 degrees."},
    ]
    assert request["tools"] == [
        {
            "type": "function",
            "name": "weather",
            "parameters": {"type": "object"},
            "strict": True,
            "description": "Weather",
        },
        {"type": "function", "name": "plain", "parameters": {"type": "object"}, "strict": False},
    ]
    assert request["tool_choice"] == {"type": "function", "name": "weather"}
    assert request_for([ChatMessage("user", "x")], {"tool_choice": "required"})["tool_choice"] == "required"


def test_format_rendering_and_passthrough() -> None:
    fmt = ResponseFormat.json_schema(ZEBRA, name="Z", strict=False, description="d")
    plain = request_for([ChatMessage("user", "x")], {"response_format": fmt})
    assert plain["text"] == {
        "format": {"type": "json_schema", "name": "Z", "schema": ZEBRA, "strict": False, "description": "d"}
    }
    assert "extra_body" not in plain  # no passthrough for a generic server
    passthrough = request_for(
        [ChatMessage("user", "x")],
        {"response_format": fmt, "extra_body": {"top_k": 1}},
        capabilities=LLAMA_SERVER_RESPONSES,
    )
    assert passthrough["extra_body"] == {"response_format": response_format_to_wire(fmt), "top_k": 1}
    text = request_for(
        [ChatMessage("user", "x")], {"response_format": {"type": "text"}}, capabilities=LLAMA_SERVER_RESPONSES
    )
    assert "text" not in text and "extra_body" not in text


def test_unenforced_format_warns_and_stop_is_refused() -> None:
    ignored = LLAMA_SERVER_RESPONSES.replace(native_json_schema=False, json_object=False)
    with pytest.warns(UserWarning, match="not enforced by 'llama-server-responses'"):
        request_for(
            [ChatMessage("user", "x")], {"response_format": ResponseFormat.json_schema(ZEBRA)}, capabilities=ignored
        )
    with pytest.raises(UserError, match="no stop sequences"):
        request_for([ChatMessage("user", "x")], {"stop": ["\n"]})
    with pytest.raises(UserError, match="no model"):
        OpenAIResponsesClient(openai.OpenAI(api_key="x")).request_for([], ChatOptions())


# --------------------------------------------------------------- documented shapes (MockTransport)


def with_changes(**changes: Any) -> dict[str, Any]:
    return {**RESPONSE, **changes}


def mock_client(handler: Any, **client_options: Any) -> OpenAIResponsesClient:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    sdk = openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http, max_retries=0)
    return OpenAIResponsesClient(sdk, "gpt-4o", **client_options)


def streaming(body: bytes) -> Any:
    return lambda request: httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})


async def test_completed_response_usage_and_reasoning() -> None:
    response = await mock_client(lambda request: httpx2.Response(200, json=RESPONSE)).get_response("x")
    assert response.text == '{"a": 1}' and response.finish_reason == FinishReason.STOP
    assert response.usage is not None and (response.usage.cached_input_tokens, response.usage.reasoning_tokens) == (
        4,
        2,
    )


async def test_refusal_is_mapped_from_documented_body() -> None:
    refusal = [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "refusal", "refusal": "I can't help with that."}],
        }
    ]
    response = await mock_client(lambda request: httpx2.Response(200, json=with_changes(output=refusal))).get_response(
        "x"
    )
    assert response.finish_reason == FinishReason.REFUSAL
    assert response.refusal == "I can't help with that." and response.text == ""


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("max_output_tokens", FinishReason.LENGTH), ("content_filter", FinishReason.CONTENT_FILTER)],
)
async def test_incomplete_response_is_mapped(reason: str, expected: FinishReason) -> None:
    body = with_changes(status="incomplete", incomplete_details={"reason": reason})
    response = await mock_client(lambda request: httpx2.Response(200, json=body)).get_response("x")
    assert response.finish_reason == expected
    stream_body = sse(delta('{"a"'), {"type": "response.incomplete", "response": body, "sequence_number": 2})
    streamed = await mock_client(streaming(stream_body)).get_response("x", stream=True).get_final_response()
    assert streamed.finish_reason == expected and streamed.text == '{"a"'
    assert streamed.usage is not None and streamed.usage.total_tokens == 15


async def test_failed_response_raises_provider_response_error_plain_and_streaming() -> None:
    """A `failed` status is one typed error, plain and streaming, carrying the error code; the
    provider's message (which may quote the request) is not in the error's text."""
    body = with_changes(status="failed", error={"code": "server_error", "message": "The model crashed."})
    with pytest.raises(ProviderResponseError) as plain:
        await mock_client(lambda request: httpx2.Response(200, json=body)).get_response("x")
    failed_event = {"type": "response.failed", "response": body, "sequence_number": 2}
    with pytest.raises(ProviderResponseError) as streamed:
        await mock_client(streaming(sse(failed_event))).get_response("x", stream=True).get_final_response()
    for caught in (plain, streamed):
        assert caught.value.code == "server_error" and caught.value.transient
        assert "crashed" not in str(caught.value)


async def test_rate_limit_with_retry_after_is_the_sdk_error() -> None:
    error = {
        "error": {"message": "Rate limit reached", "type": "requests", "param": None, "code": "rate_limit_exceeded"}
    }
    client = mock_client(lambda request: httpx2.Response(429, json=error, headers={"retry-after": "2"}))
    for stream in (False, True):
        with pytest.raises(openai.RateLimitError) as caught:
            if stream:
                await client.get_response("x", stream=True).get_final_response()
            else:
                await client.get_response("x")
        assert caught.value.response.headers["retry-after"] == "2"


async def test_streamed_function_call_and_refusal() -> None:
    call_item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_9",
        "name": "f",
        "arguments": "",
        "status": "in_progress",
    }
    done = with_changes(output=[{**call_item, "arguments": '{"a": 1}', "status": "completed"}])
    body = sse(
        {"type": "response.created", "response": with_changes(status="in_progress", output=[]), "sequence_number": 0},
        {"type": "response.output_item.added", "output_index": 0, "item": call_item, "sequence_number": 1},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"a"',
            "sequence_number": 2,
        },
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": ": 1}",
            "sequence_number": 3,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done["output"][0], "sequence_number": 4},
        {"type": "response.completed", "response": done, "sequence_number": 5},
    )
    response = await mock_client(streaming(body)).get_response("x", stream=True).get_final_response()
    assert response.messages[0].function_calls == [FunctionCallContent("call_9", "f", '{"a": 1}')]
    assert response.finish_reason == FinishReason.TOOL_CALLS and response.response_id == "resp_1"

    refusal = sse(
        {
            "type": "response.refusal.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "No.",
            "sequence_number": 1,
        },
        {"type": "response.completed", "response": RESPONSE, "sequence_number": 2},
    )
    refused = await mock_client(streaming(refusal)).get_response("x", stream=True).get_final_response()
    assert refused.finish_reason == FinishReason.REFUSAL and refused.refusal == "No."


@pytest.mark.parametrize(
    ("tail", "error"),
    [
        (b"", StreamInterruptedError),  # the server vanished: no terminal event
        (b"event: response.output_text.delta\ndata: {not json\n\n", ProviderResponseError),  # malformed SSE
        (
            sse(
                {"type": "error", "code": "server_error", "message": "overloaded", "param": None, "sequence_number": 2}
            ),
            ProviderResponseError,
        ),
        (
            sse(
                {
                    "type": "response.failed",
                    "response": with_changes(status="failed", error={"code": "x", "message": "boom"}),
                    "sequence_number": 2,
                }
            ),
            ProviderResponseError,
        ),
    ],
    ids=["no-terminal-event", "malformed", "error-event", "failed-event"],
)
async def test_broken_streams_raise_with_partial_text(tail: bytes, error: type[Exception]) -> None:
    stream = mock_client(streaming(sse(delta('{"name": "Jo')) + tail)).get_response("x", stream=True)
    texts = []
    with pytest.raises(error) as caught:
        async for update in stream:
            texts.append(update.text)
    assert caught.value.partial_text == '{"name": "Jo' == "".join(texts)


async def test_connection_cut_mid_stream_raises_with_partial_text() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield sse(delta("Hel"), delta("lo"))
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    client = mock_client(
        lambda request: httpx2.Response(200, content=body(), headers={"content-type": "text/event-stream"})
    )
    with pytest.raises(StreamInterruptedError) as caught:
        await client.get_response("x", stream=True).get_final_response()
    assert caught.value.partial_text == "Hello"


@pytest.mark.parametrize("pieces", [['{"name": "Jo', "hn"], ["{", '"na', 'me": "', "John"], ['{"name": "John']])
async def test_echoed_prefill_is_removed_however_it_is_split(pieces: list[str]) -> None:
    """llama-server repeats the prefill on this route (see test_profiles_local.py)."""
    body = sse(*(delta(p) for p in pieces), {"type": "response.completed", "response": RESPONSE, "sequence_number": 9})
    messages = [ChatMessage("user", "x"), ChatMessage("assistant", '{"name": "')]
    client = mock_client(streaming(body), capabilities=LLAMA_SERVER_RESPONSES)
    assert (await client.get_response(messages, stream=True).get_final_response()).text == "John"
    echoed = with_changes(
        output=[
            {**RESPONSE["output"][0], "content": [{"type": "output_text", "text": '{"name": "John', "annotations": []}]}
        ]
    )  # type: ignore[index]
    plain = mock_client(lambda request: httpx2.Response(200, json=echoed), capabilities=LLAMA_SERVER_RESPONSES)
    assert (await plain.get_response(messages)).text == "John"
    not_echoing = mock_client(lambda request: httpx2.Response(200, json=echoed), capabilities=OPENAI_API)
    assert (await not_echoing.get_response(messages)).text == '{"name": "John'


# --------------------------------------------------------------- loop breaking on OpenAI's API


def _keys(params: Any) -> set[str]:
    return set(params.__required_keys__ | params.__optional_keys__)


def test_the_official_profiles_break_loops_only_with_parameters_their_route_has() -> None:
    """The SDK's request types are the routes' parameter lists: Chat Completions has
    `frequency_penalty`, Responses has no penalty at all."""
    from openai.types.chat import completion_create_params
    from openai.types.responses import response_create_params

    responses_params = _keys(response_create_params.ResponseCreateParamsBase)
    chat_params = _keys(completion_create_params.CompletionCreateParamsBase)
    assert "frequency_penalty" not in responses_params and "frequency_penalty" in chat_params
    assert {name for name, _ in OPENAI_API.loop_breaking} <= chat_params
    assert {name for name, _ in OPENAI_API_RESPONSES.loop_breaking} <= responses_params
    assert OPENAI_API_RESPONSES.loop_breaking == ()
    assert OPENAI_API_RESPONSES.replace(name="openai", loop_breaking=OPENAI_API.loop_breaking) == OPENAI_API
