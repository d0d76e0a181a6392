"""The Ollama adapter through the real, unmodified `ollama` SDK, against a loopback server that speaks
the documented `/api/chat` wire format (`ollama_server.py` names its source)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import ollama
import pytest
from ollama_server import Answer, OllamaServer, chat_answer, chunk

from so_middleware import (
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderStatusError,
    ReasoningContent,
    ResponseFormat,
    StreamInterruptedError,
    TextContent,
    UserError,
    as_chat_client,
    failure_of,
)
from so_middleware.gateway._server import AppServer, free_port
from so_middleware.ollama import OLLAMA_NATIVE, OllamaChatClient
from so_middleware.providers._openai_privates import ollama_post
from so_middleware.providers.ollama import _client as ollama_client_module

pytestmark = pytest.mark.anyio


@pytest.fixture
def ollama_sync() -> Iterator[tuple[OllamaServer, ollama.AsyncClient]]:
    """For the sync entry points, which run on so_middleware's own loop (it outlives the test)."""
    server = OllamaServer()
    with AppServer(server.app()) as running:
        yield server, ollama.AsyncClient(host=running.root_url)


@pytest.fixture
async def local_ollama() -> AsyncIterator[tuple[OllamaServer, ollama.AsyncClient]]:
    """The async client's connections belong to the test's loop: closed before the loop ends."""
    server = OllamaServer()
    with AppServer(server.app()) as running:
        sdk = ollama.AsyncClient(host=running.root_url)
        yield server, sdk
        await sdk._client.aclose()


def _client(sdk: ollama.AsyncClient, **options: Any) -> OllamaChatClient:
    return OllamaChatClient(sdk, "llama3.2", **options)


async def test_a_plain_call_sends_the_options_and_reads_text_usage_and_finish(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    server, sdk = local_ollama
    server.script(Answer(chat_answer("Hello")))
    response = await _client(sdk, keep_alive="10m").get_response(
        "Hi", options={"instructions": "Be brief.", "temperature": 0.1, "max_tokens": 40, "stop": ["\n\n"], "seed": 4}
    )
    assert (response.text, response.finish_reason, response.model_id) == ("Hello", "stop", "llama3.2")
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (12, 8)
    sent = server.requests[0]
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert sent["options"] == {"temperature": 0.1, "num_predict": 40, "stop": ["\n\n"], "seed": 4}
    assert (sent["keep_alive"], sent["stream"]) == ("10m", False)


async def test_a_json_schema_goes_as_format_and_json_mode_as_json(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    server, sdk = local_ollama
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    server.script(Answer(chat_answer('{"a": 1}')), Answer(chat_answer("{}")))
    await _client(sdk).get_response("x", options={"response_format": ResponseFormat.json_schema(schema)})
    await _client(sdk).get_response("x", options={"response_format": ResponseFormat.json_object()})
    assert server.requests[0]["format"] == schema
    assert server.requests[1]["format"] == "json"


async def test_a_stream_reads_deltas_and_the_last_chunks_counts(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    server, sdk = local_ollama
    last = {**chunk(""), "done": True, "done_reason": "length", "prompt_eval_count": 3, "eval_count": 2}
    server.script(Answer(chunks=[chunk("Hel"), chunk("lo"), last]))
    stream = _client(sdk).get_response("Hi", stream=True)
    texts = [update.text async for update in stream]
    final = await stream.get_final_response()
    assert "".join(texts) == "Hello" and final.text == "Hello"
    assert final.finish_reason == "length"
    assert final.usage is not None and final.usage.total_tokens == 5


async def test_a_stream_cut_before_its_last_chunk_is_interrupted(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    server, sdk = local_ollama
    server.script(Answer(chunks=[chunk("Hel")]))
    with pytest.raises(StreamInterruptedError) as info:
        async for _ in _client(sdk).get_response("Hi", stream=True):
            pass
    assert info.value.partial_text == "Hel"


@pytest.mark.parametrize("where", ["per call", "adapter"])
async def test_a_stream_that_stalls_after_its_first_chunk_ends_with_the_idle_timeout(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient], where: str
) -> None:
    """The stand-in sends its headers and a first chunk, then nothing (for longer than the test
    may take): the chunk reader's idle timer ends the call, typed, with the text so far."""
    server, sdk = local_ollama
    server.script(Answer(chunks=[chunk("Hel")], stall=600))
    # 2 s, not less: the first chunk must come within it even on a loaded machine
    client = _client(sdk, idle_timeout=2.0) if where == "adapter" else _client(sdk)
    options = {"idle_timeout": 2.0} if where == "per call" else {}
    with pytest.raises(StreamInterruptedError, match=r"no chunk from Ollama within 2\.0 s") as info:
        async for _ in client.get_response("Hi", options=options, stream=True):
            pass
    assert info.value.partial_text == "Hel"


async def test_tool_calls_both_ways_and_thinking(local_ollama: tuple[OllamaServer, ollama.AsyncClient]) -> None:
    server, sdk = local_ollama
    called = chat_answer("", thinking="Need the weather.",
                         tool_calls=[{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}])  # fmt: skip
    server.script(Answer(called), Answer(chat_answer("Sunny.")))
    tool = FunctionTool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}}, "Weather")
    client = _client(sdk)
    first = await client.get_response("Weather?", options={"tools": [tool]})
    assert first.finish_reason == "tool_calls"
    contents = first.messages[-1].contents
    assert isinstance(contents[0], ReasoningContent) and contents[0].text == "Need the weather."
    call = contents[1]
    assert isinstance(call, FunctionCallContent) and call.parsed_arguments() == {"city": "Oslo"}
    history = [
        ChatMessage("user", "Weather?"),
        first.messages[-1],
        ChatMessage("tool", [FunctionResultContent(call.call_id, "sunny")]),
    ]
    assert (await client.get_response(history, options={"tools": [tool]})).text == "Sunny."
    assert server.requests[0]["tools"] == [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    ]  # fmt: skip
    back = server.requests[1]["messages"]
    assert back[1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert back[1]["thinking"] == "Need the weather."
    assert back[2] == {"role": "tool", "tool_name": "get_weather", "content": "sunny"}


async def test_an_image_goes_as_base64_and_a_tool_choice_of_none_sends_no_tools(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    server, sdk = local_ollama
    server.script(Answer(chat_answer("A cat.")))
    image = ChatMessage("user", [TextContent("What is this?"), DataContent(b"\x89PNG", "image/png")])
    tool = FunctionTool("f", {"type": "object", "properties": {}})
    await _client(sdk).get_response([image], options={"tools": [tool], "tool_choice": "none"})
    sent = server.requests[0]
    assert sent["messages"][0]["images"] == ["iVBORw=="]
    assert "tools" not in sent or not sent["tools"]


async def test_an_error_answer_is_a_status_error_of_both_types(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    server, sdk = local_ollama
    server.script(Answer({"error": "model 'llama3.2' not found"}, status=404))
    with pytest.raises(ProviderStatusError) as info:
        await _client(sdk).get_response("x")
    assert isinstance(info.value, ollama.ResponseError)
    assert (info.value.status_code, failure_of(info.value).transient) == (404, False)
    assert "not found" in str(info.value)


async def test_a_server_that_is_not_there_is_a_connection_failure() -> None:
    sdk = ollama.AsyncClient(host=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ConnectionError) as info:
        await _client(sdk).get_response("x")
    assert failure_of(info.value).kind == "connection" and failure_of(info.value).transient
    await sdk._client.aclose()


def test_as_chat_client_finds_the_adapter_and_the_sync_entry_point_works(
    ollama_sync: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    server, sdk = ollama_sync
    server.script(Answer(chat_answer("ok")))
    client = as_chat_client(sdk, model="llama3.2")
    assert isinstance(client, OllamaChatClient) and client.capabilities == OLLAMA_NATIVE
    assert client.get_response_sync("x").text == "ok"


def test_bad_input_is_a_user_error_before_any_request(ollama_sync: tuple[OllamaServer, ollama.AsyncClient]) -> None:
    server, sdk = ollama_sync
    with pytest.raises(UserError, match=r"use ollama\.AsyncClient"):
        OllamaChatClient(ollama.Client(), "llama3.2")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="no model given"):
        OllamaChatClient(sdk).get_response_sync("x")
    with pytest.raises(UserError, match="'nope'"):
        _client(sdk).get_response_sync([ChatMessage("tool", [FunctionResultContent("nope", "x")])])
    with pytest.raises(UserError, match="not application/pdf"):
        _client(sdk).get_response_sync([ChatMessage("user", [DataContent(b"%PDF", "application/pdf")])])
    assert server.requests == []


async def test_model_options_in_extra_body_go_into_options(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    """The profile's loop-breaking field (`repeat_penalty`) arrives where Ollama reads it."""
    server, sdk = local_ollama
    server.script(Answer(chat_answer("ok")))
    extra = {"repeat_penalty": 1.3, "options": {"num_ctx": 4096}, "think": False}
    await _client(sdk).get_response("x", options={"temperature": 0.0, "extra_body": extra})
    sent = server.requests[0]
    assert sent["options"] == {"temperature": 0.0, "repeat_penalty": 1.3, "num_ctx": 4096}
    assert sent["think"] is False and "repeat_penalty" not in sent
    assert dict(OLLAMA_NATIVE.loop_breaking) == {"repeat_penalty": 1.3}
    assert hash(OLLAMA_NATIVE)


async def test_a_tool_schema_and_a_field_of_the_server_arrive_as_they_were_given(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    """The SDK's `chat` rebuilds tools through its own types, which keep only some keywords (an
    optional field's `anyOf` came out as `{}`), and takes no field it does not name: the adapter
    sends its body as it is, through the SDK client's request method."""
    server, sdk = local_ollama
    server.script(Answer(chat_answer("ok")), Answer(chunks=[{**chunk("ok"), "done": True, "done_reason": "stop"}]))
    parameters = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "required": ["n", "note"],
        "additionalProperties": False,
    }  # fmt: skip
    options = {"tools": [FunctionTool("count", parameters)], "extra_body": {"truncate": False}}
    assert (await _client(sdk).get_response("x", options=options)).text == "ok"
    assert [update.text async for update in _client(sdk).get_response("x", options=options, stream=True)] == ["ok"]
    for sent in server.requests:
        assert sent["tools"][0]["function"]["parameters"] == parameters
        assert sent["truncate"] is False
    assert [sent["stream"] for sent in server.requests] == [False, True]


def test_the_sdks_request_method_is_where_the_adapter_reads_it() -> None:
    """The one private name of the ollama SDK the adapter uses; when a release moves it, this fails
    (and the adapter falls back to the SDK's `chat`)."""
    assert ollama_post(ollama.AsyncClient()) is not None


async def test_without_the_sdks_request_method_the_sdks_chat_makes_the_call(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SDK release that moved its request method: the adapter finds none and calls `chat`."""
    server, sdk = local_ollama
    server.script(Answer(chat_answer("ok")))
    monkeypatch.setattr(ollama_client_module, "ollama_post", lambda sdk_client: None)
    assert (await _client(sdk).get_response("x")).text == "ok"
    assert server.requests[0]["messages"] == [{"role": "user", "content": "x"}]
