"""The schema's outline in a native request's instructions: sent where the engine enforces the schema
without showing it to the model (by profile; off on llama-server's, whose small model did no better
with it), never to a hosted API that reads the schema itself,
and turned on or off with the profile's `schema_in_instructions`.

The backend is httpx MockTransport answering with the documented Chat Completions bodies: what is
checked is the request body the unmodified OpenAI SDK sends."""

from __future__ import annotations

from typing import Annotated, Any

import httpx2
import openai
import pytest
from emulation_backend import Backend, get
from pydantic import BaseModel, Field

from so_middleware import Capabilities, with_structured_output
from so_middleware.anthropic import ANTHROPIC_API, ANTHROPIC_COMPATIBLE, VLLM_MESSAGES
from so_middleware.openai import (
    LLAMA_SERVER_CHAT,
    LLAMA_SERVER_RESPONSES,
    OLLAMA_CHAT,
    OPENAI_API,
    OPENAI_API_RESPONSES,
    OPENAI_COMPATIBLE,
    VLLM_CHAT,
    OpenAIChatClient,
)
from so_middleware.testing import FakeChatClient

OUTLINE = 'The answer is JSON: object City\n- city: string — the city\'s name; e.g. "Oslo"'


class City(BaseModel):
    city: str = Field(description="the city's name", examples=["Oslo"])


def client_on(backend: Backend, profile: Capabilities) -> Any:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(backend.handle))
    sdk = openai.AsyncOpenAI(api_key="k", base_url="http://backend.internal/v1", http_client=http)
    return with_structured_output(OpenAIChatClient(sdk, "m", capabilities=profile), mode="native")


def system_text(body: dict[str, Any]) -> str | None:
    system = [m["content"] for m in body["messages"] if m["role"] in ("system", "developer")]
    return "\n".join(system) if system else None


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("profile", "outlined"),
    [
        (VLLM_CHAT, True),
        (OLLAMA_CHAT, True),
        (OPENAI_COMPATIBLE, True),
        (LLAMA_SERVER_CHAT, False),  # measured: its small model did no better with it
        (LLAMA_SERVER_RESPONSES, False),
        (OPENAI_API, False),  # reads the schema itself
        (VLLM_CHAT.replace(schema_in_instructions=False), False),
        (LLAMA_SERVER_CHAT.replace(schema_in_instructions=True), True),
        (OPENAI_API.replace(schema_in_instructions=True), True),
    ],
    ids=[
        "vllm",
        "ollama",
        "compatible",
        "llama.cpp",
        "llama.cpp-responses",
        "openai",
        "vllm-off",
        "llama.cpp-on",
        "openai-on",
    ],
)
async def test_the_outline_goes_where_the_profile_says(profile: Capabilities, outlined: bool, stream: bool) -> None:
    backend = Backend('{"city": "Oslo"}')
    response = await get(client_on(backend, profile), stream, "Where?", output_type=City)
    assert response.value == City(city="Oslo")
    body = backend.bodies[0]
    assert body["response_format"]["type"] == "json_schema"  # the engine still enforces it
    assert system_text(body) == (OUTLINE if outlined else None)


@pytest.mark.anyio
async def test_the_outline_follows_the_callers_instructions_which_are_not_changed() -> None:
    backend = Backend('{"city": "Oslo"}')
    options: dict[str, Any] = {"instructions": "Answer briefly."}
    await get(client_on(backend, VLLM_CHAT), False, "Where?", output_type=City, options=options)
    assert system_text(backend.bodies[0]) == "Answer briefly.\n\n" + OUTLINE
    assert options == {"instructions": "Answer briefly."}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("profile", "outlined"),
    [
        (OPENAI_COMPATIBLE, True),
        (VLLM_MESSAGES, True),
        (OPENAI_API_RESPONSES, False),
        (ANTHROPIC_API, False),
        (ANTHROPIC_COMPATIBLE, False),  # no enforced format: `native` is not used there
    ],
    ids=lambda value: value.name if isinstance(value, Capabilities) else str(value),
)
async def test_every_profile_that_enforces_the_schema_unseen_says_so(profile: Capabilities, outlined: bool) -> None:
    assert profile.schema_in_instructions is outlined
    if not profile.native_json_schema:
        return
    fake = FakeChatClient('{"city": "Oslo"}', capabilities=profile)
    await with_structured_output(fake, mode="native").get_response("Where?", output_type=City)
    assert (fake.calls[0].options.instructions == OUTLINE) is outlined


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_a_reask_carries_the_outline_once(stream: bool) -> None:
    fake = FakeChatClient(['{"town": 1}', '{"city": "Oslo"}'], capabilities=VLLM_CHAT)
    options = {"instructions": "Be brief."}
    response = await get(with_structured_output(fake), stream, "Where?", output_type=City, options=options)
    assert response.value == City(city="Oslo")
    assert [call.options.instructions for call in fake.calls] == ["Be brief.\n\n" + OUTLINE] * 2


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_a_schema_that_says_nothing_more_than_its_grammar_gets_no_outline(stream: bool) -> None:
    """A bare `list[int]` names no field and carries nothing a grammar leaves out: the caller's
    instructions go as they are; a bound on it is worth saying."""
    backend = Backend('{"response": [2, 3, 5]}')
    client = client_on(backend, LLAMA_SERVER_CHAT.replace(schema_in_instructions=True))
    assert (await get(client, stream, "Primes?", output_type=list[int])).value == [2, 3, 5]
    assert system_text(backend.bodies[0]) is None
    options: dict[str, Any] = {"instructions": "Three."}
    await get(client, stream, "Primes?", output_type=list[int], options=options)
    assert system_text(backend.bodies[1]) == "Three."
    bounded = Annotated[list[int], Field(max_length=3)]
    await get(client, stream, "Primes?", output_type=bounded)
    assert "at most 3 items" in (system_text(backend.bodies[2]) or "")
