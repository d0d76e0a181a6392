"""This library's own `OpenAIResponsesClient`, pointed at the gateway (over the real local model)
with no capability profile: the format is forwarded, so structured output is `native` and valid
on the first attempt."""

from __future__ import annotations

import openai
import pytest
from pydantic import BaseModel

from so_middleware import with_structured_output
from so_middleware.gateway._server import AppServer
from so_middleware.openai import OPENAI_COMPATIBLE, OpenAIResponsesClient

pytestmark = [pytest.mark.local_server, pytest.mark.anyio]


class Person(BaseModel):
    name: str
    age: int


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_native_on_the_first_attempt(local_gateway: AppServer, stream: bool) -> None:
    sdk = openai.AsyncOpenAI(base_url=local_gateway.base_url, api_key="none")
    adapter = OpenAIResponsesClient(sdk, "smollm2")
    # no profile given: a loopback URL gets the generic compatible profile, which trusts json_schema
    assert adapter.capabilities == OPENAI_COMPATIBLE
    client = with_structured_output(adapter)
    prompt = "John Smith is a 35-year-old engineer. Extract the person."
    options = {"max_tokens": 60, "temperature": 0}
    if stream:
        response = await client.get_response(
            prompt, output_type=Person, options=options, stream=True
        ).get_final_response()
    else:
        response = await client.get_response(prompt, output_type=Person, options=options)
    assert isinstance(response.value, Person)
    assert len(response.attempts) == 1 and response.attempts[0].strategy == "native"
    await sdk.close()
