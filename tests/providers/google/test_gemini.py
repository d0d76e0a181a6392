"""The Gemini adapter through the real, unmodified `google-genai` SDK, against a loopback server that
speaks the documented `generateContent` wire format (`gemini_server.py` names its sources)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from gemini_server import Answer, GeminiServer, error_body, serving, text_answer
from google import genai
from pydantic import BaseModel

from so_middleware import (
    ChatMessage,
    ChatOptions,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ReasoningContent,
    StreamInterruptedError,
    UserError,
    failure_of,
)
from so_middleware.google import GeminiChatClient, profile_for
from so_middleware.providers._openai_privates import genai_never_retries

pytestmark = pytest.mark.anyio


class City(BaseModel):
    name: str
    population: int


@pytest.fixture
def gemini_sync() -> Iterator[tuple[GeminiServer, genai.Client]]:
    """For the sync entry points, which run on so_middleware's own loop (it outlives the test)."""
    with serving() as found:
        yield found


@pytest.fixture
async def gemini() -> AsyncIterator[tuple[GeminiServer, genai.Client]]:
    """The async client's connections belong to the test's loop: closed before the loop ends."""
    with serving() as (server, sdk):
        yield server, sdk
        await sdk.aio.aclose()


def _client(sdk: genai.Client, model: str = "gemini-2.5-flash", **options: Any) -> GeminiChatClient:
    return GeminiChatClient(sdk, model, **options)


async def test_a_plain_call_reads_text_usage_and_finish(gemini: tuple[GeminiServer, genai.Client]) -> None:
    server, sdk = gemini
    server.script(Answer(text_answer("Hello there")))
    response = await _client(sdk).get_response(
        "Hi", options={"instructions": "Be brief.", "temperature": 0.2, "max_tokens": 50, "stop": ["END"]}
    )
    assert response.text == "Hello there"
    assert response.finish_reason == "stop"
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    assert response.model_id == "gemini-2.5-flash"
    path, body = server.requests[0]
    assert path.endswith("/models/gemini-2.5-flash:generateContent")
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    config = body["generationConfig"]
    assert (config["temperature"], config["maxOutputTokens"], config["stopSequences"]) == (0.2, 50, ["END"])


async def test_a_stream_that_ends_without_a_finish_reason_is_interrupted(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    server.script(Answer(chunks=[{"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}]))
    stream = _client(sdk).get_response("Hi", stream=True)
    with pytest.raises(StreamInterruptedError) as info:
        async for _ in stream:
            pass
    assert info.value.partial_text == "Hel"


@pytest.mark.parametrize("where", ["per call", "adapter"])
async def test_a_stream_that_stalls_after_its_first_chunk_ends_with_the_idle_timeout(
    gemini: tuple[GeminiServer, genai.Client], where: str
) -> None:
    """The stand-in sends its headers and a first chunk, then nothing (for longer than the test
    may take): the chunk reader's idle timer ends the call, typed, with the text so far."""
    server, sdk = gemini
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}
    server.script(Answer(chunks=[first], stall=600))
    # 2 s, not less: the first chunk must come within it even on a loaded machine
    client = _client(sdk, idle_timeout=2.0) if where == "adapter" else _client(sdk)
    options = {"idle_timeout": 2.0} if where == "per call" else {}
    stream = client.get_response("Hi", options=options, stream=True)
    with pytest.raises(StreamInterruptedError, match=r"no chunk from Gemini within 2\.0 s") as info:
        async for _ in stream:
            pass
    assert info.value.partial_text == "Hel"


async def test_a_signed_call_goes_back_with_its_thought_signature(gemini: tuple[GeminiServer, genai.Client]) -> None:
    """Gemini 3 signs its function calls (`thoughtSignature` beside `functionCall`, ai.google.dev
    "Thought signatures") and refuses a turn whose call comes back without it."""
    server, sdk = gemini
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}, "thoughtSignature": "c2lnbmVk"}
    server.script(
        Answer({"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}]}),
        Answer(text_answer("It is sunny.")),
    )
    tool = FunctionTool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}}, "Weather")
    client = _client(sdk)
    first = await client.get_response("Weather in Oslo?", options={"tools": [tool]})
    asked = first.messages[-1].contents[0]
    assert isinstance(asked, FunctionCallContent) and asked.signature == "c2lnbmVk"
    result = ChatMessage("tool", [FunctionResultContent(asked.call_id, "sunny")])
    await client.get_response([ChatMessage("user", "Weather in Oslo?"), first.messages[-1], result])
    back = server.requests[1][1]["contents"][1]["parts"][0]
    assert back["thoughtSignature"] == "c2lnbmVk"
    assert back["functionCall"]["name"] == "get_weather"


async def test_tool_calls_come_back_as_calls_and_results_go_with_their_function_name(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    call = {"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Oslo"}}}
    server.script(
        Answer({"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}]}),
        Answer(text_answer("It is sunny.")),
    )
    tool = FunctionTool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}}, "Weather")
    client = _client(sdk)
    first = await client.get_response("Weather in Oslo?", options={"tools": [tool], "tool_choice": "required"})
    assert first.finish_reason == "tool_calls"
    asked = first.messages[-1].contents[0]
    assert isinstance(asked, FunctionCallContent)
    assert (asked.call_id, asked.name, asked.parsed_arguments()) == ("c1", "get_weather", {"city": "Oslo"})
    history = [
        ChatMessage("user", "Weather in Oslo?"),
        first.messages[-1],
        ChatMessage("tool", [FunctionResultContent("c1", "sunny")]),
    ]
    second = await client.get_response(history, options={"tools": [tool]})
    assert second.text == "It is sunny."
    sent = server.requests[0][1]
    declaration = sent["tools"][0]["functionDeclarations"][0]
    # The SDK sends this field by its proto name, which the API's JSON parsing takes as well.
    assert declaration["parameters_json_schema"]["properties"] == {"city": {"type": "string"}}
    assert (declaration["name"], declaration["description"]) == ("get_weather", "Weather")
    assert sent["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    back = server.requests[1][1]["contents"]
    assert back[1]["parts"][0]["functionCall"]["name"] == "get_weather"
    assert back[2]["parts"][0]["functionResponse"] == {
        "id": "c1",
        "name": "get_weather",
        "response": {"output": "sunny"},
    }


async def test_a_forced_tool_names_the_one_allowed_function(gemini: tuple[GeminiServer, genai.Client]) -> None:
    server, sdk = gemini
    server.script(Answer(text_answer("ok")))
    tool = FunctionTool("lookup", {"type": "object", "properties": {}})
    await _client(sdk).get_response("x", options={"tools": [tool], "tool_choice": {"name": "lookup"}})
    assert server.requests[0][1]["toolConfig"]["functionCallingConfig"] == {
        "mode": "ANY",
        "allowedFunctionNames": ["lookup"],
    }


async def test_thoughts_are_reasoning_and_count_as_reasoning_tokens(gemini: tuple[GeminiServer, genai.Client]) -> None:
    server, sdk = gemini
    body = text_answer("42")
    body["candidates"][0]["content"]["parts"].insert(0, {"text": "Let me think.", "thought": True})
    body["usageMetadata"]["thoughtsTokenCount"] = 30
    server.script(Answer(body))
    response = await _client(sdk).get_response("6*7?")
    assert response.text == "42"
    reasoning = [c for c in response.messages[-1].contents if isinstance(c, ReasoningContent)]
    assert [c.text for c in reasoning] == ["Let me think."]
    assert response.usage is not None and (response.usage.output_tokens, response.usage.reasoning_tokens) == (37, 30)


async def test_a_blocked_prompt_is_a_content_filter_end_that_says_why(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    server.script(Answer({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}}))
    response = await _client(sdk).get_response("something blocked")
    assert response.finish_reason == "content_filter"
    assert "SAFETY" in response.messages[-1].contents[0].refusal  # type: ignore[union-attr]


async def test_a_400_is_not_transient_and_keeps_the_sdk_error_and_message(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    server.script(Answer(error_body(400, "INVALID_ARGUMENT", "Invalid JSON payload"), status=400))
    with pytest.raises(genai.errors.ClientError, match="Invalid JSON payload") as info:
        await _client(sdk).get_response("x")
    assert (failure_of(info.value).status, failure_of(info.value).transient) == (400, False)


@pytest.mark.parametrize(
    ("client_attempts", "sdk_max_retries", "requests"),
    [(None, None, 1), (3, None, 1), (3, 0, 1), (None, 1, 2)],
    ids=["no SDK retries", "the client's retries off for the call", "zero asked", "one retry asked"],
)
async def test_the_sdk_retries_only_as_the_call_asks(
    gemini: tuple[GeminiServer, genai.Client], client_attempts: int | None, sdk_max_retries: int | None, requests: int
) -> None:
    """The retries layer retries: the SDK makes one attempt per call (a client made with its own
    `retry_options` too) unless the call asks for more (`sdk_max_retries`)."""
    server, sdk = gemini
    if client_attempts is not None:
        retrying = {"attempts": client_attempts, "initial_delay": 0.01, "max_delay": 0.01}
        sdk = genai.Client(
            api_key="test-key", http_options={"base_url": _client(sdk).base_url, "retry_options": retrying}
        )
    busy = Answer(error_body(503, "UNAVAILABLE", "The model is overloaded."), status=503)
    server.script(busy, busy, busy)
    with pytest.raises(genai.errors.ServerError, match="overloaded"):
        await _client(sdk).get_response("x", options={"sdk_max_retries": sdk_max_retries})
    assert len(server.requests) == requests
    await sdk.aio.aclose()


def test_the_profile_follows_the_model() -> None:
    assert profile_for("gemini-2.5-pro").schema_profile == "gemini"
    assert profile_for("gemini-3-flash-preview").schema_profile == "gemini"
    for old in ("gemini-2.0-flash", "gemini-1.5-pro-002", "models/gemini-2.0-flash-lite"):
        assert profile_for(old).schema_profile == "gemini-openapi", old


def test_bad_input_is_a_user_error_before_any_request(gemini_sync: tuple[GeminiServer, genai.Client]) -> None:
    server, sdk = gemini_sync
    with pytest.raises(UserError, match=r"google\.genai\.Client"):
        GeminiChatClient(object(), "gemini-2.5-flash")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="no model given"):
        GeminiChatClient(sdk).get_response_sync("x")
    orphan = [ChatMessage("tool", [FunctionResultContent("nope", "x")])]
    with pytest.raises(UserError, match="'nope'"):
        _client(sdk).get_response_sync(orphan)
    assert server.requests == []


def test_the_sdks_retry_options_are_where_the_adapter_reads_them() -> None:
    """The one private name of google-genai the adapter reads besides its base URL; when a release
    moves it, this fails (and the adapter then says, per call, that the SDK makes one attempt)."""
    assert genai_never_retries(genai.Client(api_key="k"))
    assert not genai_never_retries(genai.Client(api_key="k", http_options={"retry_options": {"attempts": 2}}))


async def test_a_continued_answer_is_one_answer_as_the_sdk_merges_its_hops(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    """A first hop that stops with `CONTINUATION` and a token: the next request carries the token,
    and the caller gets the joined text, the summed counts and the last hop's end."""
    server, sdk = gemini
    token = base64.b64encode(b"resume-here").decode()
    first = text_answer("Hello ", finish="CONTINUATION")
    first["candidates"][0]["continuationToken"] = token
    server.script(Answer(first), Answer(text_answer("there")))
    response = await _client(sdk).get_response("Hi")
    assert response.text == "Hello there"
    assert response.finish_reason == "stop"
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (22, 14)
    assert len(server.requests) == 2
    assert "continuationToken" not in json.dumps(server.requests[0][1])
    assert token in json.dumps(server.requests[1][1])


@pytest.mark.parametrize("extra_body", [None, {"automatic_continuation": False, "top_k": 3}])
async def test_a_plain_call_sends_what_the_sdks_own_call_sends_and_reads_the_answer_as_json(
    gemini: tuple[GeminiServer, genai.Client], extra_body: dict[str, Any] | None
) -> None:
    """The adapter asks the SDK for its raw answer; the request on the wire is the one the SDK's
    own `generate_content` sends for the adapter's arguments (`request_for`), field for field and in order."""
    server, sdk = gemini
    server.script(Answer(text_answer("Hello there")), Answer(text_answer("Hello there")))
    client = _client(sdk)
    options: dict[str, Any] = {"instructions": "Be brief.", "temperature": 0.2, "extra_body": extra_body}
    response = await client.get_response("Hi", options=options)
    await sdk.aio.models.generate_content(**client.request_for([ChatMessage("user", "Hi")], ChatOptions(**options)))
    (ours_path, ours_body), (sdks_path, sdks_body) = server.requests
    assert (ours_path, json.dumps(ours_body)) == (sdks_path, json.dumps(sdks_body))
    assert response.text == "Hello there"
    assert isinstance(response.raw_representation, dict)
    assert response.raw_representation["responseId"] == "resp-1"


async def test_a_hop_to_be_continued_is_the_answer_when_the_call_turns_continuation_off(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    first = text_answer("Hello ", finish="CONTINUATION")
    first["candidates"][0]["continuationToken"] = base64.b64encode(b"resume-here").decode()
    server.script(Answer(first), Answer(text_answer("there")))
    response = await _client(sdk).get_response("Hi", options={"extra_body": {"automatic_continuation": False}})
    assert response.text == "Hello "
    assert len(server.requests) == 1
