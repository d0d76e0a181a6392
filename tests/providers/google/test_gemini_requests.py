"""The Gemini adapter's requests, sent through the SDK client's lower request path: the bytes on the
wire are the SDK's own call's, on both routes (the Gemini Developer API and Vertex AI), and the
answers are read as JSON; what that path does not write, and any wrapped SDK method, goes through
the SDK's own call. Over the real, unmodified `google-genai` SDK and the loopback server of
`gemini_server.py` (it names the documented wire format it speaks)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import pytest
import wrapt
from gemini_server import Answer, GeminiServer, Sent, error_body, serving, text_answer
from google import genai
from google.genai.models import AsyncModels

from so_middleware import (
    ChatMessage,
    ChatOptions,
    DataContent,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderConnectionError,
    ReasoningContent,
    ResponseFormat,
    TextContent,
    failure_of,
)
from so_middleware.google import GeminiChatClient
from so_middleware.providers._openai_privates import genai_api_client

pytestmark = pytest.mark.anyio

TOOL = FunctionTool("lookup", {"type": "object", "properties": {"q": {"type": "string"}}}, "Looks a word up")
HISTORY = [
    ChatMessage("system", "Answer in French."),
    ChatMessage("user", "Look up 'chat'."),
    ChatMessage(
        "assistant",
        [
            ReasoningContent("A lookup helps.", "c2lnbmVkIHRob3VnaHQ+Pz8="),
            FunctionCallContent("call-1", "lookup", '{"q": "chat"}', signature="c2lnbmVkIGNhbGw/Pz4="),
        ],
    ),
    ChatMessage("tool", [FunctionResultContent("call-1", {"meaning": "cat"})]),
    ChatMessage("user", [DataContent(b"\x89PNG\xff\xfe", "image/png"), DataContent("gs://b/cat.png", "image/png")]),
    ChatMessage("user", [TextContent("And this one?")]),
]
# (messages, options) of the requests compared: the codec's every field, a config field the lower
# path does not write (sent by the SDK's own call) and per-call HTTP options (retries, a deadline).
REQUESTS: dict[str, tuple[list[ChatMessage], dict[str, Any]]] = {
    "text": ([ChatMessage("user", "Hi")], {}),
    "options": (
        [ChatMessage("user", "Hi")],
        {"instructions": "Be brief.", "temperature": 0, "top_p": 1, "max_tokens": 50, "seed": 7, "stop": ["END"]},
    ),
    "history, tools, a forced tool": (HISTORY, {"tools": [TOOL], "tool_choice": ForcedTool("lookup")}),
    "json schema": (
        [ChatMessage("user", "Hi")],
        {"response_format": ResponseFormat.json_schema({"type": "object", "properties": {"a": {"type": "integer"}}})},
    ),
    "extra body": ([ChatMessage("user", "Hi")], {"tools": [TOOL], "tool_choice": "auto", "extra_body": {"top_k": 3}}),
    "a field sent by the SDK": (
        [ChatMessage("user", "Hi")],
        {"extra_body": {"thinking_config": {"thinking_budget": 0}}},
    ),
    "openapi schema": (
        [ChatMessage("user", "Hi")],
        {"response_format": ResponseFormat.json_schema({"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}}})},
    ),
    "one retry asked": ([ChatMessage("user", "Hi")], {"sdk_max_retries": 1}),
}
# Headers that differ between two requests for reasons of their own.
_PER_REQUEST = {"content-length", "x-goog-request-params"}


@pytest.fixture(params=["developer", "vertex"])
async def gemini(request: pytest.FixtureRequest) -> AsyncIterator[tuple[GeminiServer, genai.Client]]:
    """Both routes; the async client's connections are closed before the test's loop ends."""
    with serving(vertex=request.param == "vertex") as (server, sdk):
        yield server, sdk
        await sdk.aio.aclose()


def _chunks(text: str, *, pieces: int = 2) -> list[dict[str, Any]]:
    """`text` streamed in `pieces` chunks, the last with the end and the counts."""
    size = -(-len(text) // pieces)
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [{"text": part}]}}]} for part in parts]
    last = text_answer("")
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1].update(usageMetadata=last["usageMetadata"], modelVersion=last["modelVersion"])
    return chunks


def _same_request(ours: Sent, sdks: Sent) -> None:
    assert ours.target == sdks.target
    assert ours.body == sdks.body
    assert {k: v for k, v in ours.headers.items() if k not in _PER_REQUEST} == {
        k: v for k, v in sdks.headers.items() if k not in _PER_REQUEST
    }


async def _read(stream: Any) -> list[Any]:
    return [update async for update in stream]


@pytest.mark.parametrize("case", list(REQUESTS))
async def test_a_stream_sends_what_the_sdks_own_stream_sends(
    gemini: tuple[GeminiServer, genai.Client], case: str
) -> None:
    """URL (the route's model path and `?alt=sse`), headers (the API key, or Vertex AI's bearer
    token) and body bytes: the SDK's own `generate_content_stream(**request_for(...))`'s."""
    server, sdk = gemini
    messages, options = REQUESTS[case]
    server.script(Answer(chunks=_chunks("Bonjour")), Answer(chunks=_chunks("Bonjour")))
    client = GeminiChatClient(sdk, "gemini-2.5-flash")
    updates = await _read(client.get_response(messages, options=options, stream=True))
    assert "".join(update.text for update in updates) == "Bonjour"
    await _read(await sdk.aio.models.generate_content_stream(**client.request_for(messages, ChatOptions(**options))))
    ours, sdks = server.sent
    _same_request(ours, sdks)
    route = "/v1beta1/projects/test-project/locations/us-central1/publishers/google/" if sdk.vertexai else "/v1/"
    assert ours.target == f"{route}models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert ("x-goog-api-key" in ours.headers) != (ours.headers.get("authorization") == "Bearer test-token")


@pytest.mark.parametrize("case", list(REQUESTS))
async def test_a_plain_call_sends_what_the_sdks_own_call_sends(
    gemini: tuple[GeminiServer, genai.Client], case: str
) -> None:
    server, sdk = gemini
    messages, options = REQUESTS[case]
    server.script(Answer(text_answer("Bonjour")), Answer(text_answer("Bonjour")))
    client = GeminiChatClient(sdk, "gemini-2.5-flash")
    assert (await client.get_response(messages, options=options)).text == "Bonjour"
    await sdk.aio.models.generate_content(**client.request_for(messages, ChatOptions(**options)))
    _same_request(*server.sent)


async def test_streamed_chunks_are_read_as_json(gemini: tuple[GeminiServer, genai.Client]) -> None:
    """Each update's raw representation is its chunk's JSON, not the SDK's `GenerateContentResponse`."""
    server, sdk = gemini
    server.script(Answer(chunks=_chunks("Bonjour", pieces=3)))
    stream = GeminiChatClient(sdk, "gemini-2.5-flash").get_response("Hi", stream=True)
    updates = await _read(stream)
    assert [type(update.raw_representation) for update in updates] == [dict, dict, dict]
    response = await stream.get_final_response()
    assert (response.text, response.finish_reason, response.model_id) == ("Bonjour", "stop", "gemini-2.5-flash")
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)


async def test_a_field_the_lower_path_does_not_write_goes_through_the_sdks_stream(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    server.script(Answer(chunks=_chunks("Bonjour")))
    options = {"extra_body": {"thinking_config": {"thinking_budget": 0}}}
    stream = GeminiChatClient(sdk, "gemini-2.5-flash").get_response("Hi", options=options, stream=True)
    updates = await _read(stream)
    assert all(isinstance(update.raw_representation, genai.types.GenerateContentResponse) for update in updates)
    assert server.requests[0][1]["generationConfig"] == {"thinkingConfig": {"thinking_budget": 0}}


async def test_a_continued_stream_is_one_answer_as_the_sdks_stream_follows_its_hops(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    """A first hop that stops with `CONTINUATION` and a token: the next request carries the token
    (as the SDK sends bytes), and the caller gets one stream: the joined text, the summed counts,
    the last hop's end."""
    server, sdk = gemini
    first = _chunks("Hello ")
    first[-1]["candidates"][0].update(finishReason="CONTINUATION", continuationToken="cmVzdW1lPz4+")
    server.script(Answer(chunks=first), Answer(chunks=_chunks("there")))
    stream = GeminiChatClient(sdk, "gemini-2.5-flash").get_response("Hi", stream=True)
    await _read(stream)
    response = await stream.get_final_response()
    assert (response.text, response.finish_reason) == ("Hello there", "stop")
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (22, 14)
    assert [body.get("continuationToken") for _, body in server.requests] == [None, "cmVzdW1lPz4-"]


async def test_a_stream_cut_after_a_continuation_token_goes_on_from_it(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    """A connection cut after a chunk that carried a checkpoint token: the stream goes on from the
    token, as the SDK's own stream does; cut before any token, the call ends with the error."""
    server, sdk = gemini
    hello = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello "}]}}]}
    checkpoint = {"candidates": [{**hello["candidates"][0], "continuationToken": "cmVzdW1lPz4+"}]}
    server.script(Answer(chunks=[checkpoint], drop=True), Answer(chunks=_chunks("there")))
    stream = GeminiChatClient(sdk, "gemini-2.5-flash").get_response("Hi", stream=True)
    await _read(stream)
    assert (await stream.get_final_response()).text == "Hello there"
    assert [body.get("continuationToken") for _, body in server.requests] == [None, "cmVzdW1lPz4-"]
    server.script(Answer(chunks=[hello], drop=True))
    with pytest.raises(ProviderConnectionError):
        await _read(GeminiChatClient(sdk, "gemini-2.5-flash").get_response("Hi", stream=True))
    assert len(server.requests) == 3


async def test_a_hop_to_be_continued_ends_the_stream_when_the_call_turns_continuation_off(
    gemini: tuple[GeminiServer, genai.Client],
) -> None:
    server, sdk = gemini
    first = _chunks("Hello ")
    first[-1]["candidates"][0].update(finishReason="CONTINUATION", continuationToken="cmVzdW1lPz4+")
    server.script(Answer(chunks=first), Answer(chunks=_chunks("there")))
    options = {"extra_body": {"automatic_continuation": False}}
    stream = GeminiChatClient(sdk, "gemini-2.5-flash").get_response("Hi", options=options, stream=True)
    with pytest.raises(Exception, match="ended before its last chunk") as info:
        await _read(stream)
    assert info.value.partial_text == "Hello "  # type: ignore[attr-defined]
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_an_error_status_is_the_sdks_typed_error(gemini: tuple[GeminiServer, genai.Client], stream: bool) -> None:
    server, sdk = gemini
    server.script(Answer(error_body(429, "RESOURCE_EXHAUSTED", "Quota exceeded"), status=429))
    client = GeminiChatClient(sdk, "gemini-2.5-flash")
    with pytest.raises(genai.errors.ClientError, match="Quota exceeded") as info:
        if stream:
            await _read(client.get_response("Hi", stream=True))
        else:
            await client.get_response("Hi")
    assert (failure_of(info.value).status, failure_of(info.value).transient) == (429, True)


async def test_an_error_event_in_a_stream_is_the_sdks_typed_error(gemini: tuple[GeminiServer, genai.Client]) -> None:
    server, sdk = gemini
    server.script(Answer(chunks=[error_body(500, "INTERNAL", "The model broke")]))
    with pytest.raises(genai.errors.ServerError, match="The model broke"):
        await _read(GeminiChatClient(sdk, "gemini-2.5-flash").get_response("Hi", stream=True))


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("where", ["class", "instance"])
async def test_a_wrapped_sdk_method_sees_every_call(
    gemini: tuple[GeminiServer, genai.Client], monkeypatch: pytest.MonkeyPatch, stream: bool, where: str
) -> None:
    """An instrumentation that wraps `AsyncModels.generate_content(_stream)` (as OpenTelemetry's
    does, with wrapt) or a test double put on the client's `models` is called for each call."""
    server, sdk = gemini
    server.script(Answer(chunks=_chunks("Bonjour")) if stream else Answer(text_answer("Bonjour")))
    name = "generate_content_stream" if stream else "generate_content"
    seen: list[str] = []

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        seen.append(kwargs["model"])
        return await wrapped(*args, **kwargs)

    if where == "class":
        monkeypatch.setattr(AsyncModels, name, wrapt.FunctionWrapper(getattr(AsyncModels, name), wrapper))
    else:
        original = getattr(sdk.aio.models, name)
        monkeypatch.setattr(sdk.aio.models, name, lambda **kwargs: wrapper(original, None, (), kwargs))
    client = GeminiChatClient(sdk, "gemini-2.5-flash")
    if stream:
        text = "".join(update.text for update in await _read(client.get_response("Hi", stream=True)))
    else:
        text = (await client.get_response("Hi")).text
    assert (text, seen) == ("Bonjour", ["gemini-2.5-flash"])


def test_the_sdks_lower_request_path_is_where_the_adapter_reads_it() -> None:
    """The google-genai private names the lower path reads; when a release moves them, this fails
    (and the adapter then sends every call through the SDK's own methods)."""
    for sdk in (genai.Client(api_key="k"), genai.Client(vertexai=True, api_key="k")):
        api_client = genai_api_client(sdk)
        assert api_client is not None and bool(api_client.vertexai) == sdk.vertexai
        for name in ("async_request", "async_request_streamed"):
            parameters = list(inspect.signature(getattr(api_client, name)).parameters)
            assert parameters == ["http_method", "path", "request_dict", "http_options"], name
    assert genai_api_client(object()) is None
