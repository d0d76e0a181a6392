"""The Chat Completions adapter against the real local llama-server, through the official SDK.

Sync (`OpenAI`) and async (`AsyncOpenAI`) clients, streaming and not; usage and finish reasons
mapped; the request body carries no feature or additional_properties key; cancelling a stream
closes the HTTP response. Shapes the local server cannot produce (a refusal, a content filter)
use `httpx2.MockTransport` with bodies from the documented wire format.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from so_middleware import (
    ChatMessage,
    ChatOptions,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderResponseError,
    ResponseFormat,
    StreamInterruptedError,
    TextContent,
    UserError,
)
from so_middleware.local import LocalModelServer
from so_middleware.openai import OpenAIChatClient
from so_middleware.testing import FakeChatClient, HttpRecorder

pytestmark = pytest.mark.anyio


def make_client(
    server: LocalModelServer, local_sdk: Any, recorder: HttpRecorder, *, is_async: bool
) -> OpenAIChatClient:
    if is_async:
        http: Any = httpx2.AsyncClient(event_hooks={"request": [recorder.arequest], "response": [recorder.aresponse]})
        sdk = local_sdk("async-openai", http_client=http)
    else:
        http = httpx2.Client(event_hooks={"request": [recorder.request], "response": [recorder.response]})
        sdk = local_sdk("openai", http_client=http)
    return OpenAIChatClient(sdk, server.model, discover=False)


class Tag:
    """A feature object no layer knows."""


@pytest.mark.parametrize("is_async", [True, False], ids=["AsyncOpenAI", "OpenAI"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_real_server_chat(local_server: LocalModelServer, local_sdk: Any, is_async: bool, stream: bool) -> None:
    recorder = HttpRecorder()
    client = make_client(local_server, local_sdk, recorder, is_async=is_async)
    options = {"max_tokens": 12, "temperature": 0, "seed": 1, "features": [Tag()], "instructions": "Be brief."}
    if stream:
        updates = []
        stream_obj = client.get_response("Say hello.", options=options, stream=True)
        async for update in stream_obj:
            updates.append(update)
        response = await stream_obj.get_final_response()
        assert len([u for u in updates if u.text]) > 1  # really streamed, piece by piece
        assert recorder.bodies[0]["stream"] is True
        assert recorder.bodies[0]["stream_options"] == {"include_usage": True}
    else:
        response = await client.get_response("Say hello.", options=options)
    assert response.text.strip()
    assert response.finish_reason in (FinishReason.STOP, FinishReason.LENGTH)
    assert response.usage is not None and response.usage.input_tokens and response.usage.output_tokens
    assert response.usage.output_tokens <= 12
    assert response.model_id
    body = recorder.bodies[0]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["max_tokens"] == 12 and body["seed"] == 1
    assert "features" not in json.dumps(body) and "additional_properties" not in json.dumps(body)


async def test_length_finish_reason_is_mapped(local_server: LocalModelServer, local_sdk: Any) -> None:
    client = make_client(local_server, local_sdk, HttpRecorder(), is_async=True)
    response = await client.get_response("Write a long story about a dragon.", options={"max_tokens": 3})
    assert response.finish_reason == FinishReason.LENGTH
    assert response.usage is not None and response.usage.output_tokens == 3


async def test_response_format_passed_through_as_given_and_enforced(
    local_server: LocalModelServer, local_sdk: Any
) -> None:
    recorder = HttpRecorder()
    client = make_client(local_server, local_sdk, recorder, is_async=True)
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    wire = {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema, "strict": True}}
    response = await client.get_response(
        "What is 2 + 4?", options={"response_format": wire, "max_tokens": 30, "temperature": 0}
    )
    assert recorder.bodies[0]["response_format"] == wire
    assert isinstance(json.loads(response.text)["answer"], int)


async def test_cancelling_a_stream_closes_the_http_response(local_server: LocalModelServer, local_sdk: Any) -> None:
    recorder = HttpRecorder()
    client = make_client(local_server, local_sdk, recorder, is_async=True)
    stream = client.get_response("Count from 1 to 200.", options={"max_tokens": 400}, stream=True)
    async with stream:
        async for update in stream:
            if update.text:
                break
    assert recorder.responses and recorder.responses[0].is_closed


async def test_sdk_client_reachable_and_retries_set_per_call(local_server: LocalModelServer, local_sdk: Any) -> None:
    client = make_client(local_server, local_sdk, HttpRecorder(), is_async=True)
    sdk = client.sdk_client
    assert client.get_service(openai.AsyncOpenAI) is sdk
    assert client.sdk_for(ChatOptions(sdk_max_retries=0)).max_retries == 0
    assert client.sdk_client is sdk and sdk.max_retries == 2  # the adapter's own client is unchanged
    assert client.sdk_for(ChatOptions()) is sdk


# --------------------------------------------------------------- wire mapping (no server)


def test_request_mapping_of_tools_and_tool_results() -> None:
    client = OpenAIChatClient(openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1"), "m")
    messages = [
        ChatMessage("user", "weather?"),
        ChatMessage("assistant", [FunctionCallContent("c1", "weather", '{"city": "Oslo"}')]),
        ChatMessage("tool", [FunctionResultContent("c1", {"temp": 3}, is_error=False)]),
        ChatMessage("tool", [FunctionResultContent("c2", "boom", is_error=True)]),
    ]
    tool = FunctionTool("weather", {"type": "object", "properties": {"city": {"type": "string"}}}, "Weather", True)
    request = client.request_for(messages, ChatOptions_coerce({"tools": [tool], "tool_choice": {"name": "weather"}}))
    assert request["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
        ],
    }
    assert request["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 3}'}
    assert request["messages"][3]["content"] == "Error: boom"
    assert request["tools"][0]["function"]["strict"] is True
    assert request["tool_choice"] == {"type": "function", "function": {"name": "weather"}}


def ChatOptions_coerce(raw: dict[str, Any]) -> Any:
    from so_middleware import ChatOptions

    return ChatOptions.coerce(raw)


def test_neutral_response_format_rendered_for_chat_completions() -> None:
    client = OpenAIChatClient(openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1"), "m")
    fmt = ResponseFormat.json_schema({"type": "object"}, name="P", strict=True, description="d")
    request = client.request_for([ChatMessage("user", "x")], ChatOptions_coerce({"response_format": fmt}))
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "P", "schema": {"type": "object"}, "strict": True, "description": "d"},
    }
    text_request = client.request_for(
        [ChatMessage("user", "x")], ChatOptions_coerce({"response_format": {"type": "text"}})
    )
    assert "response_format" not in text_request


def test_missing_model_is_reported() -> None:
    client = OpenAIChatClient(openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(UserError, match="no model"):
        client.request_for([ChatMessage("user", "x")], ChatOptions_coerce({}))


def test_adapter_rejects_other_clients() -> None:
    with pytest.raises(UserError, match="FakeChatClient"):
        OpenAIChatClient(FakeChatClient("x"))  # type: ignore[arg-type]


# Documented wire bodies (provider-apis.md §1.7): the local server never refuses or filters.
REFUSAL_BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": "I'm sorry, I cannot assist with that request.",
            },
        }
    ],
    "usage": {"prompt_tokens": 81, "completion_tokens": 11, "total_tokens": 92},
}


def mock_client(handler: Any) -> OpenAIChatClient:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return OpenAIChatClient(
        openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http, max_retries=0), "gpt-4o"
    )


async def test_refusal_is_mapped_from_documented_body() -> None:
    client = mock_client(lambda request: httpx2.Response(200, json=REFUSAL_BODY))
    response = await client.get_response("x")
    assert response.finish_reason == FinishReason.REFUSAL
    assert response.refusal == "I'm sorry, I cannot assist with that request."
    assert response.text == ""
    assert response.usage is not None and response.usage.total_tokens == 92


def sse(*events: dict[str, Any] | str) -> bytes:
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    return "".join(lines).encode()


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def test_streamed_refusal_and_tool_call_deltas() -> None:
    body = sse(
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"index": 0, "id": "call_9", "type": "function", "function": {"name": "f", "arguments": '{"a"'}}
                ],
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        chunk({}, "tool_calls"),
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o",
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        },
        "[DONE]",
    )
    client = mock_client(
        lambda request: httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )
    response = await client.get_response("x", stream=True).get_final_response()
    assert response.messages[0].function_calls == [FunctionCallContent("call_9", "f", '{"a": 1}')]
    assert response.finish_reason == FinishReason.TOOL_CALLS
    assert response.usage is not None and response.usage.total_tokens == 12

    refusal_body = sse(chunk({"role": "assistant", "refusal": "No."}), chunk({}, "stop"), "[DONE]")
    client = mock_client(
        lambda request: httpx2.Response(200, content=refusal_body, headers={"content-type": "text/event-stream"})
    )
    refused = await client.get_response("x", stream=True).get_final_response()
    assert refused.finish_reason == FinishReason.REFUSAL and refused.refusal == "No."


async def test_stream_without_finish_raises_with_partial_text() -> None:
    body = sse(chunk({"role": "assistant", "content": '{"name": "Jo'}))  # server vanished: no finish, no [DONE]
    client = mock_client(
        lambda request: httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )
    stream = client.get_response("x", stream=True)
    texts = []
    with pytest.raises(StreamInterruptedError) as caught:
        async for update in stream:
            texts.append(update.text)
    assert caught.value.partial_text == '{"name": "Jo' == "".join(texts)


async def test_malformed_sse_raises_typed_error() -> None:
    """An unreadable event is the same error as an unreadable plain body, with the text so far."""
    body = sse(chunk({"role": "assistant", "content": "Hel"})) + b"data: {not json\n\n"
    client = mock_client(
        lambda request: httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )
    with pytest.raises(ProviderResponseError) as caught:
        await client.get_response("x", stream=True).get_final_response()
    assert caught.value.partial_text == "Hel"


def test_text_content_helper_roundtrip() -> None:
    assert ChatMessage("assistant", [TextContent("a"), TextContent("b")]).text == "ab"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_echoed_prefill_is_removed_on_the_chat_route(
    local_server: LocalModelServer, local_sdk: Any, stream: bool
) -> None:
    from so_middleware.openai import LLAMA_SERVER_CHAT

    assert LLAMA_SERVER_CHAT.prefill_echoed
    client = OpenAIChatClient(local_sdk("async-openai"), local_server.model, capabilities=LLAMA_SERVER_CHAT)
    prefill = '{"name": "'
    messages = [
        ChatMessage("user", "John Smith is 35. Give his name and age as JSON."),
        ChatMessage("assistant", prefill),
    ]
    options = {"max_tokens": 20, "temperature": 0}
    if stream:
        response = await client.get_response(messages, options=options, stream=True).get_final_response()
    else:
        response = await client.get_response(messages, options=options)
    assert response.text and not response.text.startswith(prefill)
    raw = OpenAIChatClient(
        local_sdk("async-openai"), local_server.model, capabilities=LLAMA_SERVER_CHAT.replace(prefill_echoed=False)
    )
    echoed = await raw.get_response(messages, options=options)
    assert echoed.text == prefill + response.text  # the server really echoes; the adapter removes exactly that
