"""Strategy fallback over the scripted fake client: an ignored strategy moves the run on without
spending a re-ask, the layer remembers it for the next call, and plain-text and open types work
on every strategy. Both sides are asserted: what the model was asked and what the caller got."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from python_source import parse

from so_middleware import (
    Capabilities,
    ChatResponse,
    FinishReason,
    IncompleteOutputError,
    ModelBehaviorError,
    UsageDetails,
    UserError,
)
from so_middleware.middleware.strategies import (
    DEFAULT_STRATEGIES,
    AttemptRequest,
    Strategy,
    Target,
    with_strategy,
)
from so_middleware.middleware.strategies.prompted import Prompted
from so_middleware.middleware.structured_output import StructuredOutput, with_structured_output
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio

EVERYTHING = FakeChatClient().capabilities.replace(name="everything")  # every strategy, OpenAI strict
NO_TOOLS = Capabilities(name="no-tools", native_json_schema=True, json_object=True, schema_profile="openai-strict")
ANTHROPIC_LIKE = Capabilities(
    name="anthropic-like", native_json_schema=True, tools=True, forced_tool_choice=True, schema_profile="anthropic"
)
PLAIN = Capabilities(name="plain")
VALID = '{"name": "Ada", "age": 36}'


class Person(BaseModel):
    name: str
    age: int


class Inventory(BaseModel):
    counts: dict[str, int]


async def get(client: Any, stream: bool, *args: Any, **kwargs: Any) -> ChatResponse[Any]:
    if stream:
        return await client.get_response(*args, stream=True, **kwargs).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(*args, **kwargs)  # type: ignore[no-any-return]


def ignoring_backend() -> FakeChatClient:
    """Answers prose to every constrained request, and JSON only when prompted (no format, no tools)."""

    def answer(messages: Any, options: Any) -> str:
        return "Sure! Ada is 36." if options.response_format is not None or options.tools else VALID

    return FakeChatClient(answer, capabilities=EVERYTHING)


@pytest.mark.parametrize("stream", [False, True])
async def test_fallback_to_prompted_spends_no_reask(stream: bool) -> None:
    fake = ignoring_backend()
    response = await get(with_structured_output(fake, max_retries=0), stream, "Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert [a.strategy for a in response.attempts] == ["native", "tool", "json_object", "prompted"]
    assert [a.error is None for a in response.attempts] == [False, False, False, True]
    last = fake.calls[-1].options
    assert last.response_format is None and not last.tools and "JSON" in (last.instructions or "")


@pytest.mark.parametrize("stream", [False, True])
async def test_next_call_starts_where_it_worked_and_reset_forgets(stream: bool) -> None:
    fake = ignoring_backend()
    client = with_structured_output(fake)
    await get(client, stream, "Ada, 36", output_type=Person)
    assert len(fake.calls) == 4
    lesson = client.learned[("FakeChatClient", "fake-model")]
    assert lesson.ignored == {"native", "tool", "json_object"} and lesson.worked == "prompted"
    caps = client.capabilities
    assert not caps.native_json_schema and not caps.tools and not caps.json_object
    assert fake.capabilities.native_json_schema  # the inner profile is not changed

    second = await get(client, stream, "Ada, 36", output_type=Person)
    assert [a.strategy for a in second.attempts] == ["prompted"] and len(fake.calls) == 5

    client.reset_learned()
    assert dict(client.learned) == {} and client.capabilities.native_json_schema
    third = await get(client, stream, "Ada, 36", output_type=Person)
    assert third.attempts[0].strategy == "native"


async def test_learned_per_model() -> None:
    fake = ignoring_backend()
    client = with_structured_output(fake)
    await client.get_response("x", output_type=Person, options={"model": "m1"})
    other = await client.get_response("x", output_type=Person, options={"model": "m2"})
    assert other.attempts[0].strategy == "native"
    assert set(client.learned) == {("FakeChatClient", "m1"), ("FakeChatClient", "m2")}


async def test_concurrent_first_calls_all_reach_a_working_strategy() -> None:
    fake = ignoring_backend()
    client = with_structured_output(fake)
    responses = await asyncio.gather(*(client.get_response("x", output_type=Person) for _ in range(50)))
    assert all(r.value == Person(name="Ada", age=36) for r in responses)
    assert client.learned[("FakeChatClient", "fake-model")].worked == "prompted"
    calls = len(fake.calls)
    await client.get_response("x", output_type=Person)
    assert len(fake.calls) == calls + 1


async def test_invalid_json_is_reasked_not_a_fallback() -> None:
    fake = FakeChatClient(['{"name": "Ada"}', '{"age": 36}', VALID], capabilities=EVERYTHING)
    response = await with_structured_output(fake).get_response("x", output_type=Person)
    assert [a.strategy for a in response.attempts] == ["native", "native", "native"]
    with pytest.raises(ModelBehaviorError) as caught:
        await with_structured_output(
            FakeChatClient(['{"name": "Ada"}', '{"age": 36}'], capabilities=EVERYTHING), max_retries=1
        ).get_response("x", output_type=Person)
    assert len(caught.value.attempts) == 2


async def test_no_tool_call_after_a_forced_tool_choice_is_ignored_even_when_text_starts_like_json() -> None:
    tools_then_json = Capabilities(name="t", tools=True, forced_tool_choice=True, json_object=True)
    fake = FakeChatClient(['{"name": "Ada"', VALID], capabilities=tools_then_json)
    response = await with_structured_output(fake, max_retries=0).get_response("x", output_type=Person)
    assert [a.strategy for a in response.attempts] == ["tool", "json_object"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("text", ["To find the age we", "", "```json\n"], ids=["prose", "nothing", "fence"])
async def test_a_cut_off_answer_is_never_evidence_that_the_strategy_was_ignored(stream: bool, text: str) -> None:
    """Before: a cut-off answer that did not start like JSON (prose; or nothing, as llama-server
    streams when it withholds a cut-off "```json") was judged "native ignored": a second call was
    paid, and the layer skipped grammar-enforced native for every later call."""
    caps = NO_TOOLS.replace(json_object=False)
    fake = FakeChatClient([Reply(text, finish_reason=FinishReason.LENGTH, chunk_size=3), VALID], capabilities=caps)
    client = with_structured_output(fake)
    with pytest.raises(IncompleteOutputError) as caught:
        await get(client, stream, "x", output_type=Person)
    attempt = caught.value.attempts[0]
    assert len(fake.calls) == 1 and len(caught.value.attempts) == 1
    assert (attempt.strategy, attempt.text, attempt.finish_reason) == ("native", text, FinishReason.LENGTH)
    assert caught.value.usage is not None and caught.value.usage.output_tokens == 5
    assert dict(client.learned) == {}
    response = await get(client, stream, "x", output_type=Person)  # the next call starts at native again
    assert [a.strategy for a in response.attempts] == ["native"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("text", ["John Smith is a 3", ""], ids=["prose", "nothing"])
async def test_an_answer_that_used_every_allowed_token_is_cut_off_whatever_its_finish_reason(
    stream: bool, text: str
) -> None:
    """llama-server's Responses route reports a cut-off answer as `completed`: every allowed token
    used and no valid value is a cut-off too. Before: judged "native ignored" and learned."""
    caps = NO_TOOLS.replace(json_object=False)
    cut = Reply(text, finish_reason=FinishReason.STOP, usage=UsageDetails(30, 6, 36), chunk_size=3)
    fake = FakeChatClient([cut, VALID], capabilities=caps)
    client = with_structured_output(fake)
    with pytest.raises(IncompleteOutputError) as caught:
        await get(client, stream, "x", output_type=Person, options={"max_tokens": 6})
    assert len(fake.calls) == 1 and [a.text for a in caught.value.attempts] == [text]
    assert dict(client.learned) == {}
    fits = FakeChatClient([Reply(VALID, usage=UsageDetails(30, 6, 36))], capabilities=caps)
    response = await get(with_structured_output(fits), stream, "x", output_type=Person, options={"max_tokens": 6})
    assert response.value == Person(name="Ada", age=36)  # a valid answer that fits exactly is the answer


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_server_bound_in_the_profile_counts_when_the_request_names_no_max_tokens(stream: bool) -> None:
    """The embedded server bounds an answer that names no `max_tokens` (`-n`); its profile says so
    (`default_max_tokens`), so an answer that used that many tokens is a cut-off, not an invalid answer."""
    caps = NO_TOOLS.replace(json_object=False, default_max_tokens=6)
    cut = Reply('{"name": "A', finish_reason=FinishReason.STOP, usage=UsageDetails(30, 6, 36), chunk_size=3)
    fake = FakeChatClient([cut, VALID], capabilities=caps)
    with pytest.raises(IncompleteOutputError) as caught:
        await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert len(fake.calls) == 1 and len(caught.value.attempts) == 1


async def test_forced_mode_never_falls_back() -> None:
    fake = FakeChatClient(["Sure!", "Fine!", "Okay!"], capabilities=EVERYTHING)
    with pytest.raises(ModelBehaviorError) as caught:
        await with_structured_output(fake, mode="native").get_response("x", output_type=Person)
    assert [a.strategy for a in caught.value.attempts] == ["native"] * 3
    assert dict(with_structured_output(fake).learned) == {}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("mode", "caps", "reason"),
    [
        ("tool", PLAIN, "tools=False"),
        ("native", PLAIN, "native_json_schema=False"),
        ("json_object", PLAIN, "json_object=False"),
        ("native", ANTHROPIC_LIKE, "open object"),
    ],
)
async def test_forced_mode_the_profile_rules_out_is_refused_before_any_call(
    stream: bool, mode: Any, caps: Capabilities, reason: str
) -> None:
    fake = FakeChatClient(VALID, capabilities=caps)
    client = with_structured_output(fake, mode=mode)
    output_type = Inventory if caps is ANTHROPIC_LIKE else Person
    with pytest.raises(UserError, match=rf"mode='{mode}'.*{caps.name!r}.*{reason}"):
        await get(client, stream, "x", output_type=output_type)
    assert fake.calls == []


# ---------------------------------------------------------------- plain text


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("mode", ["auto", "native", "tool", "json_object", "prompted"])
async def test_str_is_the_text_on_every_mode(stream: bool, mode: Any) -> None:
    fake = FakeChatClient("Ada Lovelace was a mathematician.", capabilities=EVERYTHING)
    response = await get(with_structured_output(fake, mode=mode), stream, "Who was Ada?", output_type=str)
    assert response.value == response.text == "Ada Lovelace was a mathematician."
    sent = fake.calls[0].options
    assert sent.response_format is None and not sent.tools and sent.instructions is None
    assert [a.strategy for a in response.attempts] == ["text"]


@pytest.mark.parametrize("stream", [False, True])
async def test_annotated_str_constraints_are_reasked(stream: bool) -> None:
    fake = FakeChatClient(["Ada Lovelace", "Ada"], capabilities=EVERYTHING)
    short = Annotated[str, Field(max_length=5)]
    response = await get(with_structured_output(fake), stream, "Name?", output_type=short)
    assert response.value == "Ada" and len(fake.calls) == 2
    assert "at most 5" in fake.calls[1].messages[-1].text


async def test_str_streams_its_text() -> None:
    fake = FakeChatClient(Reply("Hello there, friend.", chunk_size=3), capabilities=EVERYTHING)
    stream = with_structured_output(fake).get_response("hi", stream=True, output_type=str)
    texts = [u.text async for u in stream]
    assert "".join(texts) == "Hello there, friend." and len(texts) > 2
    assert (await stream.get_final_response()).value == "Hello there, friend."


# ---------------------------------------------------------------- open types and strictness


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("output_type", "reply", "expected"),
    [
        (dict[str, int], '{"a": 1, "b": 2}', {"a": 1, "b": 2}),
        (dict[str, Any], '{"a": [1], "b": "x"}', {"a": [1], "b": "x"}),
        (Inventory, '{"counts": {"pens": 3}}', Inventory(counts={"pens": 3})),
    ],
    ids=["dict-int", "dict-any", "model-with-dict"],
)
async def test_open_types_need_no_flag(stream: bool, output_type: Any, reply: str, expected: Any) -> None:
    for caps in (EVERYTHING, NO_TOOLS.replace(schema_profile="json-schema")):
        fake = FakeChatClient(reply, capabilities=caps)
        response = await get(with_structured_output(fake), stream, "x", output_type=output_type)
        assert response.value == expected
        fmt = fake.calls[0].options.response_format
        assert fmt is not None and fmt.type == "json_schema"
        assert fmt.strict is (False if caps.schema_profile == "openai-strict" else None)
        assert response.attempts[0].strict is False


async def test_strict_where_the_type_allows_it_and_recorded() -> None:
    fake = FakeChatClient(VALID, capabilities=EVERYTHING)
    response = await with_structured_output(fake).get_response("x", output_type=Person)
    assert fake.calls[0].options.response_format.strict is True  # type: ignore[union-attr]
    assert response.attempts[0].strict is True
    assert response.additional_properties["so_middleware.structured_output"]["strict"] is True


def test_explicit_strict_on_an_open_type_is_refused_with_todays_message() -> None:
    with pytest.raises(UserError, match="strict=False"):
        StructuredOutput(dict[str, int], strict=True)
    with pytest.raises(UserError, match="strict"):
        StructuredOutput(Person, strict="yes")  # type: ignore[call-overload]


async def test_open_type_on_anthropic_dialect_skips_native_and_tool() -> None:
    fake = FakeChatClient('{"counts": {"pens": 3}}', capabilities=ANTHROPIC_LIKE)
    response = await with_structured_output(fake).get_response("x", output_type=Inventory)
    assert response.value == Inventory(counts={"pens": 3})
    assert [a.strategy for a in response.attempts] == ["prompted"]


@pytest.mark.parametrize("stream", [False, True])
async def test_prompted_reads_an_echoed_prefill_the_profile_did_not_announce(stream: bool) -> None:
    fake = FakeChatClient('{"name": "Ada", "age": 36}', capabilities=Capabilities(name="p", assistant_prefill=True))
    response = await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert fake.calls[0].messages[-1].text == '{"name": "'
    assert response.value == Person(name="Ada", age=36) and response.text == '{"name": "Ada", "age": 36}'


async def test_strict_false_never_sends_strict() -> None:
    fake = FakeChatClient(VALID, capabilities=EVERYTHING)
    response = await with_structured_output(fake, strict=False).get_response("x", output_type=Person)
    assert fake.calls[0].options.response_format.strict is False  # type: ignore[union-attr]
    tool_fake = FakeChatClient(Reply(tool_calls=[("Person", VALID)]), capabilities=EVERYTHING)
    await with_structured_output(tool_fake, strict=False, mode="tool").get_response("x", output_type=Person)
    assert tool_fake.calls[0].options.tools[-1].strict is None  # type: ignore[index,union-attr]
    assert response.attempts[0].strict is False


# ---------------------------------------------------------------- a new strategy is one file


class Regex(Strategy):
    """What a new strategy file holds: a server-side regex constraint sent in `extra_body`."""

    name = "regex"

    def in_auto(self, capabilities: Capabilities) -> bool:
        return capabilities.name == "regex-server"

    def plan(self, target: Target, messages: list[Any], options: Any) -> AttemptRequest:
        return AttemptRequest(self, list(messages), options.replace(extra_body={"regex": r"\{.*\}"}))


REGEX_FIRST = with_strategy(DEFAULT_STRATEGIES, Regex(), before="tool")


async def test_a_strategy_in_a_clients_list_is_a_mode_and_takes_its_place_in_auto() -> None:
    assert [s.name for s in REGEX_FIRST] == ["native", "regex", "tool", "json_object", "prompted"]
    fake = FakeChatClient(VALID, capabilities=PLAIN)
    client = with_structured_output(fake, mode="regex", strategies=REGEX_FIRST)  # type: ignore[arg-type]
    response = await client.get_response("x", output_type=Person)
    assert response.value == Person(name="Ada", age=36) and response.attempts[0].strategy == "regex"
    assert fake.calls[0].options.extra_body == {"regex": r"\{.*\}"}
    ignoring = FakeChatClient(["Sure!", VALID], capabilities=EVERYTHING.replace(name="regex-server"))
    response = await with_structured_output(ignoring, strategies=REGEX_FIRST).get_response("x", output_type=Person)
    assert [a.strategy for a in response.attempts] == ["native", "regex"]


async def test_a_clients_strategies_are_its_own() -> None:
    """Two clients with different lists, used in turn, each run their own: one client's list
    changes no other client, and the default list stays as it was (there is no process-wide one)."""
    regex_server = EVERYTHING.replace(name="regex-server")
    with_regex = with_structured_output(
        FakeChatClient(["Sure!", VALID], capabilities=regex_server), strategies=REGEX_FIRST
    )
    plain = FakeChatClient(VALID, capabilities=regex_server)
    response = await with_structured_output(plain).get_response("x", output_type=Person)
    assert [a.strategy for a in response.attempts] == ["native"]
    response = await with_regex.get_response("x", output_type=Person)
    assert [a.strategy for a in response.attempts] == ["native", "regex"]
    response = await with_structured_output(FakeChatClient(["Sure!", VALID], capabilities=regex_server)).get_response(
        "x", output_type=Person
    )
    assert [a.strategy for a in response.attempts] == ["native", "tool"]
    assert [s.name for s in with_regex.strategies] == ["native", "regex", "tool", "json_object", "prompted"]
    assert [s.name for s in with_structured_output(plain).strategies] == ["native", "tool", "json_object", "prompted"]
    assert [s.name for s in DEFAULT_STRATEGIES] == ["native", "tool", "json_object", "prompted"]
    with pytest.raises(UserError, match="unknown mode 'regex'"):
        await with_structured_output(plain).get_response(
            "x",
            options={"features": [StructuredOutput(Person, mode="regex")]},  # type: ignore[call-overload]
        )


async def test_a_client_with_fewer_strategies_never_tries_the_others() -> None:
    capable = FakeChatClient(VALID, capabilities=EVERYTHING)  # the default list would start at native
    client = with_structured_output(capable, strategies=[Prompted()])
    response = await client.get_response("x", output_type=Person)
    assert [a.strategy for a in response.attempts] == ["prompted"]
    assert capable.calls[0].options.response_format is None and not capable.calls[0].options.tools
    with pytest.raises(UserError, match="unknown mode 'tool'; expected one of auto, prompted"):
        with_structured_output(capable, mode="tool", strategies=[Prompted()])


def test_with_strategy_checks_its_arguments_and_changes_nothing() -> None:
    with pytest.raises(UserError, match="unknown strategy"):
        with_strategy(DEFAULT_STRATEGIES, Regex(), before="nope")
    with pytest.raises(UserError, match="name"):
        with_strategy(DEFAULT_STRATEGIES, Strategy(), before="tool")
    with pytest.raises(UserError, match="non-empty"):
        with_structured_output(FakeChatClient(VALID), strategies=[])
    with pytest.raises(UserError, match="unique"):
        with_structured_output(FakeChatClient(VALID), strategies=[Prompted(), Prompted()])
    assert [s.name for s in DEFAULT_STRATEGIES] == ["native", "tool", "json_object", "prompted"]


def test_the_engine_and_strategies_do_not_import_the_layer() -> None:
    """The run loop and the strategies sit below the layer: no import of it, not even for typing."""
    import ast
    from pathlib import Path

    import so_middleware.middleware as middleware

    root = Path(middleware.__file__).parent
    for path in [*(root / "structured_output").glob("_*.py"), *(root / "strategies").glob("*.py")]:
        for node in ast.walk(parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "structured_output" not in (node.module or ""), path.name
