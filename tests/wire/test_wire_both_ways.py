"""The wire modules, both directions: what a client writes, a server reads back as it was."""

from __future__ import annotations

import contextlib
import json
import warnings
from typing import Any

import pytest
from openai.types.responses import ResponseUsage

from so_middleware import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    DataContent,
    FinishReason,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    HostedFileContent,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    ResponseFormat,
    TextContent,
    UsageDetails,
    UserError,
    chat_format_to_responses,
    responses_format_to_chat,
)
from so_middleware.wire import chat, responses, responses_items
from so_middleware.wire.chat import response_format_to_wire
from so_middleware.wire.messages import request_to_wire as anthropic_request
from so_middleware.wire.responses import text_format_to_wire

TOOLS = [
    FunctionTool("lookup", {"type": "object", "properties": {"q": {"type": "string"}}}, "Look it up.", True),
    FunctionTool("plain", {"type": "object", "properties": {}}, None, False),
]


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_a_function_tool_written_by_a_client_reads_back_on_a_server(tool: FunctionTool) -> None:
    assert responses.tool_from_wire(responses.tool_to_wire(tool), "tools[0]") == tool


@pytest.mark.parametrize("choice", ["auto", "none", "required", ForcedTool("lookup")], ids=str)
def test_a_tool_choice_written_by_a_client_reads_back_on_a_server(choice: Any) -> None:
    assert responses.tool_choice_from_wire(responses.tool_choice_to_wire(choice)) == choice


def test_usage_written_by_a_server_reads_back_on_a_client() -> None:
    usage = UsageDetails(input_tokens=11, output_tokens=7, total_tokens=18, cached_input_tokens=3, reasoning_tokens=2,
                         cache_creation_input_tokens=4)  # fmt: skip
    assert responses.usage_from(ResponseUsage.model_validate(responses.usage_to_wire(usage))) == usage


MESSAGES = [
    ChatMessage("user", "Hi"),
    ChatMessage("user", [TextContent("Read this."), HostedFileContent("file-abc")]),
    ChatMessage(
        "assistant",
        [FunctionCallContent("call_1", "lookup", '{"q":"a"}'), FunctionCallContent("call_2", "lookup", '{"q":"b"}')],
    ),
    ChatMessage("tool", [FunctionResultContent("call_1", "r1")]),
]


def test_messages_written_as_items_read_back_as_the_same_messages() -> None:
    items = [item for message in MESSAGES for item in responses_items.message_to_items(message)]
    assert responses_items.items_to_messages(items) == MESSAGES


def test_an_item_a_server_cannot_read_names_its_field() -> None:
    with pytest.raises(responses.WireError) as caught:
        responses_items.item_to_message({"type": "web_search_call"}, "input[3]")
    assert caught.value.param == "input[3].type" and isinstance(caught.value, UserError)


def test_chat_file_parts() -> None:
    pdf = DataContent(b"%PDF-1.4", "application/pdf", name="a.pdf")
    assert chat.part_to_wire(pdf) == {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0xLjQ=",
                                                               "filename": "a.pdf"}}  # fmt: skip
    assert chat.part_to_wire(HostedFileContent("file-abc")) == {"type": "file", "file": {"file_id": "file-abc"}}


def test_anthropic_refuses_a_file_by_id_instead_of_dropping_it() -> None:
    message = ChatMessage("user", [TextContent("Read this."), HostedFileContent("file-abc")])
    with pytest.raises(UserError, match="file-abc"):
        anthropic_request([message], ChatOptions(), model="claude", max_tokens=100)


@pytest.mark.parametrize("arguments", ['{"input": "*** Begin"}', "*** Begin"], ids=["object", "bare text"])
def test_a_custom_tool_input_comes_from_its_function_arguments(arguments: str) -> None:
    assert responses_items.custom_input(arguments) == "*** Begin"


def test_output_a_server_writes_reads_back_on_a_client() -> None:
    """The gateway's writer and the Responses adapter's reader share the item tables: what one
    writes (custom tool calls included) the other reads back as the same contents."""
    from openai.types.responses import Response

    from so_middleware import ChatResponseUpdate, FinishReason, ReasoningContent
    from so_middleware.wire.responses_events import ResponseWriter

    contents = [
        ReasoningContent("First the name."),
        TextContent("Ada"),
        FunctionCallContent("call_1", "lookup", '{"q":"a"}'),
        FunctionCallContent("call_2", "apply_patch", '{"input": "*** Begin"}'),
    ]
    skeleton: dict[str, Any] = {
        "id": "resp_1", "object": "response", "created_at": 0, "model": "m", "output": [], "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [{"type": "custom", "name": "apply_patch"}],
    }  # fmt: skip
    writer = ResponseWriter(skeleton)
    writer.start()
    writer.feed(ChatResponseUpdate(contents, finish_reason=FinishReason.TOOL_CALLS))
    writer.finish()
    read = responses_items.output_contents(Response.model_validate(writer.response).output)
    assert read == contents


def test_a_named_document_keeps_its_file_name_on_the_responses_wire() -> None:
    message = ChatMessage("user", [TextContent("Read."), DataContent(b"%PDF-1.4", "application/pdf", name="a.pdf")])
    (item,) = responses_items.message_to_items(message)
    assert item["content"][1] == {"type": "input_file", "filename": "a.pdf",
                                  "file_data": "data:application/pdf;base64,JVBERi0xLjQ="}  # fmt: skip


TEXT_FORMATS = [
    {"type": "json_object"},
    {"type": "json_schema", "strict": True, "name": "p", "x-vendor": [1, None], "schema": {"type": "object"}},
    {"type": "json_schema", "schema": {"type": "object"}},
    {"type": "grammar", "grammar": 'root ::= "yes"'},
]


@pytest.mark.parametrize("text_format", TEXT_FORMATS, ids=lambda f: f["type"])
def test_the_gateway_and_the_library_translate_text_format_one_way(text_format: dict[str, Any]) -> None:
    """One `text.format` translation, two users: the gateway (`text_format_to_chat`, reading a
    request) and the library (`responses_format_to_chat`, which the adapters' rendering shares)."""
    served = responses.text_format_to_chat(text_format)
    assert json.dumps(served) == json.dumps(responses_format_to_chat(text_format))
    assert json.dumps(chat_format_to_responses(served)) == json.dumps(text_format)  # and back, as it was
    if text_format["type"] == "json_schema" and "name" in text_format:
        fmt = ResponseFormat.json_schema(text_format["schema"], name="p", strict=True)
        assert response_format_to_wire(fmt) == responses.text_format_to_chat(text_format_to_wire(fmt))


def test_a_text_format_a_server_cannot_read_names_its_field() -> None:
    assert responses.text_format_to_chat(None) is None and responses.text_format_to_chat({"type": "text"}) is None
    with pytest.raises(responses.WireError, match=r"text\.format\.type must be a string") as caught:
        responses.text_format_to_chat({"kind": "json"})
    assert caught.value.param == "text.format.type"


EVENT_NAMES = {value for name, value in vars(responses.Event).items() if name.isupper()}


@pytest.mark.parametrize(
    "finish", [FinishReason.STOP, FinishReason.LENGTH, None], ids=["completed", "incomplete", "failed"]
)
def test_the_events_a_server_writes_are_named_in_the_table_and_read_back_on_a_client(finish: Any) -> None:
    """The gateway's writer names its events from `Event` (every one it writes is there, the
    terminal one in `TERMINAL_EVENTS`), and the adapter's stream reader, reading the same table,
    reads them back as the contents that were written."""
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    from so_middleware.wire.responses_events import ResponseWriter, StreamReader

    contents = [
        ReasoningContent("First the name."),
        TextContent("Ada"),
        RefusalContent("not that"),
        FunctionCallContent("call_1", "lookup", '{"q":"a"}'),
    ]
    skeleton: dict[str, Any] = {
        "id": "resp_1", "object": "response", "created_at": 0, "model": "m", "output": [], "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [],
    }  # fmt: skip
    writer = ResponseWriter(skeleton)
    events = [*writer.start(), *writer.feed(ChatResponseUpdate(contents, finish_reason=finish))]
    events += writer.finish(error=None if finish else "the backend went away")
    assert {event["type"] for event in events} <= EVENT_NAMES
    assert [e["type"] for e in events if e["type"] in responses.TERMINAL_EVENTS] == [events[-1]["type"]]
    assert events[-1]["type"] == responses.STATUS_EVENTS[writer.response["status"]]
    reader, read = StreamReader(), []
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    with pytest.raises(ProviderResponseError) if finish is None else contextlib.nullcontext():
        for event in events:
            update = reader.read(adapter.validate_python(event))
            read.extend([update] if update is not None else ())
    assert ChatResponse.from_updates(read).messages[-1].contents == contents
    assert reader.finished is (finish is not None)


def test_the_spec_names_rename_only_openais_reasoning_events() -> None:
    assert set(responses.SPEC_NAMES) <= EVENT_NAMES
    assert not set(responses.SPEC_NAMES.values()) & EVENT_NAMES  # the spec's spellings differ
    assert responses.TERMINAL_EVENTS <= EVENT_NAMES


@pytest.mark.parametrize(
    ("fmt", "forms", "warning"),
    [
        (
            ResponseFormat.json_object(),
            ("json_schema",),
            "the json_object response format has no Anthropic form and is not sent",
        ),
        (
            ResponseFormat.json_schema({"type": "object"}),
            ("json_schema",),
            "not enforced by 'plain' on the Anthropic route",
        ),
        (
            ResponseFormat.json_object(),
            ("json_object", "json_schema"),
            "not enforced by 'plain' on the Anthropic route",
        ),
        (ResponseFormat.text(), ("json_schema",), None),
        (ResponseFormat("grammar", raw={"type": "grammar"}), ("json_schema",), None),  # a dict forwarded as is
    ],
)
def test_one_warning_for_a_format_a_route_will_not_enforce(
    fmt: ResponseFormat, forms: Any, warning: str | None
) -> None:
    from so_middleware import Capabilities
    from so_middleware.wire.common import warn_if_not_enforced

    plain = Capabilities(name="plain", native_json_schema=False, json_object=False)
    with pytest.warns(UserWarning, match=warning) if warning else warnings.catch_warnings():
        if not warning:
            warnings.simplefilter("error")
        warn_if_not_enforced(ChatOptions(response_format=fmt), plain, "Anthropic", forms)
    strict = plain.replace(native_json_schema=True, json_object=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if fmt.type in forms:  # a server that enforces it: nothing to say
            warn_if_not_enforced(ChatOptions(response_format=fmt), strict, "Anthropic", forms)
