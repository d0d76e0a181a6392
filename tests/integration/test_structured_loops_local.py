"""Loops against the real local model (SmolLM2-135M on llama-server): an input that makes the model
repeat one list item until the token limit, at temperature 0, on Chat Completions (grammar on),
Responses (grammar on) and Messages (prompted). The loop is judged at its token limit,
re-asked once with the route's loop-breaking sampling (what bench/loop_sampling.py measured the
route to pass on to the sampler), and the run ends typed; a loop teaches the layer nothing. Only
typed outcomes and what went on the wire are asserted, never what the model writes."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from pydantic import BaseModel

from so_middleware import Attempt, FinishReason, IncompleteOutputError, OutputError, with_structured_output
from so_middleware.anthropic import LLAMA_SERVER_MESSAGES, AnthropicChatClient
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER_CHAT, LLAMA_SERVER_RESPONSES, OpenAIChatClient, OpenAIResponsesClient
from so_middleware.testing import HttpRecorder

pytestmark = [pytest.mark.anyio, pytest.mark.local_server]

REPEAT_PRONE = "List every tag: " + ", ".join(["a"] * 23)  # found by hand: loops at temperature 0
OPTIONS = {"max_tokens": 300, "temperature": 0, "seed": 7}


class Tags(BaseModel):
    tags: list[str]


async def run(client: Any, stream: bool) -> tuple[list[Attempt], OutputError | None]:
    """The repeat-prone run: its attempts, and its typed error (None when a value came back)."""
    try:
        if stream:
            answer = client.get_response(REPEAT_PRONE, output_type=Tags, options=OPTIONS, stream=True)
            response = await answer.get_final_response()
        else:
            response = await client.get_response(REPEAT_PRONE, output_type=Tags, options=OPTIONS)
    except OutputError as error:
        return error.attempts, error
    assert isinstance(response.value, Tags)
    return response.attempts, None


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_looping_answer_is_stopped_and_reasked_once_with_loop_breaking_sampling(
    local_server: LocalModelServer, local_sdk: Any, stream: bool
) -> None:
    client = with_structured_output(
        OpenAIChatClient(local_sdk("async-openai"), local_server.model, capabilities=LLAMA_SERVER_CHAT)
    )
    attempts, error = await run(client, stream)
    assert error is None or isinstance(error, IncompleteOutputError)  # the re-ask may loop or be cut off too
    assert len(attempts) == 2  # the loop, then one re-ask: not three calls paid to the limit
    assert isinstance(attempts[0].error, IncompleteOutputError)
    assert attempts[0].finish_reason == FinishReason.LENGTH  # judged at its limit, streamed or not
    assert all(not lesson.ignored for lesson in client.learned.values())  # a loop is not a strategy ignored


PENALTIES = {"frequency_penalty", "presence_penalty", "repeat_penalty", "dry_multiplier"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("route", "field", "value"),
    [("responses", "frequency_penalty", 0.5), ("messages", "temperature", 0.8)],
)
async def test_the_reask_of_a_loop_carries_what_breaks_loops_on_that_route(
    local_server: LocalModelServer, local_sdk: Any, route: str, field: str, value: float, stream: bool
) -> None:
    """Responses passes the penalty on; Messages drops every penalty (so none is sent) and passes
    `temperature` on, which the re-ask raises over the caller's 0."""
    recorder = HttpRecorder()
    http = httpx2.AsyncClient(event_hooks=recorder.hooks(is_async=True))
    adapter: Any
    if route == "responses":
        sdk = local_sdk("async-openai", http_client=http)
        adapter = OpenAIResponsesClient(sdk, local_server.model, capabilities=LLAMA_SERVER_RESPONSES)
    else:
        sdk = local_sdk("async-anthropic", http_client=http)
        adapter = AnthropicChatClient(sdk, local_server.model, capabilities=LLAMA_SERVER_MESSAGES)
    client = with_structured_output(adapter)
    attempts, _ = await run(client, stream)  # the re-ask may loop, be cut off or be invalid: still typed
    assert isinstance(attempts[0].error, IncompleteOutputError) and "looped" in str(attempts[0].error)
    first, reask = recorder.bodies[0], recorder.bodies[1]
    assert field not in first or first[field] == 0  # the caller's temperature 0 on the first call
    assert reask[field] == value
    assert not PENALTIES & set(reask) - {field}  # nothing the route would drop
    assert all(not lesson.ignored for lesson in client.learned.values())
