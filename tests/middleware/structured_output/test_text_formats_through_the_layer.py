"""`Regex` and `Grammar` output types through the structured-output layer: what the backend is
sent (per profile), the check and re-ask of the answer, and the streamed text."""

from __future__ import annotations

from typing import Any

import pytest

from so_middleware import (
    Capabilities,
    ChatResponse,
    Grammar,
    ModelBehaviorError,
    Regex,
    UserError,
    with_structured_output,
)
from so_middleware.middleware.structured_output import StructuredOutput
from so_middleware.schema.text import regex_to_gbnf
from so_middleware.testing import FakeChatClient

pytestmark = pytest.mark.anyio

CODE = r"[A-Z]{3}-[0-9]{4}"
LLAMA = Capabilities(name="llama-like", native_json_schema=True, text_constraint="llama.cpp")
VLLM = Capabilities(name="vllm-like", native_json_schema=True, text_constraint="vllm")
YES_NO = 'root ::= "yes" | "no"'
ARITHMETIC = 'start: expr\nexpr: NUMBER | expr "+" expr\n%import common.NUMBER\n'


async def _run(client: Any, output_type: Any, stream: bool, **kwargs: Any) -> ChatResponse[Any]:
    if not stream:
        return await client.get_response("A code?", output_type=output_type, **kwargs)  # type: ignore[no-any-return]
    updates = client.get_response("A code?", output_type=output_type, stream=True, **kwargs)
    async with updates:
        async for _ in updates:
            pass
    return await updates.get_final_response()  # type: ignore[no-any-return]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_text_off_the_pattern_is_re_asked_naming_it(stream: bool) -> None:
    fake = FakeChatClient(["The code is ABC-1234", "ABC-1234"])
    response = await _run(with_structured_output(fake), Regex(CODE), stream)
    assert response.value == "ABC-1234"
    assert [a.text for a in response.attempts] == ["The code is ABC-1234", "ABC-1234"]
    reask = fake.calls[1].messages[-1].text
    assert CODE in reask and "in full" in reask


@pytest.mark.parametrize("stream", [False, True])
async def test_no_fitting_answer_ends_in_a_typed_error_with_every_attempt(stream: bool) -> None:
    fake = FakeChatClient(["nope", "still no"])
    client = with_structured_output(fake, max_retries=1)
    with pytest.raises(ModelBehaviorError, match="must match the regular expression") as raised:
        await _run(client, Regex(CODE), stream)
    assert [a.text for a in raised.value.attempts] == ["nope", "still no"]
    assert all(a.usage is not None for a in raised.value.attempts)


@pytest.mark.parametrize("stream", [False, True])
async def test_the_pattern_is_in_the_instructions_and_nothing_else_is_sent_where_not_enforced(stream: bool) -> None:
    fake = FakeChatClient("ABC-1234", capabilities=Capabilities(name="plain"))
    options = {"instructions": "Be brief.", "extra_body": {"top_k": 5}}
    response = await _run(with_structured_output(fake), Regex(CODE), stream, options=options)
    assert response.value == "ABC-1234"
    sent = fake.calls[0].options
    assert sent.instructions is not None and sent.instructions.startswith("Be brief.\n\n") and CODE in sent.instructions
    assert sent.extra_body == {"top_k": 5}


@pytest.mark.parametrize("stream", [False, True])
async def test_llama_cpp_is_sent_the_regex_as_a_gbnf_grammar_beside_the_callers_fields(stream: bool) -> None:
    fake = FakeChatClient("ABC-1234", capabilities=LLAMA)
    extra = {"top_k": 5}
    await _run(with_structured_output(fake), Regex(CODE), stream, options={"extra_body": extra})
    assert fake.calls[0].options.extra_body == {"top_k": 5, "grammar": regex_to_gbnf(CODE)}
    assert extra == {"top_k": 5}  # the caller's dict is not changed


@pytest.mark.parametrize("stream", [False, True])
async def test_vllm_is_sent_structured_outputs(stream: bool) -> None:
    fake = FakeChatClient(["ABC-1234", "1+2"], capabilities=VLLM)
    await _run(with_structured_output(fake), Regex(CODE), stream)
    await _run(with_structured_output(fake), Grammar(lark=ARITHMETIC), stream)
    assert [c.options.extra_body for c in fake.calls] == [
        {"structured_outputs": {"regex": CODE}},
        {"structured_outputs": {"grammar": ARITHMETIC}},
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_gbnf_grammar_goes_to_llama_cpp_and_is_refused_before_any_call_elsewhere(stream: bool) -> None:
    fake = FakeChatClient("yes", capabilities=LLAMA)
    response = await _run(with_structured_output(fake), Grammar(gbnf=YES_NO), stream)
    assert response.value == "yes"
    assert fake.calls[0].options.extra_body == {"grammar": YES_NO}
    elsewhere = FakeChatClient("yes")
    with pytest.raises(UserError, match=r"GBNF grammar is enforced by llama\.cpp and vLLM only"):
        await _run(with_structured_output(elsewhere), Grammar(gbnf=YES_NO), stream)
    assert elsewhere.calls == []


@pytest.mark.parametrize("stream", [False, True])
async def test_a_lark_answer_is_checked_and_re_asked(stream: bool) -> None:
    fake = FakeChatClient(["1 + ", "1+2+3"])
    response = await _run(with_structured_output(fake), Grammar(lark=ARITHMETIC), stream)
    assert response.value == "1+2+3"
    assert "sentence of the grammar" in fake.calls[1].messages[-1].text


async def test_streamed_partial_values_are_the_text_so_far() -> None:
    fake = FakeChatClient("ABC-1234")
    stream = with_structured_output(fake).get_response("A code?", output_type=Regex(CODE), stream=True)
    partials = [update.partial_value async for update in stream if update.text]
    assert partials == ["ABC-", "ABC-1234"]
    assert (await stream.get_final_response()).value == "ABC-1234"


async def test_a_feature_takes_the_output_types_too() -> None:
    fake = FakeChatClient("no")
    feature = StructuredOutput(Regex("yes|no"))
    await with_structured_output(fake).get_response("Wet?", options={"features": [feature]})
    assert feature.response is not None and feature.response.value == "no"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_regex_no_grammar_expresses_is_refused_before_any_call_where_it_would_be_sent(stream: bool) -> None:
    fake = FakeChatClient("aa", capabilities=LLAMA)
    with pytest.raises(UserError, match="back-reference"):
        await _run(with_structured_output(fake), Regex(r"(a)\1"), stream)
    assert fake.calls == []
    checked = FakeChatClient("aa", capabilities=Capabilities(name="plain"))
    assert (await _run(with_structured_output(checked), Regex(r"(a)\1"), stream)).value == "aa"
