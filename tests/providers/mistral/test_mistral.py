"""The Mistral adapter through the real, unmodified `mistralai` SDK, against a loopback server that
speaks the documented chat completions wire format (`mistral_server.py` names its sources)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from mistral_server import MODEL, Answer, MistralServer, chat_answer, chunk, error_body, serving
from mistralai.client import Mistral, errors
from mistralai.client.utils import BackoffStrategy, RetryConfig

from so_middleware import (
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    HostedFileContent,
    ProviderConnectionError,
    ProviderResponseError,
    ProviderStatusError,
    ReasoningContent,
    ResponseFormat,
    StreamInterruptedError,
    TextContent,
    UserError,
    as_chat_client,
    failure_of,
)
from so_middleware.gateway._server import free_port
from so_middleware.mistral import MISTRAL_API, MistralChatClient, profile_for

pytestmark = pytest.mark.anyio

WEATHER = FunctionTool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}}, "Weather")


@pytest.fixture
def mistral_sync() -> Iterator[tuple[MistralServer, Mistral]]:
    """For the sync entry points, which run on so_middleware's own loop (it outlives the test)."""
    with serving() as found:
        yield found


@pytest.fixture
async def mistral() -> AsyncIterator[tuple[MistralServer, Mistral]]:
    """The async client's connections belong to the test's loop: closed before the loop ends."""
    with serving() as (server, sdk):
        yield server, sdk
        await sdk.__aexit__(None, None, None)


def server_url_of(sdk: Mistral) -> str:
    return sdk.sdk_configuration.get_server_details()[0]


def _client(sdk: Mistral, **options: Any) -> MistralChatClient:
    return MistralChatClient(sdk, MODEL, **options)


async def _drain(call: Any) -> Any:
    """Await a plain call, or read a stream to its end."""
    if hasattr(call, "__aiter__"):
        return [update async for update in call]
    return await call


async def test_a_plain_call_sends_the_options_and_reads_text_usage_and_finish(
    mistral: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral
    server.script(Answer(chat_answer("Hello there")))
    options = {"instructions": "Be brief.", "temperature": 0.2, "max_tokens": 50, "stop": ["END"], "seed": 7}
    response = await _client(sdk).get_response("Hi", options=options)
    assert (response.text, response.finish_reason, response.model_id) == ("Hello there", "stop", MODEL)
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    sent = server.requests[0]
    assert sent["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert (sent["model"], sent["temperature"], sent["max_tokens"], sent["stop"]) == (MODEL, 0.2, 50, ["END"])
    assert sent["random_seed"] == 7 and "seed" not in sent  # Mistral's name for it
    assert server.headers[0]["authorization"] == "Bearer test-key"


async def test_a_json_schema_goes_strict_under_response_format_and_extra_fields_go_beside(
    mistral: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral
    server.script(Answer(chat_answer('{"city": "Oslo"}')))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}  # fmt: skip
    fmt = ResponseFormat.json_schema(schema, name="place", strict=True)
    options = {"response_format": fmt, "extra_body": {"frequency_penalty": 0.5, "safe_prompt": True}}
    await _client(sdk).get_response("Where?", options=options)
    sent = server.requests[0]
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {"name": "place", "schema": schema,
                                                                              "strict": True}}  # fmt: skip
    assert (sent["frequency_penalty"], sent["safe_prompt"]) == (0.5, True)


async def test_a_stream_reads_deltas_and_the_last_chunks_usage(mistral: tuple[MistralServer, Mistral]) -> None:
    server, sdk = mistral
    server.script(Answer(chunks=[chunk("Hel"), chunk("lo"), chunk("", finish="length", usage=True)]))
    stream = _client(sdk).get_response("Hi", stream=True)
    texts = [update.text async for update in stream if update.text]
    final = await stream.get_final_response()
    assert "".join(texts) == "Hello" and final.text == "Hello"
    assert final.finish_reason == "length"
    assert final.usage is not None and final.usage.total_tokens == 14
    assert server.requests[0]["stream"] is True


@pytest.mark.parametrize("done", [True, False])
async def test_a_stream_cut_before_its_last_chunk_is_interrupted(
    mistral: tuple[MistralServer, Mistral], done: bool
) -> None:
    """With or without the closing `data: [DONE]`, a stream without a finish reason is cut off."""
    server, sdk = mistral
    server.script(Answer(chunks=[chunk("Hel")], done=done))
    with pytest.raises(StreamInterruptedError) as info:
        await _drain(_client(sdk).get_response("Hi", stream=True))
    assert info.value.partial_text == "Hel"


async def test_a_stalled_stream_ends_at_the_idle_timeout(mistral: tuple[MistralServer, Mistral]) -> None:
    server, sdk = mistral
    server.script(Answer(chunks=[chunk("Hel"), chunk("lo", finish="stop")], stall=30))
    with pytest.raises(StreamInterruptedError, match=r"no chunk from Mistral within 0\.3 s") as info:
        await _drain(_client(sdk, idle_timeout=0.3).get_response("Hi", stream=True))
    assert info.value.partial_text == "Hel"


@pytest.mark.parametrize(
    ("finish", "ours"),
    [("stop", "stop"), ("length", "length"), ("model_length", "length"), ("tool_calls", "tool_calls")],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_every_finish_reason_ends_typed(
    mistral: tuple[MistralServer, Mistral], finish: str, ours: str, stream: bool
) -> None:
    server, sdk = mistral
    calls = [{"id": "abc123def", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]
    if stream:
        last = chunk(finish=finish, usage=True)
        if finish == "tool_calls":
            last["choices"][0]["delta"] = {"tool_calls": [{**calls[0], "index": 0}]}
        server.script(Answer(chunks=[chunk("x"), last]))
        response = await _client(sdk).get_response("Hi", stream=True).get_final_response()
    else:
        server.script(Answer(chat_answer("x", finish=finish, tool_calls=calls if finish == "tool_calls" else None)))
        response = await _client(sdk).get_response("Hi")
    assert response.finish_reason == ours


@pytest.mark.parametrize("stream", [False, True])
async def test_a_finish_reason_of_error_is_a_response_error_that_keeps_the_answer(
    mistral: tuple[MistralServer, Mistral], stream: bool
) -> None:
    server, sdk = mistral
    if stream:
        server.script(Answer(chunks=[chunk("Hel"), chunk("lo", finish="error", usage=True)]))
    else:
        server.script(Answer(chat_answer("Hello", finish="error")))
    with pytest.raises(ProviderResponseError, match="finish_reason 'error'") as info:
        await _drain(_client(sdk).get_response("Hi", stream=stream))
    assert info.value.raw_text == "Hello" and info.value.transient
    assert info.value.usage is not None and info.value.usage.total_tokens in (14, 18)


async def test_tool_calls_both_ways_and_thinking(mistral: tuple[MistralServer, Mistral]) -> None:
    server, sdk = mistral
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Need the weather."}]}
    call = {"id": "D681PevKs", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    server.script(
        Answer(chat_answer([thinking], finish="tool_calls", tool_calls=[call])), Answer(chat_answer("Sunny."))
    )
    client = _client(sdk)
    first = await client.get_response("Weather?", options={"tools": [WEATHER], "tool_choice": "required"})
    assert first.finish_reason == "tool_calls"
    reasoning, asked = first.messages[-1].contents
    assert isinstance(reasoning, ReasoningContent) and reasoning.text == "Need the weather."
    assert isinstance(asked, FunctionCallContent)
    assert (asked.call_id, asked.name, asked.parsed_arguments()) == ("D681PevKs", "get_weather", {"city": "Oslo"})
    history = [
        ChatMessage("user", "Weather?"),
        first.messages[-1],
        ChatMessage("tool", [FunctionResultContent("D681PevKs", "sunny")]),
    ]
    second = await client.get_response(history, options={"tools": [WEATHER], "tool_choice": {"name": "get_weather"}})
    assert second.text == "Sunny."
    sent = server.requests[0]
    assert sent["tools"] == [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]  # fmt: skip
    assert sent["tool_choice"] == "any"  # Mistral's name for a required call
    back = server.requests[1]
    assert back["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert back["messages"][1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    assert back["messages"][2] == {"role": "tool", "content": "sunny", "tool_call_id": "D681PevKs",
                                   "name": "get_weather"}  # fmt: skip


async def test_streamed_tool_calls_keep_their_ids(mistral: tuple[MistralServer, Mistral]) -> None:
    server, sdk = mistral
    last = chunk(finish="tool_calls", usage=True)
    last["choices"][0]["delta"] = {"tool_calls": [
        {"id": "a1b2c3d4e", "index": 0, "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
        {"id": "f5g6h7i8j", "index": 1, "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
    ]}  # fmt: skip
    server.script(Answer(chunks=[last]))
    final = await _client(sdk).get_response("Weather?", stream=True, options={"tools": [WEATHER]}).get_final_response()
    calls = [c for c in final.messages[-1].contents if isinstance(c, FunctionCallContent)]
    assert [(c.call_id, c.parsed_arguments()["city"]) for c in calls] == [("a1b2c3d4e", "Oslo"), ("f5g6h7i8j", "Rome")]


async def test_an_image_goes_as_an_image_url_part(mistral: tuple[MistralServer, Mistral]) -> None:
    server, sdk = mistral
    server.script(Answer(chat_answer("A cat.")))
    image = ChatMessage("user", [TextContent("What is this?"), DataContent(b"\x89PNG", "image/png")])
    linked = ChatMessage("user", [DataContent("https://example.com/cat.png", "image/png")])
    await _client(sdk).get_response([image, linked])
    sent = server.requests[0]["messages"]
    assert sent[0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": "data:image/png;base64,iVBORw=="},
    ]
    assert sent[1]["content"] == [{"type": "image_url", "image_url": "https://example.com/cat.png"}]


async def test_a_429_is_transient_with_its_retry_after_and_of_both_types(
    mistral: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral
    body = error_body("Requests rate limit exceeded", "rate_limited", "1300")
    server.script(Answer(body, status=429, headers={"retry-after": "3"}))
    with pytest.raises(ProviderStatusError) as info:
        await _client(sdk).get_response("x")
    assert isinstance(info.value, errors.SDKError)
    failure = failure_of(info.value)
    assert (failure.status, failure.transient, failure.retry_after, failure.code) == (429, True, 3.0, "rate_limited")
    assert "rate limit exceeded" in str(info.value)
    assert len(server.requests) == 1  # the SDK's own retries are off


async def test_the_sdk_clients_own_retries_are_off_for_each_call(mistral: tuple[MistralServer, Mistral]) -> None:
    """A client made with a retry config still sends one request per call: `with_retries` retries."""
    server, sdk = mistral
    backoff = RetryConfig("backoff", BackoffStrategy(1, 10, 1.1, 2000), retry_connection_errors=True)
    retrying = Mistral(api_key="k", server_url=server_url_of(sdk), retry_config=backoff)
    server.script(*[Answer(error_body("busy", "rate_limited"), status=429)] * 5)
    with pytest.raises(ProviderStatusError):
        await _client(retrying).get_response("x")
    assert len(server.requests) == 1
    await retrying.__aexit__(None, None, None)


@pytest.mark.parametrize(
    ("status", "body", "sdk_error"),
    [
        (400, error_body("Invalid model: nope", "invalid_model", "1500"), errors.SDKError),
        (422, {"detail": [{"loc": ["body", "messages"], "msg": "Field required", "type": "missing"}]},
         errors.HTTPValidationError),
    ],
)  # fmt: skip
async def test_a_refused_request_is_not_transient(
    mistral: tuple[MistralServer, Mistral], status: int, body: dict[str, Any], sdk_error: type[Exception]
) -> None:
    server, sdk = mistral
    server.script(Answer(body, status=status))
    with pytest.raises(ProviderStatusError) as info:
        await _client(sdk).get_response("x")
    assert isinstance(info.value, sdk_error)
    assert (failure_of(info.value).status, failure_of(info.value).transient) == (status, False)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_server_that_is_not_there_is_a_connection_failure(stream: bool) -> None:
    address = f"http://127.0.0.1:{free_port()}"
    sdk = Mistral(api_key="k", server_url=address)
    with pytest.raises(ProviderConnectionError, match=f"cannot reach {address}") as info:
        await _drain(_client(sdk).get_response("x", stream=stream))
    assert failure_of(info.value).kind == "connection" and failure_of(info.value).transient
    await sdk.__aexit__(None, None, None)


def test_as_chat_client_finds_the_adapter_and_the_sync_entry_point_works(
    mistral_sync: tuple[MistralServer, Mistral],
) -> None:
    server, sdk = mistral_sync
    server.script(Answer(chat_answer("ok")))
    client = as_chat_client(sdk, model=MODEL)
    assert isinstance(client, MistralChatClient) and client.capabilities == MISTRAL_API
    assert client.get_response_sync("x").text == "ok"
    assert profile_for("open-mistral-nemo").schema_profile == "mistral"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"extra_body": {"logit_bias": {"1": 5}}}, r"no extra_body field 'logit_bias': Mistral has no logit bias"),
        ({"extra_body": {"seed": 1}}, r"'seed': use the 'seed' option \(sent as Mistral's random_seed\)"),
        ({"extra_body": {"user": "u1"}}, r"no extra_body field 'user': remove it"),
        ({"sdk_max_retries": 2}, "drop sdk_max_retries"),
    ],
)
def test_an_option_mistral_lacks_is_a_user_error_before_any_request(
    mistral_sync: tuple[MistralServer, Mistral], options: dict[str, Any], message: str
) -> None:
    server, sdk = mistral_sync
    with pytest.raises(UserError, match=message):
        _client(sdk).get_response_sync("x", options=options)
    assert server.requests == []


def test_bad_input_is_a_user_error_before_any_request(mistral_sync: tuple[MistralServer, Mistral]) -> None:
    server, sdk = mistral_sync
    with pytest.raises(UserError, match=r"needs a mistralai\.client\.Mistral, not object"):
        MistralChatClient(object(), MODEL)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="no model given"):
        MistralChatClient(sdk).get_response_sync("x")
    with pytest.raises(UserError, match="cannot carry application/zip data"):
        _client(sdk).get_response_sync([ChatMessage("user", [DataContent(b"PK", "application/zip")])])
    with pytest.raises(UserError, match="file by our id"):
        _client(sdk).get_response_sync([ChatMessage("user", [HostedFileContent("file-1")])])
    assert server.requests == []
