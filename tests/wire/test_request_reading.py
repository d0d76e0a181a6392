"""A Responses request read in one call (`options_from_wire` for its options, `ResponsesRequest.from_wire`
for all of it), as the gateway reads it: each field's type checked and named, the backend's own fields
forwarded, the client's kept back, and a `text.format` kept in the Responses spelling so every
protocol writes it in its own."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from so_middleware import ChatOptions, ForcedTool
from so_middleware.wire import chat, messages, responses, responses_items
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


# ---------------------------------------------------------------- a server's whole read


def test_a_whole_responses_request_is_read_in_one_call() -> None:
    """The options (as `options_from_wire` reads them), the input items (a reference kept for the
    server to resolve), the server's own fields, and the response object the request asks for."""
    body = {
        "model": "m", "instructions": "Be brief.", "temperature": 0, "top_k": 3, "metadata": {"k": "v"},
        "input": [{"type": "message", "role": "user", "content": "Hi"}, {"type": "item_reference", "id": "msg_1"}],
        "text": {"format": {"type": "json_schema", "name": "p", "schema": {"type": "object"}}},
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "stream": True, "store": False, "background": True, "previous_response_id": "resp_1",
    }  # fmt: skip
    request = responses.ResponsesRequest.from_wire(body)
    assert request.options == responses.options_from_wire(body) and request.model == "m"
    assert request.items == body["input"]
    assert (request.stream, request.store, request.background) == (True, False, True)
    assert request.previous_response_id == "resp_1"
    frame = request.frame
    assert (frame["id"], frame["created_at"], frame["status"], frame["output"]) == (None, None, None, [])
    assert frame["model"] == "m" and frame["instructions"] == "Be brief." and frame["metadata"] == {"k": "v"}
    assert (frame["temperature"], frame["top_p"], frame["store"], frame["background"]) == (0, 1.0, False, True)
    # what the Open Responses schema requires of an echo: a json_schema's `description` and `strict`,
    # a function tool's `description` and `strict`, null or false when the request left them out
    assert frame["text"]["format"] == {**body["text"]["format"], "description": None, "strict": False}  # type: ignore[index]
    assert frame["tools"] == [{**body["tools"][0], "description": None, "strict": None}]  # type: ignore[index]
    assert frame["previous_response_id"] == "resp_1" and frame["tool_choice"] == "auto"


def test_a_plain_request_reads_with_the_apis_defaults() -> None:
    request = responses.ResponsesRequest.from_wire({"input": "Hi"}, default_model="d")
    assert request.options == ChatOptions(model="d") and request.model == "d"
    assert request.items == [{"type": "message", "role": "user", "content": "Hi"}]
    assert (request.stream, request.store, request.background, request.previous_response_id) == (
        False, True, False, None)  # fmt: skip
    assert request.frame["text"] == {"format": {"type": "text"}} and request.frame["tools"] == []
    assert request.frame["metadata"] == {} and request.frame["service_tier"] == "default"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m"}, "input"),
        ({"model": "m", "input": 3}, "input"),
        ({"model": "m", "input": ["Hi"]}, "input"),
        ({"model": "m", "input": [{"type": "message", "role": "user", "content": "a"},
                                  {"type": "message", "role": "robot", "content": "b"}]}, "input[1].role"),
        ({"model": "m", "input": [{"type": "item_reference", "id": 7}]}, "input[0].id"),
        ({"model": "m", "input": [{"type": "web_search_call"}]}, "input[0].type"),
        ({"model": "m", "input": "x", "stream": "yes"}, "stream"),
        ({"model": "m", "input": "x", "store": 0}, "store"),
        ({"model": "m", "input": "x", "background": "no"}, "background"),
        ({"model": "m", "input": "x", "previous_response_id": 1}, "previous_response_id"),
        ({"input": "x", "temperature": "hot"}, "model"),  # fields are read in order: the model first
    ],
    ids=repr,
)  # fmt: skip
def test_a_whole_request_names_the_first_field_it_cannot_read(body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as caught:
        responses.ResponsesRequest.from_wire(body)
    assert caught.value.param == param


def test_the_echoed_tools_and_format_are_copies_of_the_body() -> None:
    body: dict[str, Any] = {"model": "m", "input": "Hi", "tools": [{"type": "function", "name": "f"}],
                            "text": {"format": {"type": "json_schema", "name": "p", "schema": {}}}}  # fmt: skip
    before = copy.deepcopy(body)
    request = responses.ResponsesRequest.from_wire(body)
    request.frame["tools"][0]["strict"] = True
    request.frame["text"]["format"]["strict"] = True
    assert body == before


def test_input_items_as_a_server_reads_them() -> None:
    reference = {"id": "msg_1"}  # an `item_reference` whose type is left out, as the spec allows
    assert responses_items.items_from_wire([reference]) == [reference]
    assert responses_items.is_reference(reference) and not responses_items.is_reference({"id": "m", "role": "user"})
    with pytest.raises(WireError) as caught:
        responses_items.items_from_wire(None)
    assert caught.value.param == "input"
