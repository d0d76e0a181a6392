"""Mistral's chat codec (`so_middleware.wire.mistral`) both ways: documented request and answer
bodies (docs.mistral.ai API reference, `chat_completion_v1_chat_completions_post`) read and written
back unchanged, generated requests read back as written (hypothesis), and the finish reasons table."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from so_middleware import (
    ChatMessage,
    ChatOptions,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderResponseError,
)
from so_middleware.wire import mistral

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30)


def test_a_documented_request_with_tools_is_written_back_as_it_was_read() -> None:
    """A call and its result (the tool message names its function), a required tool, a seed, and a
    field only Mistral has (`safe_prompt`), carried beside the others."""
    body = {
        "model": "mistral-large-latest",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "D681PevKs", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}},
            ]},
            {"role": "tool", "tool_call_id": "D681PevKs", "content": "18C", "name": "weather"},
        ],
        "temperature": 0.5, "top_p": 0.9, "max_tokens": 40, "random_seed": 7, "stop": ["\n\n"],
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
        "tool_choice": "any",
        "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"},
                                                                   "strict": True}},
        "safe_prompt": True,
    }  # fmt: skip
    messages, options = mistral.request_from_wire(body)
    assert options.seed == 7 and options.tool_choice == "required"
    assert mistral.request_to_wire(messages, options, model=None) == body


def test_a_documented_answer_with_thinking_and_a_tool_call_is_written_back_as_it_was_read() -> None:
    body = {
        "id": "cmpl-e5cc70bb28c444948073e77776eb30ef", "object": "chat.completion", "model": "magistral-medium-latest",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Paris, then."}]},
                        {"type": "text", "text": "Checking."}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
        }}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }  # fmt: skip
    response = mistral.response_from_wire(body)
    assert (response.text, response.finish_reason) == ("Checking.", FinishReason.TOOL_CALLS)
    assert mistral.response_to_wire(response) == body


def test_arguments_given_as_an_object_are_read_as_json_text() -> None:
    call = {"id": "c1", "function": {"name": "weather", "arguments": {"city": "Oslo"}}}
    body = {"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
                                                  "message": {"role": "assistant", "content": None,
                                                              "tool_calls": [call]}}]}  # fmt: skip
    (read,) = mistral.response_from_wire(body).messages[-1].contents
    assert read.parsed_arguments() == {"city": "Oslo"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("wire", "ours"), list(mistral.FINISH_REASONS.items()))
def test_each_finish_reason_is_read_and_written(wire: str, ours: FinishReason) -> None:
    body = {"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": wire,
                                                  "message": {"role": "assistant", "content": "a"}}]}  # fmt: skip
    response = mistral.response_from_wire(body)
    assert response.finish_reason == ours
    written = mistral.response_to_wire(response)["choices"][0]["finish_reason"]
    assert mistral.FINISH_REASONS[written] == ours  # model_length is written as length


def test_a_finish_reason_of_error_keeps_the_text_and_usage() -> None:
    body = {"id": "x", "model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            "choices": [{"index": 0, "finish_reason": "error", "message": {"role": "assistant", "content": "par"}}]}  # fmt: skip
    with pytest.raises(ProviderResponseError) as info:
        mistral.response_from_wire(body)
    assert info.value.raw_text == "par" and info.value.usage is not None and info.value.usage.total_tokens == 3


@given(
    turns=st.lists(st.tuples(st.sampled_from(["user", "assistant", "system"]), TEXT), min_size=1, max_size=5),
    temperature=st.none() | st.floats(0, 1),
    seed=st.none() | st.integers(0, 2**31),
    max_tokens=st.none() | st.integers(1, 4096),
    tools=st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3),
    choice=st.none() | st.sampled_from(["auto", "none", "required"]),
)
def test_requests_read_back_what_was_written(
    turns: list[tuple[Any, str]],
    temperature: float | None,
    seed: int | None,
    max_tokens: int | None,
    tools: list[str],
    choice: Any,
) -> None:
    options = ChatOptions(
        model="m", temperature=temperature, seed=seed, max_tokens=max_tokens, tool_choice=choice,
        tools=[FunctionTool(name, {"type": "object", "properties": {}}) for name in tools] or None,
    )  # fmt: skip
    written = mistral.request_to_wire([ChatMessage(role, text) for role, text in turns], options, model=None)
    read_messages, read_options = mistral.request_from_wire(written)
    assert [(m.role, m.text) for m in read_messages] == turns
    assert read_options == options


def test_a_call_id_mistral_would_refuse_gets_one_no_other_id_of_the_request_has() -> None:
    """Two ids whose first choice is the same (here: an id of the request is exactly the one a
    foreign id would get) still go as two ids; the same request gives the same ids again."""
    foreign = "call_Xq3fD9Lk2mNpQrSt"
    clash = mistral._short_id(foreign)
    calls = [FunctionCallContent(clash, "f", "{}"), FunctionCallContent(foreign, "f", "{}")]
    messages = [ChatMessage("assistant", calls), ChatMessage("tool", [FunctionResultContent(foreign, "ok")])]
    ids = mistral.call_ids_to_wire(messages)
    assert list(ids) == [foreign] and ids[foreign] != clash and len(ids[foreign]) == 9 and ids[foreign].isalnum()
    assert mistral.call_ids_to_wire(messages) == ids
    assert (
        mistral.call_ids_to_wire([ChatMessage("assistant", [calls[1]])])[foreign] == clash
    )  # no clash: the first choice


@pytest.mark.parametrize(
    ("pieces", "text"),
    [
        (['{"na', 'me": "Ada"}'], 'Ada"}'),  # the repeated prefill split across pieces
        (['{"na', "Ada"], '{"naAda'),  # not the prefill after all: the held text comes out
        (['{"na', ""], '{"na'),  # the answer ended while the text could still be the prefill
    ],
)
def test_a_streamed_answer_loses_the_prefill_it_repeats_and_nothing_else(pieces: list[str], text: str) -> None:
    reader = mistral.MistralStreamReader(prefill='{"name": "')
    chunks = [{"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]} for piece in pieces]
    chunks[-1]["choices"][0]["finish_reason"] = "stop"
    updates = [reader.read(chunk) for chunk in chunks]
    assert "".join(update.text for update in updates if update is not None) == text
