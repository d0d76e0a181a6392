"""Loops under grammar: an answer cut off at its limit while repeating itself (on a backend prone to
loops, a stream about to be) is re-asked once with the engine's loop-breaking sampling; a complete,
valid answer is never a loop, however repetitive; a re-ask that repeats the answer before it is
sampled otherwise or ends the run. Scripted backends: both sides asserted."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FinishReason,
    FunctionCallContent,
    IncompleteOutputError,
    ModelBehaviorError,
    UsageDetails,
    providers,
)
from so_middleware.core import Capabilities
from so_middleware.middleware.structured_output import with_structured_output
from so_middleware.providers.anthropic._profiles import ANTHROPIC_API, ANTHROPIC_COMPATIBLE, LLAMA_SERVER_MESSAGES
from so_middleware.providers.openai._profiles import (
    LLAMA_SERVER_CHAT,
    LLAMA_SERVER_RESPONSES,
    OPENAI_API,
    OPENAI_API_RESPONSES,
    OPENAI_COMPATIBLE,
)
from so_middleware.schema._loops import BOUND_IT, MIN_CUT_SPAN, loop_in
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio

LOOPS = FakeChatClient().capabilities.replace(name="loops", loop_breaking=(("dry_multiplier", 0.8),))
NO_FIELDS = FakeChatClient().capabilities.replace(name="no-fields")
VALID = '{"name": "Ada", "age": 36}'
VARIED = "".join(random.Random(0).choices("abcdefghij ", k=2000))
LOOPING = '{"name": "A' + "la" * 400  # the grammar keeps the string open: cut off at the limit


class Person(BaseModel):
    name: str
    age: int


def cut(text: str) -> Reply:
    return Reply(text, finish_reason=FinishReason.LENGTH, chunk_size=8)


async def get(client: Any, stream: bool, *args: Any, **kwargs: Any) -> ChatResponse[Any]:
    if stream:
        return await client.get_response(*args, stream=True, **kwargs).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(*args, **kwargs)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        (" " * 250, " "),
        ('{"tags": [' + '"x", ' * 60, '"x", '),
        ("Once upon a time. " + "la" * 120, "la"),
        ('{"items": [' + '{"name": "Widget", "price": 3}, ' * 8, '{"name": "Widget", "price": 3}, '),
        ('{"rows": [' + f'{{"note": "{"long row " * 16}"}}, ' * 7, f'{{"note": "{"long row " * 16}"}}, '),  # 160
    ],
)
def test_a_periodic_tail_is_a_loop(text: str, unit: str) -> None:
    loop = loop_in(text)
    assert loop is not None and len(loop.unit) == len(unit) and loop.unit in unit * 2  # the unit, maybe rotated


@pytest.mark.parametrize(
    "text",
    [
        "",
        " " * (MIN_CUT_SPAN - 10),  # too short to tell from indentation
        '{"ids": [' + ", ".join(str(n) for n in range(200)) + "",  # a long list whose items differ
        "The quick brown fox jumps over the lazy dog. " * 3 + "Then it slept for a long while, " * 2,
        VARIED,  # long, varied
    ],
)
def test_a_long_or_varied_answer_is_not_a_loop(text: str) -> None:
    assert loop_in(text) is None


@pytest.mark.parametrize("stream", [False, True])
async def test_a_looping_answer_is_reasked_once_with_the_loop_breaking_fields(stream: bool) -> None:
    fake = FakeChatClient([cut(LOOPING), VALID], capabilities=LOOPS)
    response = await get(with_structured_output(fake), stream, "Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    first, second = fake.calls
    assert not (first.options.extra_body or {}) and second.options.extra_body == {"dry_multiplier": 0.8}
    assert second.messages == first.messages  # the same request, sampled otherwise: no loop fed back
    looped = response.attempts[0]
    assert isinstance(looped.error, IncompleteOutputError) and "looped" in str(looped.error)
    assert response.attempts[0].text.startswith('{"name": "Alala')


PRONE = LOOPS.replace(prone_to_loops=True)
ENDLESS = '{"name": "A' + "la" * 4000  # a server that would go on past the limit


async def test_a_looping_stream_on_a_backend_prone_to_loops_is_closed_at_its_limit() -> None:
    fake = FakeChatClient([Reply(ENDLESS, chunk_size=8), VALID], capabilities=PRONE)
    stream = with_structured_output(fake).get_response(
        "Ada, 36", output_type=Person, options={"max_tokens": 100}, stream=True
    )
    attempts = [update.attempt async for update in stream]
    response = await stream.get_final_response()
    assert response.value == Person(name="Ada", age=36)
    assert fake.closed_streams == 2
    looped = response.attempts[0]
    assert len(looped.text) == 100 * 8  # closed with no token left to close it: not waited for past its limit
    assert looped.finish_reason == FinishReason.LENGTH and looped.usage is None and attempts[-1] == 1


@pytest.mark.parametrize("profile", [LOOPS, PRONE], ids=["hosted", "prone"])
async def test_a_looping_stream_is_read_to_its_limit_without_a_budget_or_on_a_hosted_model(profile: Any) -> None:
    """No limit known, or a backend not prone to loops: the loop is judged where the server cut it."""
    fake = FakeChatClient([cut(LOOPING), VALID], capabilities=profile)
    stream = with_structured_output(fake).get_response("Ada, 36", output_type=Person, stream=True)
    response = await stream.get_final_response()
    assert response.value == Person(name="Ada", age=36)
    assert response.attempts[0].text == LOOPING and response.attempts[0].usage is not None
    assert "looped" in str(response.attempts[0].error)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_loop_after_the_loop_breaking_reask_ends_the_run_with_every_attempt(stream: bool) -> None:
    fake = FakeChatClient([cut(LOOPING)], capabilities=LOOPS)
    with pytest.raises(IncompleteOutputError, match="looped even when sampled with") as caught:
        await get(with_structured_output(fake, max_retries=2), stream, "x", output_type=Person)
    assert len(fake.calls) == 2 and len(caught.value.attempts) == 2
    assert all(a.text.startswith('{"name": "Alala') for a in caught.value.attempts)
    assert stream or caught.value.usage is not None


@pytest.mark.parametrize("stream", [False, True])
async def test_a_loop_on_an_engine_without_loop_breaking_fields_ends_at_once(stream: bool) -> None:
    fake = FakeChatClient([cut(LOOPING), VALID], capabilities=NO_FIELDS)
    with pytest.raises(IncompleteOutputError, match="looped") as caught:
        await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert len(fake.calls) == 1 and len(caught.value.attempts) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_cut_off_that_is_not_a_loop_stays_final(stream: bool) -> None:
    long_answer = '{"name": "' + VARIED
    fake = FakeChatClient([cut(long_answer), VALID], capabilities=LOOPS)
    with pytest.raises(IncompleteOutputError, match="raise max_tokens"):
        await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert len(fake.calls) == 1


async def test_no_loop_breaking_reask_without_a_reask_left() -> None:
    fake = FakeChatClient([cut(LOOPING), VALID], capabilities=LOOPS)
    with pytest.raises(IncompleteOutputError, match="looped"):
        await with_structured_output(fake, max_retries=0).get_response("x", output_type=Person)
    assert len(fake.calls) == 1


async def test_the_callers_own_sampling_field_wins() -> None:
    fake = FakeChatClient(
        [cut(LOOPING), VALID], capabilities=LOOPS.replace(loop_breaking=(("dry_multiplier", 0.8), ("seed", 7)))
    )
    options = {"extra_body": {"dry_multiplier": 0.1}}
    await with_structured_output(fake).get_response("x", output_type=Person, options=options)
    assert fake.calls[1].options.extra_body == {"dry_multiplier": 0.1, "seed": 7}
    assert options == {"extra_body": {"dry_multiplier": 0.1}}  # the caller's options are not changed


@pytest.mark.parametrize(
    ("profile", "fields"),
    [
        (LLAMA_SERVER_CHAT, {"frequency_penalty"}),
        (LLAMA_SERVER_RESPONSES, {"frequency_penalty"}),
        (OPENAI_API, {"frequency_penalty"}),
        (OPENAI_COMPATIBLE, {"frequency_penalty"}),
        (LLAMA_SERVER_MESSAGES, {"temperature"}),  # the one sampling field its Messages route passes on
    ],
)
async def test_the_reask_sends_the_loop_breaking_fields_of_the_profile(profile: Any, fields: set[str]) -> None:
    fake = FakeChatClient([cut(LOOPING), VALID], capabilities=profile)
    await with_structured_output(fake).get_response("x", output_type=Person)
    assert set(fake.calls[1].options.extra_body or {}) == fields


@pytest.mark.parametrize("stream", [False, True])
async def test_a_reask_that_repeats_the_answer_before_is_sampled_otherwise(stream: bool) -> None:
    fake = FakeChatClient(['{"name": "Ada"}', '{"name": "Ada"}', VALID], capabilities=LOOPS)
    response = await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert [c.options.extra_body or {} for c in fake.calls] == [{}, {}, {"dry_multiplier": 0.8}]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_reask_that_repeats_the_answer_before_ends_the_run_when_nothing_else_can_change(stream: bool) -> None:
    fake = FakeChatClient(['{"name": "Ada"}', '{"name": "Ada"}', VALID], capabilities=NO_FIELDS)
    with pytest.raises(ModelBehaviorError, match="same answer 2 times in a row") as caught:
        await get(with_structured_output(fake, max_retries=3), stream, "x", output_type=Person)
    assert len(fake.calls) == 2 and caught.value.raw_texts == ['{"name": "Ada"}'] * 2


@pytest.mark.parametrize("stream", [False, True])
async def test_a_loop_the_server_reports_as_completed_at_the_token_limit_is_a_loop(stream: bool) -> None:
    """llama-server's Responses route says `completed` when max_output_tokens cut the answer."""
    misreported = Reply(LOOPING, finish_reason=FinishReason.STOP, usage=UsageDetails(10, 300, 310), chunk_size=900)
    fake = FakeChatClient([misreported, VALID], capabilities=LOOPS)
    response = await get(with_structured_output(fake), stream, "x", output_type=Person, options={"max_tokens": 300})
    assert response.value == Person(name="Ada", age=36)
    assert fake.calls[1].options.extra_body == {"dry_multiplier": 0.8}
    assert isinstance(response.attempts[0].error, IncompleteOutputError)


DENSE = '{"name": "Eva", "phone": "000-123-4567' + ", 12345" * 20  # a short loop that fills a small limit


@pytest.mark.parametrize("stream", [False, True])
async def test_a_dense_loop_in_a_cut_off_answer_is_a_loop(
    stream: bool,
) -> None:
    assert loop_in(DENSE) is not None and len(DENSE) < 200  # a cut-off answer is judged by its tail
    fake = FakeChatClient([cut(DENSE), VALID], capabilities=LOOPS)
    response = await get(with_structured_output(fake), stream, "Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert fake.calls[1].options.extra_body == {"dry_multiplier": 0.8}
    assert "looped" in str(response.attempts[0].error)


# ---------------------------------------------------------------- real data repeats


class Note(BaseModel):
    text: str


class Row(BaseModel):
    sku: str
    qty: int


class Table(BaseModel):
    rows: list[Row]


class Values(BaseModel):
    values: list[str]


class Blob(BaseModel):
    name: str
    data: str


class Padded(BaseModel):
    name: str
    age: int


def document(value: BaseModel) -> str:
    return value.model_dump_json().replace('":', '": ').replace(',"', ', "')  # spaced as models write it


REPETITIVE: list[tuple[str, Any, Any, str]] = [
    (kind, type(value), value, document(value))
    for kind, value in [
        ("lorem", Note(text="lorem ipsum dolor sit amet " * 60)),
        ("identical-rows", Table(rows=[Row(sku="A-100", qty=1)] * 12)),
        ("padded-field", Padded(name="Ada" + " " * 300, age=36)),
        ("separator-line", Note(text="Totals\n" + "-" * 300 + "\nSum: 12")),
        ("base64-zeros", Blob(name="zeros.bin", data="AAAA" * 80 + "AA==")),
        ("not-available", Values(values=["N/A"] * 60)),
    ]
]
PHRASE = "Thank you for your patience. " * 12  # plain text


def shipped_profiles() -> dict[str, Capabilities]:
    """Every profile the providers ship, by its name in the code (those chosen per model or per
    discovered server too), so a profile or a provider added later is covered without a change here."""
    found: dict[Capabilities, str] = {}
    for provider in sorted(pkgutil.iter_modules(providers.__path__), key=lambda p: p.name):
        if not provider.ispkg or importlib.util.find_spec(f"{providers.__name__}.{provider.name}._profiles") is None:
            continue
        module = importlib.import_module(f"{providers.__name__}.{provider.name}._profiles")
        for name, value in vars(module).items():
            if isinstance(value, Capabilities):
                found.setdefault(value, name.strip("_").lower())  # an alias keeps the first name
    return {name: profile for profile, name in found.items()}


SHIPPED = {**shipped_profiles(), "scripted-no-fields": NO_FIELDS}
PROFILES = pytest.mark.parametrize("profile", SHIPPED.values(), ids=SHIPPED.keys())


def test_the_profiles_found_are_the_shipped_ones() -> None:
    """The hosted, generic and local profiles, with and without loop breaking, prone or not."""
    profiles = set(SHIPPED.values())
    assert {OPENAI_API, OPENAI_API_RESPONSES, OPENAI_COMPATIBLE, ANTHROPIC_API, ANTHROPIC_COMPATIBLE} <= profiles
    assert {LLAMA_SERVER_CHAT, LLAMA_SERVER_RESPONSES, LLAMA_SERVER_MESSAGES} <= profiles
    assert {(p.prone_to_loops, bool(p.loop_breaking)) for p in profiles} == {
        (True, True),
        (False, True),
        (False, False),
    }


class StreamedToolCalls(FakeChatClient):
    """Streams a tool call's arguments in 4-character pieces (the first naming the tool), as a
    Chat Completions stream delivers them."""

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        async for update in super()._stream(messages, options):
            for call in [c for c in update.contents if isinstance(c, FunctionCallContent)]:
                for start in range(0, len(call.arguments), 4):
                    piece = FunctionCallContent(
                        call.call_id, "" if start else call.name, call.arguments[start : start + 4]
                    )
                    yield ChatResponseUpdate([piece], role="assistant")
            rest = [c for c in update.contents if not isinstance(c, FunctionCallContent)]
            yield dataclasses.replace(update, contents=rest)


def answered(text: str, **ending: Any) -> Any:
    """The reply as the strategy asks for it: a call of the offered tool, or text (`ending`: its
    finish reason and usage)."""

    def reply(messages: list[Any], options: Any) -> Reply:
        return Reply(tool_calls=[(options.tools[-1].name, text)], **ending) if options.tools else Reply(text, **ending)

    return reply


@pytest.mark.parametrize("stream", [False, True])
@PROFILES
@pytest.mark.parametrize(("kind", "output_type", "value", "text"), REPETITIVE, ids=[r[0] for r in REPETITIVE])
async def test_a_complete_valid_repetitive_answer_is_the_value_never_a_loop(
    kind: str, output_type: Any, value: Any, text: str, profile: Any, stream: bool
) -> None:
    assert loop_in(text[:-20]) is not None  # cut off before its end, it would be a loop
    fake = StreamedToolCalls(answered(text), capabilities=profile)
    options = {"max_tokens": 2000}  # well inside: the fake streams 4 characters a piece
    response = await get(with_structured_output(fake), stream, "x", output_type=output_type, options=options)
    assert response.value == value
    assert len(fake.calls) == 1 and fake.closed_streams == stream
    assert response.attempts[0].text == text


@pytest.mark.parametrize("stream", [False, True])
@PROFILES
async def test_a_complete_repeated_phrase_in_plain_text_is_the_value(profile: Any, stream: bool) -> None:
    fake = FakeChatClient(PHRASE, capabilities=profile)
    response = await get(with_structured_output(fake), stream, "x", output_type=str, options={"max_tokens": 2000})
    assert response.value == PHRASE and len(fake.calls) == 1


ROWS = document(Table(rows=[Row(sku="A-100", qty=1)] * 12))
PIECES = -(-len(ROWS) // 4)  # the fake streams 4 characters a piece (text or tool arguments), a token each


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("finish", [FinishReason.STOP, FinishReason.LENGTH])
@pytest.mark.parametrize("profile", [LOOPS, PRONE, *SHIPPED.values()], ids=["hosted", "prone", *SHIPPED])
async def test_a_valid_repetitive_answer_that_uses_every_token_is_the_value(
    profile: Any, finish: FinishReason, stream: bool
) -> None:
    """Its last allowed token closed it: the server may say `length` (no token left for the end)."""
    ending = {"finish_reason": finish, "usage": UsageDetails(10, PIECES, PIECES + 10)}
    fake = StreamedToolCalls(answered(ROWS, **ending), capabilities=profile)
    options = {"max_tokens": PIECES}
    response = await get(with_structured_output(fake), stream, "x", output_type=Table, options=options)
    assert response.value == Table(rows=[Row(sku="A-100", qty=1)] * 12) and len(fake.calls) == 1


# ---------------------------------------------------------------- a list that keeps growing


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("output_type", "text", "growing"),
    [
        (list[int], "[" + ", ".join(str(n) for n in range(57)), "the list was still growing at 57 items"),
        (
            Values,
            '{"values": [' + ", ".join(f'"v{n}"' for n in range(40)),
            "the list 'values' was still growing at 40 items",
        ),
        (
            Table,
            '{"rows": [' + ", ".join(f'{{"sku": "S{n}", "qty": {n}}}' for n in range(30)) + ', {"sku": "S3',
            "the list 'rows' was still growing at 31 items",
        ),
    ],
    ids=["top-level", "list-field", "list-of-objects"],
)
async def test_a_list_growing_until_the_limit_is_named_with_its_bound(
    output_type: Any, text: str, growing: str, stream: bool
) -> None:
    fake = FakeChatClient(cut(text), capabilities=LOOPS)
    with pytest.raises(IncompleteOutputError) as caught:
        await get(with_structured_output(fake), stream, "x", output_type=output_type)
    message = str(caught.value)
    assert message.startswith(f"{growing} when the answer was cut off at the token limit after {len(text)} characters")
    assert "Field(max_length=...)" in message and "raise max_tokens" in message
    assert len(fake.calls) == 1 and caught.value.raw_texts == [text]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_list_looping_until_the_limit_is_named_with_its_bound(stream: bool) -> None:
    fake = FakeChatClient(cut('{"tags": [' + '"a", ' * 60), capabilities=NO_FIELDS)
    with pytest.raises(IncompleteOutputError) as caught:
        await get(with_structured_output(fake), stream, "x", output_type=Values)
    message = str(caught.value)
    assert message.startswith("the answer looped: ") and "until the token limit cut it off" in message
    assert message.endswith("; the list 'tags' was still growing at 60 items: " + BOUND_IT)


async def test_a_long_string_cut_off_in_a_short_list_is_not_a_growing_list() -> None:
    text = '{"values": ["' + VARIED
    fake = FakeChatClient(cut(text), capabilities=LOOPS)
    with pytest.raises(IncompleteOutputError, match=r"characters; raise max_tokens$"):
        await with_structured_output(fake).get_response("x", output_type=Values)
