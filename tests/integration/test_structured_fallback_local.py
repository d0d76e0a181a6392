"""Strategy fallback against the real local model, through adapters built the way a new user
builds them: an SDK client with a `base_url` and no profile, with discovery off
(`discover=False`), so the adapter keeps the generic profile of its protocol (not the
llama-server one that discovery would find). llama-server ignores `text.format`, tools
and `output_config` on these routes: the run must move past what was ignored without spending
re-asks (`max_retries=0`), reach a strategy that works, and the next call must start there."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import IncompleteOutputError, run_sync, with_structured_output
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.local import LocalModelServer
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

pytestmark = pytest.mark.anyio


class Person(BaseModel):
    name: str
    age: int


def generic_adapter(route: str, local_server: LocalModelServer, local_sdk: Any) -> Any:
    if route == "responses":
        return OpenAIResponsesClient(local_sdk("async-openai"), local_server.model, discover=False)
    return AnthropicChatClient(local_sdk("async-anthropic"), local_server.model, discover=False)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("route", "profile"), [("responses", "openai-compatible"), ("anthropic", "anthropic-compatible")]
)
async def test_generic_adapter_learns_the_strategy_that_works(
    local_server: LocalModelServer, local_sdk: Any, route: str, profile: str, stream: bool
) -> None:
    adapter = generic_adapter(route, local_server, local_sdk)
    assert adapter.capabilities.name == profile  # the generic profile, not llama-server's
    client = with_structured_output(adapter, max_retries=0)
    options = {"max_tokens": 100, "temperature": 0}

    async def ask() -> Any:
        if stream:
            return await client.get_response(
                "John Smith is 35 years old.", output_type=Person, options=options, stream=True
            ).get_final_response()
        return await client.get_response("John Smith is 35 years old.", output_type=Person, options=options)

    first = await ask()
    assert first.value == Person(name="John Smith", age=35)
    strategies = [a.strategy for a in first.attempts]
    assert len(strategies) > 1 and len(set(strategies)) == len(strategies)  # fallbacks only, no re-ask
    lesson = client.learned[(type(adapter).__name__, local_server.model)]
    assert lesson.worked == strategies[-1] and lesson.ignored == set(strategies[:-1])

    second = await ask()
    assert second.value == Person(name="John Smith", age=35)
    assert [a.strategy for a in second.attempts] == [lesson.worked]


@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("route", ["chat", "responses"])
async def test_a_cut_off_answer_from_the_real_model_teaches_nothing(
    local_server: LocalModelServer, local_sdk: Any, route: str, stream: bool
) -> None:
    """Before: with max_tokens=6 the streamed grammar-enforced answer came back empty (llama-server
    withholds the cut-off start), was judged "native ignored", a second call was paid and every
    later call skipped native (on the Responses route, which reports the cut-off as `completed`,
    the plain call was re-asked twice). A cut-off answer is IncompleteOutputError, whatever it holds."""
    cls = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    client = with_structured_output(cls(local_sdk("async-openai"), local_server.model))
    options = {"max_tokens": 6, "temperature": 0}
    with pytest.raises(IncompleteOutputError) as caught:
        if stream:
            await client.get_response(
                "John Smith is 35 years old.", output_type=Person, options=options, stream=True
            ).get_final_response()
        else:
            await client.get_response("John Smith is 35 years old.", output_type=Person, options=options)
    assert len(caught.value.attempts) == 1
    assert dict(client.learned) == {}


@pytest.mark.local_server
@pytest.mark.parametrize("route", ["chat", "responses"])
def test_an_answer_cut_at_the_embedded_servers_own_bound_is_a_cut_off_on_every_route(route: str) -> None:
    """No `max_tokens` in the request: the server's `max_tokens` (llama-server's `-n`) cuts the
    answer, and the Responses route reports it `completed`. The profile `chat_client` gives carries
    the bound, so the answer is an IncompleteOutputError after one paid call, not three re-asks."""
    from so_middleware.local import chat_client

    with LocalModelServer(max_tokens=8, parallel=1, context_size=2048) as server:
        client = with_structured_output(chat_client(server, route=route))  # type: ignore[arg-type]
        with pytest.raises(IncompleteOutputError) as caught:
            client.get_response_sync("List every whole number from 1 to 200.", output_type=list[int])
        assert len(caught.value.attempts) == 1 and dict(client.learned) == {}
        run_sync(client.sdk_client.close)
