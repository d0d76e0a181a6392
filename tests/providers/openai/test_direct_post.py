"""`OpenAIChatClient(..., http_client=...)`: the calls the SDK is not to retry are posted as JSON on
that HTTP client, without the SDK's request and response models; the others go through the SDK.

Each request is captured by an `httpx2.MockTransport` (the answers are minimal bodies in the
documented Chat Completions wire format); the gateway's tests cover the same path over loopback.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from test_sdk_post import COMPLETION

from so_middleware import ChatMessage, ChatOptions, UserError
from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient

pytestmark = pytest.mark.anyio


TEXT = COMPLETION["choices"][0]["message"]["content"]
CHUNKS = (
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    '"delta":{"role":"assistant","content":"{\\"a\\": 1}"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


def answering(captured: list[httpx2.Request]) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        captured.append(request)
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=CHUNKS.encode())
        return httpx2.Response(200, json=COMPLETION)

    return httpx2.MockTransport(handler)


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the SDK's own request path was used")


def _direct(captured: list[httpx2.Request], max_retries: int) -> OpenAIChatClient:
    http = httpx2.AsyncClient(transport=answering(captured))
    sdk = openai.AsyncOpenAI(base_url="http://backend.test/v1", api_key="k", http_client=http, max_retries=max_retries)
    return OpenAIChatClient(sdk, "m", capabilities=LLAMA_SERVER, discover=False, http_client=http)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_not_to_retry_is_posted_on_the_http_client(stream: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai.AsyncOpenAI, "post", _refuse)
    monkeypatch.setattr(openai.AsyncOpenAI, "request", _refuse)
    captured: list[httpx2.Request] = []
    client = _direct(captured, max_retries=2)
    options = ChatOptions(sdk_max_retries=0)  # what a retry layer above asks for
    if stream:
        response = await client.get_response("hi", options=options, stream=True).get_final_response()
    else:
        response = await client.get_response("hi", options=options)
    assert response.text == TEXT
    [request] = captured
    body = json.loads(request.content)
    expected = client.request_for([ChatMessage("user", "hi")], options)
    assert {key: body[key] for key in expected} == expected
    assert request.headers["authorization"] == "Bearer k"
    assert [name for name in request.headers if name.startswith("x-stainless")] == []


async def test_a_call_the_sdk_is_to_retry_goes_through_the_sdk() -> None:
    captured: list[httpx2.Request] = []
    client = _direct(captured, max_retries=2)
    response = await client.get_response("hi")
    assert response.text == TEXT
    [request] = captured
    assert request.headers["x-stainless-retry-count"] == "0"  # the SDK's own request


def test_http_client_with_a_blocking_sdk_client_is_refused() -> None:
    sdk = openai.OpenAI(base_url="http://backend.test/v1", api_key="k")
    with pytest.raises(UserError, match=r"http_client=.*AsyncOpenAI"):
        OpenAIChatClient(sdk, "m", discover=False, http_client=httpx2.AsyncClient())


async def test_what_orjson_refuses_is_still_posted() -> None:
    """An integer past 64 bits (orjson refuses it) is valid JSON to send."""
    captured: list[httpx2.Request] = []
    client = _direct(captured, max_retries=0)
    extra = {"seed": 2**70}
    await client.get_response("hi", options=ChatOptions(extra_body=extra))
    [request] = captured
    assert {key: value for key, value in json.loads(request.content).items() if key in extra} == extra
