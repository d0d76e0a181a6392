"""A loop on OpenAI's own Responses route, through the structured-output layer: the re-ask carries
no parameter that API refuses (it has no penalty), so the run ends typed after the one call. The
answers are the documented `status: incomplete` body and `response.incomplete` event, served by
`httpx2.MockTransport`."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx2
import openai
import pytest
from pydantic import BaseModel
from responses_shapes import RESPONSE, delta, sse

from so_middleware import IncompleteOutputError, ResponseFormat, with_retries, with_structured_output, with_telemetry
from so_middleware.openai import LLAMA_SERVER_RESPONSES, OPENAI_API_RESPONSES, OpenAIResponsesClient

pytestmark = pytest.mark.anyio


class Tags(BaseModel):
    tags: list[str]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_a_loop_on_openais_responses_route_ends_typed_without_a_parameter_the_api_refuses(stream: bool) -> None:
    """An answer cut off at max_output_tokens in a loop (documented `status: incomplete` body and
    `response.incomplete` event): no re-ask carries `frequency_penalty`, which the Responses API
    refuses; the run ends with `IncompleteOutputError` after the one call."""
    looping = '{"tags": [' + '"a", ' * 80
    bodies: list[dict[str, Any]] = []
    incomplete = {
        **RESPONSE,
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{**RESPONSE["output"][0], "content": [{"type": "output_text", "text": looping, "annotations": []}]}],
    }

    def handle(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        if stream:
            events = sse(delta(looping), {"type": "response.incomplete", "response": incomplete, "sequence_number": 2})
            return httpx2.Response(200, content=events, headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=incomplete)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handle))
    sdk = openai.AsyncOpenAI(api_key="x", base_url="https://api.openai.com/v1", http_client=http, max_retries=0)
    client = with_structured_output(OpenAIResponsesClient(sdk, "gpt-4o"))
    assert client.capabilities is OPENAI_API_RESPONSES
    with pytest.raises(IncompleteOutputError, match="looped") as caught:
        if stream:
            await client.get_response("tags", output_type=Tags, stream=True).get_final_response()
        else:
            await client.get_response("tags", output_type=Tags)
    assert len(bodies) == 1 and len(caught.value.attempts) == 1
    assert not any("frequency_penalty" in body or "presence_penalty" in body for body in bodies)


@pytest.mark.parametrize("layers", [0, 1, 3])
async def test_the_unenforced_format_warning_names_the_callers_line_through_any_layers(layers: int) -> None:
    """A response format the server does not enforce is warned of at the caller's own line, however
    many layers (here retries, then telemetry, then retries) stand between it and the adapter."""
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=RESPONSE)))
    sdk = openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http, max_retries=0)
    ignored = LLAMA_SERVER_RESPONSES.replace(native_json_schema=False, json_object=False)
    client: Any = OpenAIResponsesClient(sdk, "m", capabilities=ignored)
    for layer in [with_retries, with_telemetry, with_retries][:layers]:
        client = layer(client)
    options = {"response_format": ResponseFormat.json_schema({"type": "object", "properties": {}})}
    with pytest.warns(UserWarning, match="not enforced") as caught:
        here = sys._getframe().f_lineno
        await client.get_response("x", options=options)  # the line the warning names: the next one
    assert (caught[0].filename, caught[0].lineno) == (__file__, here + 1)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("layers", [0, 2])
def test_the_unenforced_format_warning_of_a_blocking_call_names_the_callers_line(stream: bool, layers: int) -> None:
    """`get_response_sync` runs the call on the library's loop thread: the warning still names the
    line of the blocking call, plain and streamed, through the layers."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        if not json.loads(request.content).get("stream"):
            return httpx2.Response(200, json=RESPONSE)
        completed = {"type": "response.completed", "sequence_number": 2, "response": RESPONSE}
        return httpx2.Response(200, content=sse(delta('{"a": 1}'), completed),
                               headers={"content-type": "text/event-stream"})  # fmt: skip

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    sdk = openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http, max_retries=0)
    ignored = LLAMA_SERVER_RESPONSES.replace(native_json_schema=False, json_object=False)
    client: Any = OpenAIResponsesClient(sdk, "m", capabilities=ignored)
    for layer in [with_retries, with_telemetry][:layers]:
        client = layer(client)
    options = {"response_format": ResponseFormat.json_schema({"type": "object", "properties": {}})}
    with pytest.warns(UserWarning, match="not enforced") as caught:
        here = sys._getframe().f_lineno
        response = client.get_response_sync("x", options=options, stream=stream)  # the line the warning names
        text = "".join(u.text for u in response) if stream else response.text
    assert text == '{"a": 1}'
    assert (caught[0].filename, caught[0].lineno) == (__file__, here + 1)
