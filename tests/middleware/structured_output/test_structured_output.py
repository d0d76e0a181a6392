"""The structured-output layer over the scripted fake client: features, strategies, re-asks,
errors, streaming partial values. Both sides of the layer are asserted: what the model was
asked (fake.calls) and what the caller got."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from enum import Enum
from typing import Any, Literal, Union

import pytest
from pydantic import BaseModel

from so_middleware import (
    Capabilities,
    ChatResponse,
    ContentFilterError,
    DelegatingChatClient,
    FinishReason,
    ForcedTool,
    IncompleteOutputError,
    ModelBehaviorError,
    RefusalError,
    UsageDetails,
    UserError,
)
from so_middleware.middleware.structured_output import (
    OutputSettings,
    SettingsKeywords,
    StructuredOutput,
    StructuredOutputChatClient,
    with_structured_output,
)
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio

NATIVE_ONLY = Capabilities(name="native", native_json_schema=True, schema_profile="openai-strict")
TOOLS_ONLY = Capabilities(
    name="tools", tools=True, forced_tool_choice=True, strict_tools=True, schema_profile="openai-strict"
)
JSON_MODE = Capabilities(name="json", json_object=True)
PROMPT_ONLY = Capabilities(name="prompt")
PREFILL = Capabilities(name="prefill", assistant_prefill=True)


class Person(BaseModel):
    name: str
    age: int
    email: str | None = None


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


async def get(client: Any, stream: bool, *args: Any, **kwargs: Any) -> ChatResponse[Any]:
    if stream:
        return await client.get_response(*args, stream=True, **kwargs).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(*args, **kwargs)  # type: ignore[no-any-return]


class Unaware(DelegatingChatClient):
    """A decorator that knows nothing of features."""


@pytest.mark.parametrize("stream", [False, True])
async def test_feature_through_unaware_decorator_holds_response(stream: bool) -> None:
    fake = FakeChatClient('{"name": "Ada", "age": 36, "email": null}')
    client = Unaware(with_structured_output(Unaware(fake)))
    feature = StructuredOutput(Person)
    response = await get(client, stream, "Ada, 36", options={"features": [feature]})
    assert response.value == Person(name="Ada", age=36)
    assert feature.response is response
    sent = fake.calls[0].options
    assert sent.response_format is not None and sent.response_format.type == "json_schema"
    assert sent.response_format.name == "Person" and sent.response_format.strict is True
    assert not any(isinstance(f, StructuredOutput) for f in sent.features)


@pytest.mark.parametrize("stream", [False, True])
async def test_without_feature_layer_is_pass_through(stream: bool) -> None:
    fake = FakeChatClient("plain answer")
    client = with_structured_output(fake)
    response = await get(client, stream, "hi", options={"temperature": 0.3})
    assert response.text == "plain answer"
    assert fake.calls[0].options.response_format is None
    assert fake.calls[0].options.temperature == 0.3


@pytest.mark.parametrize(
    ("output_type", "reply", "expected"),
    [
        (list[int], '{"response": [1, 2, 3]}', [1, 2, 3]),
        (bool, '{"response": true}', True),
        (Color, '{"response": "blue"}', Color.BLUE),
        (Union[Cat, Dog], '{"response": {"kind": "dog", "good": true}}', Dog(kind="dog", good=True)),
        (dict[str, int], '{"a": 1}', {"a": 1}),
    ],
    ids=["list", "bool", "enum", "union", "dict"],
)
async def test_output_type_shortcut_unwraps(output_type: Any, reply: str, expected: Any) -> None:
    fake = FakeChatClient(reply, capabilities=NATIVE_ONLY.replace(schema_profile="json-schema"))
    feature = StructuredOutput(output_type, strict=output_type != dict[str, int])  # open dicts are never strict
    response = await with_structured_output(fake).get_response("x", options={"features": [feature]})
    assert response.value == expected
    assert response.text == reply  # the final answer's text is the JSON the model sent


async def test_raw_schema_known_only_at_run_time() -> None:
    schema = {
        "type": "object",
        "properties": {"car": {"type": "string"}},
        "required": ["car"],
        "additionalProperties": False,
    }
    fake = FakeChatClient('{"car": "Volvo"}')
    response = await with_structured_output(fake).get_response(
        "x", options={"features": [StructuredOutput(schema=schema)]}
    )
    assert response.value == {"car": "Volvo"}
    assert fake.calls[0].options.response_format.schema["properties"]["car"] == {"type": "string"}  # type: ignore[union-attr]


async def test_creation_time_default_and_per_run_wins() -> None:
    fake = FakeChatClient(['{"name": "A", "age": 1, "email": null}', '{"response": 7}'])
    client = with_structured_output(fake, Person, max_retries=0)
    assert (await client.get_response("x")).value.name == "A"
    assert (await client.get_response("x", output_type=int)).value == 7


async def test_both_feature_and_output_type_is_an_error() -> None:
    client = with_structured_output(FakeChatClient("{}"))
    with pytest.raises(UserError, match="either"):
        await client.get_response("x", output_type=int, options={"features": [StructuredOutput(int)]})


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: StructuredOutput(lambda: 1), "lambda|function|type"),
        (lambda: StructuredOutput(), "exactly one"),
        (lambda: StructuredOutput(int, mode=""), "mode"),  # type: ignore[call-overload]
        (lambda: StructuredOutput(int, max_retries=-1), "max_retries"),
        (lambda: StructuredOutput(int, name=5), "name must be a non-empty string"),  # type: ignore[call-overload]
        (lambda: StructuredOutput(int, name=" "), "name must be a non-empty string"),
        (lambda: StructuredOutput(int, description=5), "description must be a string"),  # type: ignore[call-overload]
    ],
)
def test_bad_feature_fails_at_construction(make: Any, match: str) -> None:
    with pytest.raises(UserError, match=match):
        make()


def test_layer_settings_checked_at_creation() -> None:
    with pytest.raises(UserError, match="mode"):
        with_structured_output(FakeChatClient("x"), mode="magic")  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_feature_naming_a_mode_the_client_lacks_fails_before_any_call(stream: bool) -> None:
    """Which modes exist is the client's list of strategies: a feature's unknown mode is refused
    when its run starts, before the model is called."""
    fake = FakeChatClient("{}")
    client = with_structured_output(fake)
    feature = StructuredOutput(int, mode="magic")  # type: ignore[call-overload]
    with pytest.raises(UserError, match="unknown mode 'magic'; expected one of auto, native, tool"):
        await get(client, stream, "x", options={"features": [feature]})
    assert fake.calls == []


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_strategy_reads_arguments_and_pairs_reask_with_call(stream: bool) -> None:
    fake = FakeChatClient(
        [
            Reply(
                tool_calls=[("Person", '{"name": "Ada", "age": "old", "email": null}')],
                finish_reason=FinishReason.TOOL_CALLS,
            ),
            Reply(
                tool_calls=[("Person", '{"name": "Ada", "age": 36, "email": null}')],
                finish_reason=FinishReason.TOOL_CALLS,
            ),
        ],
        capabilities=TOOLS_ONLY,
    )
    response = await get(with_structured_output(fake), stream, "Ada", output_type=Person)
    assert response.value.age == 36
    first = fake.calls[0].options
    assert first.tool_choice == ForcedTool("Person")
    assert first.tools and first.tools[-1].name == "Person" and first.tools[-1].strict is True  # type: ignore[union-attr]
    retry_messages = fake.calls[1].messages
    call = retry_messages[-2].function_calls[0]
    result = retry_messages[-1].contents[0]
    assert retry_messages[-1].role == "tool"
    assert result.call_id == call.call_id and result.is_error  # type: ignore[union-attr]
    assert "age" in result.result  # type: ignore[union-attr]
    assert [a.strategy for a in response.attempts] == ["tool", "tool"]


@pytest.mark.parametrize("stream", [False, True])
async def test_reask_with_errors_sums_usage(stream: bool) -> None:
    fake = FakeChatClient(
        [
            Reply('{"name": "Ada"}', usage=UsageDetails(10, 5, 15)),
            Reply('{"name": "Ada", "age": 36, "email": null}', usage=UsageDetails(20, 6, 26)),
        ],
        capabilities=NATIVE_ONLY,
    )
    response = await get(with_structured_output(fake), stream, "Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert response.usage == UsageDetails(30, 11, 41)
    assert [a.text for a in response.attempts] == ['{"name": "Ada"}', '{"name": "Ada", "age": 36, "email": null}']
    assert isinstance(response.attempts[0].error, ModelBehaviorError) and response.attempts[1].error is None
    feedback = fake.calls[1].messages[-1]
    assert feedback.role == "user" and "age" in feedback.text
    assert fake.calls[1].messages[-2].text == '{"name": "Ada"}'


@pytest.mark.parametrize("stream", [False, True])
async def test_invalid_after_all_retries_carries_every_attempt(stream: bool) -> None:
    fake = FakeChatClient(['{"response": "x"}', '{"response": "y"}', '{"response": "z"}'], capabilities=NATIVE_ONLY)
    with pytest.raises(ModelBehaviorError) as caught:
        await get(with_structured_output(fake, max_retries=2), stream, "x", output_type=int)
    assert caught.value.raw_texts == ['{"response": "x"}', '{"response": "y"}', '{"response": "z"}']
    assert caught.value.usage == UsageDetails(30, 15, 45)
    assert len(fake.calls) == 3


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(refusal="I can't help with that.", finish_reason=FinishReason.REFUSAL), RefusalError),
        (Reply('{"name": "Ad', finish_reason=FinishReason.LENGTH), IncompleteOutputError),
        (Reply("", finish_reason=FinishReason.CONTENT_FILTER), ContentFilterError),
    ],
    ids=["refusal", "length", "content_filter"],
)
async def test_refusal_truncation_filter_raise_their_own_errors_without_retry(
    stream: bool, reply: Reply, error: type[Exception]
) -> None:
    fake = FakeChatClient([reply], capabilities=NATIVE_ONLY)
    with pytest.raises(error) as caught:
        await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert len(fake.calls) == 1
    assert len(caught.value.attempts) == 1 and caught.value.usage == UsageDetails(10, 5, 15)  # type: ignore[attr-defined]
    if isinstance(caught.value, RefusalError):
        assert caught.value.refusal == "I can't help with that."


async def test_auto_falls_back_when_backend_ignores_the_format() -> None:
    caps = Capabilities(native_json_schema=True, json_object=True)
    fake = FakeChatClient(["Sure! Ada is 36 years old.", '{"name": "Ada", "age": 36}'], capabilities=caps)
    response = await with_structured_output(fake).get_response("x", output_type=Person)
    assert [a.strategy for a in response.attempts] == ["native", "json_object"]
    second = fake.calls[1].options
    assert second.response_format is not None and second.response_format.type == "json_object"
    assert (
        second.instructions
        and '{"name": "<string>", "age": <integer>, "email": "<string>" | null}' in second.instructions
    )


async def test_json_object_and_prompted_are_lenient() -> None:
    fenced = 'Here you go:\n```json\n{"name": "Ada", "age": 36,}\n```'
    for caps in (JSON_MODE, PROMPT_ONLY):
        fake = FakeChatClient(fenced, capabilities=caps)
        response = await with_structured_output(fake).get_response("x", output_type=Person)
        assert response.value == Person(name="Ada", age=36)


@pytest.mark.parametrize("stream", [False, True])
async def test_prompted_prefill_is_prepended(stream: bool) -> None:
    fake = FakeChatClient('Ada", "age": 36}', capabilities=PREFILL)
    response = await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    sent = fake.calls[0].messages
    assert sent[-1].role == "assistant" and sent[-1].text == '{"name": "'  # a string value is opened
    assert response.text == '{"name": "Ada", "age": 36}'


class _Email(BaseModel):
    kind: Literal["email"]
    address: str


class _Phone(BaseModel):
    kind: Literal["phone"]
    number: str


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("output_type", "prefill", "continued", "expected"),
    [
        # `{"numbers": ` was continued by SmolLM2 as `4, 8, 15}`: the bracket is in the prefill
        (list[int], '{"response": [', "4, 8, 15]}", [4, 8, 15]),
        # a tagged union: every option starts with its tag, so the tag's quote is opened too
        (
            list[_Email | _Phone],
            '{"response": [{"kind": "',
            'phone", "number": "555"}]}',
            [_Phone(kind="phone", number="555")],
        ),
    ],
)
async def test_prompted_prefill_opens_as_deep_as_one_shape(
    stream: bool, output_type: Any, prefill: str, continued: str, expected: Any
) -> None:
    fake = FakeChatClient(continued, capabilities=PREFILL)
    response = await get(with_structured_output(fake), stream, "x", output_type=output_type)
    assert fake.calls[0].messages[-1].role == "assistant" and fake.calls[0].messages[-1].text == prefill
    assert response.value == expected and response.text == prefill + continued


async def test_instructions_of_caller_are_kept_in_prompted_mode() -> None:
    fake = FakeChatClient('{"response": 1}', capabilities=PROMPT_ONLY)
    await with_structured_output(fake).get_response("x", output_type=int, options={"instructions": "Be terse."})
    instructions = fake.calls[0].options.instructions or ""
    assert instructions.startswith("Be terse.") and '{"response": <integer>}' in instructions


async def test_streaming_partial_values_grow_field_by_field() -> None:
    text = '{"name": "Ada Lovelace", "age": 36, "email": "ada@example.org"}'
    fake = FakeChatClient(Reply(text, chunk_size=3), capabilities=NATIVE_ONLY)
    stream = with_structured_output(fake).get_response("x", stream=True, output_type=Person)
    seen = []  # partial_value is a live view that keeps growing: record what each update showed
    async for update in stream:
        if update.partial_value is not None:
            seen.append((update.partial_value.name, update.partial_value.age, update.partial_value.email))
    names = [name for name, _, _ in seen if name]
    assert names[0] != names[-1] and names[-1] == "Ada Lovelace"  # the open string grows
    assert ("Ada Lovelace", None, None) in seen and ("Ada Lovelace", 36, None) in seen  # field by field
    assert (await stream.get_final_response()).value == Person(name="Ada Lovelace", age=36, email="ada@example.org")


async def test_streaming_list_items_arrive_one_by_one() -> None:
    text = json.dumps({"response": [{"name": f"P{i}", "age": i, "email": None} for i in range(4)]})
    fake = FakeChatClient(Reply(text, chunk_size=5), capabilities=NATIVE_ONLY)
    stream = with_structured_output(fake).get_response("x", stream=True, output_type=list[Person])
    arrivals = [item for update in [u async for u in stream] for item in update.completed_items]
    assert arrivals == [Person(name=f"P{i}", age=i) for i in range(4)]


async def test_reasked_stream_marks_updates_by_attempt() -> None:
    fake = FakeChatClient([Reply('{"response": "no"}'), Reply('{"response": 5}')], capabilities=NATIVE_ONLY)
    stream = with_structured_output(fake).get_response("x", stream=True, output_type=int)
    updates = [u async for u in stream]
    attempts = [u.attempt for u in updates]
    assert attempts == sorted(attempts) and set(attempts) == {0, 1}
    assert "".join(u.text for u in updates if u.attempt == 1) == '{"response": 5}'
    final = await stream.get_final_response()
    assert final.value == 5 and len(final.attempts) == 2


async def test_stream_of_broken_json_is_reasked_not_crashed() -> None:
    fake = FakeChatClient([Reply('{"response": [1, 2,, oops'), Reply('{"response": [1, 2]}')], capabilities=NATIVE_ONLY)
    stream = with_structured_output(fake).get_response("x", stream=True, output_type=list[int])
    updates = [u async for u in stream]
    assert {u.attempt for u in updates} == {0, 1}
    assert (await stream.get_final_response()).value == [1, 2]


def test_sync_entry_point_returns_typed_value() -> None:
    client = with_structured_output(FakeChatClient('{"response": 3}'))
    assert client.get_response_sync("x", output_type=int).value == 3


@pytest.mark.parametrize("caps", [JSON_MODE, PROMPT_ONLY], ids=["json_object", "prompted"])
async def test_cut_off_unconstrained_answer_uses_a_complete_value_only(caps: Capabilities) -> None:
    rambling = Reply('{"name": "Ada", "age": 36} Ada was a mathematician who', finish_reason=FinishReason.LENGTH)
    response = await with_structured_output(FakeChatClient(rambling, capabilities=caps)).get_response(
        "x", output_type=Person
    )
    assert response.value == Person(name="Ada", age=36)
    # a truncated tail is never repaired into a value (the age could be 3 of 36), and a re-ask
    # would be cut off again: IncompleteOutputError at once, carrying the attempt
    fake = FakeChatClient(
        [Reply('{"name": "Ada", "age": 3', finish_reason=FinishReason.LENGTH), Reply('{"name": "Ada", "age": 36}')],
        capabilities=caps,
    )
    with pytest.raises(IncompleteOutputError, match="before it held a complete JSON value") as caught:
        await with_structured_output(fake).get_response("x", output_type=Person)
    assert len(fake.calls) == 1 and caught.value.raw_texts == ['{"name": "Ada", "age": 3']


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("caps", [JSON_MODE, PROMPT_ONLY], ids=["json_object", "prompted"])
async def test_cut_off_after_a_complete_invalid_value_is_reasked_with_its_errors(
    caps: Capabilities, stream: bool
) -> None:
    rambling = '{"name": "Ada", "age": "Meow"} Ada was a mathematician who'
    fake = FakeChatClient(
        [Reply(rambling, finish_reason=FinishReason.LENGTH), Reply('{"name": "Ada", "age": 36}')], capabilities=caps
    )
    response = await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert response.value.age == 36 and len(fake.calls) == 2
    error = response.attempts[0].error
    assert isinstance(error, ModelBehaviorError) and "age" in str(error) and "integer" in str(error)
    assert "age" in fake.calls[1].messages[-1].text


# ---------------------------------------------------------------- the settings, spelled once


def test_settings_are_one_frozen_dataclass_on_the_feature() -> None:
    feature = StructuredOutput(int, mode="tool", max_retries=1, name="count")
    assert feature.settings == OutputSettings(name="count", mode="tool", max_retries=1)
    assert (feature.mode, feature.max_retries, feature.name, feature.strict) == ("tool", 1, "count", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        feature.settings.max_retries = 5  # type: ignore[misc]
    with pytest.raises(UserError, match="max_retries"):
        OutputSettings(max_retries=-1)


def test_every_spelling_of_the_settings_keywords_matches_the_dataclass() -> None:
    """The keywords `StructuredOutput(...)` and `with_structured_output(...)` take are the fields
    of `OutputSettings`: same names, same types, same defaults."""
    fields = {field.name: field for field in dataclasses.fields(OutputSettings)}
    hints = typing.get_type_hints(OutputSettings)
    assert typing.get_type_hints(SettingsKeywords) == hints
    factory = inspect.signature(with_structured_output).parameters
    factory_hints = typing.get_type_hints(with_structured_output)
    for name, field in fields.items():
        assert factory[name].default == field.default, name
        assert factory_hints[name] == hints[name], name


@pytest.mark.parametrize("stream", [False, True])
async def test_the_layer_takes_its_settings_as_an_output_settings(stream: bool) -> None:
    fake = FakeChatClient(["not json", "{}"])
    client = StructuredOutputChatClient(fake, settings=OutputSettings(max_retries=0, mode="prompted"))
    with pytest.raises(ModelBehaviorError):
        await get(client, stream, "x", output_type=int)
    assert len(fake.calls) == 1  # no re-ask: max_retries=0 reached the run
    with pytest.raises(UserError, match="OutputSettings"):
        StructuredOutputChatClient(fake, settings={"max_retries": 0})  # type: ignore[arg-type]


class _Shared(BaseModel):
    name: str


def test_features_of_one_type_share_its_schema() -> None:
    """A feature made for every call reuses the schema made for its type, strict setting and name;
    a raw schema dict (unhashable) gets its own, and another setting another schema."""
    first, second = StructuredOutput(_Shared), StructuredOutput(_Shared, mode="native", max_retries=0)
    assert first.output_schema is second.output_schema
    assert StructuredOutput(_Shared, name="other").output_schema is not first.output_schema
    assert StructuredOutput(_Shared, strict=False).output_schema is not first.output_schema
    raw = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    raw_one, raw_two = StructuredOutput(schema=raw), StructuredOutput(schema=dict(raw))
    assert raw_one.output_schema is not raw_two.output_schema
    assert raw_one.output_schema.output_type is raw and raw_two.output_schema.output_type is not raw
