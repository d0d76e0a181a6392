"""`Regex` and `Grammar(lark=...)` on OpenAI's GPT-5 family through the structured-output layer:
sent as a custom tool with a grammar format, the tool's input read back as the answer's text,
checked and re-asked, plain and streamed, on the Responses and Chat Completions routes, through
the unmodified SDK.

No hosted call is made here, so `httpx2.MockTransport` answers with bodies in the documented wire
formats (`custom_tool_wire.Wire`); what is checked is the request the SDK really sent and the
value the caller gets.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from custom_tool_wire import CODE, SUM, Wire

from so_middleware import Grammar, OutputError, Regex, UserError, with_structured_output
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

pytestmark = pytest.mark.anyio


def _client(wire: Wire, route: str, model: str = "gpt-5-mini", **layer: Any) -> Any:
    adapter = OpenAIResponsesClient if route == "responses" else OpenAIChatClient
    return with_structured_output(adapter(wire.sdk(), model), **layer)


async def _value(client: Any, output_type: Any, stream: bool) -> Any:
    if not stream:
        return (await client.get_response("?", output_type=output_type)).value
    updates = client.get_response("?", output_type=output_type, stream=True)
    texts = []
    async with updates:
        async for update in updates:
            texts.append(update.text)
    final = await updates.get_final_response()
    assert "".join(texts) == final.text  # the tool's input came as the answer's text
    return final.value


@pytest.mark.parametrize("stream", [False, True])
async def test_responses_sends_a_custom_tool_with_the_grammar_and_reads_its_input(stream: bool) -> None:
    wire = Wire("ABC-1234", "1 + 22")
    client = _client(wire, "responses")
    assert await _value(client, Regex(CODE), stream) == "ABC-1234"
    assert await _value(client, Grammar(lark=SUM), stream) == "1 + 22"
    formats = [body["tools"][0]["format"] for body in wire.bodies]
    assert formats == [
        {"type": "grammar", "syntax": "regex", "definition": CODE},
        {"type": "grammar", "syntax": "lark", "definition": SUM},
    ]
    assert all(body["tools"][0]["type"] == "custom" for body in wire.bodies)
    assert [body["tool_choice"] for body in wire.bodies] == [{"type": "custom", "name": "answer"}] * 2


@pytest.mark.parametrize("stream", [False, True])
async def test_chat_sends_the_tool_in_its_own_shape_and_reads_its_input(stream: bool) -> None:
    wire = Wire("XYZ-0001", "3 + 4")
    client = _client(wire, "chat")
    assert await _value(client, Regex(CODE), stream) == "XYZ-0001"
    assert await _value(client, Grammar(lark=SUM), stream) == "3 + 4"
    assert [body["tools"] for body in wire.bodies] == [
        [{"type": "custom", "custom": {"name": "answer", "description": "Give your answer as this tool's input.",
                                       "format": {"type": "grammar", "grammar": {"definition": CODE, "syntax": "regex"}}}}],
        [{"type": "custom", "custom": {"name": "answer", "description": "Give your answer as this tool's input.",
                                       "format": {"type": "grammar", "grammar": {"definition": SUM, "syntax": "lark"}}}}],
    ]  # fmt: skip
    assert [body["tool_choice"] for body in wire.bodies] == [{"type": "custom", "custom": {"name": "answer"}}] * 2
    assert not any(body.get("stream") for body in wire.bodies)  # Chat has no documented streamed custom call


@pytest.mark.parametrize("route", ["responses", "chat"])
@pytest.mark.parametrize("stream", [False, True])
async def test_an_input_that_does_not_fit_is_re_asked_then_kept_with_every_attempt(route: str, stream: bool) -> None:
    wire = Wire("abc", "ABC-1234")
    response = await _client(wire, route).get_response("?", output_type=Regex(CODE), stream=False)
    if stream:
        wire = Wire("abc", "ABC-1234")
        updates = _client(wire, route).get_response("?", output_type=Regex(CODE), stream=True)
        async with updates:
            async for _ in updates:
                pass
        response = await updates.get_final_response()
    assert response.value == "ABC-1234" and len(response.attempts) == 2 and len(wire.bodies) == 2
    assert "abc" in json.dumps(wire.bodies[1])  # the re-ask shows the input that did not fit


async def test_an_input_that_never_fits_ends_in_an_output_error_with_the_raw_text() -> None:
    wire = Wire("abc")
    with pytest.raises(OutputError) as caught:
        await _client(wire, "responses", max_retries=1).get_response("?", output_type=Regex(CODE))
    assert [attempt.text for attempt in caught.value.attempts] == ["abc", "abc"]


@pytest.mark.parametrize("route", ["responses", "chat"])
async def test_models_before_gpt_5_get_no_custom_tool_and_the_answer_is_checked(route: str) -> None:
    wire = Wire("ABC-1234")
    assert await _value(_client(wire, route, "gpt-4.1"), Regex(CODE), stream=False) == "ABC-1234"
    assert "tools" not in wire.bodies[0] and "tool_choice" not in wire.bodies[0]


async def test_a_regex_openai_cannot_take_is_checked_only() -> None:
    wire = Wire("ABC-1234")
    lookahead = r"(?=[A-Z]{3})[A-Z]{3}-[0-9]{4}"
    assert await _value(_client(wire, "responses"), Regex(lookahead), stream=False) == "ABC-1234"
    assert "tools" not in wire.bodies[0]


@pytest.mark.parametrize("route", ["responses", "chat"])
async def test_a_gbnf_grammar_is_refused_before_any_call(route: str) -> None:
    wire = Wire("yes")
    with pytest.raises(UserError, match="Lark grammars and regular expressions only"):
        await _client(wire, route).get_response("?", output_type=Grammar(gbnf='root ::= "yes" | "no"'))
    assert wire.bodies == []
