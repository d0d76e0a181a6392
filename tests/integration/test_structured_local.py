"""Structured output against the real local model (SmolLM2-135M via llama-server).

On the Chat Completions route the schema is grammar-enforced, so every type comes back typed on
the first attempt. Routes that ignore the format are covered in test_structured_routes_local.py.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal, Union

import openai
import pytest
from pydantic import BaseModel

from so_middleware.local import LocalModelServer
from so_middleware.middleware.structured_output import StructuredOutput, with_structured_output
from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient

pytestmark = pytest.mark.anyio


class Color(str, Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Address(BaseModel):
    city: str
    country: str | None = None


class Person(BaseModel):
    name: str
    age: int
    nickname: str | None = None
    address: Address | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    name: str


class Dog(BaseModel):
    kind: Literal["dog"]
    name: str


RAW_SCHEMA = {
    "type": "object",
    "properties": {"make": {"type": "string"}, "year": {"type": "integer"}},
    "required": ["make", "year"],
    "additionalProperties": False,
}

CASES: list[tuple[str, Any, str, Any]] = [
    (
        "list[int]",
        list[int],
        "List the first three prime numbers.",
        lambda v: isinstance(v, list) and all(isinstance(i, int) for i in v),
    ),
    ("bool", bool, "Is the sky blue? Answer true or false.", lambda v: isinstance(v, bool)),
    ("enum", Color, "The color of grass is", lambda v: isinstance(v, Color)),
    (
        "nested",
        Person,
        "John Smith is 35 and lives in Paris, France.",
        lambda v: isinstance(v, Person) and isinstance(v.age, int),
    ),
    ("union", Union[Cat, Dog], "My dog Rex barks.", lambda v: isinstance(v, (Cat, Dog))),
    ("raw-schema", RAW_SCHEMA, "A 2019 Volvo.", lambda v: isinstance(v, dict) and isinstance(v["year"], int)),
]


def chat_client(server: LocalModelServer, sdk: Any) -> OpenAIChatClient:
    return OpenAIChatClient(sdk, server.model, capabilities=LLAMA_SERVER)


@pytest.mark.parametrize(("label", "output_type", "prompt", "check"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_chat_route_types_come_back_first_time(
    local_server: LocalModelServer, local_sdk: Any, label: str, output_type: Any, prompt: str, check: Any, stream: bool
) -> None:
    client = with_structured_output(chat_client(local_server, local_sdk("async-openai")))
    feature = StructuredOutput(schema=output_type) if isinstance(output_type, dict) else StructuredOutput(output_type)
    options = {"features": [feature], "max_tokens": 120, "temperature": 0, "seed": 7}
    if stream:
        response_stream = client.get_response(prompt, options=options, stream=True)
        partial_seen = False
        async for update in response_stream:
            partial_seen = partial_seen or update.partial_value is not None
        response = await response_stream.get_final_response()
        assert partial_seen or label == "bool"  # a bool closes in one token
    else:
        response = await client.get_response(prompt, options=options)
    assert check(response.value), response.text
    assert len(response.attempts) == 1 and response.attempts[0].strategy == "native"
    assert feature.response is response
    assert response.usage is not None and response.usage.output_tokens


def test_sync_sdk_client_and_sync_entry_point(local_server: LocalModelServer) -> None:
    with openai.OpenAI(base_url=local_server.base_url, api_key="local") as sdk:
        client = with_structured_output(chat_client(local_server, sdk))
        response = client.get_response_sync(
            "John Smith is 35.", output_type=Person, options={"max_tokens": 100, "temperature": 0}
        )
    assert isinstance(response.value, Person) and isinstance(response.value.age, int)


async def test_truncated_answer_raises_incomplete_with_the_raw_text(
    local_server: LocalModelServer, local_sdk: Any
) -> None:
    from so_middleware import IncompleteOutputError

    client = with_structured_output(chat_client(local_server, local_sdk("async-openai")))
    with pytest.raises(IncompleteOutputError) as caught:
        await client.get_response("John Smith is 35.", output_type=Person, options={"max_tokens": 4, "temperature": 0})
    assert caught.value.attempts[0].text and caught.value.usage is not None
