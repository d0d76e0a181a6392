"""Loops under grammar: an answer that repeats itself is stopped (a stream is closed there) and
re-asked once with the engine's loop-breaking sampling; a re-ask that repeats the answer before
it is sampled otherwise or ends the run. Scripted backends: both sides asserted."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import ChatResponse, FinishReason, IncompleteOutputError, ModelBehaviorError, UsageDetails
from so_middleware.middleware.structured_output import with_structured_output
from so_middleware.middleware.structured_output._loops import MIN_CUT_SPAN, MIN_SPAN, loop_in
from so_middleware.providers.anthropic._profiles import LLAMA_SERVER_MESSAGES
from so_middleware.providers.openai._profiles import (
    LLAMA_SERVER_CHAT,
    LLAMA_SERVER_RESPONSES,
    OPENAI_API,
    OPENAI_COMPATIBLE,
)
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
    ],
)
def test_a_periodic_tail_is_a_loop(text: str, unit: str) -> None:
    loop = loop_in(text)
    assert loop is not None and len(loop.unit) == len(unit) and loop.unit in unit * 2  # the unit, maybe rotated


@pytest.mark.parametrize(
    "text",
    [
        "",
        " " * (MIN_SPAN - 10),  # too short to tell from indentation
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


async def test_a_looping_stream_is_closed_there_not_paid_to_the_end() -> None:
    fake = FakeChatClient([cut(LOOPING), VALID], capabilities=LOOPS)
    stream = with_structured_output(fake).get_response("Ada, 36", output_type=Person, stream=True)
    attempts = [update.attempt async for update in stream]
    response = await stream.get_final_response()
    assert fake.closed_streams == 2
    kept = response.attempts[0].text
    assert MIN_SPAN < len(kept) < len(LOOPING) / 2  # the rest was never read
    assert response.attempts[0].finish_reason == FinishReason.LENGTH and attempts[-1] == 1


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


DENSE = '{"name": "Eva", "phone": "000-123-4567' + ", 12345" * 20  # a cut-off loop shorter than MIN_SPAN


@pytest.mark.parametrize("stream", [False, True])
async def test_a_dense_loop_in_a_cut_off_answer_is_a_loop_though_shorter_than_a_streams_threshold(
    stream: bool,
) -> None:
    assert loop_in(DENSE) is None  # a stream still in progress is not stopped for so little
    assert loop_in(DENSE, min_span=MIN_CUT_SPAN) is not None  # a cut-off answer is judged by its tail
    fake = FakeChatClient([cut(DENSE), VALID], capabilities=LOOPS)
    response = await get(with_structured_output(fake), stream, "Ada, 36", output_type=Person)
    assert response.value == Person(name="Ada", age=36)
    assert fake.calls[1].options.extra_body == {"dry_multiplier": 0.8}
    assert "looped" in str(response.attempts[0].error)
