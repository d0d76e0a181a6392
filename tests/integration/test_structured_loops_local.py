"""Loops against the real local model (SmolLM2-135M on llama-server, Chat Completions, grammar on):
an input that makes the model repeat one list item until the token limit, at temperature 0. The
loop is stopped (a stream is closed there), re-asked once with the profile's loop-breaking
sampling, and the run ends typed; a loop teaches the layer nothing. Only typed outcomes are
asserted, never what the model writes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import IncompleteOutputError, OutputError, with_structured_output
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER_CHAT, OpenAIChatClient

pytestmark = [pytest.mark.anyio, pytest.mark.local_server]

REPEAT_PRONE = "List every tag: " + ", ".join(["a"] * 23)  # found by hand: loops at temperature 0
OPTIONS = {"max_tokens": 300, "temperature": 0, "seed": 7}


class Tags(BaseModel):
    tags: list[str]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_looping_answer_is_stopped_and_reasked_once_with_loop_breaking_sampling(
    local_server: LocalModelServer, local_sdk: Any, stream: bool
) -> None:
    client = with_structured_output(
        OpenAIChatClient(local_sdk("async-openai"), local_server.model, capabilities=LLAMA_SERVER_CHAT)
    )
    try:
        if stream:
            response = await client.get_response(
                REPEAT_PRONE, output_type=Tags, options=OPTIONS, stream=True
            ).get_final_response()
        else:
            response = await client.get_response(REPEAT_PRONE, output_type=Tags, options=OPTIONS)
        attempts = response.attempts
        assert isinstance(response.value, Tags)
    except OutputError as error:  # the re-ask may loop or be cut off too: still typed, every attempt kept
        assert isinstance(error, IncompleteOutputError)
        attempts = error.attempts
    assert len(attempts) == 2  # the loop, then one re-ask: not three calls paid to the limit
    assert isinstance(attempts[0].error, IncompleteOutputError)
    if stream:
        assert attempts[0].usage is None  # closed at the loop: the server never sent the end
    assert all(not lesson.ignored for lesson in client.learned.values())  # a loop is not a strategy ignored
