"""The Amazon Bedrock adapter through the real, unmodified boto3, against a loopback server that
speaks the Converse wire format of botocore's service model (`bedrock_server.py` names its sources)."""

from __future__ import annotations

import base64
import contextvars
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import boto3
import pytest
from bedrock_server import SECRET_KEY, Answer, BedrockServer, bedrock_client, serving, text_answer, text_events

from so_middleware import (
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderConnectionError,
    ProviderStatusError,
    ResponseFormat,
    StreamInterruptedError,
    TextContent,
    UserError,
    failure_of,
)
from so_middleware.bedrock import (
    BEDROCK_FORCED_TOOL,
    BEDROCK_NATIVE,
    BEDROCK_TOOLS_ONLY,
    BedrockChatClient,
    family_of,
    profile_for,
)
from so_middleware.providers.bedrock._events import THREAD_NAME as STREAM_THREAD

pytestmark = pytest.mark.anyio

MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


@pytest.fixture
def bedrock() -> Iterator[tuple[BedrockServer, Any]]:
    with serving() as found:
        yield found


def _client(sdk: Any, model: str = MODEL, **options: Any) -> BedrockChatClient:
    return BedrockChatClient(sdk, model, **options)


async def test_a_plain_call_reads_text_usage_and_finish_and_sends_converse_fields(
    bedrock: tuple[BedrockServer, Any],
) -> None:
    server, sdk = bedrock
    server.script(Answer(text_answer("Hello there")))
    response = await _client(sdk).get_response(
        "Hi", options={"instructions": "Be brief.", "temperature": 0.2, "max_tokens": 50, "stop": ["END"], "top_p": 0.9}
    )
    assert response.text == "Hello there"
    assert response.finish_reason == "stop"
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    assert response.model_id == MODEL
    path, body = server.requests[0]
    assert path == f"/model/{MODEL}/converse"
    assert body["messages"] == [{"role": "user", "content": [{"text": "Hi"}]}]
    assert body["system"] == [{"text": "Be brief."}]
    assert body["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]}


async def test_a_json_schema_format_goes_as_output_config_with_the_schema_as_a_string(
    bedrock: tuple[BedrockServer, Any],
) -> None:
    server, sdk = bedrock
    server.script(Answer(text_answer('{"a": 1}')))
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    form = ResponseFormat("json_schema", schema=schema, name="thing", description="A thing")
    await _client(sdk).get_response("x", options={"response_format": form})
    definition = server.requests[0][1]["outputConfig"]["textFormat"]
    assert definition["type"] == "json_schema"
    sent = definition["structure"]["jsonSchema"]
    assert isinstance(sent["schema"], str) and json.loads(sent["schema"]) == schema
    assert (sent["name"], sent["description"]) == ("thing", "A thing")


async def test_tool_calls_come_back_as_calls_and_results_go_back_as_tool_results(
    bedrock: tuple[BedrockServer, Any],
) -> None:
    server, sdk = bedrock
    call = {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Oslo"}}}
    asked_body = text_answer("")
    asked_body["output"]["message"]["content"] = [{"text": "Let me look."}, call]
    asked_body["stopReason"] = "tool_use"
    server.script(Answer(asked_body), Answer(text_answer("It is sunny.")))
    tool = FunctionTool(
        "get_weather", {"type": "object", "properties": {"city": {"type": "string"}}}, "Weather", strict=True
    )
    client = _client(sdk)
    first = await client.get_response("Weather in Oslo?", options={"tools": [tool], "tool_choice": "required"})
    assert first.finish_reason == "tool_calls"
    asked = first.messages[-1].contents[-1]
    assert isinstance(asked, FunctionCallContent)
    assert (asked.call_id, asked.name, asked.parsed_arguments()) == ("tooluse_1", "get_weather", {"city": "Oslo"})
    history = [
        ChatMessage("user", "Weather in Oslo?"),
        first.messages[-1],
        ChatMessage("tool", [FunctionResultContent("tooluse_1", "sunny")]),
    ]
    second = await client.get_response(history, options={"tools": [tool], "tool_choice": {"name": "get_weather"}})
    assert second.text == "It is sunny."
    config = server.requests[0][1]["toolConfig"]
    assert config["tools"] == [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "Weather",
                "strict": True,
                "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
            }
        }
    ]
    assert config["toolChoice"] == {"any": {}}
    back = server.requests[1][1]
    assert back["toolConfig"]["toolChoice"] == {"tool": {"name": "get_weather"}}
    assert back["messages"][1]["content"][1] == call
    assert back["messages"][2] == {
        "role": "user",
        "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "sunny"}], "status": "success"}}],
    }


async def test_an_image_goes_as_bytes(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    server.script(Answer(text_answer("A dot.")))
    png = b"\x89PNG\r\n\x1a\nfake"
    await _client(sdk).get_response(
        [ChatMessage("user", [TextContent("What is this?"), DataContent(png, "image/png")])]
    )
    image = server.requests[0][1]["messages"][0]["content"][1]["image"]
    assert image["format"] == "png"
    assert base64.b64decode(image["source"]["bytes"]) == png  # rest-json sends a blob as base64


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("content_filtered", "content_filter"),
        ("guardrail_intervened", "content_filter"),
        ("tool_use", "tool_calls"),
        ("malformed_model_output", None),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_each_stop_reason_is_a_typed_end(
    bedrock: tuple[BedrockServer, Any], stop: str, finish: str | None, stream: bool
) -> None:
    server, sdk = bedrock
    client = _client(sdk)
    if stream:
        server.script(Answer(events=text_events(["ab", "c"], stop=stop)))
        updates = client.get_response("x", stream=True)
        async for _ in updates:
            pass
        response = await updates.get_final_response()
    else:
        server.script(Answer(text_answer("abc", stop=stop)))
        response = await client.get_response("x")
    assert (response.text, response.finish_reason) == ("abc", finish)


async def test_a_stream_gives_text_deltas_a_whole_tool_call_and_usage(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    events: list[dict[str, Any]] = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Looking."}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "t1", "name": "lookup"}}, "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"q": '}}, "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '"oslo"}'}}, "contentBlockIndex": 1}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}, "metrics": {"latencyMs": 1}}},
    ]
    server.script(Answer(events=events))
    tool = FunctionTool("lookup", {"type": "object", "properties": {"q": {"type": "string"}}})
    updates = _client(sdk).get_response("x", stream=True, options={"tools": [tool]})
    async for _ in updates:
        pass
    response = await updates.get_final_response()
    assert response.text == "Looking."
    calls = [c for c in response.messages[-1].contents if isinstance(c, FunctionCallContent)]
    assert [(c.call_id, c.name, c.parsed_arguments()) for c in calls] == [("t1", "lookup", {"q": "oslo"})]
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None and response.usage.total_tokens == 7
    assert server.requests[0][0] == f"/model/{MODEL}/converse-stream"


async def test_a_stream_cut_before_its_message_stop_is_interrupted(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    server.script(Answer(events=text_events(["Hel", "lo"])[:2]))
    with pytest.raises(StreamInterruptedError) as info:
        async for _ in _client(sdk).get_response("Hi", stream=True):
            pass
    assert info.value.partial_text == "Hel"


async def test_a_stalled_stream_ends_at_the_idle_timeout() -> None:
    """The SDK would wait its read timeout (600 s here, past the test's own limit) for the next
    event; the call ends at the idle timeout, and the thread reading the stream ends with it."""
    with serving(read_timeout=600) as (server, sdk):
        server.script(Answer(events=text_events(["Hel", "lo"])[:2], stall=600))
        with pytest.raises(StreamInterruptedError, match=r"within 0\.3 s") as info:
            async for _ in _client(sdk, idle_timeout=0.3).get_response("Hi", stream=True):
                pass
        assert await _stream_threads_end()
    assert info.value.partial_text == "Hel"


async def test_a_stream_left_early_leaves_no_thread_reading_it() -> None:
    """Leaving a stream (a `break`, a cancel) while the SDK waits on the socket for the next event
    ends the thread reading it, long before botocore's read timeout (600 s here)."""
    with serving(read_timeout=600) as (server, sdk):
        server.script(Answer(events=text_events(["Hel", "lo"])[:2], stall=600))
        with anyio.CancelScope() as scope:
            async for _ in _client(sdk).get_response("Hi", stream=True):
                scope.cancel()
        assert scope.cancelled_caught
        assert await _stream_threads_end()


@pytest.mark.parametrize("stream", [False, True])
async def test_the_sdk_method_runs_in_the_callers_context(bedrock: tuple[BedrockServer, Any], stream: bool) -> None:
    """A wrapper around the SDK's method (as a tracer's instrumentation installs) sees the
    caller's context variables (its current span) on the thread the call runs on."""
    server, sdk = bedrock
    server.script(Answer(events=text_events(["Hi"])) if stream else Answer(text_answer("Hi")))
    span: contextvars.ContextVar[str] = contextvars.ContextVar("span")
    seen = []
    method = "converse_stream" if stream else "converse"
    original = getattr(sdk, method)

    def traced(**request: Any) -> Any:
        seen.append(span.get("none"))
        return original(**request)

    setattr(sdk, method, traced)
    span.set("the caller's span")
    if stream:
        async for _ in _client(sdk).get_response("Hi", stream=True):
            pass
    else:
        await _client(sdk).get_response("Hi")
    assert seen == ["the caller's span"]


async def _stream_threads_end() -> bool:
    """Whether every thread reading a ConverseStream ends (a generous bound, not a speed check)."""
    for thread in [thread for thread in threading.enumerate() if thread.name == STREAM_THREAD]:
        await anyio.to_thread.run_sync(thread.join, 30)
        if thread.is_alive():
            return False
    return True


async def test_an_error_event_in_a_stream_is_a_transient_status_error(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    events = [*text_events(["Hel"])[:2], {"throttlingException": {"message": "Too many tokens"}}]
    server.script(Answer(events=events))
    with pytest.raises(ProviderStatusError, match="Too many tokens") as info:
        async for _ in _client(sdk).get_response("Hi", stream=True):
            pass
    failure = failure_of(info.value)
    assert (failure.status, failure.transient, failure.code) == (429, True, "throttlingException")


@pytest.mark.parametrize(
    ("status", "error_type", "transient"),
    [
        (429, "ThrottlingException", True),
        (400, "ValidationException", False),
        (403, "AccessDeniedException", False),
        (408, "ModelTimeoutException", True),
        (503, "ServiceUnavailableException", True),
    ],
)
async def test_service_errors_are_status_errors_of_both_types(
    bedrock: tuple[BedrockServer, Any], status: int, error_type: str, transient: bool
) -> None:
    server, sdk = bedrock
    server.script(
        Answer({"message": "it went wrong"}, status=status, error_type=error_type, headers={"retry-after": "2"})
    )
    with pytest.raises(ProviderStatusError, match="it went wrong") as info:
        await _client(sdk).get_response("x")
    assert isinstance(info.value, getattr(sdk.exceptions, error_type))  # `except client.exceptions.X` still works
    failure = failure_of(info.value)
    assert (failure.status, failure.transient, failure.code, failure.retry_after) == (
        status,
        transient,
        error_type,
        2.0,
    )


async def test_an_unreachable_endpoint_is_a_connection_error_naming_it() -> None:
    sdk = bedrock_client("http://127.0.0.1:9", connect_timeout=2)
    with pytest.raises(ProviderConnectionError, match=r"127\.0\.0\.1:9") as info:
        await _client(sdk).get_response("x")
    assert failure_of(info.value).transient


def test_the_profile_follows_the_model_family() -> None:
    native = ["us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-opus-4-6-v1", "qwen.qwen3-32b-v1:0",
              "global.anthropic.claude-haiku-4-5-20251001-v1:0", "openai.gpt-oss-120b-1:0"]  # fmt: skip
    forced = ["anthropic.claude-3-5-sonnet-20240620-v1:0", "eu.amazon.nova-pro-v1:0", "cohere.command-r-v1:0",
              "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"]  # fmt: skip
    for model in native:
        assert profile_for(model) == BEDROCK_NATIVE, model
    for model in forced:
        assert profile_for(model) == BEDROCK_FORCED_TOOL, model
    assert profile_for("us.meta.llama3-3-70b-instruct-v1:0") == BEDROCK_TOOLS_ONLY
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-5-20251101-v1:0"
    assert family_of(arn) == "anthropic" and profile_for(arn) == BEDROCK_NATIVE


def test_bad_input_is_a_user_error_before_any_request(bedrock: tuple[BedrockServer, Any]) -> None:
    server, sdk = bedrock
    with pytest.raises(UserError, match="bedrock-runtime client"):
        BedrockChatClient(object(), MODEL)
    with pytest.raises(UserError, match=r"bedrock-runtime client.*for s3"):
        BedrockChatClient(boto3.client("s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"))
    with pytest.raises(UserError, match=r"Amazon Bedrock: 'anthropic claude' is not a model id \(field: model\)"):
        BedrockChatClient(sdk, "anthropic claude")
    with pytest.raises(UserError, match="field: model"):
        _client(sdk).get_response_sync("x", options={"model": "us/anthropic/claude"})
    with pytest.raises(UserError, match="no model given"):
        BedrockChatClient(sdk).get_response_sync("x")
    with pytest.raises(UserError, match="no `seed` option"):
        _client(sdk).get_response_sync("x", options={"seed": 3})
    with pytest.raises(UserError, match="s3:// locations, not URLs"):
        _client(sdk).get_response_sync([ChatMessage("user", [DataContent("https://example.com/a.png", "image/png")])])
    assert server.requests == []


def test_missing_credentials_are_a_user_error_naming_the_fix(
    bedrock: tuple[BedrockServer, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    server, sdk = bedrock
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata lookup off this machine
    bare = boto3.session.Session().client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=sdk.meta.endpoint_url
    )
    with pytest.raises(UserError, match=r"no AWS credentials \(field: credentials\). Fix: set AWS_ACCESS_KEY_ID"):
        _client(bare).get_response_sync("x")
    assert server.requests == []


async def test_the_secret_key_is_never_in_a_repr_an_error_or_a_log_record(
    bedrock: tuple[BedrockServer, Any], caplog: pytest.LogCaptureFixture
) -> None:
    server, sdk = bedrock
    server.script(
        Answer(text_answer("ok")), Answer({"message": "denied"}, status=403, error_type="AccessDeniedException")
    )
    client = _client(sdk)
    with caplog.at_level(logging.DEBUG):
        await client.get_response("x")
        with pytest.raises(ProviderStatusError) as info:
            await client.get_response("x")
    seen = [repr(client), str(info.value), repr(info.value), repr(info.value.__dict__)]
    seen += [record.getMessage() for record in caplog.records]
    assert caplog.records  # botocore logged the calls at debug level
    assert not [text for text in seen if SECRET_KEY in text]
    assert "AKIDEXAMPLE" not in repr(client)
