"""`Regex` and `Grammar` outputs on the real local model (SmolLM2-135M via llama-server).

The llama-server profile enforces them (a GBNF `grammar` field, the regex converted), on the
Chat Completions and the Responses route: the value fits on the first attempt, plain and
streamed. The Messages route's profile takes no grammar: there the answer is checked and
re-asked, and the run ends in a fitting value or a typed error.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from so_middleware import Grammar, OutputError, Regex, with_structured_output
from so_middleware.local import LocalModelServer, chat_client

pytestmark = pytest.mark.anyio

CODE = r"[A-Z]{3}-[0-9]{4}"
ANSWER = 'root ::= ("yes" | "no") " because " [a-z ]{1,40}'
FITS = {"regex": re.compile(CODE), "gbnf": re.compile(r"(yes|no) because [a-z ]{1,40}")}
CASES = [
    ("regex", Regex(CODE), "Make up a flight code."),
    ("gbnf", Grammar(gbnf=ANSWER), "Is the sea salty? Say why."),
]


async def _value(client: Any, output_type: Any, prompt: str, stream: bool) -> tuple[str, int]:
    if not stream:
        response = await client.get_response(prompt, output_type=output_type, options={"max_tokens": 48})
        return response.value, len(response.attempts)
    updates = client.get_response(prompt, output_type=output_type, stream=True, options={"max_tokens": 48})
    async with updates:
        partials = [update.partial_value async for update in updates if update.text]
    response = await updates.get_final_response()
    assert partials[-1] == response.text  # the partial value is the text so far
    return response.value, len(response.attempts)


@pytest.mark.parametrize("route", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(("kind", "output_type", "prompt"), CASES, ids=[c[0] for c in CASES])
async def test_the_grammar_is_enforced_and_the_value_fits_first_time(
    local_server: LocalModelServer, route: Any, stream: bool, kind: str, output_type: Any, prompt: str
) -> None:
    adapter = chat_client(local_server, route)
    try:
        value, attempts = await _value(with_structured_output(adapter), output_type, prompt, stream)
    finally:
        await adapter.sdk_client.close()
    assert isinstance(value, str) and FITS[kind].fullmatch(value)
    assert attempts == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_where_nothing_enforces_it_the_run_ends_in_a_fitting_value_or_a_typed_error(
    local_server: LocalModelServer, stream: bool
) -> None:
    adapter = chat_client(local_server, "anthropic")
    try:
        value, _ = await _value(with_structured_output(adapter, max_retries=1), Regex(CODE), "A flight code?", stream)
    except OutputError as error:
        assert error.attempts and all(a.text is not None for a in error.attempts)
    else:
        assert FITS["regex"].fullmatch(value)
    finally:
        await adapter.sdk_client.close()
