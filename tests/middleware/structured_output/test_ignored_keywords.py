"""Keywords an engine is known not to enforce (llama.cpp: `format`, many `pattern`s; xgrammar:
`minItems`/`maxItems`) are checked on the answer and re-asked, never trusted: the scripted backend
plays an engine that let the answer through."""

from __future__ import annotations

import json
from typing import Any

import pytest

from so_middleware import ChatResponse, OutputError, StructuredOutput, with_structured_output
from so_middleware.openai import LLAMA_SERVER_CHAT
from so_middleware.testing import FakeChatClient


def field(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": schema}, "required": ["value"]}


async def get(client: Any, stream: bool, feature: StructuredOutput[Any]) -> ChatResponse[Any]:
    options = {"features": [feature]}
    if stream:
        return await client.get_response("Go.", options=options, stream=True).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response("Go.", options=options)  # type: ignore[no-any-return]


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("schema", "ignored", "kept", "named"),
    [
        ({"type": "string", "format": "uri"}, '"ada@example.com"', '"https://example.com"', '"uri"'),
        ({"type": "string", "format": "date-time"}, '"next Tuesday"', '"2024-01-02T03:04:05Z"', '"date-time"'),
        ({"type": "string", "pattern": "^[A-Z]{3}$"}, '"usd"', '"USD"', "^[A-Z]{3}$"),
        ({"type": "array", "items": {"type": "integer"}, "maxItems": 2}, "[1, 2, 3]", "[1, 2]", "more than 2 items"),
    ],
    ids=["format-uri", "format-date-time", "pattern", "maxItems"],
)
async def test_an_answer_breaking_an_unenforced_keyword_is_reasked(
    schema: dict[str, Any], ignored: str, kept: str, named: str, stream: bool
) -> None:
    fake = FakeChatClient([f'{{"value": {ignored}}}', f'{{"value": {kept}}}'], capabilities=LLAMA_SERVER_CHAT)
    client = with_structured_output(fake)
    feature = StructuredOutput(schema=field(schema), mode="native")
    response = await get(client, stream, feature)
    assert response.value == {"value": json.loads(kept)}
    assert len(fake.calls) == 2
    reask = fake.calls[1].messages[-1].text
    assert named in reask, reask


@pytest.mark.anyio
async def test_an_answer_that_keeps_breaking_a_format_ends_typed_with_every_attempt() -> None:
    fake = FakeChatClient('{"value": "ada@example.com"}', capabilities=LLAMA_SERVER_CHAT)
    feature = StructuredOutput(schema=field({"type": "string", "format": "uri"}), mode="native", max_retries=1)
    with pytest.raises(OutputError) as caught:
        await get(with_structured_output(fake), False, feature)
    assert [attempt.text for attempt in caught.value.attempts] == ['{"value": "ada@example.com"}'] * 2
