"""A Responses request's options read in one call (`options_from_wire`), as the gateway reads them:
each field's type checked and named, the backend's own fields forwarded, the client's kept back,
and a `text.format` kept in the Responses spelling so every protocol writes it in its own."""

from __future__ import annotations

from typing import Any

import pytest

from so_middleware import ChatOptions, ForcedTool
from so_middleware.wire import chat, messages, responses
from so_middleware.wire.common import WireError


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "model"),
        ({"model": 3}, "model"),
        ({"model": "m", "temperature": "hot"}, "temperature"),
        ({"model": "m", "temperature": True}, "temperature"),  # a bool is no number, as in JSON
        ({"model": "m", "max_output_tokens": 1.5}, "max_output_tokens"),
        ({"model": "m", "text": []}, "text"),
        ({"model": "m", "text": {"format": {"kind": "json"}}}, "text.format.type"),
        ({"model": "m", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"model": "m", "tool_choice": "sometimes"}, "tool_choice"),
        ({"model": "m", "metadata": "x"}, "metadata"),
    ],
    ids=repr,
)
def test_a_field_that_cannot_be_read_is_named(body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as caught:
        responses.options_from_wire(body)
    assert caught.value.param == param


def test_the_options_of_a_request_in_one_call() -> None:
    body = {
        "model": "m", "instructions": "Be brief.", "temperature": 0, "max_output_tokens": 9,
        "tool_choice": {"type": "custom", "name": "shell"}, "tools": [{"type": "custom", "name": "shell"}],
        "parallel_tool_calls": False, "user": "u1", "reasoning": {"effort": "low"}, "text": {"verbosity": "low"},
        "top_k": 3, "store": False, "metadata": {"k": "v"}, "client_metadata": {"session": "s"},
    }  # fmt: skip
    options = responses.options_from_wire(body)
    assert options.model == "m" and options.instructions == "Be brief." and options.max_tokens == 9
    assert options.temperature == 0 and options.tool_choice == ForcedTool("shell")
    assert [tool.name for tool in options.tools or ()] == ["shell"]
    # the backend's own fields and the API's that Chat Completions spells otherwise; never the gateway's
    assert options.extra_body == {
        "top_k": 3, "parallel_tool_calls": False, "user": "u1", "reasoning_effort": "low", "verbosity": "low",
    }  # fmt: skip


def test_a_default_model_serves_a_body_without_one() -> None:
    assert responses.options_from_wire({"input": "x"}, default_model="d") == ChatOptions(model="d")


def test_a_format_read_from_a_request_is_written_in_each_protocols_spelling() -> None:
    """Kept as read (flat, every key in its order), it goes to a Responses backend as it came and to
    a Chat Completions backend nested under `json_schema`."""
    text_format = {"type": "json_schema", "name": "p", "schema": {"type": "object"}, "x-extra": 1, "strict": True}
    fmt = responses.options_from_wire({"model": "m", "text": {"format": text_format}}).response_format
    assert fmt is not None
    assert responses.text_format_to_wire(fmt) == text_format
    nested = chat.response_format_to_wire(fmt)
    assert nested == {"type": "json_schema", "json_schema": {k: v for k, v in text_format.items() if k != "type"}}
    assert list(nested["json_schema"]) == ["name", "schema", "x-extra", "strict"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("read", "body", "param"),
    [
        (chat.request_from_wire, {"model": "m", "messages": []}, "messages"),
        (chat.request_from_wire, {"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        (chat.request_from_wire, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
         "messages[0].content[0].type"),
        (messages.request_from_wire, {"messages": [{"role": "user", "content": [{"type": "image"}]}]},
         "messages[0].content[0].type"),
        (messages.request_from_wire, {"messages": [], "tool_choice": {"type": "sometimes"}}, "tool_choice.type"),
        (messages.request_from_wire, {"messages": [], "max_tokens": "9"}, "max_tokens"),
    ],
    ids=repr,
)  # fmt: skip
def test_what_a_request_reader_cannot_read_is_named(read: Any, body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as caught:
        read(body)
    assert caught.value.param == param
