"""Hosted providers, only when their API key is set (skipped otherwise; CI sets none).

Run with keys: OPENAI_API_KEY=... ANTHROPIC_API_KEY=... pytest -m live
"""

from __future__ import annotations

import os

import pytest
from pydantic import BaseModel

from so_middleware import with_structured_output

pytestmark = [pytest.mark.live, pytest.mark.anyio]

needs_openai = pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY")
needs_anthropic = pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY")


class Person(BaseModel):
    name: str
    age: int


@needs_openai
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_openai_native_strict(api: str) -> None:
    import openai

    async with openai.AsyncOpenAI() as sdk:
        client = with_structured_output(sdk, model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), api=api)
        response = await client.get_response("Ada Lovelace was 36.", output_type=Person)
    assert response.value == Person(name="Ada Lovelace", age=36)
    assert response.attempts[0].strategy == "native"


@needs_anthropic
async def test_anthropic_native() -> None:
    import anthropic

    async with anthropic.AsyncAnthropic() as sdk:
        client = with_structured_output(sdk, model=os.environ.get("ANTHROPIC_MODEL", "claude-haiku-4-5"))
        response = await client.get_response("Ada Lovelace was 36.", output_type=Person)
    assert response.value == Person(name="Ada Lovelace", age=36)
