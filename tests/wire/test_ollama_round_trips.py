"""Ollama's codec both ways: `to_wire(from_wire(x)) == x` on documented `/api/chat` bodies, and
`from_wire(to_wire(v))` gives `v` back for generated values (hypothesis).

The bodies are the ones Ollama's API reference documents (docs.ollama.com/api/chat: the chat
request with history, structured outputs, JSON mode, images, tools, thinking and model options,
and the answers it shows). `request_to_wire` gives the body the adapter sends as it is. An
answer's timings and its `created_at` are not carried by the library: listed once, in
`NOT_CARRIED`, and left out of the comparison.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from so_middleware import (
    ChatMessage,
    ChatOptions,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ResponseFormat,
)
from so_middleware.wire import ollama
from so_middleware.wire.common import WireError

NOT_CARRIED = {"created_at", "total_duration", "load_duration", "prompt_eval_duration", "eval_duration"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather for a location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The location to get the weather for, e.g. San Francisco, CA"},
                "format": {"type": "string", "description": "The format to return the weather in", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location", "format"],
        },
    },
}  # fmt: skip
PNG = "iVBORw0KGgoAAAANSUhEUg=="  # the first 16 bytes of a PNG file

DOCUMENTED_REQUESTS = {
    "chat with history": {
        "model": "llama3.2", "stream": False,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "why is the sky blue?"},
            {"role": "assistant", "content": "due to rayleigh scattering."},
            {"role": "user", "content": "how is that different than mie scattering?"},
        ],
    },
    "structured outputs": {
        "model": "llama3.1", "stream": False,
        "messages": [{"role": "user", "content": "Ollama is 22 years old and busy saving the world. Return a JSON object with the age and availability."}],
        "format": {"type": "object", "properties": {"age": {"type": "integer"}, "available": {"type": "boolean"}},
                   "required": ["age", "available"]},
        "options": {"temperature": 0},
    },
    "JSON mode": {
        "model": "llama3.2", "messages": [{"role": "user", "content": "List three colours as JSON."}], "format": "json",
    },
    "images": {
        "model": "llava", "messages": [{"role": "user", "content": "what is in this image?", "images": [PNG]}],
    },
    "tools": {
        "model": "qwen3", "stream": False,
        "messages": [
            {"role": "user", "content": "What is the weather today in Paris?"},
            {"role": "assistant", "tool_calls": [
                {"function": {"name": "get_current_weather", "arguments": {"location": "Paris, FR", "format": "celsius"}}}]},
            {"role": "tool", "tool_name": "get_current_weather", "content": "22 degrees celsius"},
        ],
        "tools": [WEATHER],
    },
    "thinking": {
        "model": "deepseek-r1", "think": True,
        "messages": [
            {"role": "user", "content": "How many r's are in strawberry?"},
            {"role": "assistant", "thinking": "Count them: s-t-r-a-w-b-e-r-r-y.", "content": "Three."},
            {"role": "user", "content": "And in raspberry?"},
        ],
    },
    "model options": {
        "model": "llama3.2", "keep_alive": "5m",
        "messages": [{"role": "user", "content": "Why is the sky blue?"}],
        "options": {"seed": 101, "temperature": 0.2, "top_p": 0.9, "num_predict": 100, "top_k": 20, "stop": ["\n", "user:"],
                    "num_ctx": 2048, "repeat_penalty": 1.2},
    },
}  # fmt: skip


@pytest.mark.parametrize("body", DOCUMENTED_REQUESTS.values(), ids=list(DOCUMENTED_REQUESTS))
def test_a_documented_request_is_written_back_as_it_was_read(body: dict[str, Any]) -> None:
    messages, options = ollama.request_from_wire(body)
    assert ollama.request_to_wire(messages, options, model=None) == body


def test_what_is_read_is_what_the_request_says() -> None:
    messages, options = ollama.request_from_wire(DOCUMENTED_REQUESTS["tools"])
    call, result = messages[1].contents[0], messages[2].contents[0]
    assert isinstance(call, FunctionCallContent) and isinstance(result, FunctionResultContent)
    assert (call.name, call.parsed_arguments()) == (
        "get_current_weather",
        {"location": "Paris, FR", "format": "celsius"},
    )
    assert (result.call_id, result.result) == (call.call_id, "22 degrees celsius")
    assert options.tools == [FunctionTool("get_current_weather", WEATHER["function"]["parameters"],
                                          WEATHER["function"]["description"])]  # fmt: skip
    _, options = ollama.request_from_wire(DOCUMENTED_REQUESTS["model options"])
    assert (options.seed, options.temperature, options.top_p, options.max_tokens, options.stop) == (
        101, 0.2, 0.9, 100, ["\n", "user:"])  # fmt: skip
    assert options.extra_body == {"keep_alive": "5m", "options": {"top_k": 20, "num_ctx": 2048, "repeat_penalty": 1.2}}
    messages, _ = ollama.request_from_wire(DOCUMENTED_REQUESTS["images"])
    assert messages[0].contents[1] == DataContent(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png")
    _, options = ollama.request_from_wire(DOCUMENTED_REQUESTS["JSON mode"])
    assert options.response_format == ResponseFormat.json_object()


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "messages": []}, "messages"),
        ({"model": "m", "messages": [{"role": "developer", "content": "x"}]}, "messages[0].role"),
        ({"model": "m", "messages": [{"role": "tool", "tool_name": "f", "content": "x"}]}, "messages[0].tool_name"),
        ({"model": "m", "messages": [{"role": "user", "content": "x", "images": [7]}]}, "messages[0].images[0]"),
        ({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]},
         "messages[0].tool_calls[0].function.name"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "web"}]},
         "tools[0].function.name"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "options": {"num_predict": "9"}},
         "num_predict"),
    ],
)  # fmt: skip
def test_a_request_the_codec_cannot_read_is_a_wire_error_naming_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as info:
        ollama.request_from_wire(body)
    assert info.value.param == param


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30)


@settings(max_examples=60)
@given(
    turns=st.lists(st.tuples(st.sampled_from(["user", "assistant"]), TEXT), min_size=1, max_size=5),
    temperature=st.none() | st.floats(0, 2),
    seed=st.none() | st.integers(0, 2**31),
    max_tokens=st.none() | st.integers(1, 4096),
    stop=st.none() | st.lists(TEXT, min_size=1, max_size=3),
    tools=st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3),
    json_mode=st.booleans(),
)
def test_requests_read_back_what_was_written(
    turns: list[tuple[Any, str]],
    temperature: float | None,
    seed: int | None,
    max_tokens: int | None,
    stop: list[str] | None,
    tools: list[str],
    json_mode: bool,
) -> None:
    options = ChatOptions(
        model="m", temperature=temperature, seed=seed, max_tokens=max_tokens, stop=stop,
        tools=[FunctionTool(name, {"type": "object", "properties": {}}) for name in tools] or None,
        response_format=ResponseFormat.json_object() if json_mode else None,
    )  # fmt: skip
    written = ollama.request_to_wire([ChatMessage(role, text) for role, text in turns], options, model=None)
    read_messages, read_options = ollama.request_from_wire(written)
    assert [(m.role, m.text) for m in read_messages] == turns
    assert read_options == options


# ---------------------------------------------------------------- answers

DOCUMENTED_ANSWERS = {
    "text": {
        "model": "llama3.2", "created_at": "2023-12-12T14:13:43.416799Z",
        "message": {"role": "assistant", "content": "Hello! How are you today?"},
        "done": True, "done_reason": "stop", "total_duration": 5191566416, "load_duration": 2154458,
        "prompt_eval_count": 26, "prompt_eval_duration": 383809000, "eval_count": 298, "eval_duration": 4799921000,
    },
    "tool call": {
        "model": "qwen3", "created_at": "2025-05-29T09:37:31.416417Z",
        "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_current_weather", "arguments": {"format": "celsius", "location": "Paris, FR"}}}]},
        "done": True, "done_reason": "stop", "prompt_eval_count": 217, "eval_count": 32,
    },
    "thinking": {
        "model": "deepseek-r1", "created_at": "2025-05-29T09:35:56.836222Z",
        "message": {"role": "assistant", "content": "There are three r's.", "thinking": "Count: s-t-r-a-w-b-e-r-r-y."},
        "done": True, "done_reason": "stop", "prompt_eval_count": 9, "eval_count": 80,
    },
    "cut at num_predict": {
        "model": "llama3.2", "created_at": "2025-05-29T09:35:56.836222Z",
        "message": {"role": "assistant", "content": "The sky is blue because"},
        "done": True, "done_reason": "length", "prompt_eval_count": 30, "eval_count": 5,
    },
}  # fmt: skip


@pytest.mark.parametrize("body", DOCUMENTED_ANSWERS.values(), ids=list(DOCUMENTED_ANSWERS))
def test_a_documented_answer_is_written_back_as_it_was_read(body: dict[str, Any]) -> None:
    carried = {key: value for key, value in body.items() if key not in NOT_CARRIED}
    assert ollama.response_to_wire(ollama.response_from_wire(body)) == carried


@pytest.mark.parametrize("body", DOCUMENTED_ANSWERS.values(), ids=list(DOCUMENTED_ANSWERS))
def test_the_sdks_answer_object_reads_as_its_json(body: dict[str, Any]) -> None:
    """What the adapter reads is the SDK's `ChatResponse`: written back as the JSON it came from."""
    from ollama import ChatResponse

    carried = {key: value for key, value in body.items() if key not in NOT_CARRIED}
    assert ollama.response_to_wire(ollama.response_from_wire(ChatResponse.model_validate(body))) == carried


def test_what_is_read_from_an_answer_is_what_it_says() -> None:
    answer = ollama.response_from_wire(DOCUMENTED_ANSWERS["tool call"])
    assert answer.finish_reason == "tool_calls" and answer.usage is not None and answer.usage.total_tokens == 249


@pytest.mark.parametrize("reason", list(FinishReason), ids=str)
def test_each_reason_is_read_back_as_written(reason: FinishReason) -> None:
    """A cut answer reads back as cut; any other end is `stop` (Ollama has no other name; tool
    calls are said by the calls)."""
    written = ollama.done_reason_to_wire(reason)
    assert written is not None and ollama.DONE_REASONS[written] is (
        FinishReason.LENGTH if reason is FinishReason.LENGTH else FinishReason.STOP
    )
