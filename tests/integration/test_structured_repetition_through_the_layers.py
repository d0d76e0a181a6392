"""A complete, valid answer that repeats itself, through the real openai SDK from a loopback server
(the testing layer's FaultServer, Chat Completions wire format): it is the value, on a hosted
profile and on one prone to loops, plain and streamed; an answer cut off while repeating is still
a loop, re-asked with the profile's loop-breaking field."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from pydantic import BaseModel

from so_middleware import with_structured_output
from so_middleware.openai import LLAMA_SERVER_CHAT, OPENAI_API, OpenAIChatClient
from so_middleware.testing._faults import FaultServer, completion, stream

pytestmark = pytest.mark.anyio

LOREM = "lorem ipsum dolor sit amet " * 60


class Note(BaseModel):
    title: str
    text: str


DOCUMENT = Note(title="Filler", text=LOREM).model_dump_json()


async def ask(server: FaultServer, profile: Any, streaming: bool) -> Any:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    try:
        client = with_structured_output(OpenAIChatClient(sdk, "m", capabilities=profile))
        options = {"max_tokens": 2000}  # well inside: the server streams 4 characters a chunk
        if streaming:
            answer = client.get_response("x", output_type=Note, options=options, stream=True)
            return await answer.get_final_response()
        return await client.get_response("x", output_type=Note, options=options)
    finally:
        await sdk.close()


@pytest.mark.parametrize("streaming", [False, True], ids=["respond", "stream"])
@pytest.mark.parametrize("profile", [OPENAI_API, LLAMA_SERVER_CHAT], ids=lambda p: p.name)
async def test_a_long_repetitive_field_in_a_valid_answer_is_the_value(profile: Any, streaming: bool) -> None:
    with FaultServer(stream(DOCUMENT) if streaming else completion(DOCUMENT)) as server:
        response = await ask(server, profile, streaming)
    assert response.value == Note(title="Filler", text=LOREM)
    assert len(server.requests) == 1 and "frequency_penalty" not in server.requests[0].body


@pytest.mark.parametrize("profile", [OPENAI_API, LLAMA_SERVER_CHAT], ids=lambda p: p.name)
async def test_an_answer_cut_off_while_repeating_is_reasked_with_the_loop_breaking_field(profile: Any) -> None:
    looping = '{"title": "Filler", "text": "' + LOREM
    with FaultServer([completion(looping, finish_reason="length"), completion(DOCUMENT)]) as server:
        response = await ask(server, profile, streaming=False)
    assert response.value == Note(title="Filler", text=LOREM)
    assert "looped" in str(response.attempts[0].error)
    first, reask = (request.body for request in server.requests)
    assert "frequency_penalty" not in first and reask["frequency_penalty"] == 0.5
