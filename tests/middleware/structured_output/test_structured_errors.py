"""How a structured-output run ends when something goes wrong: nothing the model produced is
lost, nothing reaches the caller before the server answered, and messages name the real cause."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import (
    Capabilities,
    ChatResponse,
    FinishReason,
    IncompleteOutputError,
    ModelBehaviorError,
    StreamInterruptedError,
    UsageDetails,
    with_retries,
)
from so_middleware.middleware.structured_output import with_structured_output
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio

NATIVE = Capabilities(name="native", native_json_schema=True, schema_profile="openai-strict")
PREFILL = Capabilities(name="prefill", assistant_prefill=True)
PROMPT_ONLY = Capabilities(name="prompt")


class Person(BaseModel):
    name: str
    age: int


class BackendDown(Exception):
    """Stands in for an SDK error (its type must come through unchanged)."""


async def get(client: Any, stream: bool, *args: Any, **kwargs: Any) -> ChatResponse[Any]:
    if stream:
        return await client.get_response(*args, stream=True, **kwargs).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(*args, **kwargs)  # type: ignore[no-any-return]


async def no_sleep(_: float) -> None:
    return None


@pytest.mark.parametrize("stream", [False, True])
async def test_an_sdk_error_during_a_reask_keeps_the_earlier_attempts(stream: bool) -> None:
    fake = FakeChatClient(
        [Reply('{"name": "Ada"}', usage=UsageDetails(10, 5, 15)), BackendDown("400")], capabilities=NATIVE
    )
    with pytest.raises(BackendDown) as caught:
        await get(with_structured_output(fake), stream, "x", output_type=Person)
    error: Any = caught.value
    assert type(error) is BackendDown
    assert [a.text for a in error.attempts] == ['{"name": "Ada"}']
    assert isinstance(error.attempts[0].error, ModelBehaviorError)
    assert error.usage == UsageDetails(10, 5, 15)
    assert any("ended with 1 attempt" in note and ".attempts" in note for note in error.__notes__)


async def test_a_stream_broken_during_a_reask_keeps_the_earlier_attempts() -> None:
    broken = StreamInterruptedError("connection cut", partial_text='{"na')
    fake = FakeChatClient(
        [
            Reply('{"name": "Ada"}', usage=UsageDetails(7, 3, 10)),
            Reply('{"name": "Ada", "age": 36}', error=broken, fail_after=1),
        ],
        capabilities=NATIVE,
    )
    with pytest.raises(StreamInterruptedError) as caught:
        await get(with_structured_output(fake), True, "x", output_type=Person)
    error: Any = caught.value
    assert error.attempts[0].text == '{"name": "Ada"}' and error.usage == UsageDetails(7, 3, 10)


async def test_an_error_on_the_first_call_carries_an_empty_run() -> None:
    fake = FakeChatClient([BackendDown("503")], capabilities=NATIVE)
    with pytest.raises(BackendDown) as caught:
        await with_structured_output(fake).get_response("x", output_type=Person)
    error: Any = caught.value
    assert error.attempts == [] and error.usage is None and not getattr(error, "__notes__", [])


async def test_prefill_waits_for_the_servers_first_update() -> None:
    fake = FakeChatClient([BackendDown("429")], capabilities=PREFILL)
    stream = with_structured_output(fake).get_response("x", output_type=Person, stream=True)
    received = []
    with pytest.raises(BackendDown):
        async for update in stream:
            received.append(update)
    assert received == []  # the prefill was not emitted ahead of the server


async def test_prefill_comes_with_the_first_delta() -> None:
    fake = FakeChatClient(Reply('Ada", "age": 36}', chunk_size=4), capabilities=PREFILL)
    stream = with_structured_output(fake).get_response("x", output_type=Person, stream=True)
    updates = [u async for u in stream]
    assert updates[0].text == '{"name": "Ada"'
    assert "".join(u.text for u in updates) == '{"name": "Ada", "age": 36}'


async def test_retries_outside_can_retry_a_prompted_first_request() -> None:
    fake = FakeChatClient([ConnectionError("reset"), 'Ada", "age": 36}'], capabilities=PREFILL)
    client = with_retries(with_structured_output(fake), sleep=no_sleep)
    response = await client.get_response("x", output_type=Person, stream=True).get_final_response()
    assert response.value == Person(name="Ada", age=36) and len(fake.calls) == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_cut_off_prompted_answer_without_a_value_is_incomplete_at_once(stream: bool) -> None:
    fake = FakeChatClient(Reply('{"name": "Ada", "a', finish_reason=FinishReason.LENGTH), capabilities=PROMPT_ONLY)
    with pytest.raises(IncompleteOutputError, match="raise max_tokens") as caught:
        await get(with_structured_output(fake), stream, "x", output_type=Person)
    assert len(fake.calls) == 1 and caught.value.raw_texts == ['{"name": "Ada", "a']


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("output_type", [Person, str], ids=["tool", "text"])
async def test_cut_off_tool_call_or_text_is_incomplete_at_once(stream: bool, output_type: Any) -> None:
    tools = Capabilities(name="tools", tools=True, forced_tool_choice=True)
    cut = Reply(
        "Ada was born in", tool_calls=[("Person", '{"name": "Ada", "age": 3')], finish_reason=FinishReason.LENGTH
    )
    fake = FakeChatClient(cut, capabilities=tools)
    with pytest.raises(IncompleteOutputError):
        await get(with_structured_output(fake), stream, "x", output_type=output_type)
    assert len(fake.calls) == 1


async def test_lenient_error_quotes_the_model_and_the_reading_apart() -> None:
    said = '{"name": "Ada", "age": 1,,, oops\n```python\nprint(1)\n```'
    fake = FakeChatClient(said, capabilities=PROMPT_ONLY)
    with pytest.raises(ModelBehaviorError) as caught:
        await with_structured_output(fake, max_retries=0).get_response("x", output_type=Person)
    message = str(caught.value)
    assert f"The model said ({len(said)} characters): {said}" in message
    assert 'Read leniently as: {"name": "Ada", "age": "1,,"}' in message
    assert caught.value.raw_texts == [said]


@pytest.mark.parametrize("caps", [PROMPT_ONLY, NATIVE], ids=["prompted", "native"])
async def test_no_error_message_is_longer_than_a_screen(caps: Capabilities) -> None:
    many = "{" + ", ".join(f'"field_{i}_{"x" * 60}": {i}' for i in range(200)) + "}" + " and so on" * 500
    refusing = Reply(refusal="no " * 2000, finish_reason=FinishReason.REFUSAL)
    for reply in (many, Reply(many, finish_reason=FinishReason.LENGTH), refusing):
        fake = FakeChatClient(reply, capabilities=caps)
        with pytest.raises(Exception) as caught:
            await with_structured_output(fake, max_retries=0).get_response("x", output_type=Person)
        assert len(str(caught.value)) <= 2000, str(caught.value)[:300]


async def test_valid_json_then_prose_to_the_limit_names_the_field_error() -> None:
    said = '{"name": "Ada", "age": "Meow"} and then the model kept talking about cats until'
    fake = FakeChatClient(Reply(said, finish_reason=FinishReason.LENGTH), capabilities=PROMPT_ONLY)
    with pytest.raises(ModelBehaviorError) as caught:
        await with_structured_output(fake, max_retries=0).get_response("x", output_type=Person)
    message = str(caught.value)
    assert "age" in message and "Meow" in message and "valid integer" in message


async def test_leaving_a_stream_early_closes_the_model_stream() -> None:
    fake = FakeChatClient(Reply('{"name": "Ada", "age": 36}', chunk_size=2), capabilities=NATIVE)
    stream = with_structured_output(fake).get_response("x", output_type=Person, stream=True)
    async with stream:
        async for _ in stream:
            break
    assert fake.closed_streams == 1
