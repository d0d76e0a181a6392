"""The OpenAI adapters with a custom tool that carries a grammar (GPT-5 and later): the tool's input
is the answer's text, plain and streamed, on Responses and Chat Completions; the profile of an
official GPT-5 model says so (`text_constraint="openai"`), an older one's does not.

No hosted call is made here, so `httpx2.MockTransport` answers with bodies in the documented wire
formats (`custom_tool_wire.Wire`).
"""

from __future__ import annotations

from typing import Any

import pytest
from custom_tool_wire import CODE, SUM, Wire

from so_middleware import FinishReason
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient
from so_middleware.providers.openai._profiles import takes_grammar_tools
from so_middleware.schema.text import custom_tool_fields

pytestmark = pytest.mark.anyio


def _adapter(wire: Wire, route: str, model: str = "gpt-5") -> Any:
    return (OpenAIResponsesClient if route == "responses" else OpenAIChatClient)(wire.sdk(), model)


@pytest.mark.parametrize("route", ["responses", "chat"])
@pytest.mark.parametrize("stream", [False, True])
async def test_the_tools_input_is_the_answers_text(route: str, stream: bool) -> None:
    wire = Wire("1 + 22")
    client = _adapter(wire, route)
    options = {"extra_body": custom_tool_fields("lark", SUM)}
    if stream:
        updates = client.get_response("?", stream=True, options=options)
        async with updates:
            pieces = [update.text async for update in updates]
        response = await updates.get_final_response()
        assert "".join(pieces) == "1 + 22"
    else:
        response = await client.get_response("?", options=options)
    assert (response.text, response.finish_reason) == ("1 + 22", FinishReason.STOP)
    assert response.usage is not None and response.usage.total_tokens


@pytest.mark.parametrize("route", ["responses", "chat"])
def test_an_official_gpt_5_profile_takes_grammars_and_older_ones_do_not(route: str) -> None:
    assert _adapter(Wire(), route, "gpt-5-mini").capabilities.text_constraint == "openai"
    assert _adapter(Wire(), route, "gpt-4.1").capabilities.text_constraint is None


def test_a_regex_goes_as_the_same_tool() -> None:
    assert custom_tool_fields("regex", CODE)["tools"][0]["format"] == {
        "type": "grammar",
        "syntax": "regex",
        "definition": CODE,
    }


@pytest.mark.parametrize(
    ("model", "takes"),
    [("gpt-5", True), ("gpt-5-mini", True), ("gpt-5.1-codex", True), ("openai/gpt-6", True), ("gpt-4.1", False),
     ("gpt-4o-mini", False), ("o3", False), (None, False), ("my-gpt-5-deployment", False)],
)  # fmt: skip
def test_grammar_tools_by_model_name(model: str | None, takes: bool) -> None:
    assert takes_grammar_tools(model) is takes
