"""Function tools on a backend that ignores them (`tool_emulation`): the schema the call is asked
for by, what is refused before any call, the answer read back as a call, plain and streamed, and
what the library's own `tool` strategy gains.

The adapter tests use `httpx2.MockTransport` with bodies in the documented Chat Completions wire
format: only a mock shows, byte for byte, what the grammar-bound backend would be sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import quote

import jsonschema_rs
import pytest
from emulation_backend import WEATHER, Answer, Backend, get
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from so_middleware import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FinishReason,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderResponseError,
    ResponseFormat,
    TextContent,
    UsageDetails,
    UserError,
)
from so_middleware.openai import LLAMA_SERVER_CHAT, LLAMA_SERVER_RESPONSES, OPENAI_COMPATIBLE, OpenAIChatClient
from so_middleware.providers._discovery import ServerInfo
from so_middleware.providers.openai._profiles import server_profile
from so_middleware.providers.openai._tool_emulation import ToolEmulation, call_schema, offered_tools

CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TIME = FunctionTool("get_time", {"type": "object", "properties": {"zone": {"type": "string"}}})
CALL = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'


def emulation(**options: Any) -> ToolEmulation:
    made = ToolEmulation.of(ChatOptions.coerce({"tools": [WEATHER, TIME], **options}), LLAMA_SERVER_CHAT)
    assert made is not None
    return made


# ------------------------------------------------------------------------------- the schema


def test_one_tool_is_one_object_with_its_name_as_a_const_and_its_parameters_as_arguments() -> None:
    assert call_schema([WEATHER]) == {
        "type": "object",
        "properties": {"name": {"const": "get_weather"}, "arguments": dict(WEATHER.parameters)},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def test_several_tools_are_an_any_of_one_object_per_tool() -> None:
    schema = call_schema([WEATHER, TIME])
    assert [option["properties"]["name"]["const"] for option in schema["anyOf"]] == ["get_weather", "get_time"]
    assert schema["anyOf"][1]["properties"]["arguments"] == dict(TIME.parameters)


@pytest.mark.parametrize(
    "tool",
    [
        WEATHER,
        {"type": "function", "function": {"name": "get_weather", "parameters": dict(WEATHER.parameters)}},
        {"type": "function", "name": "get_weather", "parameters": dict(WEATHER.parameters)},
    ],
)
def test_function_tools_are_read_in_every_spelling(tool: Any) -> None:
    [read] = offered_tools([tool])
    assert (read.name, dict(read.parameters)) == ("get_weather", dict(WEATHER.parameters))


def test_a_tool_that_is_no_function_cannot_be_emulated() -> None:
    with pytest.raises(UserError, match="'web_search' tool cannot be emulated"):
        offered_tools([{"type": "web_search"}])


# ------------------------------------------------------------------------------- the request


@pytest.mark.parametrize(
    ("choice", "names"), [("required", ["get_weather", "get_time"]), (ForcedTool("get_time"), ["get_time"])]
)
def test_a_required_call_is_sent_as_a_response_format_without_tools(choice: Any, names: list[str]) -> None:
    sent = emulation(tool_choice=choice, instructions="Be brief.").options
    assert sent.tools is None and sent.tool_choice is None
    assert sent.response_format is not None and sent.response_format.type == "json_schema"
    schema = sent.response_format.schema or {}
    assert [o["properties"]["name"]["const"] for o in schema.get("anyOf", [schema])] == names
    assert sent.instructions is not None and sent.instructions.startswith("Be brief.")
    assert all(f"- {name}:" in sent.instructions for name in names)


@pytest.mark.parametrize("choice", [None, "auto"])
def test_a_choice_left_to_the_model_offers_an_answer_beside_the_calls(choice: Any) -> None:
    made = emulation(tool_choice=choice)
    sent = made.options
    assert sent.tools is None and sent.tool_choice is None and made.answers
    schema = (sent.response_format and sent.response_format.schema) or {}
    assert [o["properties"].get("name", {}).get("const") for o in schema["anyOf"]] == ["get_weather", "get_time", None]
    assert schema["anyOf"][-1]["properties"] == {"answer": {"type": "string"}}
    assert sent.instructions is not None and '{"answer": ...}' in sent.instructions


@pytest.mark.parametrize(
    ("response_format", "answer"),
    [
        ({"type": "json_schema", "json_schema": {"name": "City", "schema": CITY_SCHEMA}}, CITY_SCHEMA),
        ({"type": "json_object"}, {"type": "object"}),
        ({"type": "text"}, {"type": "string"}),
    ],
)
def test_with_auto_tools_the_answer_follows_the_response_format(response_format: Any, answer: Any) -> None:
    schema = emulation(tool_choice="auto", response_format=response_format).options.response_format
    assert schema is not None and schema.schema is not None
    assert schema.schema["anyOf"][-1]["properties"] == {"answer": answer}


def test_an_answer_variant_keeps_its_own_definitions_apart_from_the_tools() -> None:
    class Trip(BaseModel):
        to: Address

    schema = call_schema([FunctionTool("Trip", Trip.model_json_schema())], answer=Trip.model_json_schema())
    assert set(schema["$defs"]) == {"Trip__Address", "answer__Address"}
    validator = jsonschema_rs.validator_for(schema)
    assert validator.is_valid({"answer": {"to": {"city": "Oslo"}}})
    assert not validator.is_valid({"answer": {"to": {}}})


def test_a_ref_at_the_root_of_the_answer_points_at_its_moved_definition() -> None:
    node = {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}}
    schema = call_schema([WEATHER], answer={"$ref": "#/$defs/Node", "$defs": {"Node": node}})
    assert schema["anyOf"][-1]["properties"]["answer"] == {"$ref": "#/$defs/answer__Node"}
    validator = jsonschema_rs.validator_for(schema)
    assert validator.is_valid({"answer": {"next": {"next": None}}})
    assert not validator.is_valid({"answer": {"next": 3}})


def test_a_tool_named_answer_is_still_a_call() -> None:
    tool = FunctionTool("answer", {"type": "object", "properties": {"text": {"type": "string"}}})
    made = ToolEmulation.of(ChatOptions.coerce({"tools": [tool]}), LLAMA_SERVER_CHAT)
    assert made is not None
    response = made.response(ChatResponse(ChatMessage("assistant", '{"name": "answer", "arguments": {"text": "x"}}')))
    assert [c.name for c in response.messages[-1].function_calls] == ["answer"]


def test_none_sends_no_tools_and_reads_the_answer_as_it_is() -> None:
    made = emulation(tool_choice="none")
    assert made.options.tools is None and made.options.response_format is None
    response = ChatResponse(ChatMessage("assistant", "Sunny."), finish_reason=FinishReason.STOP)
    assert made.response(response).text == "Sunny."


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"tool_choice": ForcedTool("launch")}, "'launch', which is not among the tools"),
        ({"tool_choice": "auto", "response_format": ResponseFormat("grammar")}, "cannot carry a 'grammar'"),
    ],
)
def test_what_cannot_be_emulated_is_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        emulation(**options)


@pytest.mark.parametrize("choice", ["required", ForcedTool("get_weather")])
def test_a_required_call_beside_a_response_format_offers_only_the_calls(choice: Any) -> None:
    made = emulation(tool_choice=choice, response_format={"type": "json_object"})
    assert made.options.response_format is not None
    schema = made.options.response_format.schema or {}
    variants = schema.get("anyOf", [schema])
    assert all(set(variant["properties"]) == {"name", "arguments"} for variant in variants)
    assert not made.answers


@pytest.mark.parametrize("profile", [OPENAI_COMPATIBLE, LLAMA_SERVER_RESPONSES])
def test_a_backend_that_honours_tools_or_a_route_without_emulation_gets_none(profile: Any) -> None:
    assert ToolEmulation.of(ChatOptions.coerce({"tools": [WEATHER], "tool_choice": "auto"}), profile) is None


def test_a_llama_server_whose_template_has_tools_is_not_emulated() -> None:
    profile = server_profile(ServerInfo("llama.cpp", facts={"supports_tools": True}), "chat")
    assert profile.tools and not profile.tool_emulation


def test_earlier_calls_and_results_are_sent_as_text() -> None:
    history = [
        ChatMessage("user", "Weather?"),
        ChatMessage("assistant", [FunctionCallContent("c1", "get_weather", '{"city": "Oslo"}')]),
        ChatMessage("tool", [FunctionResultContent("c1", "12 C", name="get_weather")]),
    ]
    sent = emulation(tool_choice="required").messages(history)
    assert sent[0] is history[0]
    assert (sent[1].role, json.loads(sent[1].text)) == (
        "assistant",
        {"name": "get_weather", "arguments": {"city": "Oslo"}},
    )
    assert (sent[2].role, sent[2].text) == ("user", "The call of get_weather returned: 12 C")


def test_a_result_that_names_no_tool_is_named_after_its_call() -> None:
    """A Responses `function_call_output` carries only the call's id: the text names the tool."""
    history = [
        ChatMessage(
            "assistant", [FunctionCallContent("c1", "get_weather", "{}"), FunctionCallContent("c2", "get_time", "{}")]
        ),
        ChatMessage("tool", [FunctionResultContent("c2", "noon"), FunctionResultContent("c9", "lost")]),
    ]
    sent = emulation(tool_choice="auto").messages(history)
    assert sent[1].text == "The call of get_time returned: noon\nThe call of c9 returned: lost"


# ------------------------------------------------------------------------------- the answer


def answered(text: str, finish: FinishReason, choice: Any = "required") -> ChatResponse[Any]:
    response = ChatResponse(ChatMessage("assistant", text), finish_reason=finish, usage=UsageDetails(5, 7, 12))
    return emulation(tool_choice=choice).response(response)


def test_the_json_answer_is_a_tool_call() -> None:
    response = answered(CALL, FinishReason.STOP)
    [call] = response.messages[-1].function_calls
    assert (call.name, call.parsed_arguments(), response.finish_reason) == (
        "get_weather",
        {"city": "Oslo"},
        FinishReason.TOOL_CALLS,
    )
    assert response.text == ""


def test_an_answer_cut_by_the_token_limit_is_the_call_as_far_as_it_came() -> None:
    response = answered('{\n  "name": "get_weather",\n  "arguments": {"city": "Os', FinishReason.LENGTH)
    [call] = response.messages[-1].function_calls
    assert (call.name, call.arguments, response.finish_reason) == ("get_weather", '{"city": "Os', FinishReason.LENGTH)
    cut_early = answered('{\n  "na', FinishReason.LENGTH)
    assert (cut_early.text, cut_early.finish_reason) == ('{\n  "na', FinishReason.LENGTH)


@pytest.mark.anyio
@pytest.mark.parametrize("name", ['say "hi"', "back\\slash", "tab\tand \u00e9", "answer"])
@pytest.mark.parametrize("choice", ["required", "auto"])
async def test_a_cut_call_of_a_tool_whose_name_needs_escaping_is_still_its_call(name: str, choice: str) -> None:
    """The grammar writes the name as a JSON string: its escapes are read, plain and streamed."""
    tool = FunctionTool(name, {"type": "object", "properties": {"city": {"type": "string"}}})
    made = ToolEmulation.of(ChatOptions.coerce({"tools": [tool, TIME], "tool_choice": choice}), LLAMA_SERVER_CHAT)
    assert made is not None
    text = '{"name": ' + json.dumps(name) + ', "arguments": {"city": "Os'
    plain = made.response(ChatResponse(ChatMessage("assistant", text), finish_reason=FinishReason.LENGTH))

    async def backend() -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        yield ChatResponseUpdate([TextContent(text[:7])], role="assistant")
        yield ChatResponseUpdate([TextContent(text[7:])], role="assistant")
        yield ChatResponseUpdate([], finish_reason=FinishReason.LENGTH)

    streamed = [u async for u in made.updates(backend())]
    for contents, finish in [
        (plain.messages[-1].contents, plain.finish_reason),
        ([c for u in streamed for c in u.contents], next(u.finish_reason for u in streamed if u.finish_reason)),
    ]:
        [call] = contents
        assert isinstance(call, FunctionCallContent)
        assert (call.name, call.arguments, finish) == (name, '{"city": "Os', FinishReason.LENGTH)


def test_an_answer_that_is_no_call_is_a_provider_error_keeping_it() -> None:
    with pytest.raises(ProviderResponseError, match="not a call of get_weather, get_time") as caught:
        answered("Sunny in Oslo.", FinishReason.STOP)
    assert caught.value.raw_text == "Sunny in Oslo." and caught.value.usage == UsageDetails(5, 7, 12)


@pytest.mark.parametrize(
    ("text", "finish", "expected"),
    [
        ('{"answer": "Sunny in Oslo."}', FinishReason.STOP, "Sunny in Oslo."),
        ('{"answer": {"city": "Oslo"}}', FinishReason.STOP, '{"city": "Oslo"}'),  # a structured answer: its JSON
        ('{\n  "answer": "Sunny in \\"Os', FinishReason.LENGTH, 'Sunny in "Os'),  # cut: as far as it came
        ('{"answer": {"city": "Os', FinishReason.LENGTH, '{"city": "Os'),
    ],
)
def test_with_auto_the_answer_variant_is_plain_text(text: str, finish: FinishReason, expected: str) -> None:
    response = answered(text, finish, choice="auto")
    assert (response.text, response.finish_reason) == (expected, finish)
    assert response.messages[-1].function_calls == []


def test_with_auto_a_call_is_still_a_call() -> None:
    response = answered(CALL, FinishReason.STOP, choice="auto")
    assert [c.name for c in response.messages[-1].function_calls] == ["get_weather"]
    assert response.finish_reason == FinishReason.TOOL_CALLS


def test_an_answer_variant_is_no_answer_to_a_required_call() -> None:
    with pytest.raises(ProviderResponseError, match="not a call of get_weather, get_time \\("):
        answered('{"answer": "Sunny."}', FinishReason.STOP)
    with pytest.raises(ProviderResponseError, match="nor an 'answer'"):
        answered("Sunny.", FinishReason.STOP, choice="auto")


@pytest.mark.anyio
@pytest.mark.parametrize(("text", "choice"), [(CALL, "required"), ('{"answer": "Sunny."}', "auto")])
async def test_a_stream_holds_the_json_back_and_ends_with_the_call_or_the_answer(text: str, choice: str) -> None:
    async def backend() -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        for piece in (text[:10], text[10:15], text[15:]):
            yield ChatResponseUpdate([TextContent(piece)], role="assistant")
        yield ChatResponseUpdate([], finish_reason=FinishReason.STOP)
        yield ChatResponseUpdate([], usage=UsageDetails(5, 7, 12))

    updates = [u async for u in emulation(tool_choice=choice).updates(backend())]
    texts = [c.text for u in updates for c in u.contents if isinstance(c, TextContent)]
    calls = [c for u in updates for c in u.contents if isinstance(c, FunctionCallContent)]
    if choice == "required":
        assert texts == [] and [(c.name, c.parsed_arguments()) for c in calls] == [("get_weather", {"city": "Oslo"})]
        assert [u.finish_reason for u in updates if u.finish_reason] == [FinishReason.TOOL_CALLS]
    else:
        assert texts == ["Sunny."] and calls == []  # held back, then the answer's text at once
        assert [u.finish_reason for u in updates if u.finish_reason] == [FinishReason.STOP]
    assert updates[-1].usage == UsageDetails(5, 7, 12)


# ------------------------------------------------------------------------------- through the adapter


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_the_adapter_answers_a_forced_tool_with_a_call(stream: bool) -> None:
    backend = Backend(CALL)
    options = {"tools": [WEATHER], "tool_choice": ForcedTool("get_weather")}
    response = await get(backend.client(), stream, "Weather in Oslo?", options=options)
    [call] = response.messages[-1].function_calls
    assert (call.name, call.parsed_arguments()) == ("get_weather", {"city": "Oslo"})
    assert response.finish_reason == FinishReason.TOOL_CALLS
    [sent] = backend.bodies
    assert "tools" not in sent and sent["response_format"]["json_schema"]["schema"] == call_schema([WEATHER])


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("text", "calls"), [('{"answer": "Sunny."}', []), (CALL, ["get_weather"])])
async def test_the_adapter_lets_the_model_decide_with_auto(stream: bool, text: str, calls: list[str]) -> None:
    backend = Backend(text)
    response = await get(backend.client(), stream, "Weather in Oslo?", options={"tools": [WEATHER, TIME]})
    assert [c.name for c in response.messages[-1].function_calls] == calls
    assert response.text == ("" if calls else "Sunny.")
    [sent] = backend.bodies
    assert "tools" not in sent
    assert sent["response_format"]["json_schema"]["schema"] == call_schema([WEATHER, TIME], {"type": "string"})


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_an_answer_that_is_no_call_keeps_its_text_and_usage_plain_and_streamed(stream: bool) -> None:
    """The stream's usage comes after its finish: the error waits for it."""
    backend = Backend("Sunny in Oslo.")
    with pytest.raises(ProviderResponseError, match="not a call of get_weather") as caught:
        await get(backend.client(), stream, "Weather?", options={"tools": [WEATHER], "tool_choice": "required"})
    error = caught.value
    assert [(a.text, a.usage) for a in error.attempts] == [("Sunny in Oslo.", UsageDetails(3, 5, 8))]
    assert error.usage == UsageDetails(3, 5, 8)


@pytest.mark.anyio
async def test_closing_the_stream_early_closes_the_backend_stream() -> None:
    closed: list[bool] = []

    async def backend() -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        try:
            yield ChatResponseUpdate([], role="assistant")
            while True:
                yield ChatResponseUpdate([TextContent("{")], role="assistant")
        finally:
            closed.append(True)

    updates = emulation(tool_choice="required").updates(backend())
    await updates.__anext__()
    await updates.aclose()
    assert closed == [True]


class Address(BaseModel):
    city: str


class Moved(BaseModel):
    home: Address
    previous: list[Address]


@pytest.mark.parametrize("tools", [[Moved], [Moved, Answer]])
def test_definitions_move_to_the_root_where_the_refs_point(tools: list[type[BaseModel]]) -> None:
    offered = [FunctionTool(t.__name__, t.model_json_schema()) for t in tools]
    assert "$defs" in offered[0].parameters  # pydantic puts Address there, referenced as #/$defs/Address
    schema = call_schema(offered)
    call = {"name": "Moved", "arguments": {"home": {"city": "Oslo"}, "previous": [{"city": "Bergen"}]}}
    assert jsonschema_rs.validator_for(schema).is_valid(call)
    assert not jsonschema_rs.validator_for(schema).is_valid({**call, "arguments": {"home": {}, "previous": []}})
    options = schema.get("anyOf", [schema])
    assert all("$defs" not in option["properties"]["arguments"] for option in options)


# ------------------------------------------------------------------------------- hoisted names


def test_two_tools_whose_prefixed_definitions_would_share_a_name_keep_their_own() -> None:
    """Tool `a`'s `b__c` and tool `a__b`'s `c` both read `a__b__c` once prefixed; a tool named
    `answer` has the answer's prefix: each `$ref` still reaches its own variant's definition."""

    def tool(name: str, key: str, value: int) -> FunctionTool:
        return FunctionTool(name, {"type": "object", "properties": {"x": {"$ref": f"#/$defs/{key}"}},
                                   "required": ["x"], "$defs": {key: {"const": value}}})  # fmt: skip

    answer = {"$ref": "#/$defs/c", "$defs": {"c": {"const": 4}}}
    schema = call_schema([tool("a", "b__c", 1), tool("a__b", "c", 2), tool("answer", "c", 3)], answer=answer)
    assert len(schema["$defs"]) == 4
    validator = jsonschema_rs.validator_for(schema)
    for name, value in [("a", 1), ("a__b", 2), ("answer", 3)]:
        assert validator.is_valid({"name": name, "arguments": {"x": value}})
        assert not validator.is_valid({"name": name, "arguments": {"x": 5 - value if value != 2 else 1}})
    assert validator.is_valid({"answer": 4}) and not validator.is_valid({"answer": 3})


_KEYS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(
    tools=st.dictionaries(_KEYS, st.lists(_KEYS, unique=True, max_size=4), min_size=1, max_size=4),
    answer_keys=st.one_of(st.none(), st.lists(_KEYS, unique=True, max_size=3)),
)
def test_hoisted_definition_names_are_unique_and_each_ref_reaches_its_own(
    tools: dict[str, list[str]], answer_keys: list[str] | None
) -> None:
    """Any tool names and `$defs` keys: every definition lands under a name of its own, and each
    `$ref` (written as JSON Pointer escapes it) resolves to its own variant's definition."""

    def parameters(owner: str, keys: list[str]) -> dict[str, Any]:
        refs = {
            f"p{i}": {"$ref": "#/$defs/" + quote(k.replace("~", "~0").replace("/", "~1"))} for i, k in enumerate(keys)
        }
        return {"type": "object", "properties": refs, "$defs": {k: {"const": [owner, k]} for k in keys}}

    offered = [FunctionTool(name, parameters(name, keys)) for name, keys in tools.items()]
    answer = None if answer_keys is None else parameters("\0answer", answer_keys)
    schema = call_schema(offered, answer=answer)
    total = sum(map(len, tools.values())) + len(answer_keys or [])
    assert len(schema.get("$defs", {})) == total
    variants = schema.get("anyOf", [schema])
    owners = [(name, v["properties"]["arguments"]) for name, v in zip(tools, variants, strict=False)]
    if answer is not None:
        owners.append(("\0answer", variants[-1]["properties"]["answer"]))
    for owner, arguments in owners:
        for i, key in enumerate(tools.get(owner, answer_keys or [])):
            ref = arguments["properties"][f"p{i}"]["$ref"]
            assert ref.startswith("#/$defs/") and schema["$defs"][ref[len("#/$defs/") :]] == {"const": [owner, key]}


@pytest.mark.parametrize("key", ["$defs", "definitions"])
@pytest.mark.parametrize("bad", [[{"type": "string"}], "Address", 3])
def test_definitions_that_are_no_object_are_a_user_error_naming_the_tool(key: str, bad: Any) -> None:
    tool = FunctionTool("get_weather", {"type": "object", key: bad})
    with pytest.raises(UserError, match=f"the {re.escape(repr(key))} of tool 'get_weather' must be an object"):
        call_schema([tool, TIME])


def test_a_ref_naming_no_definition_is_a_user_error_naming_the_tool() -> None:
    tool = FunctionTool("get_weather", {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}})
    with pytest.raises(UserError, match="'#/\\$defs/Missing' of tool 'get_weather' names no definition"):
        call_schema([tool])


def test_a_ref_to_the_root_of_a_tools_parameters_points_at_its_arguments() -> None:
    node = {
        "type": "object",
        "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
        "required": ["next"],
    }
    schema = call_schema([FunctionTool("walk", node), TIME])
    validator = jsonschema_rs.validator_for(schema)
    assert validator.is_valid({"name": "walk", "arguments": {"next": {"next": None}}})
    assert not validator.is_valid({"name": "walk", "arguments": {"next": {"next": 3}}})


def test_two_tools_of_one_name_cannot_be_told_apart_and_are_refused() -> None:
    other = FunctionTool("get_weather", {"type": "object", "properties": {"zip": {"type": "string"}}})
    with pytest.raises(UserError, match="two tools cannot both be named 'get_weather'"):
        ToolEmulation.of(ChatOptions.coerce({"tools": [WEATHER, TIME, other]}), LLAMA_SERVER_CHAT)


def test_a_property_named_ref_is_a_schema_whose_own_refs_move_too() -> None:
    parameters = {"type": "object", "properties": {"$ref": {"$ref": "#/$defs/City"}}, "required": ["$ref"],
                  "$defs": {"City": {"type": "string", "maxLength": 3}}}  # fmt: skip
    schema = call_schema([FunctionTool("odd", parameters), TIME])
    validator = jsonschema_rs.validator_for(schema)
    assert validator.is_valid({"name": "odd", "arguments": {"$ref": "Oslo"[:3]}})
    assert not validator.is_valid({"name": "odd", "arguments": {"$ref": "Oslo"}})


@pytest.mark.parametrize("repeats", [0, -1, 2.0, True])
def test_a_repeat_count_that_is_no_positive_whole_number_is_refused(repeats: Any) -> None:
    import openai

    with pytest.raises(UserError, match="emulated_call_repeats"):
        OpenAIChatClient(openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1"), "m",
                         emulated_call_repeats=repeats)  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_with_no_extra_body_or_tools_skips_the_custom_tool_and_emulation_checks(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a backend whose tools are emulated, a call that offers none and has no `extra_body` (where
    a custom tool would be named) has nothing for either check to find: neither runs."""
    from so_middleware.providers.openai import _chat

    def unexpected(*_: Any, **__: Any) -> Any:
        raise AssertionError("checked a call with nothing to find")

    monkeypatch.setattr(_chat.CustomToolAnswer, "of", unexpected)
    monkeypatch.setattr(_chat.ToolEmulation, "of", unexpected)
    response = await get(Backend("plain").client(), stream, "?")
    assert response.text == "plain"
