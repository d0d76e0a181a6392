"""This library's own `OpenAIResponsesClient`, pointed at the gateway (over the real local model)
with no capability profile: it discovers the gateway, whose profile says the format is forwarded,
so structured output is `native` and valid on the first attempt."""

from __future__ import annotations

import openai
import pytest
from pydantic import BaseModel

from so_middleware import with_structured_output
from so_middleware.gateway._server import AppServer
from so_middleware.openai import GATEWAY_RESPONSES, OpenAIResponsesClient

pytestmark = [pytest.mark.local_server, pytest.mark.anyio]


class Person(BaseModel):
    name: str
    age: int


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_native_on_the_first_attempt(local_gateway: AppServer, stream: bool) -> None:
    sdk = openai.AsyncOpenAI(base_url=local_gateway.base_url, api_key="none")
    adapter = OpenAIResponsesClient(sdk, "smollm2")
    client = with_structured_output(adapter)  # no profile given: discovered on the first call
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
    assert adapter.capabilities is GATEWAY_RESPONSES
    assert adapter.server_info is not None and adapter.server_info.kind == "so-middleware-gateway"
    await sdk.close()
