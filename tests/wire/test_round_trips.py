"""Whole requests and answers read and written back by the codecs in `wire/`: `to_wire(from_wire(x))
== x` on the bodies recorded in `cassettes/` (the local model's requests and answers) and on
documented bodies; `from_wire(to_wire(v))` gives `v` back for generated values (hypothesis). The
reason tables are checked read and written both ways.

An answer's fields the library does not carry (`created`, `system_fingerprint`, llama.cpp's
`timings`, `logprobs`) are listed here, once, and left out of the comparison.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from so_middleware import Capabilities, ChatMessage, ChatOptions, FinishReason, FunctionCallContent, FunctionTool
from so_middleware.wire import chat, messages, responses
from so_middleware.wire.common import JSONView

CASSETTES = Path(__file__).parents[2] / "cassettes"
# What an answer carries that the library does not: when it was made, the server's build, llama.cpp's timings.
NOT_CARRIED = {"created", "system_fingerprint", "timings", "service_tier", "stop_sequence"}


def recorded(path_end: str) -> list[tuple[dict[str, Any], str]]:
    """(request body, answer text) of every recorded call to a URL ending in `path_end`."""
    calls = []
    for cassette in sorted(CASSETTES.rglob("*.yaml")):
        for interaction in yaml.safe_load(cassette.read_text())["interactions"]:
            if interaction["request"]["uri"].endswith(path_end):
                answer = interaction["response"]["body"]["string"]
                calls.append((json.loads(interaction["request"]["body"]), answer))
    assert calls, f"no recorded call to {path_end}"
    return calls


def plain_answers(path_end: str) -> list[str]:
    """The recorded answers that are one JSON body (a streamed one is read event by event, by the
    protocol's stream reader)."""
    return [answer for _, answer in recorded(path_end) if answer.startswith("{")]


def sent(request: dict[str, Any]) -> dict[str, Any]:
    """The body the SDK sends for `create`'s keyword arguments: `extra_body` merged in."""
    return {**{k: v for k, v in request.items() if k != "extra_body"}, **request.get("extra_body", {})}


def carried(answer: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in answer.items() if k not in NOT_CARRIED}
    if "choices" in body:
        body["choices"] = [{k: v for k, v in c.items() if k != "logprobs"} for c in body["choices"]]
    return body


# ---------------------------------------------------------------- Chat Completions


@pytest.mark.parametrize("body", [body for body, _ in recorded("/chat/completions")], ids=repr)
def test_a_recorded_chat_request_is_written_back_as_it_was_read(body: dict[str, Any]) -> None:
    messages_, options = chat.request_from_wire(body)
    field = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    assert sent(chat.request_to_wire(messages_, options, model=None, max_tokens_field=field)) == body


def test_a_documented_chat_request_with_tools_is_written_back_as_it_was_read() -> None:
    """The request of the tool-calling guide: a system message, a call and its result, a forced tool."""
    body = {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        ],
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "function", "function": {"name": "weather"}},
        "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"}}},
        "temperature": 0.5, "seed": 7, "stop": ["\n\n"], "max_completion_tokens": 40, "top_k": 3,
    }  # fmt: skip
    messages_, options = chat.request_from_wire(body)
    request = chat.request_to_wire(messages_, options, model=None, max_tokens_field="max_completion_tokens")
    assert sent(request) == body


@pytest.mark.parametrize("answer", plain_answers("/chat/completions"), ids=repr)
def test_a_recorded_chat_answer_is_written_back_as_it_was_read(answer: str) -> None:
    body = json.loads(answer)
    assert chat.response_to_wire(chat.response_from_wire(JSONView(body))) == carried(body)


def test_a_documented_chat_answer_with_a_tool_call_is_written_back_as_it_was_read() -> None:
    body = {
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "reasoning_content": "Paris, then.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
        }}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13,
                  "prompt_tokens_details": {"cached_tokens": 2}, "completion_tokens_details": {"reasoning_tokens": 1}},
    }  # fmt: skip
    assert chat.response_to_wire(chat.response_from_wire(JSONView(body))) == body


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30)


@given(
    turns=st.lists(st.tuples(st.sampled_from(["user", "assistant", "system"]), TEXT), min_size=1, max_size=5),
    temperature=st.none() | st.floats(0, 2),
    seed=st.none() | st.integers(0, 2**31),
    max_tokens=st.none() | st.integers(1, 4096),
    stop=st.none() | st.lists(TEXT, min_size=1, max_size=3),
    tools=st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3),
)
def test_chat_requests_read_back_what_was_written(
    turns: list[tuple[Any, str]],
    temperature: float | None,
    seed: int | None,
    max_tokens: int | None,
    stop: list[str] | None,
    tools: list[str],
) -> None:
    options = ChatOptions(
        model="m", temperature=temperature, seed=seed, max_tokens=max_tokens, stop=stop,
        tools=[FunctionTool(name, {"type": "object", "properties": {}}) for name in tools] or None,
    )  # fmt: skip
    written = chat.request_to_wire([ChatMessage(role, text) for role, text in turns], options, model=None,
                                   max_tokens_field="max_tokens")  # fmt: skip
    read_messages, read_options = chat.request_from_wire(sent(written))
    assert [(m.role, m.text) for m in read_messages] == turns
    assert read_options == options


# ---------------------------------------------------------------- Responses


@pytest.mark.parametrize("body", [body for body, _ in recorded("/responses")], ids=repr)
def test_a_recorded_responses_request_is_written_back_as_it_was_read(body: dict[str, Any]) -> None:
    body = {k: v for k, v in body.items() if k != "stream"}  # `stream` is the adapter's, not the codec's
    messages_, options = responses.request_from_wire(body)
    written = sent(responses.request_to_wire(messages_, options, model=None, capabilities=Capabilities()))
    assert written == body


def test_a_documented_responses_request_is_written_back_as_it_was_read() -> None:
    """A structured-output request with a tool, a forced choice, a call and its output, and a field
    of the backend's own (`top_k`, forwarded)."""
    body = {
        "model": "gpt-4.1", "instructions": "Be brief.", "max_output_tokens": 40, "temperature": 0.2, "top_k": 3,
        "input": [
            {"type": "message", "role": "user", "content": "Weather in Paris?"},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city":"Paris"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "18C"},
        ],
        "tools": [{"type": "function", "name": "weather", "parameters": {"type": "object"}, "strict": True,
                   "description": "The weather."}],
        "tool_choice": {"type": "function", "name": "weather"},
        "text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}, "strict": True}},
    }  # fmt: skip
    messages_, options = responses.request_from_wire(body)
    assert sent(responses.request_to_wire(messages_, options, model=None, capabilities=Capabilities())) == body


@given(turns=st.lists(st.tuples(st.sampled_from(["user", "assistant"]), TEXT), min_size=1, max_size=5))
def test_responses_requests_read_back_what_was_written(turns: list[tuple[Any, str]]) -> None:
    options = ChatOptions(model="m", instructions="Be brief.", max_tokens=9, tool_choice="auto",
                          tools=[FunctionTool("f", {"type": "object"}, "does f", True)])  # fmt: skip
    written = responses.request_to_wire([ChatMessage(r, t) for r, t in turns], options, model=None,
                                        capabilities=Capabilities())  # fmt: skip
    read_messages, read_options = responses.request_from_wire(sent(written))
    assert [(m.role, m.text) for m in read_messages] == turns
    assert read_options == options


# ---------------------------------------------------------------- Anthropic Messages


@pytest.mark.parametrize("body", [body for body, _ in recorded("/messages")], ids=repr)
def test_a_recorded_messages_request_is_written_back_as_it_was_read(body: dict[str, Any]) -> None:
    body = {k: v for k, v in body.items() if k != "stream"}  # `stream` is the adapter's, not the codec's
    messages_, options = messages.request_from_wire(body)
    assert sent(messages.request_to_wire(messages_, options, model=None, max_tokens=1024)) == body


def test_a_documented_messages_request_with_tools_is_written_back_as_it_was_read() -> None:
    """The tool-use guide's request: a system prompt, a call and its result in the turns, a forced
    tool, a structured output format beside another `output_config` key, a field of the server's own."""
    body = {
        "model": "claude-sonnet-4-5", "max_tokens": 100, "system": "Be brief.", "temperature": 0.5,
        "stop_sequences": ["END"], "top_k": 5,
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C",
                                          "is_error": False}]},
        ],
        "tools": [{"name": "weather", "input_schema": {"type": "object"}, "description": "The weather."}],
        "tool_choice": {"type": "tool", "name": "weather"},
        "output_config": {"effort": "low", "format": {"type": "json_schema", "schema": {"type": "object"}}},
    }  # fmt: skip
    messages_, options = messages.request_from_wire(body)
    assert sent(messages.request_to_wire(messages_, options, model=None, max_tokens=1024)) == body


@pytest.mark.parametrize("answer", plain_answers("/messages"), ids=repr)
def test_a_recorded_messages_answer_is_written_back_as_it_was_read(answer: str) -> None:
    body = json.loads(answer)
    assert messages.response_to_wire(messages.response_from_wire(JSONView(body))) == carried(body)


def test_a_documented_messages_answer_with_thinking_and_a_tool_call_is_written_back_as_it_was_read() -> None:
    body = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "Paris.", "signature": "sig"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3, "output_tokens": 7},
    }  # fmt: skip
    assert messages.response_to_wire(messages.response_from_wire(JSONView(body))) == body


# ---------------------------------------------------------------- the reason tables, both ways


@pytest.mark.parametrize("reason", list(FinishReason), ids=str)
def test_each_reason_is_read_back_as_written(reason: FinishReason) -> None:
    """A reason a protocol can write reads back as itself; a refusal is written `stop` on Chat
    Completions (the refusal text says it) and `refusal` on Messages."""
    written = chat.finish_reason_to_wire(reason)
    if written is not None:
        refused = reason is FinishReason.REFUSAL
        assert chat.finish_reason_from_wire(written, refused=refused) is reason
    stop = messages.finish_reason_to_wire(reason)
    if stop is not None:
        assert messages.finish_reason_from_wire(stop) is reason
    incomplete = responses.incomplete_reason_to_wire(reason)
    if incomplete is not None:
        status = JSONView({"status": "incomplete", "incomplete_details": {"reason": incomplete}})
        assert responses.finish_reason_from_wire(status) is reason


def test_every_tool_call_answer_reads_as_tool_calls() -> None:
    body = chat.response_to_wire(chat.response_from_wire(JSONView({
        "id": "c", "model": "m", "choices": [{"index": 0, "finish_reason": "function_call", "message": {
            "role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]}}],
    })))  # fmt: skip
    assert body["choices"][0]["finish_reason"] == "tool_calls"  # the deprecated spelling is read, never written
    assert isinstance(chat.response_from_wire(JSONView(body)).messages[-1].contents[0], FunctionCallContent)
