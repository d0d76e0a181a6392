"""Messages, usage, finish reasons, options and features, response formats, ChatResponse."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from so_middleware import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FinishReason,
    ForcedTool,
    FunctionCallContent,
    ReasoningContent,
    ResponseFormat,
    TextContent,
    UsageDetails,
    UserError,
    as_messages,
    find_feature,
)


class Marker:
    pass


def test_messages_from_strings_and_messages() -> None:
    system = ChatMessage("system", "be brief")
    messages = as_messages([system, "hello"])
    assert messages[0] is system
    assert messages[1].role == "user" and messages[1].text == "hello"
    assert as_messages("hi")[0].contents == [TextContent("hi")]


class _Prompt(str):
    pass


def test_messages_of_every_accepted_form() -> None:
    """A prompt and a list take a short path; a str subclass, a message, a dict, a tuple or a
    generator the general one, with the same result; a set is refused (it has no order)."""
    message = ChatMessage("user", "a")
    forms: list[Any] = [
        "a", _Prompt("a"), message, {"role": "user", "content": "a"}, ["a"], ("a",), (m for m in [message]),
    ]  # fmt: skip
    assert [[(m.role, m.text) for m in as_messages(form)] for form in forms] == [[("user", "a")]] * len(forms)
    assert ChatMessage("user", (TextContent("a"),)).text == "a"
    with pytest.raises(UserError, match="must be in order"):
        as_messages({"a"})  # type: ignore[arg-type]


def test_options_and_a_schema_from_any_mapping() -> None:
    """A dict takes a short path; any other mapping is read the same; anything else is refused."""
    from types import MappingProxyType

    assert ChatOptions.coerce(MappingProxyType({"temperature": 0})) == ChatOptions.coerce({"temperature": 0})
    schema = {"type": "object"}
    assert ResponseFormat.json_schema(MappingProxyType(schema)) == ResponseFormat.json_schema(schema)
    with pytest.raises(UserError, match="options must be a dict"):
        ChatOptions.coerce([("temperature", 0)])  # type: ignore[arg-type]
    with pytest.raises(UserError, match="needs a schema dict"):
        ResponseFormat.json_schema([("type", "object")])  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [42, [1], [ChatMessage("user", "x"), None]])
def test_messages_reject_other_types(bad: object) -> None:
    with pytest.raises(UserError, match="message"):
        as_messages(bad)  # type: ignore[arg-type]


def test_unknown_role_is_named() -> None:
    with pytest.raises(UserError, match="'robot'"):
        ChatMessage("robot", "x")  # type: ignore[arg-type]


def test_text_is_final_answer_only() -> None:
    answer = ChatMessage(
        "assistant", [ReasoningContent("thinking..."), TextContent("42"), FunctionCallContent("c", "f", "{}")]
    )
    response = ChatResponse([ChatMessage("assistant", "first"), answer])
    assert response.text == "42"


def test_usage_adds_up() -> None:
    total = UsageDetails(10, 5, 15) + UsageDetails(1, None, 1) + None
    assert total == UsageDetails(11, 5, 16)
    assert sum([UsageDetails(1, 1, 2), UsageDetails(2, 2, 4)]) == UsageDetails(3, 3, 6)
    assert UsageDetails.total([None, None]) is None
    assert UsageDetails().input_tokens is None


def test_finish_reason_compares_to_string() -> None:
    assert FinishReason.LENGTH == "length"
    assert str(FinishReason.TOOL_CALLS) == "tool_calls"


def test_options_from_dict_with_features() -> None:
    feature = Marker()
    options = ChatOptions.coerce({"model": "m", "temperature": 0, "stop": "END", "features": [feature]})
    assert options.model == "m" and options.stop == ["END"]
    assert options.features[0] is feature
    assert options.additional_properties["features"][0] is feature
    assert find_feature(options, Marker) is feature
    assert find_feature({"features": [feature]}, Marker) is feature
    assert find_feature(None, Marker) is None


def test_features_spellings_are_the_same() -> None:
    a, b = Marker(), Marker()
    options = ChatOptions.coerce({"features": [a], "additional_properties": {"features": [b], "x": 1}})
    assert options.features == (a, b)
    assert options.additional_properties["x"] == 1


def test_unknown_option_names_key_and_passthrough() -> None:
    with pytest.raises(UserError, match=r"'frequency_penality'.*extra_body"):
        ChatOptions.coerce({"frequency_penality": 1})


def test_a_misspelled_option_names_the_closest_one() -> None:
    with pytest.raises(UserError, match=r"unknown option 'max_token'; did you mean 'max_tokens'\?"):
        ChatOptions.coerce({"max_token": 10})
    with pytest.raises(UserError) as far:
        ChatOptions.coerce({"colour": 1})
    assert "did you mean" not in str(far.value)


@pytest.mark.parametrize(
    ("key", "pointers"),
    [("timeout", ("AsyncOpenAI(timeout=...)", "deadline=", "idle_timeout")), ("max_retries", ("max_attempts",))],
)
def test_an_option_that_lives_elsewhere_says_where(key: str, pointers: tuple[str, ...]) -> None:
    with pytest.raises(UserError) as caught:
        ChatOptions.coerce({key: 5})
    assert all(pointer in str(caught.value) for pointer in pointers)


def test_options_are_never_mutated() -> None:
    raw = {"model": "m", "features": [Marker()]}
    options = ChatOptions.coerce(raw)
    changed = options.replace(model="other").with_features([])
    assert raw == {"model": "m", "features": raw["features"]}
    assert options.model == "m" and len(options.features) == 1
    assert changed.features == ()


def test_replace_checks_the_changed_fields_and_keeps_the_rest() -> None:
    options = ChatOptions.coerce({"model": "m", "temperature": 0.5, "features": [Marker()]})
    changed = options.replace(max_tokens=7, response_format={"type": "json_object"})
    assert (changed.model, changed.temperature, changed.max_tokens) == ("m", 0.5, 7)
    assert changed.response_format == ResponseFormat.json_object()
    assert changed.features == options.features and changed == ChatOptions(**{**vars(options), **vars(changed)})
    with pytest.raises(UserError, match="option 'temperature' must be a number"):
        options.replace(temperature="hot")
    with pytest.raises(UserError, match="option 'max_tokens' must be an int >= 1"):
        options.replace(max_tokens=0)
    with pytest.raises(UserError, match="option 'seed' must be an int"):  # a field or two: each checked
        options.replace(instructions="Be brief.", seed="7")
    with pytest.raises(TypeError, match="no field 'temprature'"):
        options.replace(temprature=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.model = "x"  # type: ignore[misc]


def test_merged_over_defaults_run_wins() -> None:
    default_feature, run_feature = Marker(), Marker()
    defaults = ChatOptions.coerce({"model": "a", "temperature": 0.5, "features": [default_feature]})
    run = ChatOptions.coerce({"model": "b", "features": [run_feature]})
    merged = run.merged_over(defaults)
    assert merged.model == "b" and merged.temperature == 0.5
    assert merged.features == (run_feature, default_feature)


def test_tool_choice_spellings() -> None:
    assert ChatOptions.coerce(
        {"tool_choice": {"type": "function", "function": {"name": "f"}}}
    ).tool_choice == ForcedTool("f")
    assert ChatOptions.coerce({"tool_choice": "required"}).tool_choice == "required"
    with pytest.raises(UserError, match="tool_choice"):
        ChatOptions.coerce({"tool_choice": "sometimes"})


def test_response_format_read_from_either_wire_shape() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    chat = {"type": "json_schema", "json_schema": {"name": "A", "schema": schema, "strict": True}}
    flat = {"type": "json_schema", "name": "A", "schema": schema, "strict": True}
    assert ResponseFormat.from_wire(chat) == ResponseFormat.from_wire(flat)
    assert ChatOptions.coerce({"response_format": chat}).response_format == ResponseFormat.json_schema(
        schema, name="A", strict=True
    )


def test_from_updates_joins_text_and_tool_call_deltas() -> None:
    updates = [
        ChatResponseUpdate([TextContent("Hel")], role="assistant"),
        ChatResponseUpdate([TextContent("lo"), FunctionCallContent("c1", "f", '{"a"')]),
        ChatResponseUpdate([FunctionCallContent("c1", "", ": 1}")], usage=UsageDetails(3, 2, 5)),
        ChatResponseUpdate([], finish_reason=FinishReason.STOP, response_id="r1", usage=UsageDetails(0, 1, 1)),
    ]
    response = ChatResponse.from_updates(updates)
    assert response.text == "Hello"
    assert response.messages[0].function_calls == [FunctionCallContent("c1", "f", '{"a": 1}')]
    assert response.usage == UsageDetails(3, 3, 6)
    assert response.finish_reason == FinishReason.STOP and response.response_id == "r1"


def test_value_without_structured_output_says_what_to_do() -> None:
    with pytest.raises(UserError, match="parse"):
        _ = ChatResponse(ChatMessage("assistant", "x")).value
